//! Keys and key records (docs/protocol.md §2.1, §4).

mod bundle;
mod checked;
mod identity;
mod key_pair;
mod prekey;
mod public_key;

pub use bundle::{BundleSignature, BundleVerification, PreKeyBundle};
pub use checked::{CheckedIdentity, IdentityCache};
pub use identity::{IdentityKey, IdentityKeyPair};
pub(crate) use key_pair::KeyPair;
pub use prekey::{PreKey, PreKeyId};
pub use public_key::PublicKey;
pub(crate) use public_key::hex;
