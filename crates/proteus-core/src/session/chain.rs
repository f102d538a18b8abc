//! Sending and receiving chains (docs/protocol.md §6.6, §7.3, §9.3, §9.4).

use super::derived::{ChainKey, MessageKeys};
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::error::{CounterPosition, DecodeError, DecryptError};
use crate::keys::{KeyPair, PublicKey};
use crate::limits::{MAX_COUNTER_GAP, MAX_FAST_FORWARD};
use crate::message::CipherMessage;
use crate::secret_vec::SecretVec;

/// A chain we send on: its chain key and our ratchet key pair.
#[derive(Clone, zeroize::Zeroize)]
pub(crate) struct SendChain {
    pub(crate) chain_key: ChainKey,
    pub(crate) ratchet_key: KeyPair,
}

impl SendChain {
    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.map(2).key(0);
        self.chain_key.encode(e);
        e.key(1);
        self.ratchet_key.encode(e);
    }

    // Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
    #[inline(never)]
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let (mut chain_key, mut ratchet_key) = (None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => chain_key = Some(ChainKey::decode(d)?),
                1 => ratchet_key = Some(KeyPair::decode(d)?),
                _ => d.skip()?,
            }
        }
        Ok(Self {
            chain_key: required(chain_key, "send chain key")?,
            ratchet_key: required(ratchet_key, "send ratchet key")?,
        })
    }
}

/// A chain we receive on: its chain key, the peer's ratchet key, and the keys of messages that
/// were skipped on it (ascending counter), staged so late messages still decrypt.
#[derive(Clone, zeroize::Zeroize)]
pub(crate) struct RecvChain {
    pub(crate) chain_key: ChainKey,
    pub(crate) ratchet_key: PublicKey,
    pub(crate) staged: SecretVec<MessageKeys>,
    /// Every counter below this that is not staged may have had its key evicted, so a message
    /// there is `MessageKeyEvicted`, never "already seen". Evictions always take the oldest
    /// keys, so one watermark describes them all. Stored in the session record (key 7), not in
    /// the chain's Wire-format map.
    pub(crate) evicted_below: u32,
}

/// The eviction watermark to assume for a chain whose record carries none (written by Wire's
/// implementations or an older version): evictions only ever happen with more than
/// `MAX_COUNTER_GAP` keys staged below the chain index, so every evicted counter is below
/// `idx - MAX_COUNTER_GAP`. Below that the engine cannot tell decrypted from evicted.
pub(crate) fn legacy_watermark(idx: u32) -> u32 {
    idx.saturating_sub(MAX_COUNTER_GAP)
}

/// What a successful decryption changes in a receive chain, applied only after the MAC checked.
pub(crate) enum ChainUpdate {
    /// The message used the staged key at this position.
    UseStaged(usize),
    /// The chain moved past the message; the keys it skipped are staged.
    Advance {
        chain_key: ChainKey,
        skipped: SecretVec<MessageKeys>,
        /// Counters from the chain's index up to this one were skipped without being staged
        /// (a fast-forward longer than the staged-key limit); the chain's index if none.
        unstaged_below: u32,
    },
}

impl RecvChain {
    pub(crate) fn new(chain_key: ChainKey, ratchet_key: PublicKey) -> Self {
        Self {
            chain_key,
            ratchet_key,
            staged: SecretVec::with_capacity(0),
            evicted_below: 0,
        }
    }

    /// Decrypts without changing the chain (docs/protocol.md §7.3); the caller applies the update.
    pub(crate) fn decrypt(
        &self,
        message_bytes: &[u8],
        mac: &[u8; 32],
        msg: &CipherMessage,
        max_staged: u32,
    ) -> Result<(Vec<u8>, ChainUpdate), DecryptError> {
        let (c, k) = (msg.counter, self.chain_key.idx);
        if c < k {
            if let Some(pos) = self.staged.iter().position(|mk| mk.counter == c) {
                let mk = self.staged.get(pos).ok_or(DecryptError::DuplicateMessage)?;
                let plaintext = open(mk, message_bytes, mac, msg, CounterPosition::Behind)?;
                return Ok((plaintext, ChainUpdate::UseStaged(pos)));
            }
            // Not staged: decrypted before, unless its key may have been evicted.
            if c < self.evicted_below {
                return Err(DecryptError::MessageKeyEvicted);
            }
            if self.staged.first().is_some_and(|oldest| oldest.counter > c) {
                return Err(DecryptError::OutdatedMessage);
            }
            return Err(DecryptError::DuplicateMessage);
        }
        let gap = c - k;
        let too_distant = || DecryptError::TooDistantFuture {
            gap: u64::from(gap),
            chain_start: k == 0,
        };
        if gap > MAX_FAST_FORWARD {
            return Err(too_distant());
        }
        // Step the chain key to the message's counter. Only the chain keys of the last
        // `max_staged` skipped indices are kept (the older ones would be evicted at once), and
        // their message keys are derived only once the MAC has verified: a forged counter
        // costs one HMAC per step and no memory beyond the kept keys.
        let keep = gap.min(max_staged);
        let first_staged = c - keep;
        let mut skipped_chain_keys = Vec::with_capacity(keep as usize);
        // In sync (most messages), the chain key is used where it is, without a copy to wipe.
        let mut stepped = None;
        if gap > 0 {
            let mut ck = self.chain_key.clone();
            while ck.idx < first_staged {
                ck = ck.next().ok_or_else(too_distant)?;
            }
            while ck.idx < c {
                let next = ck.next().ok_or_else(too_distant)?;
                skipped_chain_keys.push(ck);
                ck = next;
            }
            stepped = Some(ck);
        }
        let ck = stepped.as_ref().unwrap_or(&self.chain_key);
        let position = if gap == 0 {
            CounterPosition::InSync
        } else {
            CounterPosition::Ahead
        };
        let (mk, chain_key) = ck.step().ok_or_else(too_distant)?;
        let plaintext = open(&mk, message_bytes, mac, msg, position)?;
        let mut skipped = SecretVec::with_capacity(skipped_chain_keys.len());
        for ck in &skipped_chain_keys {
            skipped.push(ck.message_keys());
        }
        Ok((
            plaintext,
            ChainUpdate::Advance {
                chain_key,
                skipped,
                unstaged_below: first_staged,
            },
        ))
    }

    /// Applies an update; at most `max_staged` keys stay staged, the oldest dropped first.
    pub(crate) fn apply(&mut self, update: ChainUpdate, max_staged: usize) {
        match update {
            ChainUpdate::UseStaged(pos) => {
                self.staged.remove(pos);
            }
            ChainUpdate::Advance {
                chain_key,
                skipped,
                unstaged_below,
            } => {
                // Counters from the old index up to `unstaged_below` were never staged.
                if unstaged_below > self.chain_key.idx {
                    self.evicted_below = self.evicted_below.max(unstaged_below);
                }
                self.chain_key = chain_key;
                self.staged.extend_cloned(&skipped);
                let excess = self.staged.len().saturating_sub(max_staged);
                if let Some(newest_evicted) = excess.checked_sub(1).and_then(|i| self.staged.get(i))
                {
                    let below = newest_evicted.counter.saturating_add(1);
                    self.evicted_below = self.evicted_below.max(below);
                }
                self.staged.remove_front(..excess);
            }
        }
    }

    /// `{0: ChainKey, 1: ratchet key, 2: [MessageKeys]}`; without the staged keys (an empty
    /// list) when a storage layer keeps them apart.
    pub(crate) fn encode(&self, e: &mut Encoder, with_staged: bool) {
        e.map(3).key(0);
        self.chain_key.encode(e);
        e.key(1);
        self.ratchet_key.encode(e);
        if with_staged {
            e.key(2).array(self.staged.len());
            for mk in self.staged.iter() {
                mk.encode(e);
            }
        } else {
            e.key(2).array(0);
        }
    }

    /// Inserts a staged key kept apart by a storage layer, in counter order. A key for a counter
    /// the chain has not passed yet, or already holds, is ignored.
    pub(crate) fn restore_staged(&mut self, mk: MessageKeys) {
        if mk.counter >= self.chain_key.idx {
            return;
        }
        match self.staged.binary_search_by_key(&mk.counter, |k| k.counter) {
            Ok(_) => {}
            Err(pos) => self.staged.insert(pos, mk),
        }
    }

    // Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
    #[inline(never)]
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let (mut chain_key, mut ratchet_key, mut staged) =
            (None, None, SecretVec::with_capacity(0));
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => chain_key = Some(ChainKey::decode(d)?),
                1 => ratchet_key = Some(PublicKey::decode(d)?),
                // Wire's Rust treats a missing list as empty (docs/protocol.md §9.3).
                2 => {
                    let n = d.array()?;
                    staged = SecretVec::with_capacity(n);
                    for _ in 0..n {
                        staged.push(MessageKeys::decode(d)?);
                    }
                }
                _ => d.skip()?,
            }
        }
        let chain_key: ChainKey = required(chain_key, "receive chain key")?;
        Ok(Self {
            evicted_below: legacy_watermark(chain_key.idx),
            chain_key,
            ratchet_key: required(ratchet_key, "receive ratchet key")?,
            staged,
        })
    }
}

/// Verifies the MAC over the received message bytes, then decrypts.
pub(crate) fn open(
    mk: &MessageKeys,
    message_bytes: &[u8],
    mac: &[u8; 32],
    msg: &CipherMessage,
    position: CounterPosition,
) -> Result<Vec<u8>, DecryptError> {
    if !mk.verify(message_bytes, mac) {
        return Err(DecryptError::InvalidSignature(position));
    }
    Ok(mk.apply_cipher(&msg.cipher_text))
}
