//! The path of a notification extension (iOS gives one about 24 MiB): a cold process opens a
//! store of [`EXTENSION_SESSIONS`] sessions and [`EXTENSION_PREKEYS`] prekeys, decrypts one
//! message, and closes it. Time and memory, measured in a child process of its own so that its
//! peak resident memory is the path's, with the page cache dropped before each run where the
//! process may (`/proc/sys/vm/drop_caches`, root).
//!
//! Setup (not timed) imports the store in one commit (`Client::import_cryptobox`): the
//! receiver's identity, its prekeys, and one established session stored under every id (each is
//! a whole session record; which one the message is for does not matter to the store).

use std::path::{Path, PathBuf};
use std::time::Instant;

use proteus_client::{
    Client, CryptoboxRecords, ImportOptions, OpenMode, SourceRecord, SqliteOptions,
};
use proteus_core::{OsRng, PreKey, PreKeyId};
use serde::{Deserialize, Serialize};
use tempfile::TempDir;

use crate::BoxError;
use crate::memory::{current_rss_bytes, mib, peak_rss_bytes};

/// The sessions of the store the issue names; [`EXTENSION_SESSIONS_LARGE`] shows it stays flat.
pub const EXTENSION_SESSIONS: usize = 10_000;
/// Ten times as many.
pub const EXTENSION_SESSIONS_LARGE: usize = 100_000;
/// One-time prekeys in the store.
pub const EXTENSION_PREKEYS: u16 = 1000;

/// A store and the message that arrives for it.
pub struct ExtensionSetup {
    /// Kept (not deleted) with `PROTEUS_BENCH_KEEP` set.
    dir: TempDir,
    /// The session the message is for.
    pub session_id: String,
}

impl ExtensionSetup {
    /// Writes the store of `sessions` sessions and the message.
    pub fn create(sessions: usize) -> Result<Self, BoxError> {
        let mut phone = Client::in_memory()?;
        let mut peer = Client::in_memory()?;
        let bundle = phone.generate_prekeys(1)?.remove(0).to_bytes();
        peer.create_session("phone", &bundle)?;
        phone.decrypt("peer", &peer.encrypt("phone", b"hello")?)?;
        peer.decrypt("phone", &phone.encrypt("peer", b"hi")?)?;
        let session = phone.export_session("peer")?;
        let prekeys = (1..=EXTENSION_PREKEYS)
            .map(PreKeyId::new)
            .chain([PreKeyId::LAST_RESORT])
            .map(|id| SourceRecord::new("", PreKey::generate(id, &mut OsRng).to_bytes().to_vec()))
            .collect();
        let records = (0..sessions)
            .map(|i| SourceRecord::new(session_id(i), session.to_vec()))
            .collect();
        let source = CryptoboxRecords::new(phone.export_identity(), prekeys, records);
        let dir = tempfile::Builder::new()
            .prefix("proteus-bench-extension-")
            .tempdir()?;
        let mut store = Client::open(dir.path().join(TEMPLATE))?;
        store.import_cryptobox(&source, ImportOptions::default(), &mut |_| {})?;
        drop(store);
        let envelope = peer.encrypt("phone", b"a notification")?;
        std::fs::write(dir.path().join(ENVELOPE), envelope)?;
        Ok(Self {
            dir,
            session_id: session_id(sessions / 2),
        })
    }

    /// Keeps the directory if `PROTEUS_BENCH_KEEP` is set (to profile a child by hand).
    pub fn keep_if_asked(self) {
        if std::env::var_os("PROTEUS_BENCH_KEEP").is_some() {
            let _ = self.dir.keep();
        }
    }

    /// Copies the store and the message into `dir` as `template.db` and `message.bin`, with
    /// the session id in `session-id`: the setup of `ffi/uniffi/bench/extension.sh`, which
    /// runs the same path from Kotlin and Swift (`proteus-bench --extension-setup DIR`).
    pub fn write_to(&self, dir: &Path) -> Result<(), BoxError> {
        std::fs::create_dir_all(dir)?;
        std::fs::copy(self.dir.path().join(TEMPLATE), dir.join(TEMPLATE))?;
        std::fs::copy(self.dir.path().join(ENVELOPE), dir.join(ENVELOPE))?;
        std::fs::write(dir.join("session-id"), &self.session_id)?;
        Ok(())
    }

    /// A fresh copy of the store, for one run (the run changes it), and the message's file.
    pub fn fresh(&self, run: usize) -> Result<(PathBuf, PathBuf), BoxError> {
        let copy = self.dir.path().join(format!("run-{run}.db"));
        std::fs::copy(self.dir.path().join(TEMPLATE), &copy)?;
        // On the disk before the run, as a store that has been there a while: otherwise the
        // run's first fsync of the store writes the whole copy, and the page cache keeps it.
        std::fs::File::open(&copy)?.sync_all()?;
        Ok((copy, self.dir.path().join(ENVELOPE)))
    }
}

const TEMPLATE: &str = "template.db";
const ENVELOPE: &str = "message.bin";

fn session_id(i: usize) -> String {
    format!("user-{i:06}@client")
}

/// Drops the page cache, so that the next open reads the store from the disk; whether it could.
pub fn drop_page_cache() -> bool {
    std::fs::write("/proc/sys/vm/drop_caches", "1").is_ok()
}

/// One run of the path.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExtensionResult {
    /// Opening the store, in milliseconds.
    pub open_ms: f64,
    /// Decrypting the message (its commit included).
    pub decrypt_ms: f64,
    /// Closing the store.
    pub close_ms: f64,
    /// The three.
    pub total_ms: f64,
    /// Peak resident memory (`VmHWM`) over what the process had before opening, in MiB.
    pub rss_growth_mib: f64,
}

/// The path, in this process: open `store`, decrypt the message in `envelope` for
/// `session_id`, close.
pub fn measure(
    store: &Path,
    envelope: &Path,
    session_id: &str,
) -> Result<ExtensionResult, BoxError> {
    let envelope = std::fs::read(envelope)?;
    let before = current_rss_bytes().unwrap_or(0);
    let start = Instant::now();
    let mut client = Client::open_with(store, OpenMode::Existing, &SqliteOptions::default())?;
    let opened = Instant::now();
    let plaintext = client.decrypt(session_id, &envelope)?;
    let decrypted = Instant::now();
    drop(client);
    let closed = Instant::now();
    if plaintext != b"a notification" {
        return Err("the message did not decrypt to its plaintext".into());
    }
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1000.0;
    Ok(ExtensionResult {
        open_ms: ms(start, opened),
        decrypt_ms: ms(opened, decrypted),
        close_ms: ms(decrypted, closed),
        total_ms: ms(start, closed),
        rss_growth_mib: mib(peak_rss_bytes().unwrap_or(0).saturating_sub(before)),
    })
}
