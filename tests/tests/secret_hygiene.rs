//! Secrets are wiped when dropped, and never shown by `Debug`.
//!
//! The wiping test installs a global allocator that, while a check runs, looks into every heap
//! block the program frees for the secret values the check planted (known seeds, the keys the
//! spec's known-answer tests derive from them). A block freed with a secret still in it — by a
//! drop that forgot to wipe, or by a growing collection that left a stale copy behind — fails the
//! test. (Copies on the stack are out of its reach; the types keep secrets on the heap or wipe
//! them with `zeroize`.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
// A global allocator is `unsafe` by nature. This is a test of the engine, outside the crates that
// forbid `unsafe`; the allocator only forwards to `System` and reads blocks it is handed.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use proteus_core::{
    Envelope, IdentityKeyPair, PreKey, PreKeyBundle, PreKeyId, RecordedRng, Session,
};

/// The secrets to look for while `WATCHING`; `FOUND` collects what was seen in freed blocks.
static WATCHING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while this thread inspects a block, so the inspection's own frees are not inspected.
    static INSPECTING: Cell<bool> = const { Cell::new(false) };
}
static SECRETS: Mutex<Vec<([u8; 32], &'static str)>> = Mutex::new(Vec::new());
static FOUND: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
/// Only one test watches at a time.
static SERIAL: Mutex<()> = Mutex::new(());

struct Inspecting;

// SAFETY: every call is forwarded to the system allocator unchanged; `dealloc` only reads the
// block it is given, which is still allocated and `layout.size()` bytes long while it runs.
unsafe impl GlobalAlloc for Inspecting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if WATCHING.load(Ordering::Relaxed) && layout.size() >= 32 && !INSPECTING.with(Cell::get) {
            INSPECTING.with(|i| i.set(true));
            let block = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
            let secrets = SECRETS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let hits: Vec<&'static str> = secrets
                .iter()
                .filter(|(s, _)| block.windows(32).any(|w| w == s))
                .map(|(_, name)| *name)
                .collect();
            drop(secrets);
            if !hits.is_empty() {
                FOUND
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend(hits);
            }
            INSPECTING.with(|i| i.set(false));
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Inspecting = Inspecting;

fn h32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

/// Runs `work` while watching freed blocks for `secrets`; returns the names found.
fn watch(secrets: Vec<([u8; 32], &'static str)>, work: impl FnOnce()) -> Vec<&'static str> {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *SECRETS.lock().unwrap() = secrets;
    FOUND.lock().unwrap().clear();
    WATCHING.store(true, Ordering::Relaxed);
    work();
    WATCHING.store(false, Ordering::Relaxed);
    let mut found = FOUND.lock().unwrap().clone();
    found.sort_unstable();
    found.dedup();
    found
}

/// The known-answer conversation of docs/protocol.md §14: its seeds and the keys derived from them.
fn known_secrets() -> Vec<([u8; 32], &'static str)> {
    vec![
        ([0x11; 32], "Alice's identity seed"),
        ([0x22; 32], "Alice's base key seed"),
        ([0x33; 32], "Alice's ratchet key seed"),
        ([0x44; 32], "Bob's identity seed"),
        ([0x55; 32], "Bob's prekey seed"),
        ([0x66; 32], "Bob's ratchet key seed"),
        (
            h32("805b920bda4cd49d251d3329144a0cf8bdaaa07502626fa87f08e80faedab15f"),
            "Alice's X25519 secret (clamped)",
        ),
        (
            h32("6b7e6a85995ebb8dd151060ed2b1fbd1b9850f5dddc3caed39e203aa764e25f3"),
            "root key RK0",
        ),
        (
            h32("56dca2f5475380591459e828afc0432fa624c0ef274473e440cf31802d27f001"),
            "chain key CK0",
        ),
        (
            h32("18d6f9570b517a97ee2c2682bca75ad8bc34d5747ca4d85f9dc7905fcc390801"),
            "root key RK1",
        ),
        (
            h32("e9eed689204ab14a3fc49204e86ab80396ab606963040e4c1643b64916436f4b"),
            "Alice's send chain key 0",
        ),
        (
            h32("0e94d5bf844ab77575cd8dce5accd953c4b9ce705f05d5a091f63364fba21174"),
            "Alice's send chain key 1",
        ),
        (
            h32("651b24c15868ef13e6847c2544083abb6e0cf1ac3255f0d261cc79f8cf487afc"),
            "message 0 cipher key",
        ),
        (
            h32("50a3fcc9af77baaba31a72e364949f3654db895f49f4d54e99ceac45d54cfae8"),
            "message 0 MAC key",
        ),
        (
            h32("f912aadedc047ce4927d61e0bd203d5f20ff0ebf305dbd354172bcf69964bc20"),
            "Bob's root key after the ratchet",
        ),
        (
            h32("1500c81794d68272730b4512382abb1d53e01de5897ea84a673cb1585cf9bfbd"),
            "Bob's send chain key 0",
        ),
    ]
}

/// The known-answer conversation, plus enough traffic to grow every collection: skipped keys,
/// ratchet turns, serialisation and reloading.
fn conversation() {
    let alice = IdentityKeyPair::from_seed(&[0x11; 32]);
    let bob = IdentityKeyPair::from_seed(&[0x44; 32]);
    let prekey = PreKey::from_seed(PreKeyId::new(7), &[0x55; 32]);
    let bundle = PreKeyBundle::new(bob.public_key(), &prekey);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let tag = hex::decode("000102030405060708090a0b0c0d0e0f").unwrap();
    let mut rng = RecordedRng::new([vec![0x22; 32], vec![0x33; 32], tag]);
    let mut a = Session::init_from_prekey(&mut rng, &alice, &bundle).unwrap();
    let sent: Vec<Envelope> = (0..40)
        .map(|i| a.encrypt(format!("m{i}").as_bytes()).unwrap())
        .collect();
    let mut b = Session::init_from_message(
        &mut RecordedRng::new([vec![0x66; 32]]),
        &bob,
        &mut prekeys,
        &sent[0],
    )
    .unwrap()
    .session;
    // Out of order: stage keys, then use some of them.
    b.decrypt(&mut RecordedRng::default(), &bob, &mut prekeys, &sent[39])
        .unwrap();
    for e in sent.iter().take(30).skip(1) {
        b.decrypt(&mut RecordedRng::default(), &bob, &mut prekeys, e)
            .unwrap();
    }
    // Ratchet turns, with a reload of each side from bytes in between.
    for turn in 0..8u8 {
        let reply = b.encrypt(b"reply").unwrap();
        a.decrypt(
            &mut RecordedRng::new([vec![0x70 + turn; 32]]),
            &alice,
            &mut prekeys,
            &reply,
        )
        .unwrap();
        let again = a.encrypt(b"again").unwrap();
        b.decrypt(
            &mut RecordedRng::new([vec![0x80 + turn; 32]]),
            &bob,
            &mut prekeys,
            &again,
        )
        .unwrap();
        a = Session::from_bytes(alice.public_key(), &a.to_bytes()).unwrap();
        b = Session::from_bytes(bob.public_key(), &b.to_bytes()).unwrap();
    }
    let _ = (
        alice.to_bytes(),
        prekey.to_bytes(),
        b.to_bytes_without_staged_keys(),
    );
}

#[test]
fn secrets_are_wiped_from_freed_memory() {
    let found = watch(known_secrets(), conversation);
    assert!(found.is_empty(), "secrets left in freed memory: {found:?}");
}

/// The check can fail: a plain `Vec` holding a secret is freed unwiped.
#[test]
fn the_check_sees_an_unwiped_secret() {
    let found = watch(vec![([0x5a; 32], "planted")], || {
        let v = vec![0x5au8; 64];
        drop(std::hint::black_box(v));
    });
    assert_eq!(found, vec!["planted"]);
}

#[test]
fn debug_output_shows_no_secret() {
    let alice = IdentityKeyPair::from_seed(&[0x11; 32]);
    let prekey = PreKey::from_seed(PreKeyId::new(7), &[0x55; 32]);
    let bundle = PreKeyBundle::new(alice.public_key(), &prekey);
    let mut rng = RecordedRng::new([vec![0x22; 32], vec![0x33; 32], vec![0; 16]]);
    let session = Session::init_from_prekey(&mut rng, &alice, &bundle).unwrap();
    let snapshots = [
        (
            format!("{alice:?}"),
            "IdentityKeyPair { public: IdentityKey(d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737), .. }",
        ),
        (
            format!("{prekey:?}"),
            "PreKey { id: PreKeyId(7), public: PublicKey(c6822637c7d310ec57627be00ba259d253749f4aaf644470cffbe53a35f73242), .. }",
        ),
        (
            format!("{session:?}"),
            "Session { local_identity: IdentityKey(d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737), remote_identity: IdentityKey(d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737), session_tag: SessionTag(00000000000000000000000000000000), pending_prekey: Some(PreKeyId(7)), states: 1, max_counter_gap: 1000, base_keys: 0 }",
        ),
    ];
    for (shown, expected) in &snapshots {
        assert_eq!(shown, expected);
    }
    let store_key = format!("{:?}", proteus_client_key_debug());
    assert_eq!(store_key, "\"StoreKey(..)\"");
    // No seed, in hex or as a byte list, appears anywhere.
    for (shown, _) in &snapshots {
        assert!(
            !shown.contains("1111111111")
                && !shown.contains("5555555555")
                && !shown.contains("17, 17, 17")
        );
    }
}

fn proteus_client_key_debug() -> String {
    format!("{:?}", proteus_client::StoreKey::new([0x42; 32]))
}
