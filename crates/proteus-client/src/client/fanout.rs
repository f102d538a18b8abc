//! Fan-out: one plaintext encrypted for many sessions (every device in a conversation), with
//! one commit for all of them. The sessions are taken out of the cache, encrypted for on the
//! client's executor (each session's envelopes in list order), and put back.

use super::Client;
use crate::collections::{HashMap, SortedSet};
use crate::error::ClientError;
use crate::records::check_session_id;
use crate::session_cache::CachedSession;

/// A recipient's result, as `encrypt_for` returns it.
type Encrypted = Result<Vec<u8>, ClientError>;

/// One distinct session of a fan-out: where it is listed, and its results.
struct Recipient<'s> {
    session_id: &'s str,
    /// The cache's key, kept to put the session back.
    key: String,
    cached: CachedSession,
    /// The positions in `session_ids` that name it, ascending.
    at: Vec<usize>,
    results: Vec<Encrypted>,
}

impl Client {
    /// Encrypts `plaintext` once for each session in `session_ids` (the devices of a
    /// conversation) and commits every advanced sending chain in one transaction, before any
    /// envelope is returned.
    ///
    /// Each recipient gets its own result, in the order of `session_ids`: a session that does
    /// not exist, an invalid id or a damaged record is an `Err` in its place, and the others are
    /// still encrypted. The call fails as a whole only if the commit fails; then nothing is
    /// stored and no envelope is returned. An id listed twice gets two envelopes. Time is linear
    /// in the number of recipients; they are shared out on the client's
    /// [`Executor`](crate::Executor).
    pub fn encrypt_for(
        &mut self,
        session_ids: &[&str],
        plaintext: &[u8],
    ) -> Result<Vec<Result<Vec<u8>, ClientError>>, ClientError> {
        self.operation(|this| this.encrypt_for_op(session_ids, plaintext))
    }

    fn encrypt_for_op<'s>(
        &mut self,
        session_ids: &[&'s str],
        plaintext: &[u8],
    ) -> Result<Vec<Encrypted>, ClientError> {
        // Sessions are read here, in order; one that is missing, invalid or unreadable is a
        // result at once (each time it is listed).
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
                Ok((key, cached)) => {
                    index.insert(session_id, recipients.len());
                    recipients.push(Recipient {
                        session_id,
                        key,
                        cached,
                        at: vec![i],
                        results: Vec::new(),
                    });
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        self.executor.for_each(&mut recipients, |r| {
            r.results = (r.at.iter())
                .map(|_| {
                    let envelope = r.cached.sending().encrypt(plaintext)?;
                    Ok(envelope.to_bytes())
                })
                .collect();
        });
        // The sessions to commit: those with an envelope, in the order they are first listed.
        let mut advanced: Vec<&'s str> = Vec::with_capacity(recipients.len());
        for r in recipients {
            if r.results.iter().any(Result::is_ok) {
                advanced.push(r.session_id);
            }
            for (i, result) in r.at.into_iter().zip(r.results) {
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(result);
                }
            }
            self.sessions.put(r.key, r.cached);
        }
        self.commit_sessions(&advanced, &SortedSet::new())?;
        let missing = || ClientError::Internal("a fan-out gave no result for a recipient".into());
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(missing())))
            .collect())
    }
}
