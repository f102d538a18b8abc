//! The session record: its encoding (docs/protocol.md §9.1) and decoding.

use super::*;

impl Session {
    /// `{0: 1, 1: tag, 2: local IdentityKey, 3: remote IdentityKey, 4: pending or null,
    /// 5: {tag: SessionState}}` (docs/protocol.md §9.1). The result holds secret keys.
    ///
    /// Data this engine adds (eviction watermarks) goes under new map keys that Wire's decoders
    /// skip; see [`to_wire_bytes`](Self::to_wire_bytes) for the record without them.
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        self.encode(true, true, false)
    }

    /// [`to_bytes`](Self::to_bytes) with pending sending steps taken (on copies), so that the
    /// record is version 1 and Wire's implementations load it (they skip this engine's
    /// additions): what an export hands out.
    pub fn to_export_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        self.encode(true, true, true)
    }

    /// Exactly the fields Wire's implementations write (docs/protocol.md §9.1), byte-identical to
    /// their record of the same session: for comparison with their records. Loading it back loses
    /// what this engine adds (eviction watermarks fall back to conservative defaults).
    pub fn to_wire_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        self.encode(true, false, true)
    }

    pub(super) fn encode(
        &self,
        with_staged: bool,
        with_extensions: bool,
        take_pending: bool,
    ) -> zeroize::Zeroizing<Vec<u8>> {
        let mut e = Encoder::with_capacity(512 * self.states.len() + 256);
        let marks = if with_extensions {
            extensions::watermarks(&self.states)
        } else {
            Vec::new()
        };
        let base_keys: &[(PublicKey, u32)] = if with_extensions {
            &self.base_keys
        } else {
            &[]
        };
        // Wire's form takes pending sending steps (on copies); ours keeps them.
        let version = if !take_pending && self.states.iter().any(|s| s.state.is_send_pending()) {
            Self::VERSION_PENDING_SEND
        } else {
            Self::VERSION
        };
        e.map(6 + usize::from(!base_keys.is_empty()) + usize::from(!marks.is_empty()))
            .key(0)
            .u64(u64::from(version))
            .key(1)
            .bytes(self.session_tag.as_bytes())
            .key(2);
        self.local_identity.encode(&mut e);
        e.key(3);
        self.remote_identity.encode(&mut e);
        e.key(4);
        match &self.pending_prekey {
            None => {
                e.null();
            }
            Some(p) => {
                e.map(2).key(0).u64(u64::from(p.prekey_id.value())).key(1);
                p.base_key.encode(&mut e);
            }
        }
        e.key(5).map(self.states.len());
        for entry in &self.states {
            e.bytes(entry.tag.as_bytes());
            entry.state.encode(&mut e, with_staged, take_pending);
        }
        if !base_keys.is_empty() {
            extensions::encode_base_keys(&mut e, base_keys);
        }
        if !marks.is_empty() {
            extensions::encode_watermarks(&mut e, &marks);
        }
        zeroize::Zeroizing::new(e.into_bytes())
    }

    /// Loads a session serialised by this engine or by Wire's Proteus, for the local identity
    /// `identity`. A session stored for another identity is refused.
    pub fn from_bytes(identity: &IdentityKey, bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let (mut tag, mut local, mut remote, mut pending, mut states) =
            (None, None, None, None, None);
        let (mut marks, mut base_keys) = (Vec::new(), Vec::new());
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(&mut d)? {
                0 => {
                    d.u8()?;
                }
                1 => tag = Some(SessionTag::from_bytes(d.fixed::<16>("session tag")?)),
                2 => local = Some(IdentityKey::decode(&mut d)?),
                3 => remote = Some(IdentityKey::decode(&mut d)?),
                4 => pending = Some(decode_pending(&mut d)?),
                5 => states = Some(decode_states(&mut d)?),
                extensions::BASE_KEYS_KEY => base_keys = extensions::decode_base_keys(&mut d)?,
                extensions::WATERMARKS_KEY => marks = extensions::decode_watermarks(&mut d)?,
                _ => d.skip()?,
            }
        }
        d.finish()?;
        if local.is_some_and(|l| &l != identity) {
            return Err(DecodeError::LocalIdentityChanged);
        }
        let mut states = required(states, "session states")?;
        extensions::apply_watermarks(&mut states, &marks);
        let mut session = Self::empty(
            *identity,
            required(remote, "remote identity")?,
            required(tag, "session tag")?,
        );
        session.pending_prekey = pending.flatten();
        session.next_insertion = states.len() as u64;
        session.base_keys = base_keys;
        session.states = states;
        Ok(session)
    }
}

// Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
#[inline(never)]
fn decode_pending(d: &mut Decoder<'_>) -> Result<Option<PendingPreKey>, DecodeError> {
    if d.null()? {
        return Ok(None);
    }
    let (mut id, mut base) = (None, None);
    let mut seen = Seen::default();
    for _ in 0..d.map()? {
        match seen.key(d)? {
            0 => id = Some(PreKeyId::new(d.u16()?)),
            1 => base = Some(PublicKey::decode(d)?),
            _ => d.skip()?,
        }
    }
    Ok(Some(PendingPreKey {
        prekey_id: required(id, "pending prekey id")?,
        base_key: required(base, "pending base key")?,
    }))
}

// Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
#[inline(never)]
fn decode_states(d: &mut Decoder<'_>) -> Result<SecretVec<StateEntry>, DecodeError> {
    let n = d.map()?;
    let mut states: SecretVec<StateEntry> = SecretVec::with_capacity(n.min(MAX_SESSION_STATES));
    for i in 0..n {
        let tag = SessionTag::from_bytes(d.fixed::<16>("session tag")?);
        if states.iter().any(|e| e.tag == tag) {
            return Err(DecodeError::DuplicateField(5));
        }
        // Age is rebuilt from the order of appearance (docs/protocol.md §9.1).
        states.push(StateEntry {
            tag,
            insertion: i as u64,
            state: SessionState::decode(d)?,
        });
    }
    Ok(states)
}
