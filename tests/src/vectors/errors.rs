//! The error classes of @wireapp/proteus and which of our errors they correspond to.

use proteus_core::DecryptError;

/// The error class of @wireapp/proteus that an error of ours corresponds to.
fn class_of(e: &DecryptError) -> &'static str {
    match e {
        DecryptError::DuplicateMessage => "DuplicateMessage",
        DecryptError::OutdatedMessage => "OutdatedMessage",
        DecryptError::TooDistantFuture { .. } => "TooDistantFuture",
        DecryptError::InvalidSignature(_) => "InvalidSignature",
        DecryptError::NotAPreKeyMessage | DecryptError::UnknownSessionTag => "InvalidMessage",
        DecryptError::RemoteIdentityChanged => "RemoteIdentityChanged",
        DecryptError::PreKeyNotFound(_) | DecryptError::DegeneratedKey => "ProteusError",
        DecryptError::Decode(_) => "DecodeError",
        _ => "other",
    }
}

/// Whether our error is the rejection the vector expects (same class; for classes whose
/// conditions overlap in the two engines, any of the equivalent ones).
pub(super) fn same_class(ours: &DecryptError, class: &str) -> bool {
    let mine = class_of(ours);
    mine == class
        || match class {
            // JS rejects bad keys while decoding (InputError); we reject them when they are used.
            // Vectors record `error.constructor.name`, so JS's subclasses appear under their own
            // names: DecodeError.InvalidType / InvalidArrayLen (e.g. an unknown message type,
            // 302) and InputError.ConversionError (a key that is no curve point, 408/409) /
            // TypeError / RangeError (405/406, a message that does not match its shape).
            // JS's OutdatedMessage (208) covers two conditions we keep apart: a message decrypted
            // before (208) and one whose staged key was evicted, never decrypted (214).
            "OutdatedMessage" => matches!(ours, DecryptError::MessageKeyEvicted),
            "DecodeError" | "InputError" | "InvalidType" | "InvalidArrayLen"
            | "ConversionError" | "TypeError" | "RangeError" => {
                matches!(ours, DecryptError::Decode(_) | DecryptError::DegeneratedKey)
            }
            _ => false,
        }
}
