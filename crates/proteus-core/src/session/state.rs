//! One session state: a double ratchet between two parties (docs/protocol.md §6, §7, §9.2).

use rand_core::CryptoRng;
use zeroize::Zeroizing;

use super::chain::{ChainUpdate, RecvChain, SendChain};
use super::derived::{ChainKey, RootKey};
use super::sending::{PendingStep, Sending};
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::crypto::{DhPoint, concat};
use crate::error::{DecodeError, DecryptError, EncryptError};
use crate::keys::{IdentityKey, IdentityKeyPair, KeyPair, PreKeyId, PublicKey};
use crate::limits::MAX_RECV_CHAINS;
use crate::message::{CipherMessage, Message, PreKeyMessage, SessionTag};
use crate::secret_vec::SecretVec;

#[derive(Clone, zeroize::Zeroize)]
pub(crate) struct SessionState {
    /// Newest first.
    recv_chains: SecretVec<RecvChain>,
    sending: Sending,
    /// The root after the last ratchet step taken; with a pending sending half, after the
    /// receiving half (docs/protocol.md §7.2).
    root_key: RootKey,
    prev_counter: u32,
}

/// What a successful decryption changes in a state, computed on the side and applied only after
/// the MAC verified: this is what makes decryption atomic without copying the state.
/// Not boxed: a box is freed as it is, and the bytes of the `Sending` variant that is not in use
/// (stale stack bytes, seeds among them, copied in with the value) would not be wiped with it.
#[allow(clippy::large_enum_variant)]
pub(crate) enum StateUpdate {
    Chain { index: usize, update: ChainUpdate },
    Ratchet(Ratchet),
}

pub(crate) struct Ratchet {
    recv_chain: RecvChain,
    sending: Sending,
    root_key: RootKey,
}

/// The sender's half of a PreKeyMessage header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingPreKey {
    pub(crate) prekey_id: PreKeyId,
    pub(crate) base_key: PublicKey,
}

impl SessionState {
    /// Alice's state (docs/protocol.md §6.1, §6.3), from the bundle's identity key and prekey
    /// (validated) and the prekey as sent. Draws the first sending ratchet key from `rng`.
    pub(crate) fn init_as_alice<R: CryptoRng + ?Sized>(
        rng: &mut R,
        identity: &IdentityKeyPair,
        base_key: &KeyPair,
        (their_identity, their_prekey): (&DhPoint, &DhPoint),
        their_prekey_key: PublicKey,
    ) -> Option<Self> {
        let (a, b, c) = (
            identity.dh(their_prekey)?,
            base_key.dh(their_identity)?,
            base_key.dh(their_prekey)?,
        );
        let master = concat::<96>(&[&a, &b, &c]);
        let (root_key, chain_key) = handshake(&master);
        let ratchet_key = KeyPair::generate(rng);
        let (root_key, send_chain_key) = root_key.dh_ratchet(&*ratchet_key.dh(their_prekey)?);
        Some(Self {
            recv_chains: first_chain(RecvChain::new(chain_key, their_prekey_key)),
            sending: Sending::Ready(SendChain {
                chain_key: send_chain_key,
                ratchet_key,
            }),
            root_key,
            prev_counter: 0,
        })
    }

    /// Bob's state, built from the prekey a PreKeyMessage names and the sender's checked identity
    /// (docs/protocol.md §6.1, §6.4).
    pub(crate) fn init_as_bob(
        identity: &IdentityKeyPair,
        prekey: &KeyPair,
        alice_identity: &DhPoint,
        alice_base_key: &PublicKey,
    ) -> Result<Self, DecryptError> {
        let alice_base_key = alice_base_key.dh_point()?;
        let dh = |ours: Option<crate::crypto::Secret32>| ours.ok_or(DecryptError::DegeneratedKey);
        let a = dh(prekey.dh(alice_identity))?;
        let b = dh(identity.dh(&alice_base_key))?;
        let c = dh(prekey.dh(&alice_base_key))?;
        let master = concat::<96>(&[&a, &b, &c]);
        let (root_key, chain_key) = handshake(&master);
        Ok(Self {
            recv_chains: SecretVec::with_capacity(MAX_RECV_CHAINS + 1),
            sending: Sending::Ready(SendChain {
                chain_key,
                ratchet_key: prekey.clone(),
            }),
            root_key,
            prev_counter: 0,
        })
    }

    /// Encrypts on the sending chain and advances it (docs/protocol.md §6.7), taking the
    /// sending half of the last ratchet step first if it is pending.
    pub(crate) fn encrypt(
        &mut self,
        tag: SessionTag,
        pending: Option<PendingPreKey>,
        local_identity: &IdentityKey,
        plaintext: &[u8],
    ) -> Result<(Message<'static>, Vec<u8>, [u8; 32]), EncryptError> {
        // Taken on the side and kept only once the message is made. It cannot fail for a state
        // that was built or decoded (see `PendingStep::decode`): one that did would be corrupt.
        let mut taken = None;
        let send_chain = match &self.sending {
            Sending::Ready(chain) => chain,
            Sending::Pending(step) => {
                let step = step
                    .take(&self.root_key)
                    .ok_or(EncryptError::NoSessionForTag)?;
                &taken.insert(step).0
            }
        };
        let (mk, next) = send_chain
            .chain_key
            .step()
            .ok_or(EncryptError::ChainExhausted)?;
        let cipher_text = mk.apply_cipher(plaintext);
        let cm = CipherMessage {
            session_tag: tag,
            counter: send_chain.chain_key.idx,
            prev_counter: self.prev_counter,
            ratchet_key: *send_chain.ratchet_key.public(),
            cipher_text: cipher_text.into(),
        };
        let message = match pending {
            None => Message::Cipher(cm),
            Some(p) => Message::PreKey(PreKeyMessage {
                prekey_id: p.prekey_id,
                base_key: p.base_key,
                identity_key: *local_identity,
                message: cm,
            }),
        };
        let bytes = message.encode();
        let mac = *mk.mac(&bytes);
        if let Some((chain, root)) = taken {
            self.sending = Sending::Ready(chain);
            self.root_key = root;
        }
        if let Sending::Ready(chain) = &mut self.sending {
            chain.chain_key = next;
        }
        Ok((message, bytes, mac))
    }

    /// Decrypts without changing the state (docs/protocol.md §7); the caller applies the update.
    pub(crate) fn decrypt<R: CryptoRng + ?Sized>(
        &self,
        rng: &mut R,
        message_bytes: &[u8],
        mac: &[u8; 32],
        msg: &CipherMessage,
        max_staged: u32,
    ) -> Result<(Vec<u8>, StateUpdate), DecryptError> {
        // Ratchet keys are compared as bytes; nothing is converted on the in-chain path.
        if let Some(index) = self
            .recv_chains
            .iter()
            .position(|c| c.ratchet_key == msg.ratchet_key)
        {
            let chain = self
                .recv_chains
                .get(index)
                .ok_or(DecryptError::UnknownSessionTag)?;
            let (plaintext, update) = chain.decrypt(message_bytes, mac, msg, max_staged)?;
            return Ok((plaintext, StateUpdate::Chain { index, update }));
        }
        // A new ratchet key: the receiving half of a DH ratchet step (docs/protocol.md §7.2).
        // The seed of our next ratchet key is drawn first, as Wire's implementations do, so
        // recorded randomness replays exactly; the sending half that uses it is left pending
        // until we encrypt (see `sending`). A ratchet key that is no curve point is rejected
        // before drawing: Wire's JS already refuses it while decoding, so it draws nothing either.
        let their = &msg.ratchet_key;
        let their_point = their.dh_point()?;
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(seed.as_mut_slice());
        let degenerate = || DecryptError::DegeneratedKey;
        // Our previous step's sending half, if it was never taken, is taken now (on the side):
        // its key and root are where this step starts.
        let taken = match &self.sending {
            Sending::Ready(_) => None,
            Sending::Pending(step) => Some(step.take(&self.root_key).ok_or_else(degenerate)?),
        };
        let (ours, root) = match (&taken, &self.sending) {
            (Some((chain, root)), _) => (chain, root),
            (None, Sending::Ready(chain)) => (chain, &self.root_key),
            (None, Sending::Pending(_)) => return Err(degenerate()),
        };
        let recv_dh = ours.ratchet_key.dh(&their_point).ok_or_else(degenerate)?;
        let (recv_root, recv_chain_key) = root.dh_ratchet(&recv_dh);
        let mut recv_chain = RecvChain::new(recv_chain_key, *their);
        let (plaintext, update) = recv_chain.decrypt(message_bytes, mac, msg, max_staged)?;
        recv_chain.apply(update, max_staged as usize);
        let ratchet = Ratchet {
            recv_chain,
            sending: Sending::Pending(PendingStep::new(seed, *their, their_point)),
            root_key: recv_root,
        };
        Ok((plaintext, StateUpdate::Ratchet(ratchet)))
    }

    pub(crate) fn apply(&mut self, update: StateUpdate, max_staged: usize) {
        match update {
            StateUpdate::Chain { index, update } => {
                if let Some(chain) = self.recv_chains.get_mut(index) {
                    chain.apply(update, max_staged);
                }
            }
            StateUpdate::Ratchet(mut r) => {
                // Swapped rather than moved out, so the old keys are dropped (and wiped) with
                // `r` instead of leaving copies behind.
                self.prev_counter = self.sending.next_counter();
                std::mem::swap(&mut self.sending, &mut r.sending);
                std::mem::swap(&mut self.root_key, &mut r.root_key);
                self.recv_chains.insert(0, r.recv_chain.clone());
                self.recv_chains.truncate(MAX_RECV_CHAINS);
            }
        }
    }

    pub(crate) fn recv_chains(&self) -> impl Iterator<Item = &RecvChain> {
        self.recv_chains.iter()
    }

    pub(crate) fn recv_chain_mut(&mut self, ratchet_key: &PublicKey) -> Option<&mut RecvChain> {
        self.recv_chains
            .iter_mut()
            .find(|c| &c.ratchet_key == ratchet_key)
    }

    /// The sending chain, if it is ready to encrypt on (not while the sending half of a ratchet
    /// step is pending; see `send_record`).
    pub(crate) fn send_chain(&self) -> Option<&SendChain> {
        match &self.sending {
            Sending::Ready(chain) => Some(chain),
            Sending::Pending(_) => None,
        }
    }

    pub(crate) fn send_chain_mut(&mut self) -> Option<&mut SendChain> {
        match &mut self.sending {
            Sending::Ready(chain) => Some(chain),
            Sending::Pending(_) => None,
        }
    }

    /// Whether the sending half of the last ratchet step is pending (only this engine's
    /// records can hold such a state).
    pub(crate) fn is_send_pending(&self) -> bool {
        matches!(self.sending, Sending::Pending(_))
    }

    /// `{0: [RecvChain] newest first, 1: SendChain, 2: RootKey, 3: prev_counter}`, Wire's form.
    /// A pending sending half is written as `5: PendingStep` in place of key 1 (with the root
    /// before it), or, with `take_pending` (Wire's form, for Wire's implementations), taken
    /// first, on a copy: the record is then exactly Wire's record of the same state.
    pub(crate) fn encode(&self, e: &mut Encoder, with_staged: bool, take_pending: bool) {
        let taken = match &self.sending {
            Sending::Pending(step) if take_pending => step.take(&self.root_key),
            _ => None,
        };
        e.map(4).key(0).array(self.recv_chains.len());
        for chain in self.recv_chains.iter() {
            chain.encode(e, with_staged);
        }
        let root_key = match (&taken, &self.sending) {
            (Some((chain, root)), _) => {
                e.key(1);
                chain.encode(e);
                root
            }
            (None, Sending::Ready(chain)) => {
                e.key(1);
                chain.encode(e);
                &self.root_key
            }
            // Also the case of a step that cannot be taken, which no decoded state holds.
            (None, Sending::Pending(step)) => {
                e.key(5);
                step.encode(e);
                &self.root_key
            }
        };
        e.key(2);
        root_key.encode(e);
        e.key(3).u64(u64::from(self.prev_counter));
    }

    // Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
    #[inline(never)]
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let (mut recv_chains, mut sending, mut root_key, mut prev_counter) =
            (None, None, None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => {
                    let n = d.array()?;
                    let mut chains = SecretVec::with_capacity(n.min(MAX_RECV_CHAINS) + 1);
                    for _ in 0..n {
                        chains.push(RecvChain::decode(d)?);
                    }
                    chains.truncate(MAX_RECV_CHAINS);
                    recv_chains = Some(chains);
                }
                // A state has a send chain or a pending step, never both.
                1 | 5 if sending.is_some() => return Err(DecodeError::DuplicateField(1)),
                1 => sending = Some(Sending::Ready(SendChain::decode(d)?)),
                5 => sending = Some(Sending::Pending(PendingStep::decode(d)?)),
                2 => root_key = Some(RootKey::decode(d)?),
                3 => prev_counter = Some(d.u32()?),
                // Key 4 held staged keys in old versions; it is skipped like any unknown key.
                _ => d.skip()?,
            }
        }
        Ok(Self {
            recv_chains: required(recv_chains, "receive chains")?,
            sending: required(sending, "send chain")?,
            root_key: required(root_key, "root key")?,
            prev_counter: required(prev_counter, "previous counter")?,
        })
    }
}

/// Room for the most chains a state holds, plus the one a ratchet step adds before the oldest
/// is dropped, so the list never has to grow.
fn first_chain(chain: RecvChain) -> SecretVec<RecvChain> {
    let mut chains = SecretVec::with_capacity(MAX_RECV_CHAINS + 1);
    chains.push(chain);
    chains
}

/// `(RK0 ‖ CK0) = KDF(master secret, "", "handshake")` (docs/protocol.md §6.2).
fn handshake(master: &[u8; 96]) -> (RootKey, ChainKey) {
    let (root, chain) = crate::crypto::kdf(master, &[], b"handshake");
    (RootKey::new(root), ChainKey::new(chain, 0))
}
