//! Wire messages (docs/protocol.md §5).

mod envelope;
mod session_tag;

pub use envelope::Envelope;
pub use session_tag::SessionTag;

use std::borrow::Cow;

use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::error::DecodeError;
use crate::keys::{IdentityKey, PreKeyId, PublicKey};

const TYPE_CIPHER: u64 = 1;
const TYPE_PREKEY: u64 = 2;

/// A message of an established session state (type 1 on the wire).
///
/// `{0: session tag, 1: counter, 2: previous counter, 3: ratchet key, 4: ciphertext}`
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CipherMessage<'a> {
    /// Picks the session state on receipt.
    pub session_tag: SessionTag,
    /// Index of the message in the sender's current sending chain.
    pub counter: u32,
    /// Length of the sender's previous sending chain; carried but not used by receivers.
    pub prev_counter: u32,
    /// The sender's current ratchet public key.
    pub ratchet_key: PublicKey,
    /// ChaCha20 ciphertext, as long as the plaintext. A decoded message borrows it from the
    /// envelope bytes: decoding copies nothing.
    pub cipher_text: Cow<'a, [u8]>,
}

/// A message that can create a session: the sender's handshake keys around a [`CipherMessage`]
/// (type 2 on the wire). `{0: prekey id, 1: base key, 2: identity key, 3: CipherMessage}`
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreKeyMessage<'a> {
    /// The recipient's prekey the sender used.
    pub prekey_id: PreKeyId,
    /// The sender's base public key.
    pub base_key: PublicKey,
    /// The sender's identity.
    pub identity_key: IdentityKey,
    /// The embedded message.
    pub message: CipherMessage<'a>,
}

/// A decoded Proteus message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// Type 1.
    Cipher(CipherMessage<'a>),
    /// Type 2.
    PreKey(PreKeyMessage<'a>),
}

impl<'a> Message<'a> {
    /// The embedded cipher message.
    pub fn cipher_message(&self) -> &CipherMessage<'a> {
        match self {
            Self::Cipher(m) => m,
            Self::PreKey(m) => &m.message,
        }
    }

    /// `uint(type) ‖ map` (docs/protocol.md §5.2): the bytes the envelope MAC covers.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let cm = self.cipher_message();
        let mut e = Encoder::with_capacity(cm.cipher_text.len() + 200);
        match self {
            Self::Cipher(m) => {
                e.u64(TYPE_CIPHER);
                m.encode(&mut e);
            }
            Self::PreKey(m) => {
                e.u64(TYPE_PREKEY)
                    .map(4)
                    .key(0)
                    .u64(u64::from(m.prekey_id.value()))
                    .key(1);
                m.base_key.encode(&mut e);
                e.key(2);
                m.identity_key.encode(&mut e);
                e.key(3);
                m.message.encode(&mut e);
            }
        }
        e.into_bytes()
    }

    /// The message with its ciphertext owned, independent of the bytes it was decoded from.
    pub fn into_owned(self) -> Message<'static> {
        match self {
            Self::Cipher(m) => Message::Cipher(m.into_owned()),
            Self::PreKey(m) => Message::PreKey(PreKeyMessage {
                prekey_id: m.prekey_id,
                base_key: m.base_key,
                identity_key: m.identity_key,
                message: m.message.into_owned(),
            }),
        }
    }

    pub(crate) fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let message = match d.u64()? {
            TYPE_CIPHER => Self::Cipher(CipherMessage::decode(&mut d)?),
            TYPE_PREKEY => Self::PreKey(PreKeyMessage::decode(&mut d)?),
            other => return Err(DecodeError::UnknownMessageType(other)),
        };
        d.finish()?;
        Ok(message)
    }
}

impl<'a> CipherMessage<'a> {
    /// The message with its ciphertext owned.
    pub fn into_owned(self) -> CipherMessage<'static> {
        CipherMessage {
            session_tag: self.session_tag,
            counter: self.counter,
            prev_counter: self.prev_counter,
            ratchet_key: self.ratchet_key,
            cipher_text: Cow::Owned(self.cipher_text.into_owned()),
        }
    }

    fn encode(&self, e: &mut Encoder) {
        e.map(5).key(0).bytes(self.session_tag.as_bytes());
        e.key(1)
            .u64(u64::from(self.counter))
            .key(2)
            .u64(u64::from(self.prev_counter))
            .key(3);
        self.ratchet_key.encode(e);
        e.key(4).bytes(&self.cipher_text);
    }

    fn decode(d: &mut Decoder<'a>) -> Result<Self, DecodeError> {
        let (mut tag, mut counter, mut prev, mut ratchet, mut text) =
            (None, None, None, None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => tag = Some(SessionTag::from_bytes(d.fixed::<16>("session tag")?)),
                1 => counter = Some(d.u32()?),
                2 => prev = Some(d.u32()?),
                3 => ratchet = Some(PublicKey::decode(d)?),
                4 => text = Some(d.bytes()?),
                _ => d.skip()?,
            }
        }
        Ok(Self {
            session_tag: required(tag, "session tag")?,
            counter: required(counter, "counter")?,
            prev_counter: required(prev, "previous counter")?,
            ratchet_key: required(ratchet, "ratchet key")?,
            cipher_text: Cow::Borrowed(required(text, "cipher text")?),
        })
    }
}

impl<'a> PreKeyMessage<'a> {
    fn decode(d: &mut Decoder<'a>) -> Result<Self, DecodeError> {
        let (mut id, mut base, mut identity, mut message) = (None, None, None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => id = Some(PreKeyId::new(d.u16()?)),
                1 => base = Some(PublicKey::decode(d)?),
                2 => identity = Some(IdentityKey::decode(d)?),
                3 => message = Some(CipherMessage::decode(d)?),
                _ => d.skip()?,
            }
        }
        Ok(Self {
            prekey_id: required(id, "prekey id")?,
            base_key: required(base, "base key")?,
            identity_key: required(identity, "identity key")?,
            message: required(message, "cipher message")?,
        })
    }
}
