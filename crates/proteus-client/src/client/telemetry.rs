//! What a client reports about itself: the last batch's summary, and the log lines that are
//! about the client's state rather than one operation (the prekey stock).

use super::Client;
use crate::batch::BatchSummary;
use crate::logging::{LOG_TARGET, PREKEY_LOW_WATER};

impl Client {
    /// Warns when a commit that used up one-time prekeys left fewer than [`PREKEY_LOW_WATER`]
    /// (the stock is counted only when warnings are logged).
    pub(super) fn log_prekey_stock(&self) {
        if log::log_enabled!(target: LOG_TARGET, log::Level::Warn)
            && let Ok(left) = self.prekeys_remaining()
            && left < PREKEY_LOW_WATER
        {
            log::warn!(
                target: LOG_TARGET,
                "{left} one-time prekeys left (low water {PREKEY_LOW_WATER}): top the stock up"
            );
        }
    }

    /// Keeps a committed batch's summary and logs it.
    pub(crate) fn batch_done(&mut self, summary: BatchSummary) {
        log::info!(target: LOG_TARGET, "batch: {summary}");
        self.last_batch = Some(summary);
    }

    /// What the last batch that committed did ([`decrypt_batch`](Self::decrypt_batch),
    /// [`decrypt_batch_chunked`](Self::decrypt_batch_chunked)): its outcomes counted and where
    /// its time went, for telemetry. `None` before the first; a batch that fails leaves the
    /// last one's.
    pub fn last_batch_summary(&self) -> Option<&BatchSummary> {
        self.last_batch.as_ref()
    }
}
