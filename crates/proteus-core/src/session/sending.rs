//! Our half of the DH ratchet, taken lazily (docs/protocol.md §6.5, §7.2, §9.2).
//!
//! A DH ratchet step on receipt has two halves: the receiving one (our current ratchet key with
//! the peer's new one: the new receive chain) and the sending one (a fresh ratchet key pair of
//! ours with the peer's key: the new send chain). Wire's implementations take both at once. The
//! sending half costs a base-point multiplication and a Diffie-Hellman, and a session that is
//! only read from (a backlog of new senders, say) never needs it, so it is taken on the first
//! encryption instead, as Olm does. The seed of the new key pair is still drawn when the message
//! arrives, as Wire draws it, so the state after the first encryption is byte for byte the one
//! Wire's implementations hold, and recorded randomness replays exactly.

use zeroize::Zeroizing;

use super::chain::SendChain;
use super::derived::RootKey;
use crate::cbor::{Decoder, Encoder};
use crate::crypto::{DhPoint, Secret32, concat, halves};
use crate::error::DecodeError;
use crate::keys::{KeyPair, PublicKey};

/// The sending side of a session state.
#[derive(Clone, zeroize::Zeroize)]
pub(crate) enum Sending {
    /// A send chain; the state's root key is the one after the step that made it.
    Ready(SendChain),
    /// The sending half of the last ratchet step, not taken yet; the state's root key is the one
    /// after the receiving half.
    Pending(PendingStep),
}

/// What the sending half of a ratchet step needs: the seed of our next ratchet key pair and
/// the peer's ratchet key (validated when its message arrived; kept decompressed).
#[derive(Clone, zeroize::Zeroize)]
pub(crate) struct PendingStep {
    seed: Secret32,
    #[zeroize(skip)]
    their_key: PublicKey,
    #[zeroize(skip)]
    their_point: DhPoint,
}

impl Sending {
    /// The counter the next message on this chain would carry: a state's `prev_counter` once a
    /// ratchet step replaces the chain. A pending chain has sent nothing.
    pub(crate) fn next_counter(&self) -> u32 {
        match self {
            Self::Ready(chain) => chain.chain_key.idx,
            Self::Pending(_) => 0,
        }
    }
}

impl PendingStep {
    pub(crate) fn new(seed: Secret32, their_key: PublicKey, their_point: DhPoint) -> Self {
        Self {
            seed,
            their_key,
            their_point,
        }
    }

    /// Takes the step from `root` (the root after the receiving half): our new ratchet key pair
    /// and its send chain, and the root key after it. Exactly what Wire's implementations
    /// compute on receipt. `None` only for a degenerate DH, which a key that passed the checks
    /// of [`DhPoint`] cannot give.
    /// Not inlined: encryption and Wire's record share one copy (wasm size).
    #[inline(never)]
    pub(crate) fn take(&self, root: &RootKey) -> Option<(SendChain, RootKey)> {
        let ratchet_key = KeyPair::from_seed(self.seed.clone());
        let (root, chain_key) = root.dh_ratchet(&*ratchet_key.dh(&self.their_point)?);
        Some((
            SendChain {
                chain_key,
                ratchet_key,
            },
            root,
        ))
    }

    /// `bstr(64)`: the seed ‖ their ratchet key, under key 5 of a state's map.
    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.bytes(concat::<64>(&[&self.seed, self.their_key.as_bytes()]).as_slice());
    }

    /// The peer's key was checked when its message arrived; a stored one is only decompressed
    /// and refused if of small order, which is what keeps [`take`](Self::take) from failing.
    // Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
    #[inline(never)]
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let stored = Zeroizing::new(d.fixed::<64>("pending ratchet step")?);
        let (seed, their_key) = halves(&stored);
        let seed = Zeroizing::new(seed);
        let their_point = DhPoint::from_stored(&their_key).ok_or(DecodeError::InvalidKey(
            "pending ratchet peer key is not a usable point",
        ))?;
        Ok(Self::new(
            seed,
            PublicKey::from_bytes(their_key),
            their_point,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::state::SessionState;

    fn step() -> PendingStep {
        let their_key = *KeyPair::from_seed(Zeroizing::new([3; 32])).public();
        let their_point = their_key.dh_point().unwrap();
        PendingStep::new(Zeroizing::new([5; 32]), their_key, their_point)
    }

    /// `{0: [], 1: SendChain, 5: PendingStep, 2: RootKey, 3: 0}`
    fn state_with(send_chain: bool, pending: bool) -> Vec<u8> {
        let root = RootKey::new(Zeroizing::new([9; 32]));
        let (chain, _) = step().take(&root).unwrap();
        let mut e = Encoder::with_capacity(512);
        e.map(3 + usize::from(send_chain) + usize::from(pending))
            .key(0)
            .array(0);
        if send_chain {
            e.key(1);
            chain.encode(&mut e);
        }
        if pending {
            e.key(5);
            step().encode(&mut e);
        }
        e.key(2);
        root.encode(&mut e);
        e.key(3).u64(0);
        e.into_bytes()
    }

    #[test]
    fn a_state_has_a_send_chain_or_a_pending_step_and_not_both() {
        let decode = |bytes: &[u8]| {
            SessionState::decode(&mut Decoder::new(bytes)).map(|s| s.is_send_pending())
        };
        assert_eq!(decode(&state_with(true, false)).ok(), Some(false));
        assert_eq!(decode(&state_with(false, true)).ok(), Some(true));
        assert!(matches!(
            decode(&state_with(true, true)),
            Err(DecodeError::DuplicateField(_))
        ));
        assert!(matches!(
            decode(&state_with(false, false)),
            Err(DecodeError::MissingField(_))
        ));
    }

    /// What is taken later is what Wire's implementations compute at once: our new key pair
    /// from the seed, and `KDF(DH(new key, their key), root, "dh_ratchet")`.
    #[test]
    fn the_pending_step_is_the_eager_one() {
        let root = RootKey::new(Zeroizing::new([9; 32]));
        let s = step();
        let (chain, new_root) = s.take(&root).unwrap();
        let ours = KeyPair::from_seed(Zeroizing::new([5; 32]));
        let (want_root, want_chain) = root.dh_ratchet(&ours.dh(&s.their_point).unwrap());
        assert_eq!(chain.ratchet_key.public(), ours.public());
        assert_eq!(chain.chain_key.idx, 0);
        let encoded = |f: &dyn Fn(&mut Encoder)| {
            let mut e = Encoder::with_capacity(64);
            f(&mut e);
            e.into_bytes()
        };
        assert_eq!(
            encoded(&|e| chain.chain_key.encode(e)),
            encoded(&|e| want_chain.encode(e))
        );
        assert_eq!(
            encoded(&|e| new_root.encode(e)),
            encoded(&|e| want_root.encode(e))
        );
    }
}
