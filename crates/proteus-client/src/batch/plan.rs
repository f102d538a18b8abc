//! Which messages of a window may be decrypted apart from the others.
//!
//! A window's messages are grouped by session into [`SessionRun`]s. A run owns its session
//! (taken out of the cache) and a snapshot of what it shares with the other runs, read from the
//! store before any run starts: the one-time prekeys its PreKeyMessages name, and whether the
//! replay guard holds their last-resort handshakes. Two sessions whose messages name one
//! one-time prekey, or one last-resort handshake, could each see the other's use of it: they are
//! no runs, and their messages go the ordinary way, in queue order, at hand-over (as do
//! undecodable messages, invalid session ids, and a run whose snapshot the store fails to give,
//! so that the failure is met in queue order).

use proteus_core::{
    CheckedIdentity, DecodeError, Envelope, IdentityKey, Message, PreKey, PreKeyId, PublicKey,
};

use super::types::MessageId;
use super::{Lent, QueuedMessage};
use crate::client::load_pin;
use crate::collections::{OrderedIds, SortedSet};
use crate::error::ClientError;
use crate::prekeys::load_prekey;
use crate::records::check_session_id;
use crate::session_cache::{CachedSession, SessionConfig};

/// Messages taken at a time: results are handed over at the end of each window, so a progress
/// display moves during a batch, and a window is enough work to share out.
const WINDOW: usize = 256;
/// The longest window of one session's run (a backlog from one sender), taken whole: one run
/// plans its chain once instead of once per window.
const MAX_RUN_WINDOW: usize = 4096;

/// A window's envelopes, decoded, with their ids, in queue order.
pub(crate) type Decoded<'q> = Vec<(MessageId, Result<Envelope<'q>, DecodeError>)>;

/// The length of the next window of `rest`: a run of one session longer than [`WINDOW`] whole
/// (up to [`MAX_RUN_WINDOW`]), else [`WINDOW`] messages.
pub(crate) fn window_len(rest: &[QueuedMessage<'_>]) -> usize {
    let Some(first) = rest.first() else {
        return 0;
    };
    let run = rest
        .iter()
        .take(MAX_RUN_WINDOW)
        .take_while(|m| m.session_id == first.session_id)
        .count();
    if run > WINDOW {
        run
    } else {
        WINDOW.min(rest.len())
    }
}

/// Where a message of a window gets its outcome.
pub(crate) enum Slot {
    /// The ordinary way, at hand-over, in queue order.
    Ordinary,
    /// The next outcome of this run (a run's outcomes are in the order of its messages).
    Run(usize),
}

/// A window planned: its runs, and where each message's outcome comes from.
pub(crate) struct Plan<'w, 'q> {
    pub(crate) runs: Vec<SessionRun<'w, 'q>>,
    pub(crate) slots: Vec<Slot>,
}

/// A decrypted message's outcome, and the last-resort handshake it used (for the replay guard).
pub(crate) type RunOutcome = (Result<Vec<u8>, ClientError>, Option<PublicKey>);

/// One session's messages of a window. Runs are independent of each other: each may run on any
/// thread (`batch/run.rs` decrypts one).
pub(crate) struct SessionRun<'w, 'q> {
    pub(crate) session_id: &'q str,
    /// The session, taken out of the cache with its key; `None` while it does not exist.
    pub(crate) cached: Option<CachedSession>,
    pub(crate) key: Option<String>,
    pub(crate) config: SessionConfig,
    pub(crate) envelopes: Vec<&'w Envelope<'q>>,
    /// The prekeys its PreKeyMessages name, as the store holds them at the window's start,
    /// sorted by id: a sorted vector, without a B-tree's code in the web build. A run names one
    /// or two; a sender who names a new one in each of a run's 4,096 messages makes the
    /// inserts quadratic, tens of milliseconds, below the key agreement each of those messages
    /// costs anyway.
    pub(crate) prekeys: Vec<(PreKeyId, Option<PreKey>)>,
    /// Last-resort base keys the replay guard holds (for a session that does not exist).
    pub(crate) replayed: Vec<PublicKey>,
    /// The identity pinned for a session that does not exist, under pinning.
    pub(crate) pin: Option<IdentityKey>,
    /// What the run used up and checked, merged into the batch once its outcomes are handed over.
    pub(crate) removed: SortedSet<PreKeyId>,
    pub(crate) kept: Vec<CheckedIdentity>,
    /// One per envelope, in order, once the run has been decrypted.
    pub(crate) outcomes: Vec<RunOutcome>,
}

/// Groups a window's messages into runs, taking their sessions out of the cache and reading
/// what they share from the store.
pub(crate) fn plan_window<'w, 'q>(
    lent: &mut Lent<'_>,
    window: &[QueuedMessage<'q>],
    decoded: &'w Decoded<'q>,
    removed: &SortedSet<PreKeyId>,
) -> Plan<'w, 'q> {
    let mut sessions = OrderedIds::default();
    let mut groups: Vec<(&'q str, Vec<(usize, &'w Envelope<'q>)>)> = Vec::new();
    for (k, (queued, (_, envelope))) in window.iter().zip(decoded).enumerate() {
        let Ok(envelope) = envelope else {
            continue;
        };
        // A backlog comes in runs of one session: its id is checked once.
        let known = groups
            .last()
            .is_some_and(|(id, _)| *id == queued.session_id);
        if !known && check_session_id(queued.session_id).is_err() {
            continue;
        }
        let g = sessions.add(queued.session_id);
        if g == groups.len() {
            groups.push((queued.session_id, Vec::new()));
        }
        if let Some((_, members)) = groups.get_mut(g) {
            members.push((k, envelope));
        }
    }
    let shared = shared_handshakes(&groups);
    let mut slots: Vec<Slot> = window.iter().map(|_| Slot::Ordinary).collect();
    let mut runs = Vec::with_capacity(groups.len());
    for (g, (session_id, members)) in groups.into_iter().enumerate() {
        if shared.get(g).copied().unwrap_or(true) {
            continue;
        }
        let Some(run) = run_for(lent, session_id, &members, removed) else {
            continue;
        };
        for (k, _) in &members {
            if let Some(slot) = slots.get_mut(*k) {
                *slot = Slot::Run(runs.len());
            }
        }
        runs.push(run);
    }
    Plan { runs, slots }
}

/// The run of one session, or `None` if the store fails to give what it needs.
fn run_for<'w, 'q>(
    lent: &mut Lent<'_>,
    session_id: &'q str,
    members: &[(usize, &'w Envelope<'q>)],
    removed: &SortedSet<PreKeyId>,
) -> Option<SessionRun<'w, 'q>> {
    let storage = lent.storage;
    let identity = lent.identity.public_key();
    let (key, cached) = match lent.sessions.take(storage, identity, session_id).ok()? {
        Some((key, cached)) => (Some(key), Some(cached)),
        None => (None, None),
    };
    let mut prekeys: Vec<(PreKeyId, Option<PreKey>)> = Vec::new();
    let mut replayed = Vec::new();
    let snapshot = members.iter().try_for_each(|(_, envelope)| {
        let Message::PreKey(pkm) = envelope.message() else {
            return Ok(());
        };
        let id = pkm.prekey_id;
        if let Err(at) = prekeys.binary_search_by_key(&id, |p| p.0) {
            let prekey = match removed.contains(&id) {
                true => None,
                false => load_prekey(storage, id)?,
            };
            prekeys.insert(at, (id, prekey));
        }
        if cached.is_none()
            && id.is_last_resort()
            && lent.replay_guard.contains(storage, &pkm.base_key)?
        {
            replayed.push(pkm.base_key);
        }
        Ok::<_, ClientError>(())
    });
    let pin = match cached.is_none() && lent.pinning {
        true => load_pin(storage, session_id),
        false => Ok(None),
    };
    let (Ok(()), Ok(pin)) = (snapshot, pin) else {
        if let (Some(key), Some(cached)) = (key, cached) {
            lent.sessions.put(key, cached);
        }
        return None;
    };
    Some(SessionRun {
        session_id,
        cached,
        key,
        config: lent.sessions.config(),
        envelopes: members.iter().map(|(_, e)| *e).collect(),
        prekeys,
        replayed,
        pin,
        removed: SortedSet::new(),
        kept: Vec::new(),
        outcomes: Vec::new(),
    })
}

/// Which groups (by index) share a one-time prekey or a last-resort handshake with another
/// group of the window: one's use of it changes what the other sees, so they run in queue order.
fn shared_handshakes(groups: &[(&str, Vec<(usize, &Envelope<'_>)>)]) -> Vec<bool> {
    #[derive(PartialEq, Eq)]
    enum Claim {
        PreKey(u16),
        LastResort([u8; 32]),
    }
    let mut shared = vec![false; groups.len()];
    if groups.len() < 2 {
        return shared;
    }
    // Searched in order rather than hashed: a window of several sessions has at most `WINDOW`
    // messages, so at most 256 claims (a few thousand comparisons beside as many handshakes),
    // and no hash table's code goes into the web build for it.
    let mut claimed: Vec<(Claim, usize)> = Vec::new();
    for (g, (_, members)) in groups.iter().enumerate() {
        for (_, envelope) in members {
            let Message::PreKey(pkm) = envelope.message() else {
                continue;
            };
            let claim = if pkm.prekey_id.is_last_resort() {
                Claim::LastResort(*pkm.base_key.as_bytes())
            } else {
                Claim::PreKey(pkm.prekey_id.value())
            };
            let first = match claimed.iter().find(|(c, _)| *c == claim) {
                Some(&(_, first)) => first,
                None => {
                    claimed.push((claim, g));
                    g
                }
            };
            if first != g {
                for at in [first, g] {
                    if let Some(flag) = shared.get_mut(at) {
                        *flag = true;
                    }
                }
            }
        }
    }
    shared
}
