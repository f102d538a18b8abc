//! [`Client::import_cryptobox`]: a whole cryptobox store in one commit (see [`crate::cryptobox`]).

use proteus_core::{IdentityKeyPair, PreKey, PreKeyId, Session};
use zeroize::Zeroizing;

use super::Client;
use crate::codes::ClientCode;
use crate::collections::{OrderedIds, SortedSet};
use crate::cryptobox::{
    BadRecord, CryptoboxRecords, ImportError, ImportOptions, ImportProgress, ImportReport,
    LOCAL_IDENTITY, PROGRESS_EVERY, SourceRecord, SourceTable, identity_key_pair,
};
use crate::error::ClientError;
use crate::records::{META_IDENTITY, META_NEXT_PREKEY_ID, check_session_id, prekey_key};
use crate::replay_guard::ReplayGuard;
use crate::session_cache::SessionCache;
use crate::storage::{Table, Write};

impl Client {
    /// Imports a store that Wire's cryptobox wrote — its identity, prekeys and sessions — in one
    /// commit, keeping every id, so that messages queued before the migration decrypt after it.
    ///
    /// The store must be new (no sessions, no one-time prekeys ever generated): it then takes
    /// the source's identity. A store that already has the source's identity and is in use is
    /// left as it is ([`ImportReport::already_imported`]); one with another identity in use is
    /// refused ([`ImportError::IdentityMismatch`]). Records that do not decode make the import
    /// fail with their list ([`ImportError::BadRecords`]) unless `options` says to skip them.
    /// `progress` hears how many records have been checked. On any error the store is
    /// unchanged.
    pub fn import_cryptobox(
        &mut self,
        source: &CryptoboxRecords,
        options: ImportOptions,
        progress: &mut dyn FnMut(ImportProgress),
    ) -> Result<ImportReport, ClientError> {
        self.operation(|this| this.import_cryptobox_op(source, options, progress))
    }

    /// Reads the cryptobox directory at `path` ([`CryptoboxRecords::read_directory`]) and
    /// imports it ([`import_cryptobox`](Self::import_cryptobox)). The directory is only read.
    #[cfg(feature = "cryptobox-directory")]
    pub fn import_cryptobox_directory(
        &mut self,
        path: impl AsRef<std::path::Path>,
        options: ImportOptions,
        progress: &mut dyn FnMut(ImportProgress),
    ) -> Result<ImportReport, ClientError> {
        let source = CryptoboxRecords::read_directory(path.as_ref())?;
        self.import_cryptobox(&source, options, progress)
    }

    fn import_cryptobox_op(
        &mut self,
        source: &CryptoboxRecords,
        options: ImportOptions,
        progress: &mut dyn FnMut(ImportProgress),
    ) -> Result<ImportReport, ClientError> {
        // The identity is never skipped: without it nothing can be imported.
        let identity = identity_key_pair(&source.identity)
            .map_err(|reason| (ClientCode::ImportBadRecords.number(), reason.to_owned()))
            .and_then(|key_pair| {
                IdentityKeyPair::from_bytes(key_pair).map_err(|e| {
                    let e = ClientError::from(e);
                    (e.code(), e.to_string())
                })
            })
            .map_err(|(code, reason)| {
                ImportError::BadRecords(vec![BadRecord {
                    table: SourceTable::Identity,
                    id: LOCAL_IDENTITY.to_owned(),
                    code,
                    reason,
                }])
            })?;
        let fingerprint = identity.public_key().fingerprint();
        let same_identity = identity.public_key() == self.identity.public_key();
        let (sessions, one_time_prekeys) = self.usage()?;
        if sessions > 0 || one_time_prekeys > 0 {
            if same_identity {
                return Ok(ImportReport {
                    fingerprint,
                    prekeys: 0,
                    sessions: 0,
                    skipped: Vec::new(),
                    already_imported: true,
                });
            }
            return Err(ImportError::IdentityMismatch {
                sessions,
                prekeys: one_time_prekeys,
            }
            .into());
        }

        let mut plan = Plan::new(source, progress);
        for (i, record) in source.prekeys.iter().enumerate() {
            plan.prekey(i, record);
        }
        let mut cache = SessionCache::default();
        cache.set_config(self.sessions.config());
        for record in &source.sessions {
            plan.session(&identity, &mut cache, record);
        }
        plan.report();
        let Plan {
            mut writes,
            mut bad,
            prekeys,
            sessions,
            highest_one_time,
            ..
        } = plan;
        bad.extend(source.unreadable.iter().cloned());
        if !bad.is_empty() && !options.skip_bad_records {
            return Err(ImportError::BadRecords(bad).into());
        }
        if !same_identity {
            writes.push(Write::Put {
                table: Table::Meta,
                key: META_IDENTITY.to_vec(),
                value: identity.to_bytes(),
            });
        }
        if let Some(highest) = highest_one_time {
            let next = (highest + 1) % PreKeyId::LAST_RESORT.value();
            writes.push(Write::Put {
                table: Table::Meta,
                key: META_NEXT_PREKEY_ID.to_vec(),
                value: Zeroizing::new(next.to_be_bytes().to_vec()),
            });
        }
        self.storage.commit(&writes)?;
        self.identity = identity;
        // Nothing cached belongs to the new identity's store.
        self.sessions.clear();
        self.replay_guard = ReplayGuard::default();
        log::info!(
            target: crate::LOG_TARGET,
            "imported a cryptobox store: {sessions} sessions, {prekeys} prekeys, {} records \
             skipped",
            bad.len()
        );
        Ok(ImportReport {
            fingerprint,
            prekeys,
            sessions,
            skipped: bad,
            already_imported: false,
        })
    }

    /// How many sessions the store holds, and how many one-time prekeys it holds or has handed
    /// out (ids allocated since it was made): the store is in use if either is not zero.
    fn usage(&self) -> Result<(usize, usize), ClientError> {
        let sessions = self.storage.scan(Table::Sessions, &[])?.len();
        let next_id = self.storage.get(Table::Meta, META_NEXT_PREKEY_ID)?;
        let handed_out = next_id.is_some_and(|b| b.iter().any(|byte| *byte != 0));
        let one_time = self.prekeys_remaining()?;
        Ok((sessions, one_time.max(usize::from(handed_out))))
    }
}

/// The writes of an import, built record by record.
struct Plan<'a> {
    writes: Vec<Write>,
    bad: Vec<BadRecord>,
    prekey_ids: SortedSet<PreKeyId>,
    session_ids: OrderedIds<'a>,
    prekeys: usize,
    sessions: usize,
    /// The highest one-time prekey id imported: the store's next ids start after it.
    highest_one_time: Option<u16>,
    done: usize,
    total: usize,
    progress: &'a mut dyn FnMut(ImportProgress),
}

impl<'a> Plan<'a> {
    fn new(source: &'a CryptoboxRecords, progress: &'a mut dyn FnMut(ImportProgress)) -> Self {
        Self {
            writes: Vec::with_capacity(source.prekeys.len() + 2 * source.sessions.len() + 2),
            bad: Vec::new(),
            prekey_ids: SortedSet::new(),
            session_ids: OrderedIds::default(),
            prekeys: 0,
            sessions: 0,
            highest_one_time: None,
            // The identity is checked; what a reader could not read is counted as done.
            done: 1 + source.unreadable.len(),
            total: source.len(),
            progress,
        }
    }

    fn prekey(&mut self, index: usize, record: &SourceRecord) {
        let id = if record.id.is_empty() {
            format!("#{index}")
        } else {
            record.id.clone()
        };
        match PreKey::from_bytes(&record.bytes) {
            Err(e) => self
                .bad
                .push(bad(SourceTable::PreKeys, &id, &ClientError::from(e))),
            Ok(prekey) if !self.prekey_ids.insert(prekey.id()) => {
                self.bad.push(duplicate(SourceTable::PreKeys, &id));
            }
            Ok(prekey) => {
                if prekey.id() != PreKeyId::LAST_RESORT {
                    let highest = self.highest_one_time.get_or_insert(0);
                    *highest = (*highest).max(prekey.id().value());
                }
                self.writes.push(Write::Put {
                    table: Table::PreKeys,
                    key: prekey_key(prekey.id()),
                    value: prekey.to_bytes(),
                });
                self.prekeys += 1;
            }
        }
        self.step();
    }

    fn session(
        &mut self,
        identity: &IdentityKeyPair,
        cache: &mut SessionCache,
        record: &'a SourceRecord,
    ) {
        let id = record.id.as_str();
        let decoded = check_session_id(id).and_then(|()| {
            Session::from_bytes(identity.public_key(), &record.bytes).map_err(ClientError::from)
        });
        match decoded {
            Err(e) => self.bad.push(bad(SourceTable::Sessions, id, &e)),
            Ok(_) if self.session_ids.add(id) < self.sessions => {
                self.bad.push(duplicate(SourceTable::Sessions, id));
            }
            Ok(session) => {
                // The writes of a new session as the client stores it (its record without
                // the staged keys, each staged key a record of its own).
                cache.insert_new(id, session);
                cache.writes_for(id, &mut self.writes);
                cache.evict(id);
                self.sessions += 1;
            }
        }
        self.step();
    }

    fn step(&mut self) {
        self.done += 1;
        if self.done.is_multiple_of(PROGRESS_EVERY) {
            self.report();
        }
    }

    fn report(&mut self) {
        (self.progress)(ImportProgress {
            done: self.done,
            total: self.total,
        });
    }
}

fn bad(table: SourceTable, id: &str, error: &ClientError) -> BadRecord {
    BadRecord {
        table,
        id: id.to_owned(),
        code: error.code(),
        reason: error.to_string(),
    }
}

fn duplicate(table: SourceTable, id: &str) -> BadRecord {
    BadRecord {
        table,
        id: id.to_owned(),
        code: ClientCode::ImportBadRecords.number(),
        reason: "a second record with the same id".to_owned(),
    }
}
