//! Two openers of one store: the second waits up to its busy timeout and gets
//! `StoreError::Busy` (502), never a corrupt or interleaved store. Once the holder is gone
//! (exited, or killed with SIGKILL) the store opens and its data is intact.
//!
//! The holder is this test binary run again as a child process (`holder_child`, which does
//! nothing unless `PROTEUS_HOLDER_STORE` is set): it opens the store, writes to it, creates a
//! "ready" file, and holds the store until a "release" file appears or it is killed.

#![cfg(all(feature = "sqlite", unix))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proteus_client::{Client, ClientError, OpenMode, SqliteOptions, SqliteStorage, StoreError};

const STORE_VAR: &str = "PROTEUS_HOLDER_STORE";
const DIR_VAR: &str = "PROTEUS_HOLDER_DIR";

/// The child side. Not a test of its own: without `PROTEUS_HOLDER_STORE` it returns at once.
#[test]
fn holder_child() {
    let (Some(store), Some(dir)) = (std::env::var_os(STORE_VAR), std::env::var_os(DIR_VAR)) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut client =
        Client::open_with(&store, OpenMode::Existing, &SqliteOptions::default()).unwrap();
    client.generate_prekeys(1).unwrap();
    std::fs::write(dir.join("ready"), client.fingerprint()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("release").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    client.generate_prekeys(1).unwrap();
    drop(client);
    std::fs::write(dir.join("released"), b"").unwrap();
}

struct Holder {
    child: Child,
    dir: PathBuf,
}

impl Holder {
    fn start(store: &Path, dir: &Path) -> Self {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["holder_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(STORE_VAR, store)
            .env(DIR_VAR, dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut holder = Self {
            child,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !dir.join("ready").exists() {
            if let Some(status) = holder.child.try_wait().unwrap() {
                panic!("the holder exited early: {status}");
            }
            assert!(Instant::now() < deadline, "the holder did not get ready");
            std::thread::sleep(Duration::from_millis(5));
        }
        holder
    }

    fn release(mut self) {
        std::fs::write(self.dir.join("release"), b"").unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "holder: {status}");
        assert!(self.dir.join("released").exists());
    }

    fn kill(mut self) {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Opens `path` with a short busy timeout and checks it is Busy, after about that long.
fn assert_busy(path: &Path) {
    let timeout = Duration::from_millis(300);
    let options = SqliteOptions {
        busy_timeout: timeout,
    };
    for mode in [OpenMode::Existing, OpenMode::ExistingOrNew] {
        let started = Instant::now();
        let r = Client::open_with(path, mode, &options);
        let waited = started.elapsed();
        match r {
            Err(ClientError::Store(StoreError::Busy)) => {}
            other => panic!("expected Busy, got {other:?}"),
        }
        assert!(
            waited >= timeout / 2,
            "gave up after {waited:?} without waiting for the busy timeout"
        );
        assert!(
            waited < timeout + Duration::from_secs(3),
            "waited {waited:?} for a {timeout:?} busy timeout"
        );
        let e = SqliteStorage::open(path, mode, &options).unwrap_err();
        assert_eq!(e, StoreError::Busy);
        assert_eq!(e.code(), 502);
    }
}

/// A store with a session, and a message for it that is not yet decrypted.
fn setup(path: &Path) -> (String, Client, Vec<u8>) {
    let mut bob = Client::open(path).unwrap();
    let mut alice = Client::in_memory().unwrap();
    common::connect(&mut alice, "alice", &mut bob, "bob");
    bob.generate_prekeys(3).unwrap();
    let pending = alice.encrypt("bob", b"while you were busy").unwrap();
    (bob.fingerprint(), alice, pending)
}

fn assert_intact(
    path: &Path,
    fingerprint: &str,
    prekeys: usize,
    alice: &mut Client,
    pending: &[u8],
) {
    let mut bob = Client::open_with(path, OpenMode::Existing, &SqliteOptions::default()).unwrap();
    assert_eq!(bob.fingerprint(), fingerprint);
    assert_eq!(bob.session_ids().unwrap(), ["alice"]);
    assert_eq!(bob.prekeys_remaining().unwrap(), prekeys);
    assert_eq!(
        bob.decrypt("alice", pending).unwrap(),
        b"while you were busy"
    );
    let e = bob.encrypt("alice", b"back").unwrap();
    assert_eq!(alice.decrypt("bob", &e).unwrap(), b"back");
}

#[test]
fn a_store_held_by_another_process_is_busy_until_it_exits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (fingerprint, mut alice, pending) = setup(&path);
    let signals = tempfile::tempdir().unwrap();
    let holder = Holder::start(&path, signals.path());
    assert_eq!(
        std::fs::read_to_string(signals.path().join("ready")).unwrap(),
        fingerprint
    );
    assert_busy(&path);
    holder.release();
    // 3 from setup, 2 from the holder.
    assert_intact(&path, &fingerprint, 5, &mut alice, &pending);
}

#[test]
fn a_store_held_by_a_killed_process_opens_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (fingerprint, mut alice, pending) = setup(&path);
    let signals = tempfile::tempdir().unwrap();
    let holder = Holder::start(&path, signals.path());
    assert_busy(&path);
    holder.kill();
    // The holder's first prekey was committed before "ready"; its second never happened.
    assert_intact(&path, &fingerprint, 4, &mut alice, &pending);
}

/// Within one process too: a second opener of the same file is Busy while the first is open.
#[test]
fn a_second_opener_in_the_same_process_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (fingerprint, mut alice, pending) = setup(&path);
    let first = Client::open(&path).unwrap();
    assert_busy(&path);
    drop(first);
    assert_intact(&path, &fingerprint, 3, &mut alice, &pending);
}
