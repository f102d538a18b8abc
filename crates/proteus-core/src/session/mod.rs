//! Sessions: several double-ratchet states with one peer, picked by session tag (docs/protocol.md
//! §8, §9).

mod chain;
mod derived;
mod extensions;
mod plan;
mod record;
mod send_record;
mod sending;
mod staged;
mod state;

#[cfg(feature = "test-support")]
pub use derived::chain_steps;
#[cfg(feature = "test-support")]
pub use plan::open_jobs_in_lanes;
pub use plan::{OpenJob, Opened, open_jobs};
pub use send_record::SendChainRecord;
pub use staged::{StagedKey, StagedKeyId};

use std::fmt;

use rand_core::CryptoRng;

use self::state::{PendingPreKey, SessionState};
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::error::{DecodeError, DecryptError, EncryptError, SessionCreationError};
use crate::keys::{
    CheckedIdentity, IdentityCache, IdentityKey, IdentityKeyPair, KeyPair, PreKeyBundle, PreKeyId,
    PublicKey,
};
use crate::limits::{
    MAX_CONFIGURABLE_COUNTER_GAP, MAX_COUNTER_GAP, MAX_PLAINTEXT_LEN, MAX_SESSION_BASE_KEYS,
    MAX_SESSION_STATES,
};
use crate::message::{CipherMessage, Envelope, Message, SessionTag};
use crate::prekey_store::PreKeyStore;
use crate::secret_vec::SecretVec;

#[derive(Clone, zeroize::Zeroize)]
struct StateEntry {
    tag: SessionTag,
    /// Insertion order, for evicting the oldest state. Not serialised (docs/protocol.md §8.1).
    insertion: u64,
    state: SessionState,
}

/// An end-to-end encrypted session with one peer.
///
/// Alice creates one with [`Session::init_from_prekey`] from Bob's prekey bundle; Bob creates
/// his with [`Session::init_from_message`] from Alice's first message. Both then
/// [`encrypt`](Session::encrypt) and [`decrypt`](Session::decrypt). A failed decryption leaves
/// the session exactly as it was. Persist the session after every successful call.
pub struct Session {
    local_identity: IdentityKey,
    remote_identity: IdentityKey,
    session_tag: SessionTag,
    pending_prekey: Option<PendingPreKey>,
    /// In insertion order, which is also the order they are serialised in (as Wire's JS does).
    states: SecretVec<StateEntry>,
    next_insertion: u64,
    max_counter_gap: u32,
    /// Base keys of the PreKeyMessages that created states here, each with the counter of the
    /// message that did, oldest first (at most [`MAX_SESSION_BASE_KEYS`]): a replay of one is a
    /// duplicate, never a new state.
    base_keys: Vec<(PublicKey, u32)>,
}

/// The result of [`Session::init_from_message`]: the new session and the first plaintext.
pub struct InboundSession {
    /// The new session. Persist it together with the removal of the prekey it used.
    pub session: Session,
    /// The plaintext of the message that created it.
    pub plaintext: Vec<u8>,
}

impl Session {
    /// The record format version this engine writes for a session whose every state is in
    /// Wire's form; such a record is Wire's record plus keys Wire's decoders skip.
    pub const VERSION: u8 = 1;

    /// The record format version of a session holding a state whose sending ratchet step is
    /// pending (taken on the next encryption), which only this engine's version 2 and later
    /// read. [`to_wire_bytes`](Self::to_wire_bytes) takes such steps and writes version 1.
    pub const VERSION_PENDING_SEND: u8 = 2;

    /// Starts a session with the owner of `bundle` (Alice's side, docs/protocol.md §6.3).
    ///
    /// Draws from `rng`, in this order: the base key seed, the first ratchet key seed and the
    /// session tag, as Wire's implementations do. Messages carry the prekey header until the
    /// peer's first reply is decrypted.
    pub fn init_from_prekey<R: CryptoRng + ?Sized>(
        rng: &mut R,
        identity: &IdentityKeyPair,
        bundle: &PreKeyBundle,
    ) -> Result<Self, SessionCreationError> {
        // Each peer key is decompressed and validated once, before anything is drawn.
        let degenerate = |_| SessionCreationError::DegeneratedKey;
        let their_identity = bundle
            .identity_key()
            .public_key()
            .dh_point()
            .map_err(degenerate)?;
        let their_prekey = bundle.public_key().dh_point().map_err(degenerate)?;
        let base_key = KeyPair::generate(rng);
        let state = SessionState::init_as_alice(
            rng,
            identity,
            &base_key,
            (&their_identity, &their_prekey),
            *bundle.public_key(),
        )
        .ok_or(SessionCreationError::DegeneratedKey)?;
        let tag = SessionTag::generate(rng);
        let mut session = Self::empty(*identity.public_key(), *bundle.identity_key(), tag);
        session.pending_prekey = Some(PendingPreKey {
            prekey_id: bundle.prekey_id(),
            base_key: *base_key.public(),
        });
        session.insert_state(tag, state);
        Ok(session)
    }

    /// Creates a session from a peer's first message (Bob's side, docs/protocol.md §8.5).
    ///
    /// On success the one-time prekey the message used has been removed from `prekeys` (the
    /// last-resort prekey never is). On failure nothing was removed.
    pub fn init_from_message<R: CryptoRng + ?Sized, S: PreKeyStore + ?Sized>(
        rng: &mut R,
        identity: &IdentityKeyPair,
        prekeys: &mut S,
        envelope: &Envelope,
    ) -> Result<InboundSession, DecryptError> {
        Self::init_from_message_with_cache(rng, identity, prekeys, &mut (), envelope)
    }

    /// [`init_from_message`](Self::init_from_message) taking the sender's checked identity
    /// from `identities` if it is there, and keeping it there once the message has decrypted.
    pub fn init_from_message_with_cache<R, S, C>(
        rng: &mut R,
        identity: &IdentityKeyPair,
        prekeys: &mut S,
        identities: &mut C,
        envelope: &Envelope,
    ) -> Result<InboundSession, DecryptError>
    where
        R: CryptoRng + ?Sized,
        S: PreKeyStore + ?Sized,
        C: IdentityCache + ?Sized,
    {
        let Message::PreKey(pkm) = envelope.message() else {
            return Err(DecryptError::NotAPreKeyMessage);
        };
        let tag = pkm.message.session_tag;
        let mut session = Self::empty(*identity.public_key(), pkm.identity_key, tag);
        let plaintext =
            session.decrypt_with_new_state(rng, identity, prekeys, identities, envelope)?;
        Ok(InboundSession { session, plaintext })
    }

    fn empty(local_identity: IdentityKey, remote_identity: IdentityKey, tag: SessionTag) -> Self {
        Self {
            local_identity,
            remote_identity,
            session_tag: tag,
            pending_prekey: None,
            states: SecretVec::with_capacity(1),
            next_insertion: 0,
            max_counter_gap: MAX_COUNTER_GAP,
            base_keys: Vec::new(),
        }
    }

    /// The current session tag: the state the next message is encrypted with.
    pub fn session_tag(&self) -> SessionTag {
        self.session_tag
    }

    /// Our identity.
    pub fn local_identity(&self) -> &IdentityKey {
        &self.local_identity
    }

    /// The peer's identity. Compare its fingerprint out of band to authenticate the peer.
    pub fn remote_identity(&self) -> &IdentityKey {
        &self.remote_identity
    }

    /// Whether messages still carry the prekey header (no reply decrypted yet).
    pub fn has_pending_prekey(&self) -> bool {
        self.pending_prekey.is_some()
    }

    /// The prekey id of the pending prekey header, if any.
    pub fn pending_prekey_id(&self) -> Option<PreKeyId> {
        self.pending_prekey.map(|p| p.prekey_id)
    }

    /// Stops sending the prekey header. Wire's clients never do this; it exists to replay
    /// recorded conversations whose generator did it (feature `test-support`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn clear_pending_prekey(&mut self) {
        self.pending_prekey = None;
    }

    /// The number of session states held.
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// How many skipped-message keys each receive chain keeps (default [`MAX_COUNTER_GAP`]);
    /// older ones are evicted (`MessageKeyEvicted`, 214). The gap a message may skip is bounded
    /// separately, by [`MAX_FAST_FORWARD`](crate::limits::MAX_FAST_FORWARD). Not persisted:
    /// set it after loading.
    pub fn max_counter_gap(&self) -> u32 {
        self.max_counter_gap
    }

    /// Raises (or lowers) the staged-key limit, clamped to
    /// `MAX_COUNTER_GAP..=MAX_CONFIGURABLE_COUNTER_GAP`.
    pub fn set_max_counter_gap(&mut self, gap: u32) {
        self.max_counter_gap = gap.clamp(MAX_COUNTER_GAP, MAX_CONFIGURABLE_COUNTER_GAP);
    }

    /// Encrypts `plaintext` with the current state and advances its sending chain.
    ///
    /// Persist the session before sending the envelope: a lost chain advance would make the next
    /// message reuse this message's keys.
    pub fn encrypt(&mut self, plaintext: &[u8]) -> Result<Envelope<'static>, EncryptError> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(EncryptError::PlaintextTooLong(plaintext.len()));
        }
        let tag = self.session_tag;
        let (pending, local) = (self.pending_prekey, self.local_identity);
        let entry = self
            .states
            .iter_mut()
            .find(|e| e.tag == tag)
            .ok_or(EncryptError::NoSessionForTag)?;
        let (message, bytes, mac) = entry.state.encrypt(tag, pending, &local, plaintext)?;
        Ok(Envelope::new(mac, bytes, message))
    }

    /// Decrypts a message from the peer (docs/protocol.md §8.3).
    ///
    /// A PreKeyMessage that no existing state can decrypt builds a new state from the prekey it
    /// names in `prekeys`, which is then removed (unless it is the last-resort prekey). If that
    /// message authenticates but its handshake already created a state here (its base key is
    /// among those recorded, or its session tag is held), nothing changes: the message that
    /// created the state is a replay, `DuplicateMessage` (209); any other is
    /// `MessageKeyEvicted` (214), since its chain is gone and whether it was decrypted cannot be
    /// told. A new state never replaces a live one. On any error the
    /// session and `prekeys` are unchanged. `rng` is drawn from only for a DH
    /// ratchet step.
    pub fn decrypt<R: CryptoRng + ?Sized, S: PreKeyStore + ?Sized>(
        &mut self,
        rng: &mut R,
        identity: &IdentityKeyPair,
        prekeys: &mut S,
        envelope: &Envelope,
    ) -> Result<Vec<u8>, DecryptError> {
        self.decrypt_with_cache(rng, identity, prekeys, &mut (), envelope)
    }

    /// [`decrypt`](Self::decrypt) taking the sender's checked identity from `identities` when
    /// the message starts a new state, and keeping it there once the message has decrypted.
    pub fn decrypt_with_cache<R, S, C>(
        &mut self,
        rng: &mut R,
        identity: &IdentityKeyPair,
        prekeys: &mut S,
        identities: &mut C,
        envelope: &Envelope,
    ) -> Result<Vec<u8>, DecryptError>
    where
        R: CryptoRng + ?Sized,
        S: PreKeyStore + ?Sized,
        C: IdentityCache + ?Sized,
    {
        if identity.public_key() != &self.local_identity {
            return Err(DecryptError::LocalIdentityMismatch);
        }
        match envelope.message() {
            Message::Cipher(_) => self.decrypt_with_existing_state(rng, envelope),
            Message::PreKey(pkm) => {
                if pkm.identity_key != self.remote_identity {
                    return Err(DecryptError::RemoteIdentityChanged);
                }
                // A state that holds the message's chain has the last word: a new state made
                // from the prekey would step the same chain to the same counter again (a forged
                // counter would cost two fast-forwards), and would find its tag taken.
                if self.holds_chain(&pkm.message) {
                    return self.decrypt_with_existing_state(rng, envelope);
                }
                // A state with the message's tag but not its chain cannot open it: the sender
                // wraps messages in PreKeyMessages only on the chain that made the state, so
                // that chain was dropped since, and stepping the state to a chain derived
                // anew would fail (after a fast-forward). Only the state made from the prekey
                // can authenticate the message.
                if self.states.iter().any(|e| e.tag == pkm.message.session_tag) {
                    return self
                        .decrypt_with_new_state(rng, identity, prekeys, identities, envelope);
                }
                match self.decrypt_with_existing_state(rng, envelope) {
                    Err(DecryptError::InvalidSignature(_) | DecryptError::UnknownSessionTag) => {
                        self.decrypt_with_new_state(rng, identity, prekeys, identities, envelope)
                    }
                    other => other,
                }
            }
        }
    }

    /// Whether a state with the message's session tag has a receive chain for its ratchet key.
    fn holds_chain(&self, msg: &CipherMessage) -> bool {
        self.states
            .iter()
            .find(|e| e.tag == msg.session_tag)
            .is_some_and(|e| {
                e.state
                    .recv_chains()
                    .any(|c| c.ratchet_key == msg.ratchet_key)
            })
    }

    fn decrypt_with_existing_state<R: CryptoRng + ?Sized>(
        &mut self,
        rng: &mut R,
        envelope: &Envelope,
    ) -> Result<Vec<u8>, DecryptError> {
        let msg = envelope.message().cipher_message();
        let max_staged = self.max_counter_gap;
        let entry = self
            .states
            .iter_mut()
            .find(|e| e.tag == msg.session_tag)
            .ok_or(DecryptError::UnknownSessionTag)?;
        let (plaintext, update) = entry.state.decrypt(
            rng,
            envelope.message_bytes(),
            envelope.mac(),
            msg,
            max_staged,
        )?;
        entry.state.apply(update, max_staged as usize);
        self.pending_prekey = None;
        self.session_tag = msg.session_tag;
        Ok(plaintext)
    }

    fn decrypt_with_new_state(
        &mut self,
        rng: &mut (impl CryptoRng + ?Sized),
        identity: &IdentityKeyPair,
        prekeys: &mut (impl PreKeyStore + ?Sized),
        identities: &mut (impl IdentityCache + ?Sized),
        envelope: &Envelope,
    ) -> Result<Vec<u8>, DecryptError> {
        let Message::PreKey(pkm) = envelope.message() else {
            return Err(DecryptError::NotAPreKeyMessage);
        };
        let id = pkm.prekey_id;
        let prekey = prekeys
            .prekey(id)
            .map_err(|e| DecryptError::PreKeyStore(Box::new(e)))?
            .ok_or(DecryptError::PreKeyNotFound(id))?;
        // The sender's identity is checked first, as before the cache: from it if kept there.
        let (alice, newly_checked) = match identities.get(&pkm.identity_key).cloned() {
            Some(kept) => (kept, false),
            None => (CheckedIdentity::new(&pkm.identity_key)?, true),
        };
        let mut state =
            SessionState::init_as_bob(identity, prekey.key_pair(), alice.point(), &pkm.base_key)?;
        let max_staged = self.max_counter_gap;
        let (plaintext, update) = state.decrypt(
            rng,
            envelope.message_bytes(),
            envelope.mac(),
            &pkm.message,
            max_staged,
        )?;
        state.apply(update, max_staged as usize);
        // Checked once the MAC verified, so a forged message still reports its bad MAC.
        let tag = pkm.message.session_tag;
        let created_by = self
            .base_keys
            .iter()
            .find(|(key, _)| *key == pkm.base_key)
            .map(|(_, counter)| *counter);
        match created_by {
            // The very message whose handshake made a state here: decrypted before.
            Some(counter) if counter == pkm.message.counter => {
                return Err(DecryptError::DuplicateMessage);
            }
            // Another message of a handshake made here, whose chain is gone: whether it was
            // decrypted cannot be told, so it is never called "already seen".
            Some(_) => return Err(DecryptError::MessageKeyEvicted),
            None if self.states.iter().any(|e| e.tag == tag) => {
                return Err(DecryptError::MessageKeyEvicted);
            }
            None => {}
        }
        if !id.is_last_resort() {
            prekeys
                .remove(id)
                .map_err(|e| DecryptError::PreKeyStore(Box::new(e)))?;
        }
        self.insert_state(tag, state);
        self.remember_base_key(pkm.base_key, pkm.message.counter);
        self.pending_prekey = None;
        if newly_checked {
            identities.keep(alice);
        }
        Ok(plaintext)
    }

    fn remember_base_key(&mut self, base_key: PublicKey, counter: u32) {
        if !self.has_seen_base_key(&base_key) {
            if self.base_keys.len() >= MAX_SESSION_BASE_KEYS {
                self.base_keys.remove(0);
            }
            self.base_keys.push((base_key, counter));
        }
    }

    /// Whether a PreKeyMessage with this base key created a state of this session (among the
    /// last [`MAX_SESSION_BASE_KEYS`]).
    pub fn has_seen_base_key(&self, base_key: &PublicKey) -> bool {
        self.base_keys.iter().any(|(key, _)| key == base_key)
    }

    /// Inserts the state under `tag`, makes it current and evicts the oldest other state once
    /// [`MAX_SESSION_STATES`] are held (docs/protocol.md §8.6). Callers never pass a tag already
    /// held; unlike Wire's implementations, a live state is never replaced.
    fn insert_state(&mut self, tag: SessionTag, state: SessionState) {
        if self.states.iter().any(|e| e.tag == tag) {
            return;
        }
        if self.next_insertion == u64::MAX {
            self.states.clear();
            self.next_insertion = 0;
        }
        self.states.push(StateEntry {
            tag,
            insertion: self.next_insertion,
            state,
        });
        self.next_insertion += 1;
        self.session_tag = tag;
        if self.states.len() >= MAX_SESSION_STATES {
            let oldest = self
                .states
                .iter()
                .enumerate()
                .filter(|(_, e)| e.tag != tag)
                .min_by_key(|(_, e)| e.insertion)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                self.states.remove(i);
            }
        }
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            local_identity,
            remote_identity,
            session_tag,
            pending_prekey,
            states,
            next_insertion: _,
            max_counter_gap,
            base_keys,
        } = self;
        f.debug_struct("Session")
            .field("local_identity", local_identity)
            .field("remote_identity", remote_identity)
            .field("session_tag", session_tag)
            .field("pending_prekey", &pending_prekey.map(|p| p.prekey_id))
            .field("states", &states.len())
            .field("max_counter_gap", max_counter_gap)
            .field("base_keys", &base_keys.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
