//! `encrypt_for` on the batch's threads (native builds): the recipients are shared out in
//! groups between the calling thread and the pool's helpers (`client/share.rs`), a session
//! listed more than once encrypting its envelopes in list order. The results, their order and
//! the single commit are those of the sequential loop in `fanout.rs`.

use super::Client;
use super::share::share;
use crate::collections::HashMap;
use crate::error::ClientError;
use crate::records::check_session_id;
use crate::session_cache::CachedSession;

/// Recipients taken by one thread at a time; below twice this many, a fan-out stays on the
/// calling thread (handing work to another thread would cost more than it saves).
const MIN_PER_WORKER: usize = 16;

/// A recipient's result, as `encrypt_for` returns it.
type Encrypted = Result<Vec<u8>, ClientError>;

/// One distinct session of a fan-out: where it is listed, and its results.
struct Recipient<'s> {
    session_id: &'s str,
    cached: CachedSession,
    /// The positions in `session_ids` that name it, ascending.
    at: Vec<usize>,
    results: Vec<Encrypted>,
}

impl Client {
    /// The parallel `encrypt_for_op`; `None` if this fan-out is better done on one thread.
    pub(super) fn encrypt_for_parallel<'s>(
        &mut self,
        session_ids: &[&'s str],
        plaintext: &[u8],
    ) -> Option<(Vec<Encrypted>, Vec<&'s str>)> {
        if session_ids.len() < 2 * MIN_PER_WORKER || self.batch_threads() < 2 {
            return None;
        }
        let pool = self.batch_pool.pool()?;
        // Helpers that were late lately rest: the sequential loop is one thread's fastest.
        pool.on_time()?;
        // Sessions are read here, in order; one that is missing, invalid or unreadable is
        // a result at once (each time it is listed, as the sequential loop reads it each time).
        let mut results: Vec<Option<Encrypted>> = Vec::with_capacity(session_ids.len());
        let mut recipients: Vec<Recipient<'s>> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::default();
        for (i, &session_id) in session_ids.iter().enumerate() {
            if let Some(r) = index.get(session_id).and_then(|&r| recipients.get_mut(r)) {
                r.at.push(i);
                results.push(None);
                continue;
            }
            let taken = check_session_id(session_id).and_then(|()| {
                let identity = self.identity.public_key();
                self.sessions
                    .take(&*self.storage, identity, session_id)?
                    .ok_or_else(|| ClientError::SessionNotFound(session_id.to_owned()))
            });
            match taken {
                Ok(cached) => {
                    index.insert(session_id, recipients.len());
                    recipients.push(Recipient {
                        session_id,
                        cached,
                        at: vec![i],
                        results: Vec::new(),
                    });
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        let mut groups: Vec<&mut [Recipient<'s>]> = recipients.chunks_mut(MIN_PER_WORKER).collect();
        let _helped = share(
            Some(&pool),
            &mut groups,
            &|group: &mut &mut [Recipient<'s>]| {
                for r in group.iter_mut() {
                    r.results =
                        r.at.iter()
                            .map(|_| {
                                r.cached
                                    .sending()
                                    .encrypt(plaintext)
                                    .map(|envelope| envelope.to_bytes())
                                    .map_err(ClientError::from)
                            })
                            .collect();
                }
            },
        );
        // The sessions to commit, in the order of their first envelope, as the loop has them.
        let mut advanced: Vec<(usize, &'s str)> = Vec::with_capacity(recipients.len());
        for r in recipients {
            let first_ok = r.at.iter().zip(&r.results).find(|(_, e)| e.is_ok());
            if let Some((&i, _)) = first_ok {
                advanced.push((i, r.session_id));
            }
            for (i, result) in r.at.into_iter().zip(r.results) {
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(result);
                }
            }
            self.sessions.put(r.session_id, r.cached);
        }
        advanced.sort_unstable_by_key(|(i, _)| *i);
        let results = results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(missing_envelope())))
            .collect();
        Some((results, advanced.into_iter().map(|(_, id)| id).collect()))
    }
}

/// A recipient left without a result: never expected; it is reported, not sent.
fn missing_envelope() -> ClientError {
    ClientError::Store(crate::error::StoreError::Backend(
        "a fan-out worker gave no result for a recipient".into(),
    ))
}
