//! Disk full (issue 36, fault 1): a SQLite store on a small file system that runs out of space
//! at every point of a batch's commit and of an encryption's. For each amount of free space, from
//! none up to more than the operations need, in steps of one page of the file system:
//! the call fails with `StorageFailure` (507) or succeeds; once the space is back the store
//! opens, nothing committed before is lost, the batch's messages decrypt with the same ids as
//! when they were first handed over (or come back as already seen if the batch had committed),
//! and no message key is used twice (every reply the store handed out decrypts at the peer,
//! none as a duplicate).
//!
//! The small file system is a tmpfs mounted in a private mount namespace (`unshare`, util-linux):
//! as root (CI) with `--mount`, otherwise in a user namespace too (`--user --map-root-user`),
//! so nothing is left mounted whatever happens to the test. A tmpfs refuses a write with ENOSPC
//! at the exact byte, which SQLite reports as SQLITE_FULL; it does not show what a disk's own
//! write cache does on power loss (fault 3).
//!
//! ```text
//! cargo test -p proteus-client --test disk_full -- --nocapture
//! ```

#![cfg(all(feature = "sqlite", target_os = "linux"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;

use proteus_client::{Client, MessageId, OpenMode, QueuedMessage, SqliteOptions};

const CHILD_VAR: &str = "PROTEUS_DISK_FULL_CHILD";
/// The tmpfs's size.
const FS_BYTES: u64 = 4 * 1024 * 1024;
/// Free space is swept in steps of this (tmpfs allocates whole pages).
const STEP: u64 = 4096;
/// Up to this much free space: more than the batch and the reply write.
const MAX_FREE: u64 = 256 * 1024;
/// Messages in the batch (a PreKeyMessage, then a chain, a few out of order).
const QUEUE: usize = 40;

#[test]
fn disk_full_at_every_write_of_a_commit_loses_nothing_and_reuses_no_key() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = is_root();
    let mut unshare = Command::new("unshare");
    if !root {
        unshare.args(["--user", "--map-root-user"]);
    }
    let out = unshare
        .args(["--mount", "--propagation", "private"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "disk_full_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, dir.path())
        .output()
        .expect("unshare (util-linux) runs the child in a private mount namespace");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("disk full: swept"),
        "the child failed ({}): {}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this process runs as root (no `unsafe`: from /proc).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

/// Free bytes of the file system holding `dir`.
fn available(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Fills the file system of `dir` until `free` bytes are left (in a file of its own).
fn fill_to(dir: &Path, free: u64) -> PathBuf {
    let filler = dir.join("filler");
    let fill = usize::try_from(available(dir).saturating_sub(free)).unwrap();
    let mut file = std::fs::File::create(&filler).unwrap();
    // Zeros written, not a sparse length: a tmpfs counts only what is written.
    file.write_all(&vec![0xa5u8; fill]).unwrap();
    file.sync_all().unwrap();
    assert!(
        available(dir) <= free,
        "the file system did not fill to {free} bytes free"
    );
    filler
}

struct Setup {
    /// Bob's store before the batch (copied for each run).
    template: PathBuf,
    /// Alice's identity and session with Bob, before the batch.
    alice_identity: Vec<u8>,
    alice_session: Vec<u8>,
    /// The queue for Bob, with each message's plaintext.
    queue: Vec<(Vec<u8>, Vec<u8>)>,
}

fn setup(dir: &Path) -> Setup {
    let template = dir.join("template.db");
    let mut bob = Client::open(&template).unwrap();
    let bundle = bob.generate_prekeys(5).unwrap().remove(0).to_bytes();
    drop(bob);
    let mut alice = Client::in_memory().unwrap();
    alice.create_session("bob", &bundle).unwrap();
    let mut queue: Vec<(Vec<u8>, Vec<u8>)> = (0..QUEUE)
        .map(|i| {
            let text = format!("message {i}").into_bytes();
            (alice.encrypt("bob", &text).unwrap(), text)
        })
        .collect();
    // A few out of order: their skipped keys are staged (more records to write).
    queue.swap(5, 9);
    queue.swap(20, 30);
    Setup {
        template,
        alice_identity: alice.export_identity().to_vec(),
        alice_session: alice.export_session("bob").unwrap().to_vec(),
        queue,
    }
}

/// Bob's batch: the ids handed over (before the commit) and the outcome's code (0: committed).
fn batch(bob: &mut Client, queue: &[(Vec<u8>, Vec<u8>)]) -> (Vec<(MessageId, bool)>, u16) {
    let messages: Vec<QueuedMessage<'_>> = queue
        .iter()
        .map(|(envelope, _)| QueuedMessage {
            session_id: "alice",
            envelope,
        })
        .collect();
    let mut handed = Vec::new();
    let result = bob.decrypt_batch(&messages, |d, _| {
        handed.push((d.message_id, d.is_already_seen()));
        ControlFlow::Continue(())
    });
    (handed, result.map_or_else(|e| e.code(), |_| 0))
}

#[test]
fn disk_full_child() {
    let Some(dir) = std::env::var_os(CHILD_VAR).map(PathBuf::from) else {
        return;
    };
    let mount = dir.join("fs");
    std::fs::create_dir_all(&mount).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={FS_BYTES}"), "tmpfs"])
        .arg(&mount)
        .status()
        .unwrap();
    assert!(status.success(), "mount -t tmpfs");
    let setup = setup(&mount);

    let (mut failed_batches, mut failed_replies, mut failed_opens, mut runs) = (0, 0, 0, 0);
    let mut free = 0;
    while free <= MAX_FREE {
        runs += 1;
        let store = mount.join("bob.db");
        std::fs::copy(&setup.template, &store).unwrap();
        let filler = fill_to(&mount, free);

        // Under the limit: open, the batch, a reply.
        let mut handed_over = Vec::new();
        let mut committed = false;
        let mut replies = Vec::new();
        match Client::open_with(&store, OpenMode::Existing, &SqliteOptions::default()) {
            Err(e) => {
                assert_eq!(e.code(), 507, "free {free}: opening failed with {e}");
                failed_opens += 1;
            }
            Ok(mut bob) => {
                let (handed, code) = batch(&mut bob, &setup.queue);
                assert!(
                    code == 0 || code == 507,
                    "free {free}: the batch failed with {code}"
                );
                committed = code == 0;
                failed_batches += usize::from(!committed);
                handed_over = handed;
                match bob.encrypt("alice", b"reply under pressure") {
                    Ok(envelope) => replies.push(envelope),
                    Err(e) => {
                        // SessionNotFound: the batch that made the session did not commit.
                        assert!([507, 104].contains(&e.code()), "free {free}: encrypt: {e}");
                        failed_replies += 1;
                    }
                }
            }
        }

        // The space is back: the store opens, the batch is there or decrypts again with the
        // same ids, and every reply handed out decrypts once at Alice.
        std::fs::remove_file(&filler).unwrap();
        let mut bob =
            Client::open_with(&store, OpenMode::Existing, &SqliteOptions::default()).unwrap();
        let (again, code) = batch(&mut bob, &setup.queue);
        assert_eq!(code, 0, "free {free}: the batch after the space came back");
        assert_eq!(again.len(), QUEUE);
        for (i, (id, seen)) in again.iter().enumerate() {
            assert_eq!(*seen, committed, "free {free}: message {i}");
            if let Some((first, _)) = handed_over.get(i) {
                assert_eq!(first, id, "free {free}: message {i} changed its id");
            }
        }
        replies.push(bob.encrypt("alice", b"reply afterwards").unwrap());
        let mut alice = Client::in_memory().unwrap();
        alice.import_identity(&setup.alice_identity).unwrap();
        alice.import_session("bob", &setup.alice_session).unwrap();
        for (n, reply) in replies.iter().enumerate() {
            alice
                .decrypt("bob", reply)
                .unwrap_or_else(|e| panic!("free {free}: reply {n} at Alice: {e}"));
        }
        drop(bob);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
        }
        free += STEP;
    }
    assert!(
        failed_batches > 0,
        "no amount of free space made the batch fail: the sweep is too high"
    );
    assert!(
        failed_batches < runs,
        "the batch never succeeded: the sweep is too low"
    );
    println!(
        "disk full: swept {runs} amounts of free space (0 to {} KiB, {} KiB steps): the open \
         failed {failed_opens} times, the batch {failed_batches}, the reply {failed_replies}; \
         lost 0, keys reused 0, the store opened every time",
        MAX_FREE / 1024,
        STEP / 1024
    );
}
