//! Secrets that cross the boundary (an exported or imported identity) leave no copy behind in
//! freed memory on the Rust side.
//!
//! A global allocator looks into every block freed while a check runs for a planted identity
//! seed. The buffer that carries the secret to Kotlin or Swift is the foreign side's to free (it
//! copies it into a `ByteArray`/`Data` first); every other copy must be wiped before it is freed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// A global allocator is `unsafe` by nature. It only forwards to `System` and reads the blocks it
// is handed.
#![allow(unsafe_code)]

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proteus_core::IdentityKeyPair;
use proteus_uniffi::{Client, ClientOptions, UniFfiTag};
use support::Wait;
use uniffi::{Lift, Lower, RustBuffer};

/// The identity seed planted by the checks.
const SEED: [u8; 32] = [0x5e; 32];

// Per thread: the tests run in parallel, and only the blocks the checked work frees (on the
// thread that runs it, as the client's calls do) are looked into.
thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static FOUND: Cell<usize> = const { Cell::new(0) };
    static INSPECTING: Cell<bool> = const { Cell::new(false) };
}

struct Inspecting;

// SAFETY: every call is forwarded to the system allocator unchanged; `dealloc` only reads the
// block it is given, which is still allocated and `layout.size()` bytes long while it runs.
unsafe impl GlobalAlloc for Inspecting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if WATCHING.with(Cell::get) && layout.size() >= 32 && !INSPECTING.with(Cell::get) {
            INSPECTING.with(|i| i.set(true));
            let block = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
            if block.windows(32).any(|w| w == SEED) {
                FOUND.with(|f| f.set(f.get() + 1));
            }
            INSPECTING.with(|i| i.set(false));
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Inspecting = Inspecting;

/// Runs `work` while watching the blocks this thread frees for the seed; returns how many held it.
fn freed_copies<T>(work: impl FnOnce() -> T) -> (usize, T) {
    FOUND.with(|f| f.set(0));
    WATCHING.with(|w| w.set(true));
    let out = work();
    WATCHING.with(|w| w.set(false));
    (FOUND.with(Cell::get), out)
}

/// What the generated code does with a returned value: lower it into the buffer that crosses.
fn lower<T: Lower<UniFfiTag, FfiType = RustBuffer>>(value: T) -> RustBuffer {
    T::lower(value)
}

/// What the generated code does with an argument: the foreign side fills a buffer, Rust lifts it.
fn lift<T: Lift<UniFfiTag, FfiType = RustBuffer>>(buffer: RustBuffer) -> T {
    T::try_lift(buffer).unwrap()
}

fn serialised_identity() -> Vec<u8> {
    let bytes = IdentityKeyPair::from_seed(&SEED).to_bytes().to_vec();
    assert!(
        bytes.windows(32).any(|w| w == SEED),
        "the serialised identity holds the seed, so the checks below can see it"
    );
    bytes
}

#[test]
fn an_exported_identity_leaves_no_freed_copy_before_it_crosses() {
    let client = Client::in_memory(ClientOptions::default()).wait().unwrap();
    // The import is checked by the other test; here it only plants the seed.
    let crossing = lower(serialised_identity());
    client.import_identity(lift(crossing)).wait().unwrap();

    let (found, crossing) = freed_copies(|| lower(client.export_identity().wait().unwrap()));
    assert_eq!(
        found, 0,
        "freed blocks still held the exported identity secret"
    );
    // The foreign side copies the buffer out and frees it.
    let vec = crossing.destroy_into_vec();
    assert!(vec.windows(32).any(|w| w == SEED));
}

#[test]
fn an_imported_identity_leaves_no_freed_copy() {
    let client = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let crossing = lower(serialised_identity());
    let (found, ()) = freed_copies(|| client.import_identity(lift(crossing)).wait().unwrap());
    assert_eq!(
        found, 0,
        "freed blocks still held the imported identity secret"
    );
    assert_eq!(
        client.fingerprint().wait().unwrap(),
        IdentityKeyPair::from_seed(&SEED).fingerprint()
    );
}
