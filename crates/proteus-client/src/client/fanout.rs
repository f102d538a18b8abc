//! Fan-out: one plaintext encrypted for many sessions (every device in a conversation), with
//! one commit for all of them.

use super::Client;
use crate::collections::SortedSet;
use crate::error::ClientError;

impl Client {
    /// Encrypts `plaintext` once for each session in `session_ids` (the devices of a
    /// conversation) and commits every advanced sending chain in one transaction, before any
    /// envelope is returned.
    ///
    /// Each recipient gets its own result, in the order of `session_ids`: a session that does
    /// not exist, an invalid id or a damaged record is an `Err` in its place, and the others are
    /// still encrypted. The call fails as a whole only if the commit fails; then nothing is
    /// stored and no envelope is returned. An id listed twice gets two envelopes. Time is linear
    /// in the number of recipients.
    pub fn encrypt_for(
        &mut self,
        session_ids: &[&str],
        plaintext: &[u8],
    ) -> Result<Vec<Result<Vec<u8>, ClientError>>, ClientError> {
        self.operation(|this| this.encrypt_for_op(session_ids, plaintext))
    }

    fn encrypt_for_op(
        &mut self,
        session_ids: &[&str],
        plaintext: &[u8],
    ) -> Result<Vec<Result<Vec<u8>, ClientError>>, ClientError> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some((results, advanced)) = self.encrypt_for_parallel(session_ids, plaintext) {
            self.commit_sessions(advanced.iter().copied(), &SortedSet::new())?;
            return Ok(results);
        }
        let mut results = Vec::with_capacity(session_ids.len());
        let mut seen = crate::collections::set_with_capacity(session_ids.len());
        let mut advanced = Vec::with_capacity(session_ids.len());
        for &session_id in session_ids {
            let result = self
                .session(session_id)
                .and_then(|s| s.encrypt(plaintext).map_err(ClientError::from))
                .map(|envelope| envelope.to_bytes());
            if result.is_ok() && seen.insert(session_id) {
                advanced.push(session_id);
            }
            results.push(result);
        }
        self.commit_sessions(advanced.iter().copied(), &SortedSet::new())?;
        Ok(results)
    }
}
