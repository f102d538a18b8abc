//! What the web package (wasm) and the Node addon exchange with their shared JavaScript in packed
//! form: a batch's decryption results, as both hand them over and `ffi/web/js/delivery.js`
//! (`readChunk`) reads them (a few conversions per chunk rather than several per message), and
//! the records of `importCryptobox` ([`unpack_cryptobox`]).

mod records;

pub use records::{Packed, split, unpack_cryptobox};

use proteus_client::Decrypted;

/// The results of consecutive messages of a batch: `meta` holds three numbers per message, its
/// error code (0 if it decrypted), its plaintext's length and whether it names a sender (1) or
/// not (0); `ids` the message ids (64 lowercase hex digits each); `plaintexts` the plaintexts
/// back to back; `senders` the sender fingerprints of those that name one (64 hex digits each).
/// A failed message's error kind is not packed: the JS side has the registry's (`ERROR_KINDS`),
/// and leaving the kind names out of the web build saves it their table.
#[derive(Debug, Default)]
pub struct PackedResults {
    /// (code, plaintext length, names a sender) per message.
    pub meta: Vec<u32>,
    /// The message ids in hex: one string for the chunk is much cheaper for JS than one per id.
    pub ids: String,
    /// The plaintexts, back to back.
    pub plaintexts: Vec<u8>,
    /// The sender fingerprints of the messages that name one.
    pub senders: String,
}

impl PackedResults {
    /// `results`, packed.
    pub fn of(results: &[Decrypted]) -> Self {
        let mut packed = Self::default();
        for decrypted in results {
            packed.push(decrypted);
        }
        packed
    }

    /// Room for the results of `messages` messages but their plaintexts (see
    /// [`push_leaving_plaintext`](Self::push_leaving_plaintext)): no growing on the way.
    pub fn for_messages(messages: usize) -> Self {
        Self {
            meta: Vec::with_capacity(3 * messages),
            ids: String::with_capacity(64 * messages),
            ..Self::default()
        }
    }

    /// Adds the result of the next message.
    pub fn push(&mut self, decrypted: &Decrypted) {
        let plaintext = self.push_leaving_plaintext(decrypted);
        self.plaintexts.extend_from_slice(plaintext);
    }

    /// Adds the result of the next message but its plaintext, which it returns (empty for a
    /// failed message): for a caller that places the plaintexts in a buffer of its own, back
    /// to back in the same order.
    pub fn push_leaving_plaintext<'d>(&mut self, decrypted: &'d Decrypted) -> &'d [u8] {
        // ASCII hex, so never the empty fallback; no String per message.
        self.ids
            .push_str(std::str::from_utf8(&decrypted.message_id.hex()).unwrap_or_default());
        let plaintext: &[u8] = match &decrypted.outcome {
            Ok(plaintext) => {
                self.meta.push(0);
                self.meta
                    .push(u32::try_from(plaintext.len()).unwrap_or(u32::MAX));
                plaintext
            }
            Err(e) => {
                self.meta.push(u32::from(e.code()));
                self.meta.push(0);
                &[]
            }
        };
        match decrypted.sender {
            Some(sender) => {
                self.meta.push(1);
                self.senders.push_str(&sender.fingerprint());
            }
            None => self.meta.push(0),
        }
        plaintext
    }

    /// Empties it, keeping its buffers for the next chunk.
    pub fn clear(&mut self) {
        self.meta.clear();
        self.ids.clear();
        self.plaintexts.clear();
        self.senders.clear();
    }
}
