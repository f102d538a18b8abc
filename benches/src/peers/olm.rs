//! The scenarios of [`crate::scenarios`] on vodozemac's Olm: same message counts, same
//! plaintexts, same shapes.
//!
//! Olm and Proteus are the same kind of protocol (three Diffie-Hellmans on a session's first
//! message, then a double ratchet), so the workloads map one to one: a PreKeyMessage for a
//! one-time key where ours carries a prekey id, an established session where the receiver has
//! replied. Olm's messages are libolm's (`SessionConfig::version_1`, what Matrix clients send).
//!
//! Every run loads its accounts and sessions from pickles before the clock starts, as ours
//! installs its seeds. The timed part decodes each message from its bytes, finds the session
//! (a PreKeyMessage whose keys match none creates one from the account, using up the one-time
//! key) and decrypts; it persists nothing (ours includes its in-memory store's commit), so the
//! comparison leans towards the peer. Every plaintext is checked afterwards, or as it arrives in
//! `conv10`, as ours is.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use vodozemac::olm::{Account, AccountPickle, OlmMessage, Session, SessionConfig, SessionPickle};

use crate::fanout::{PLAINTEXT_LEN, RECIPIENTS, recipient_id};
use crate::scenarios::{ALICE, BOB, QUEUE_LEN, ScenarioKind, sender_id};
use crate::{BoxError, chat_plaintext};

/// The Olm variant Matrix clients use (libolm's, with the MAC truncated to 8 bytes).
fn config() -> SessionConfig {
    SessionConfig::version_1()
}

/// An account and its sessions as JSON pickles, loaded afresh for every run.
#[derive(Clone)]
struct Seed {
    account: String,
    sessions: Vec<(String, String)>,
}

/// A party during a run: its account and its sessions by peer, newest last.
struct Party {
    account: Account,
    sessions: HashMap<String, Vec<Session>>,
}

impl Party {
    fn new() -> Self {
        Self {
            account: Account::new(),
            sessions: HashMap::new(),
        }
    }

    fn seed(&self) -> Result<Seed, BoxError> {
        let mut sessions = Vec::new();
        for (peer, list) in &self.sessions {
            for session in list {
                sessions.push((peer.clone(), serde_json::to_string(&session.pickle())?));
            }
        }
        Ok(Seed {
            account: serde_json::to_string(&self.account.pickle())?,
            sessions,
        })
    }

    fn load(seed: &Seed) -> Result<Self, BoxError> {
        let pickle: AccountPickle = serde_json::from_str(&seed.account)?;
        let mut sessions: HashMap<String, Vec<Session>> = HashMap::new();
        for (peer, session) in &seed.sessions {
            let pickle: SessionPickle = serde_json::from_str(session)?;
            sessions
                .entry(peer.clone())
                .or_default()
                .push(Session::from_pickle(pickle));
        }
        Ok(Self {
            account: Account::from_pickle(pickle),
            sessions,
        })
    }

    /// Starts a session to `peer` from its identity key and a one-time key of its.
    fn start(&mut self, peer: &str, theirs: &mut Account) -> Result<(), BoxError> {
        theirs.generate_one_time_keys(1);
        let one_time_key = *theirs
            .one_time_keys()
            .values()
            .next()
            .ok_or("no one-time key")?;
        theirs.mark_keys_as_published();
        let session = self.account.create_outbound_session(
            config(),
            theirs.curve25519_key(),
            one_time_key,
        )?;
        self.sessions
            .entry(peer.to_owned())
            .or_default()
            .push(session);
        Ok(())
    }

    fn encrypt(&mut self, peer: &str, plaintext: &[u8]) -> Result<Wire, BoxError> {
        let session = self
            .sessions
            .get_mut(peer)
            .and_then(|list| list.last_mut())
            .ok_or("no session")?;
        let (message_type, bytes) = session.encrypt(plaintext)?.to_parts();
        Ok(Wire {
            message_type,
            bytes,
        })
    }

    /// What a receiving client does with one message from `peer`: decode it, decrypt it with
    /// the session it belongs to, or create that session from a PreKeyMessage.
    fn decrypt(&mut self, peer: &str, message: &Wire) -> Result<Vec<u8>, BoxError> {
        let message = OlmMessage::from_parts(message.message_type, &message.bytes)?;
        let sessions = self.sessions.entry(peer.to_owned()).or_default();
        match &message {
            OlmMessage::PreKey(prekey) => {
                let keys = prekey.session_keys();
                if let Some(session) = sessions.iter_mut().find(|s| s.session_keys() == keys) {
                    return Ok(session.decrypt(&message)?);
                }
                let created =
                    self.account
                        .create_inbound_session(config(), prekey.identity_key(), prekey)?;
                sessions.push(created.session);
                Ok(created.plaintext)
            }
            OlmMessage::Normal(_) => {
                // Newest first, as a client tries them.
                for session in sessions.iter_mut().rev() {
                    if let Ok(plaintext) = session.decrypt(&message) {
                        return Ok(plaintext);
                    }
                }
                Err("no session decrypts the message".into())
            }
        }
    }
}

/// A message as it travels: libolm's type (0 pre-key, 1 normal) and its bytes.
#[derive(Clone)]
struct Wire {
    message_type: usize,
    bytes: Vec<u8>,
}

struct Queued {
    from: String,
    message: Wire,
    plaintext: Vec<u8>,
}

/// `a` starts a session with `b` (knowing it as `b_id`), sends "hello", `b` replies (knowing `a`
/// as `a_id`) and `a` reads the reply: both sessions are established.
fn establish(a: &mut Party, a_id: &str, b: &mut Party, b_id: &str) -> Result<(), BoxError> {
    a.start(b_id, &mut b.account)?;
    let hello = a.encrypt(b_id, b"hello")?;
    if b.decrypt(a_id, &hello)? != b"hello" {
        return Err("handshake: the PreKeyMessage decrypted to something else".into());
    }
    let reply = b.encrypt(a_id, b"hi")?;
    if a.decrypt(b_id, &reply)? != b"hi" {
        return Err("handshake: the reply decrypted to something else".into());
    }
    Ok(())
}

enum Prepared {
    Queue {
        receiver: Seed,
        messages: Vec<Queued>,
    },
    Conversation {
        alice: Seed,
        bob: Seed,
        plaintexts: Vec<Vec<u8>>,
        flip_every: usize,
    },
    FanOut {
        sender: Seed,
        recipients: Vec<String>,
        plaintext: Vec<u8>,
        /// Recipients (index, state) that decrypt their message after each run.
        samples: Vec<(usize, Seed)>,
    },
}

/// A scenario built for vodozemac, ready for any number of runs.
pub struct OlmBench {
    prepared: Prepared,
}

/// How many messages each side sends before the direction flips in `conv10`.
const FLIP_EVERY: usize = 10;
/// `50x20`: senders, and messages per sender.
const SENDERS: usize = 50;
/// Every this many fan-out recipients, one checks its message (as [`crate::fanout`] does).
const SAMPLE_EVERY: usize = 499;

impl OlmBench {
    /// Builds `kind` (setup, not timed).
    pub fn new(kind: ScenarioKind) -> Result<Self, BoxError> {
        let prepared = match kind {
            ScenarioKind::Fresh => {
                let (mut alice, mut bob) = (Party::new(), Party::new());
                alice.start(BOB, &mut bob.account)?;
                queue_from(&mut alice, &bob)?
            }
            ScenarioKind::Established => {
                let (mut alice, mut bob) = (Party::new(), Party::new());
                establish(&mut alice, ALICE, &mut bob, BOB)?;
                queue_from(&mut alice, &bob)?
            }
            ScenarioKind::Senders => senders()?,
            ScenarioKind::Conversation => {
                let (mut alice, mut bob) = (Party::new(), Party::new());
                establish(&mut alice, ALICE, &mut bob, BOB)?;
                Prepared::Conversation {
                    alice: alice.seed()?,
                    bob: bob.seed()?,
                    plaintexts: (0..QUEUE_LEN).map(chat_plaintext).collect(),
                    flip_every: FLIP_EVERY,
                }
            }
            ScenarioKind::FanOut => fan_out()?,
        };
        Ok(Self { prepared })
    }

    /// One run: the duration of the timed part. Fails if a message does not decrypt to what
    /// was sent.
    pub fn run_once(&self) -> Result<Duration, BoxError> {
        match &self.prepared {
            Prepared::Queue { receiver, messages } => {
                let mut party = Party::load(receiver)?;
                let start = Instant::now();
                let got: Vec<Result<Vec<u8>, BoxError>> = messages
                    .iter()
                    .map(|m| party.decrypt(&m.from, &m.message))
                    .collect();
                let total = start.elapsed();
                for (i, (m, got)) in messages.iter().zip(got).enumerate() {
                    if got? != m.plaintext {
                        return Err(format!("message {i} decrypted to something else").into());
                    }
                }
                Ok(total)
            }
            Prepared::Conversation {
                alice,
                bob,
                plaintexts,
                flip_every,
            } => {
                let (mut alice, mut bob) = (Party::load(alice)?, Party::load(bob)?);
                let start = Instant::now();
                for (index, block) in plaintexts.chunks(*flip_every).enumerate() {
                    let (sender, to, receiver, from) = if index % 2 == 0 {
                        (&mut alice, BOB, &mut bob, ALICE)
                    } else {
                        (&mut bob, ALICE, &mut alice, BOB)
                    };
                    let messages = block
                        .iter()
                        .map(|p| sender.encrypt(to, p))
                        .collect::<Result<Vec<_>, _>>()?;
                    for (message, plaintext) in messages.iter().zip(block) {
                        if receiver.decrypt(from, message)? != *plaintext {
                            return Err("a message decrypted to something else".into());
                        }
                    }
                }
                Ok(start.elapsed())
            }
            Prepared::FanOut {
                sender,
                recipients,
                plaintext,
                samples,
            } => {
                let mut party = Party::load(sender)?;
                // Olm has no session cache to warm; the untimed send keeps the shape of ours.
                for id in recipients {
                    party.encrypt(id, b"warm")?;
                }
                let start = Instant::now();
                let sent = recipients
                    .iter()
                    .map(|id| party.encrypt(id, plaintext))
                    .collect::<Result<Vec<_>, _>>()?;
                let total = start.elapsed();
                check_fan_out(recipients, samples, plaintext, &sent)?;
                Ok(total)
            }
        }
    }
}

/// Alice encrypts [`QUEUE_LEN`] messages for Bob, whose state before them starts each run.
fn queue_from(alice: &mut Party, bob: &Party) -> Result<Prepared, BoxError> {
    let messages = (0..QUEUE_LEN)
        .map(|i| {
            let plaintext = chat_plaintext(i);
            Ok(Queued {
                from: ALICE.to_owned(),
                message: alice.encrypt(BOB, &plaintext)?,
                plaintext,
            })
        })
        .collect::<Result<Vec<_>, BoxError>>()?;
    Ok(Prepared::Queue {
        receiver: bob.seed()?,
        messages,
    })
}

/// 50 senders, each with a session from a one-time key of the receiver's, 20 messages each,
/// round-robin: every sender's messages are PreKeyMessages (none got a reply).
fn senders() -> Result<Prepared, BoxError> {
    let mut receiver = Party::new();
    let mut senders = Vec::with_capacity(SENDERS);
    for _ in 0..SENDERS {
        let mut sender = Party::new();
        sender.start(BOB, &mut receiver.account)?;
        senders.push(sender);
    }
    let mut messages = Vec::with_capacity(QUEUE_LEN);
    for _ in 0..QUEUE_LEN / SENDERS {
        for (i, sender) in senders.iter_mut().enumerate() {
            let plaintext = chat_plaintext(messages.len());
            messages.push(Queued {
                from: sender_id(i),
                message: sender.encrypt(BOB, &plaintext)?,
                plaintext,
            });
        }
    }
    Ok(Prepared::Queue {
        receiver: receiver.seed()?,
        messages,
    })
}

/// A sender with [`RECIPIENTS`] established sessions (setup; seconds).
fn fan_out() -> Result<Prepared, BoxError> {
    let mut sender = Party::new();
    let mut samples = Vec::new();
    let recipients: Vec<String> = (0..RECIPIENTS).map(recipient_id).collect();
    for (index, id) in recipients.iter().enumerate() {
        let mut receiver = Party::new();
        establish(&mut sender, ALICE, &mut receiver, id)?;
        if index % SAMPLE_EVERY == 0 {
            samples.push((index, receiver.seed()?));
        }
    }
    Ok(Prepared::FanOut {
        sender: sender.seed()?,
        recipients,
        plaintext: vec![b'x'; PLAINTEXT_LEN],
        samples,
    })
}

/// Every recipient got a message; the sampled ones decrypt theirs to the plaintext (skipping
/// the warm-up message, which they never got).
fn check_fan_out(
    recipients: &[String],
    samples: &[(usize, Seed)],
    plaintext: &[u8],
    sent: &[Wire],
) -> Result<(), BoxError> {
    if sent.len() != recipients.len() {
        return Err(format!(
            "{} messages for {} recipients",
            sent.len(),
            recipients.len()
        )
        .into());
    }
    for (index, seed) in samples {
        let mut receiver = Party::load(seed)?;
        let message = sent.get(*index).ok_or("no message")?;
        if message.message_type != 1 {
            return Err("an established session sent a pre-key message".into());
        }
        if receiver.decrypt(ALICE, message)? != plaintext {
            return Err(format!("recipient {index} read something else").into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each queue and conversation scenario builds on vodozemac and runs once with every
    /// plaintext checked (fan-out builds 4000 sessions: it runs in `scripts/test.sh bench`).
    #[test]
    fn the_scenarios_run_on_vodozemac() -> Result<(), BoxError> {
        for kind in [
            ScenarioKind::Fresh,
            ScenarioKind::Established,
            ScenarioKind::Senders,
            ScenarioKind::Conversation,
        ] {
            let bench = OlmBench::new(kind)?;
            bench.run_once().map_err(|e| format!("{kind}: {e}"))?;
            // A second run starts from the same state.
            bench
                .run_once()
                .map_err(|e| format!("{kind}, again: {e}"))?;
        }
        Ok(())
    }

    /// The shapes match ours: the prekey messages are where ours has PreKeyMessages.
    #[test]
    fn the_queues_have_the_shapes_of_ours() -> Result<(), BoxError> {
        let prekeys = |kind| -> Result<Vec<bool>, BoxError> {
            match OlmBench::new(kind)?.prepared {
                Prepared::Queue { messages, .. } => Ok(messages
                    .iter()
                    .map(|m| m.message.message_type == 0)
                    .collect()),
                _ => Err("not a queue".into()),
            }
        };
        assert!(prekeys(ScenarioKind::Fresh)?.iter().all(|p| *p));
        assert!(prekeys(ScenarioKind::Established)?.iter().all(|p| !*p));
        let senders = prekeys(ScenarioKind::Senders)?;
        assert_eq!(senders.len(), QUEUE_LEN);
        assert!(senders.iter().all(|p| *p), "no sender got a reply");
        Ok(())
    }
}
