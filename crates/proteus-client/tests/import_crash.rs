//! Crash test of `Client::import_cryptobox_directory`: a child process importing a large
//! cryptobox directory into a new SQLite store is killed with SIGKILL at random points. After
//! every kill the store opens and holds either exactly what it held before (its own identity,
//! nothing else) or the whole import: never a part of it.
//!
//! Environment: `PROTEUS_CRASH_ITERATIONS` (default 12) kills, `PROTEUS_CRASH_SEED` the PRNG
//! seed (printed).
//!
//! ```text
//! cargo test -p proteus-client --test import_crash -- --nocapture
//! ```

#![cfg(all(feature = "sqlite", feature = "cryptobox-directory", unix))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proteus_client::{Client, ImportOptions, OpenMode, SqliteOptions};
use proteus_core::{OsRng, PreKey, PreKeyId};

const CHILD_VAR: &str = "PROTEUS_IMPORT_CRASH_CHILD";
/// Sessions in the source: enough that the import's commit takes a while.
const SESSIONS: usize = 4000;
const PREKEYS: u16 = 200;

fn open(path: &Path) -> Client {
    Client::open_with(path, OpenMode::Existing, &SqliteOptions::default()).unwrap()
}

/// The child: imports the directory named by the environment into the store, then says so.
#[test]
fn import_crash_child() {
    let Ok(args) = std::env::var(CHILD_VAR) else {
        return;
    };
    let (store, source) = args.split_once('\n').unwrap();
    let mut client = open(Path::new(store));
    client
        .import_cryptobox_directory(source, ImportOptions::default(), &mut |_| {})
        .unwrap();
    println!("imported");
}

/// A source directory in Wire's Rust cryptobox layout: an identity, its prekeys, and one real
/// session stored under many ids (each decodes; only their number matters here).
fn write_source(dir: &Path) -> String {
    let mut alice = Client::in_memory().unwrap();
    let bob_bundle = Client::in_memory()
        .unwrap()
        .generate_prekeys(1)
        .unwrap()
        .remove(0)
        .to_bytes();
    alice.create_session("bob", &bob_bundle).unwrap();
    let session = alice.export_session("bob").unwrap();
    std::fs::create_dir_all(dir.join("identities")).unwrap();
    std::fs::create_dir_all(dir.join("prekeys")).unwrap();
    std::fs::create_dir_all(dir.join("sessions")).unwrap();
    std::fs::write(
        dir.join("identities/local_identity"),
        alice.export_identity(),
    )
    .unwrap();
    for id in 1..=PREKEYS {
        let prekey = PreKey::generate(PreKeyId::new(id), &mut OsRng);
        std::fs::write(dir.join(format!("prekeys/{id}")), prekey.to_bytes()).unwrap();
    }
    for i in 0..SESSIONS {
        std::fs::write(dir.join(format!("sessions/user-{i}@client")), &session).unwrap();
    }
    alice.fingerprint()
}

/// xorshift64*: the kill points.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

#[test]
fn killed_mid_import_the_store_holds_all_of_it_or_none() {
    if std::env::var(CHILD_VAR).is_ok() {
        return;
    }
    let iterations: usize = std::env::var("PROTEUS_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let seed: u64 = std::env::var("PROTEUS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x1234_5678_9abc_def1);
    println!("PROTEUS_CRASH_SEED={seed}");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("cryptobox");
    let source_fingerprint = write_source(&source);
    let exe = std::env::current_exe().unwrap();

    let run_child = |store: &Path, kill_after: Option<Duration>| -> bool {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "import_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD_VAR,
                format!("{}\n{}", store.display(), source.display()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if let Some(after) = kill_after {
            let start = Instant::now();
            while start.elapsed() < after {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).contains("imported")
    };

    // One import to its end: how long it takes here, so that kills land anywhere in it.
    let store = dir.path().join("whole.db");
    drop(Client::open(&store).unwrap());
    let start = Instant::now();
    assert!(
        run_child(&store, None),
        "an import without a kill completes"
    );
    let whole = start.elapsed();
    assert_eq!(open(&store).session_ids().unwrap().len(), SESSIONS);

    let (mut before, mut after) = (0, 0);
    for i in 0..iterations {
        let store = dir.path().join(format!("store-{i}.db"));
        let own_fingerprint = Client::open(&store).unwrap().fingerprint();
        let kill_after = whole.mul_f64(1.2) * u32::try_from(rng.below(1000)).unwrap() / 1000;
        let completed = run_child(&store, Some(kill_after));

        let client = open(&store);
        let sessions = client.session_ids().unwrap().len();
        if client.fingerprint() == own_fingerprint {
            assert_eq!(
                sessions, 0,
                "kill {i} at {kill_after:?}: part of the import is there"
            );
            assert_eq!(client.prekeys_remaining().unwrap(), 0);
            assert!(!completed);
            before += 1;
        } else {
            assert_eq!(client.fingerprint(), source_fingerprint);
            assert_eq!(sessions, SESSIONS, "kill {i} at {kill_after:?}");
            assert_eq!(client.prekeys_remaining().unwrap(), usize::from(PREKEYS));
            after += 1;
        }
    }
    println!(
        "an import took {whole:?}; {iterations} kills: {before} left the store as it was, {after} after the commit"
    );
}
