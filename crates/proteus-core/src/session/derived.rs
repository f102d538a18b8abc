//! Keys derived by the ratchets (docs/protocol.md §6.2, §6.5, §6.6, §9.5).

use zeroize::{Zeroize, Zeroizing};

use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::crypto::{
    KeySchedule, KeyedMac, Secret32, chacha20, hmac, hmac_verify, kdf, kdf_pair, same_bytes,
};
use crate::error::DecodeError;
#[cfg(any(
    test,
    feature = "test-support",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
use crate::sha256x4::{
    Lanes,
    hash::store_lanes,
    hmac::{KdfInfo, KeyStates4, hmac_verify4, kdf4_words},
};

/// A chain key and its index: `{0: MacKey, 1: idx}` when stored.
#[derive(Clone, Zeroize)]
pub(crate) struct ChainKey {
    key: Secret32,
    pub(crate) idx: u32,
}

#[cfg(feature = "test-support")]
thread_local! {
    static CHAIN_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times this thread has stepped a chain key (`test-support` only): what a forged
/// counter costs, counted rather than timed.
#[cfg(feature = "test-support")]
pub fn chain_steps() -> u64 {
    CHAIN_STEPS.with(std::cell::Cell::get)
}

/// Counts one chain step for [`chain_steps`]; nothing without `test-support`.
#[inline(always)]
fn count_step() {
    #[cfg(feature = "test-support")]
    CHAIN_STEPS.with(|steps| steps.set(steps.get() + 1));
}

impl ChainKey {
    pub(crate) fn new(key: Secret32, idx: u32) -> Self {
        Self { key, idx }
    }

    pub(crate) fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// `CK_{i+1} = HMAC(CK_i, "1")`; `None` once the 32-bit index is used up.
    pub(crate) fn next(&self) -> Option<Self> {
        count_step();
        Some(Self {
            key: hmac(&self.key, b"1"),
            idx: self.idx.checked_add(1)?,
        })
    }

    /// The message keys for this index: `KDF(HMAC(CK_i, "0"), "", "hash_ratchet")`.
    pub(crate) fn message_keys(&self) -> MessageKeys {
        message_keys(&hmac(&self.key, b"0"), self.idx)
    }

    /// This index's message keys and the next chain key, sharing one HMAC key schedule.
    pub(crate) fn step(&self) -> Option<(MessageKeys, ChainKey)> {
        count_step();
        let idx = self.idx.checked_add(1)?;
        let keyed = KeyedMac::new(&self.key);
        // Both HMACs of the chain key before the message keys: they are independent, and
        // side by side the CPU overlaps their SHA-256 compressions (each waits on its own
        // chain of rounds); the derivation after them depends on the first.
        let base = keyed.mac(b"0");
        let next = keyed.mac_last(b"1");
        Some((message_keys(&base, self.idx), Self { key: next, idx }))
    }

    /// The HMAC key schedule of this chain key (for this index's message keys, see
    /// [`MessageKeys::from_keyed`]) and the next chain key: [`step`](Self::step) split in two,
    /// so the message keys can be derived elsewhere.
    pub(crate) fn keyed_step(&self) -> Option<(KeySchedule, ChainKey)> {
        count_step();
        let idx = self.idx.checked_add(1)?;
        let keyed = KeySchedule::new(&self.key);
        let next = Self {
            key: keyed.mac_byte(b'1'),
            idx,
        };
        Some((keyed, next))
    }

    /// Whether `other` is the same chain key at the same index (compared in constant time).
    pub(crate) fn same_as(&self, other: &ChainKey) -> bool {
        self.idx == other.idx && same_bytes(self.key.as_slice(), other.key.as_slice())
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.map(2)
            .key(0)
            .wrapped_bytes(self.key.as_slice())
            .key(1)
            .u64(u64::from(self.idx));
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let (mut key, mut idx) = (None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => key = Some(Zeroizing::new(d.wrapped::<32>("chain key")?)),
                1 => idx = Some(d.u32()?),
                _ => d.skip()?,
            }
        }
        Ok(Self {
            key: required(key, "chain key")?,
            idx: required(idx, "chain key index")?,
        })
    }
}

fn message_keys(base: &[u8; 32], counter: u32) -> MessageKeys {
    MessageKeys {
        keys: kdf_pair(base, &[], b"hash_ratchet"),
        counter,
    }
}

/// The root key: `{0: CipherKey}` when stored.
#[derive(Clone, Zeroize)]
pub(crate) struct RootKey(Secret32);

impl RootKey {
    pub(crate) fn new(key: Secret32) -> Self {
        Self(key)
    }

    /// One DH-ratchet step of the root: `KDF(dh, root, "dh_ratchet")` (docs/protocol.md §6.5).
    pub(crate) fn dh_ratchet(&self, dh_output: &[u8; 32]) -> (RootKey, ChainKey) {
        let (root, chain) = kdf(dh_output, self.0.as_slice(), b"dh_ratchet");
        (RootKey(root), ChainKey::new(chain, 0))
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.map(1).key(0).wrapped_bytes(self.0.as_slice());
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let mut key = None;
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => key = Some(Zeroizing::new(d.wrapped::<32>("root key")?)),
                _ => d.skip()?,
            }
        }
        required(key, "root key").map(Self)
    }
}

/// The keys of one message: `{0: CipherKey, 1: MacKey, 2: counter}` when stored.
#[derive(Clone, Zeroize)]
pub(crate) struct MessageKeys {
    /// The cipher key, then the MAC key: the two halves of their KDF output, kept as written.
    keys: Zeroizing<[[u8; 32]; 2]>,
    pub(crate) counter: u32,
}

impl MessageKeys {
    fn cipher_key(&self) -> &[u8; 32] {
        let [cipher, _] = &*self.keys;
        cipher
    }

    fn mac_key(&self) -> &[u8; 32] {
        let [_, mac] = &*self.keys;
        mac
    }

    /// The message keys of index `counter` from the HMAC key schedule of its chain key
    /// ([`ChainKey::keyed_step`]).
    pub(crate) fn from_keyed(keyed: &KeySchedule, counter: u32) -> Self {
        message_keys(&keyed.mac_byte(b'0'), counter)
    }

    /// Whether `other` holds the same keys for the same counter (compared in constant time).
    pub(crate) fn same_as(&self, other: &MessageKeys) -> bool {
        self.counter == other.counter
            && same_bytes(self.keys.as_flattened(), other.keys.as_flattened())
    }

    pub(crate) fn mac(&self, message: &[u8]) -> Secret32 {
        hmac(self.mac_key(), message)
    }

    pub(crate) fn verify(&self, message: &[u8], mac: &[u8; 32]) -> bool {
        hmac_verify(self.mac_key(), message, mac)
    }

    /// ChaCha20 with this message's counter as nonce: encrypts or decrypts `data`.
    pub(crate) fn apply_cipher(&self, data: &[u8]) -> Vec<u8> {
        chacha20(self.cipher_key(), self.counter, data)
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.map(3).key(0).wrapped_bytes(self.cipher_key());
        e.key(1)
            .wrapped_bytes(self.mac_key())
            .key(2)
            .u64(u64::from(self.counter));
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let (mut cipher_key, mut mac_key, mut counter) = (None, None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => cipher_key = Some(Zeroizing::new(d.wrapped::<32>("cipher key")?)),
                1 => mac_key = Some(Zeroizing::new(d.wrapped::<32>("mac key")?)),
                2 => counter = Some(d.u32()?),
                _ => d.skip()?,
            }
        }
        Ok(Self {
            keys: Zeroizing::new([
                *required::<Secret32>(cipher_key, "cipher key")?,
                *required::<Secret32>(mac_key, "mac key")?,
            ]),
            counter: required(counter, "message key counter")?,
        })
    }
}

/// Message keys four at a time, on the four-lane SHA-256 (crate::sha256x4): the web build
/// opens a batch's messages four at a time.
#[cfg(any(
    test,
    feature = "test-support",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
impl MessageKeys {
    /// The message keys of four chain-key indices from their HMAC key schedules
    /// ([`KeySchedule::states`], as [`Self::from_keyed`] derives them one at a time):
    /// `HMAC(CK_i, "0")` in the lanes too, then its HKDF.
    pub(crate) fn derive4<L: Lanes>(keyed: [&[[u32; 8]; 2]; 4], counters: [u32; 4]) -> [Self; 4] {
        const INFO: KdfInfo = KdfInfo::new(b"hash_ratchet");
        let base = KeyStates4::<L>::from_states(keyed).mac_byte(b'0');
        let (cipher_keys, mac_keys) = kdf4_words(&base, &INFO);
        let mut keys = counters.map(|counter| MessageKeys {
            keys: Zeroizing::new([[0; 32]; 2]),
            counter,
        });
        let halves = keys.each_mut().map(|k| {
            let [cipher, mac] = &mut *k.keys;
            (cipher, mac)
        });
        let [(c0, m0), (c1, m1), (c2, m2), (c3, m3)] = halves;
        store_lanes(&cipher_keys, [c0, c1, c2, c3]);
        store_lanes(&mac_keys, [m0, m1, m2, m3]);
        keys
    }

    /// Whether `macs[i]` is the MAC of `messages[i]` under `keys[i]` (as [`Self::verify`]).
    pub(crate) fn verify4<L: Lanes>(
        keys: [&Self; 4],
        messages: [&[u8]; 4],
        macs: [&[u8; 32]; 4],
    ) -> [bool; 4] {
        hmac_verify4::<L>(keys.map(MessageKeys::mac_key), messages, macs)
    }
}
