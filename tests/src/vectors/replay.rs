//! The replay of one file: the parties' state and every event checked against the recording.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proteus_core::{
    DecryptError, Envelope, IdentityKey, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId,
    RecordedRng, Session, limits::MAX_FAST_FORWARD,
};
use serde_json::Value;

use super::errors::same_class;
use super::fields::{arr, bytes, check_decoded, expect_eq, get, num, text};
use super::{Mode, Res};

struct Party {
    identity: IdentityKeyPair,
    prekeys: BTreeMap<PreKeyId, PreKey>,
    sessions: HashMap<String, Session>,
}

pub(super) struct Replay<'a> {
    json: &'a Value,
    mode: Mode,
    parties: HashMap<String, Party>,
    pub(super) decrypted: usize,
    pub(super) rejected: usize,
    pub(super) envelopes_matched: usize,
    pub(super) snapshots_matched: usize,
    /// Messages @wireapp/proteus rejects as TooDistantFuture (gap > 1000) that we decrypt by
    /// design (gap up to MAX_FAST_FORWARD); see [`Replay::decrypt`].
    pub(super) fast_forwarded: usize,
    /// PreKeyMessages with a bad MAC on the state holding their chain, which Wire's
    /// implementations retry as a new state and we reject at once (both reject).
    pub(super) not_retried: usize,
}

impl<'a> Replay<'a> {
    pub(super) fn new(json: &'a Value, mode: Mode) -> Res<Self> {
        let mut parties = HashMap::new();
        let party_map = get(json, "parties")?
            .as_object()
            .ok_or("`parties` is not an object")?;
        for (name, p) in party_map {
            let identity = IdentityKeyPair::from_bytes(&bytes(p, "identity_keypair")?)
                .map_err(|e| format!("{name}: identity key pair: {e}"))?;
            expect_eq(
                &format!("{name} identity key pair"),
                &identity.to_bytes(),
                &bytes(p, "identity_keypair")?,
            )?;
            expect_eq(
                &format!("{name} public identity"),
                &identity.public_key().to_bytes(),
                &bytes(p, "identity_public")?,
            )?;
            if identity.fingerprint() != text(p, "fingerprint")? {
                return Err(format!(
                    "{name}: fingerprint {} differs",
                    identity.fingerprint()
                ));
            }
            let mut prekeys = BTreeMap::new();
            if let Some(list) = p.get("prekeys").and_then(Value::as_array) {
                for pk in list {
                    let raw = bytes(pk, "bytes")?;
                    let prekey =
                        PreKey::from_bytes(&raw).map_err(|e| format!("{name}: prekey: {e}"))?;
                    expect_eq("prekey", &prekey.to_bytes(), &raw)?;
                    if u64::from(prekey.id().value()) != num(pk, "id")? {
                        return Err(format!("{name}: prekey id {} differs", prekey.id()));
                    }
                    expect_eq(
                        "prekey public key",
                        prekey.public_key().as_bytes(),
                        &bytes(pk, "public_key")?,
                    )?;
                    prekeys.insert(prekey.id(), prekey);
                }
            }
            parties.insert(
                name.clone(),
                Party {
                    identity,
                    prekeys,
                    sessions: HashMap::new(),
                },
            );
        }
        let replay = Self {
            json,
            mode,
            parties,
            decrypted: 0,
            rejected: 0,
            envelopes_matched: 0,
            snapshots_matched: 0,
            fast_forwarded: 0,
            not_retried: 0,
        };
        replay.check_static_records()?;
        Ok(replay)
    }

    /// Step 1 of the format's README: every bundle and envelope decodes, agrees with its
    /// `decoded` description and re-encodes to the same bytes.
    fn check_static_records(&self) -> Res<()> {
        for b in arr(self.json, "bundles")
            .map(|v| v.as_slice())
            .unwrap_or_default()
        {
            let raw = bytes(b, "bytes")?;
            let bundle = PreKeyBundle::from_bytes(&raw).map_err(|e| format!("bundle: {e}"))?;
            expect_eq("bundle", &bundle.to_bytes(), &raw)?;
            if u64::from(bundle.prekey_id().value()) != num(b, "prekey_id")? {
                return Err("bundle prekey id differs".into());
            }
            let signed = get(b, "signed")?.as_bool().unwrap_or_default();
            let verdict = bundle.verify();
            let expected = if signed {
                proteus_core::BundleVerification::Valid
            } else {
                proteus_core::BundleVerification::Unsigned
            };
            if verdict != expected {
                return Err(format!(
                    "bundle {}: signature check gave {verdict:?}",
                    bundle.prekey_id()
                ));
            }
            if let Some(owner) = b.get("owner").and_then(Value::as_str) {
                let party = self
                    .parties
                    .get(owner)
                    .ok_or_else(|| format!("unknown bundle owner {owner}"))?;
                if bundle.identity_key() != party.identity.public_key() {
                    return Err(format!(
                        "bundle {} does not carry {owner}'s identity",
                        bundle.prekey_id()
                    ));
                }
            }
        }
        for m in arr(self.json, "messages")
            .map(|v| v.as_slice())
            .unwrap_or_default()
        {
            let raw = bytes(m, "envelope")?;
            let env =
                Envelope::from_bytes(&raw).map_err(|e| format!("message {}: {e}", m["id"]))?;
            expect_eq("envelope", &env.to_bytes(), &raw)?;
            if let Some(decoded) = m.get("decoded") {
                check_decoded(&env, decoded).map_err(|e| format!("message {}: {e}", m["id"]))?;
            }
        }
        Ok(())
    }

    fn party(&mut self, event: &Value) -> Res<&mut Party> {
        let name = text(event, "party")?;
        self.parties
            .get_mut(name)
            .ok_or_else(|| format!("unknown party {name}"))
    }

    fn message(&self, id: u64) -> Res<&'a Value> {
        arr(self.json, "messages")?
            .iter()
            .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
            .ok_or_else(|| format!("no message {id}"))
    }

    fn rng(event: &Value) -> Res<RecordedRng> {
        let draws = match event.get("rng").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .map(|d| bytes(d, "bytes"))
                .collect::<Res<Vec<_>>>()?,
            None => Vec::new(),
        };
        Ok(RecordedRng::new(draws))
    }

    pub(super) fn event(&mut self, event: &Value) -> Res<()> {
        match text(event, "type")? {
            "init_from_prekey" => self.init_from_prekey(event),
            "encrypt" => self.encrypt(event),
            "encrypt_unrecorded" => self.encrypt_unrecorded(event),
            "decrypt" => self.decrypt(event),
            other => Err(format!("unknown event type `{other}`")),
        }
    }

    fn init_from_prekey(&mut self, event: &Value) -> Res<()> {
        let bundles = arr(self.json, "bundles")?;
        let index = num(event, "bundle")?;
        let bundle = bundles
            .iter()
            .find(|b| b.get("index").and_then(Value::as_u64) == Some(index))
            .or_else(|| usize::try_from(index).ok().and_then(|i| bundles.get(i)))
            .ok_or_else(|| format!("no bundle {index}"))?;
        let bundle =
            PreKeyBundle::from_bytes(&bytes(bundle, "bytes")?).map_err(|e| e.to_string())?;
        let mode = self.mode;
        let mut rng = Self::rng(event)?;
        let peer = text(event, "peer")?.to_owned();
        let party = self.party(event)?;
        let session = match mode {
            Mode::Recorded => {
                let s = Session::init_from_prekey(&mut rng, &party.identity, &bundle)
                    .map_err(|e| e.to_string())?;
                // Drawing more than recorded panics in RecordedRng; fewer is caught here.
                if rng.remaining() != 0 {
                    return Err("init_from_prekey drew less randomness than recorded".into());
                }
                if let Ok(tag) = text(event, "session_tag")
                    && s.session_tag().to_string() != tag
                {
                    return Err(format!(
                        "session tag {} differs from {tag}",
                        s.session_tag()
                    ));
                }
                s
            }
            Mode::Snapshots => Session::init_from_prekey(&mut OsRng, &party.identity, &bundle)
                .map_err(|e| e.to_string())?,
        };
        party.sessions.insert(peer, session);
        // With fresh randomness the new session is ours alone; the snapshot replaces it.
        self.after(event, mode == Mode::Recorded)
    }

    fn encrypt(&mut self, event: &Value) -> Res<()> {
        let msg = self.message(num(event, "message")?)?;
        let plaintext = bytes(msg, "plaintext")?;
        let expected = bytes(msg, "envelope")?;
        let peer = text(event, "peer")?.to_owned();
        let party = self.party(event)?;
        let session = party
            .sessions
            .get_mut(&peer)
            .ok_or_else(|| format!("no session with {peer}"))?;
        let envelope = session.encrypt(&plaintext).map_err(|e| e.to_string())?;
        if event.get("cleared_pending_prekey").and_then(Value::as_bool) == Some(true) {
            session.clear_pending_prekey();
        }
        expect_eq("envelope", &envelope.to_bytes(), &expected)?;
        self.envelopes_matched += 1;
        self.after(event, true)
    }

    fn encrypt_unrecorded(&mut self, event: &Value) -> Res<()> {
        let count = num(event, "count")?;
        let peer = text(event, "peer")?.to_owned();
        let party = self.party(event)?;
        let session = party
            .sessions
            .get_mut(&peer)
            .ok_or_else(|| format!("no session with {peer}"))?;
        for _ in 0..count {
            session.encrypt(b"unrecorded").map_err(|e| e.to_string())?;
        }
        self.after(event, true)
    }

    fn decrypt(&mut self, event: &Value) -> Res<()> {
        let raw = match event.get("envelope") {
            Some(_) => bytes(event, "envelope")?,
            None => bytes(self.message(num(event, "message")?)?, "envelope")?,
        };
        let expect = get(event, "expect")?;
        let ok_expected = get(expect, "ok")?
            .as_bool()
            .ok_or("`expect.ok` is not a boolean")?;
        let listed_removed: BTreeSet<u64> =
            match event.get("prekeys_removed").and_then(Value::as_array) {
                Some(ids) => ids.iter().filter_map(Value::as_u64).collect(),
                None => BTreeSet::new(),
            };
        let mode = self.mode;
        let mut recorded = Self::rng(event)?;
        let peer = text(event, "peer")?.to_owned();
        let party = self.party(event)?;
        let prekeys_before: BTreeSet<u64> = party
            .prekeys
            .keys()
            .map(|id| u64::from(id.value()))
            .collect();
        let session_before = party.sessions.get(&peer).map(|s| s.to_bytes().to_vec());
        let created = session_before.is_none();
        let prekeys_kept = party.prekeys.clone();
        let counter = Envelope::from_bytes(&raw)
            .ok()
            .map(|env| env.message().cipher_message().counter);

        let result = Envelope::from_bytes(&raw)
            .map_err(DecryptError::from)
            .and_then(|env| {
                let rng: &mut dyn proteus_core::CryptoRng = match mode {
                    Mode::Recorded => &mut recorded,
                    Mode::Snapshots => &mut OsRng,
                };
                match party.sessions.get_mut(&peer) {
                    Some(session) => {
                        session.decrypt(rng, &party.identity, &mut party.prekeys, &env)
                    }
                    None => {
                        Session::init_from_message(rng, &party.identity, &mut party.prekeys, &env)
                            .map(|inbound| {
                                party.sessions.insert(peer.clone(), inbound.session);
                                inbound.plaintext
                            })
                    }
                }
            });
        let prekeys_after: BTreeSet<u64> = party
            .prekeys
            .keys()
            .map(|id| u64::from(id.value()))
            .collect();
        let removed: BTreeSet<u64> = prekeys_before.difference(&prekeys_after).copied().collect();

        match (result, ok_expected) {
            (Ok(plaintext), true) => {
                expect_eq("plaintext", &plaintext, &bytes(expect, "plaintext")?)?;
                if let Some(flag) = event.get("session_created").and_then(Value::as_bool)
                    && flag != created
                {
                    return Err(format!(
                        "session_created is {flag}, but we created: {created}"
                    ));
                }
                if removed != listed_removed {
                    return Err(format!(
                        "prekeys removed {removed:?}, expected {listed_removed:?}"
                    ));
                }
                self.decrypted += 1;
                let drew_randomness = event
                    .get("rng")
                    .and_then(Value::as_array)
                    .is_some_and(|r| !r.is_empty());
                self.after(event, mode == Mode::Recorded || !drew_randomness)
            }
            (Err(e), false) => {
                let error = get(expect, "error")?;
                let class = text(error, "class")?;
                // An expected divergence: a PreKeyMessage whose MAC fails on the state that
                // holds its chain is rejected there (InvalidSignature). Wire's implementations
                // try it again as a new state, which then fails on the one-time prekey the
                // session's first message consumed (ProteusError, 101). We do not: the new
                // state would derive the same chain and cost a forger a second fast-forward
                // (docs/protocol.md, "A rejected message"). Both reject and change nothing.
                let not_retried = matches!(e, DecryptError::InvalidSignature(_))
                    && class == "ProteusError"
                    && error.get("code").and_then(Value::as_u64) == Some(101)
                    && session_before.is_some();
                if !same_class(&e, class) && !not_retried {
                    return Err(format!(
                        "rejected as {e:?} (code {}), expected {class}",
                        e.code()
                    ));
                }
                if !removed.is_empty() {
                    return Err(format!("a rejected message removed prekeys {removed:?}"));
                }
                let session_now = party.sessions.get(&peer).map(|s| s.to_bytes().to_vec());
                if session_now != session_before {
                    return Err("a rejected message changed the session".into());
                }
                if not_retried {
                    self.not_retried += 1;
                } else {
                    self.rejected += 1;
                }
                self.after(event, true)
            }
            // An expected divergence: JS rejects a gap over 1000 (TooDistantFuture); we
            // fast-forward up to MAX_FAST_FORWARD by design. The message decrypted (its MAC
            // verified); the session and prekeys are put back as they were, so the rest of the
            // vector replays the path JS took.
            (Ok(_), false)
                if text(get(expect, "error")?, "class")? == "TooDistantFuture"
                    && counter.is_some_and(|c| c <= MAX_FAST_FORWARD) =>
            {
                let local = *party.identity.public_key();
                match session_before {
                    Some(bytes) => {
                        let restored =
                            Session::from_bytes(&local, &bytes).map_err(|e| e.to_string())?;
                        party.sessions.insert(peer, restored);
                    }
                    None => {
                        party.sessions.remove(&peer);
                    }
                }
                party.prekeys = prekeys_kept;
                self.fast_forwarded += 1;
                self.after(event, true)
            }
            (Ok(_), false) => Err(format!("decrypted, but {} was expected", expect["error"])),
            (Err(e), true) => Err(format!("rejected as {e:?} (code {}): {e}", e.code())),
        }
    }

    /// Handles `session_after`: compared with ours (when ours should be byte-identical) and, in
    /// snapshot mode, loaded in place of ours.
    fn after(&mut self, event: &Value, compare: bool) -> Res<()> {
        let Some(snapshot) = event.get("session_after").and_then(Value::as_str) else {
            return Ok(());
        };
        let snapshot = hex::decode(snapshot).map_err(|e| e.to_string())?;
        let mode = self.mode;
        let peer = text(event, "peer")?.to_owned();
        let party = self.party(event)?;
        let local: IdentityKey = *party.identity.public_key();
        let loaded = Session::from_bytes(&local, &snapshot)
            .map_err(|e| format!("session_after does not load: {e}"))?;
        expect_eq("re-encoded session_after", &loaded.to_bytes(), &snapshot)?;
        if compare {
            let ours = party
                .sessions
                .get(&peer)
                .ok_or_else(|| format!("no session with {peer}"))?;
            // Our record adds fields under new keys (eviction watermarks, base keys of states);
            // the fields Wire's implementations write must be byte-identical.
            expect_eq("session_after", &ours.to_wire_bytes(), &snapshot)?;
        }
        if mode == Mode::Snapshots {
            party.sessions.insert(peer, loaded);
        }
        self.snapshots_matched += usize::from(compare);
        Ok(())
    }
}
