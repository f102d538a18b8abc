//! Moving a Wire client over: `Client::import_cryptobox` of a store with 10,000 sessions and 100
//! prekeys (issue 34's size), into a new store in memory and a new SQLite file. The sessions are
//! one established session (messages both ways) under 10,000 ids: each is decoded, checked and
//! written in full, as distinct ones would be.

use std::time::{Duration, Instant};

use proteus_client::{Client, CryptoboxRecords, ImportOptions, SourceRecord};
use proteus_core::{OsRng, PreKey, PreKeyId};

use crate::BoxError;

/// Sessions in the imported store.
pub const SESSIONS: usize = 10_000;
/// One-time prekeys in it (and the last-resort one).
pub const PREKEYS: u16 = 100;

/// The timings of each store, one entry per run.
pub struct Import {
    /// Into a client in memory.
    pub memory: Vec<Duration>,
    /// Into a new SQLite store (the commit included).
    pub sqlite: Vec<Duration>,
}

/// The store to import.
fn source() -> Result<CryptoboxRecords, BoxError> {
    let mut alice = Client::in_memory()?;
    let mut bob = Client::in_memory()?;
    let bundle = bob.generate_prekeys(1)?.remove(0).to_bytes();
    alice.create_session("bob", &bundle)?;
    let hello = alice.encrypt("bob", b"hello")?;
    bob.decrypt("alice", &hello)?;
    alice.decrypt("bob", &bob.encrypt("alice", b"hi")?)?;
    let session = alice.export_session("bob")?;
    let prekeys = (1..=PREKEYS)
        .map(PreKeyId::new)
        .chain([PreKeyId::LAST_RESORT])
        .map(|id| {
            SourceRecord::new(
                id.value().to_string(),
                PreKey::generate(id, &mut OsRng).to_bytes().to_vec(),
            )
        })
        .collect();
    let sessions = (0..SESSIONS)
        .map(|i| SourceRecord::new(format!("user-{i}@client"), session.to_vec()))
        .collect();
    Ok(CryptoboxRecords::new(
        alice.export_identity(),
        prekeys,
        sessions,
    ))
}

/// Imports the store `runs` times into each kind of new store.
pub fn measure(runs: usize) -> Result<Import, BoxError> {
    let source = source()?;
    let dir = tempfile::tempdir()?;
    let mut result = Import {
        memory: Vec::with_capacity(runs),
        sqlite: Vec::with_capacity(runs),
    };
    for run in 0..runs {
        let mut memory = Client::in_memory()?;
        let mut sqlite = Client::open(dir.path().join(format!("store-{run}.db")))?;
        for (client, times) in [
            (&mut memory, &mut result.memory),
            (&mut sqlite, &mut result.sqlite),
        ] {
            let start = Instant::now();
            let report = client.import_cryptobox(&source, ImportOptions::default(), &mut |_| {})?;
            times.push(start.elapsed());
            if report.sessions != SESSIONS || report.prekeys != usize::from(PREKEYS) + 1 {
                return Err(format!(
                    "imported {} sessions, {} prekeys",
                    report.sessions, report.prekeys
                )
                .into());
            }
        }
    }
    Ok(result)
}
