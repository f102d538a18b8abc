//! Keys and key records (spec §1.1, §3).

mod bundle;
mod identity;
mod key_pair;
mod prekey;
mod public_key;

pub use bundle::{BundleSignature, BundleVerification, PreKeyBundle};
pub use identity::{IdentityKey, IdentityKeyPair};
pub(crate) use key_pair::KeyPair;
pub use prekey::{PreKey, PreKeyId};
pub use public_key::PublicKey;
pub(crate) use public_key::hex;
