use std::borrow::Cow;

use super::Message;
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::error::DecodeError;

/// The unit that is transmitted: a message and its MAC (docs/protocol.md §5.1).
///
/// ```text
/// a3                      map(3)
///    00 01                version = 1
///    01 a1 00 58 20 <32>  Mac {0: bstr(32)}
///    02 <bstr>            message_enc = uint(type) ‖ message map
/// ```
///
/// The MAC is HMAC-SHA256 over `message_enc`. A decoded envelope borrows `message_enc` exactly as
/// received, so the MAC is verified over those bytes and not over a re-encoding, and decoding
/// copies nothing. [`Envelope::into_owned`] detaches it from the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<'a> {
    mac: [u8; 32],
    message_bytes: Cow<'a, [u8]>,
    message: Message<'a>,
}

impl Envelope<'static> {
    pub(crate) fn new(mac: [u8; 32], message_bytes: Vec<u8>, message: Message<'static>) -> Self {
        Self {
            mac,
            message_bytes: Cow::Owned(message_bytes),
            message,
        }
    }

    /// An envelope around `message` (encoded canonically) with the given MAC. Only
    /// [`Session::encrypt`](crate::Session::encrypt) knows the right MAC; this exists for tests
    /// and tools that build hostile inputs, which receivers must reject (feature `test-support`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn from_message(message: Message<'_>, mac: [u8; 32]) -> Self {
        let message_bytes = Cow::Owned(message.encode());
        Self {
            mac,
            message_bytes,
            message: message.into_owned(),
        }
    }
}

impl<'a> Envelope<'a> {
    /// The version this engine writes. Receivers do not check it (docs/protocol.md §5.1).
    pub const VERSION: u8 = 1;

    /// The decoded message.
    pub fn message(&self) -> &Message<'a> {
        &self.message
    }

    /// The MAC.
    pub fn mac(&self) -> &[u8; 32] {
        &self.mac
    }

    /// The message bytes the MAC covers, exactly as received.
    pub fn message_bytes(&self) -> &[u8] {
        &self.message_bytes
    }

    /// The wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Encoder::with_capacity(self.message_bytes.len() + 48);
        e.map(3)
            .key(0)
            .u64(u64::from(Self::VERSION))
            .key(1)
            .wrapped_bytes(&self.mac)
            .key(2)
            .bytes(&self.message_bytes);
        e.into_bytes()
    }

    /// The envelope with its bytes owned, independent of the bytes it was decoded from.
    pub fn into_owned(self) -> Envelope<'static> {
        Envelope {
            mac: self.mac,
            message_bytes: Cow::Owned(self.message_bytes.into_owned()),
            message: self.message.into_owned(),
        }
    }

    /// Decodes an envelope and the message inside it, borrowing from `bytes`.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let (mut mac, mut message_bytes) = (None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(&mut d)? {
                0 => {
                    d.u8()?;
                }
                1 => mac = Some(d.wrapped::<32>("mac")?),
                2 => message_bytes = Some(d.bytes()?),
                _ => d.skip()?,
            }
        }
        d.finish()?;
        let message_bytes = required(message_bytes, "message")?;
        let message = Message::decode(message_bytes)?;
        Ok(Self {
            mac: required(mac, "mac")?,
            message_bytes: Cow::Borrowed(message_bytes),
            message,
        })
    }
}
