//! Helpers shared by the integration tests of proteus-client (each test file uses a part of them).

#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod cryptobox;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use proteus_client::{
    Client, ClientError, Decrypted, Freshness, MemoryStorage, QueuedMessage, Record, Storage,
    StoreError, Table, Write,
};
use proteus_core::Envelope;
use serde_json::Value;
use zeroize::Zeroizing;

// --- a Storage wrapper for tests -----------------------------------------------------------

/// Everything a [`TestStorage`] holds: the records, the switches and the commit log.
#[derive(Default)]
pub struct Shared {
    pub mem: MemoryStorage,
    /// Every commit fails with `StoreError::Backend` while this is set.
    pub fail_commits: bool,
    /// Every read fails with `StoreError::Backend` while this is set.
    pub fail_reads: bool,
    /// The writes of every successful commit, in order.
    pub log: Vec<Vec<Write>>,
    /// How many commits were refused.
    pub refused: usize,
}

/// A [`MemoryStorage`] behind a shared handle: commits can be made to fail on demand, every
/// commit's writes are recorded, and the test keeps a handle to look inside while a `Client`
/// owns another.
#[derive(Clone, Default)]
pub struct TestStorage(pub Arc<Mutex<Shared>>);

/// A copy of every record of a store, for comparing stores.
pub type Dump = BTreeMap<(Table, Vec<u8>), Vec<u8>>;

impl TestStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// A storage holding exactly the records of `dump`.
    pub fn from_dump(dump: &Dump) -> Self {
        let mut mem = MemoryStorage::new();
        let writes: Vec<Write> = dump
            .iter()
            .map(|((table, key), value)| Write::Put {
                table: *table,
                key: key.clone(),
                value: Zeroizing::new(value.clone()),
            })
            .collect();
        mem.commit(&writes).expect("memory commit");
        Self(Arc::new(Mutex::new(Shared {
            mem,
            ..Shared::default()
        })))
    }

    pub fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A client on (another handle of) this storage.
    pub fn client(&self) -> Client {
        Client::with_storage(Box::new(self.clone())).expect("client on test storage")
    }

    pub fn set_fail_commits(&self, fail: bool) {
        self.lock().fail_commits = fail;
    }

    pub fn set_fail_reads(&self, fail: bool) {
        self.lock().fail_reads = fail;
    }

    pub fn commits(&self) -> usize {
        self.lock().log.len()
    }

    pub fn refused(&self) -> usize {
        self.lock().refused
    }

    /// The writes of the commits made since the log had `since` entries.
    pub fn commits_since(&self, since: usize) -> Vec<Vec<Write>> {
        self.lock()
            .log
            .get(since..)
            .map(<[Vec<Write>]>::to_vec)
            .unwrap_or_default()
    }

    pub fn dump(&self) -> Dump {
        dump_storage(&self.lock().mem)
    }

    pub fn count(&self, table: Table) -> usize {
        self.lock().mem.scan(table, &[]).expect("scan").len()
    }

    /// Writes records directly, bypassing the client (and the failure switch and the log).
    pub fn put_raw(&self, table: Table, key: &[u8], value: &[u8]) {
        let write = Write::Put {
            table,
            key: key.to_vec(),
            value: Zeroizing::new(value.to_vec()),
        };
        self.lock().mem.commit(&[write]).expect("memory commit");
    }
}

pub fn dump_storage(storage: &dyn Storage) -> Dump {
    let mut dump = Dump::new();
    for table in Table::ALL {
        for (key, value) in storage.scan(table, &[]).expect("scan") {
            dump.insert((table, key), value.to_vec());
        }
    }
    dump
}

impl Storage for TestStorage {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        let shared = self.lock();
        if shared.fail_reads {
            return Err(StoreError::Backend("injected read failure".into()));
        }
        shared.mem.get(table, key)
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        let shared = self.lock();
        if shared.fail_reads {
            return Err(StoreError::Backend("injected read failure".into()));
        }
        shared.mem.scan(table, prefix)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        let mut shared = self.lock();
        if shared.fail_commits {
            shared.refused += 1;
            return Err(StoreError::Backend("injected commit failure".into()));
        }
        shared.mem.commit(writes)?;
        shared.log.push(writes.to_vec());
        Ok(())
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        self.lock().mem.begin()
    }

    fn end(&mut self) -> Result<(), StoreError> {
        self.lock().mem.end()
    }
}

/// What one commit wrote, counted by table and kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CommitCounts {
    pub session_puts: usize,
    pub staged_puts: usize,
    pub staged_deletes: usize,
    pub prekey_puts: usize,
    pub prekey_deletes: usize,
    pub other: usize,
}

pub fn count_writes(writes: &[Write]) -> CommitCounts {
    let mut c = CommitCounts::default();
    for w in writes {
        match w {
            Write::Put {
                table: Table::Sessions,
                ..
            } => c.session_puts += 1,
            Write::Put {
                table: Table::StagedKeys,
                ..
            } => c.staged_puts += 1,
            Write::Delete {
                table: Table::StagedKeys,
                ..
            } => c.staged_deletes += 1,
            Write::Put {
                table: Table::PreKeys,
                ..
            } => c.prekey_puts += 1,
            Write::Delete {
                table: Table::PreKeys,
                ..
            } => c.prekey_deletes += 1,
            _ => c.other += 1,
        }
    }
    c
}

// --- conversations ---------------------------------------------------------------------------

/// A fresh prekey bundle of `to`, as published bytes.
pub fn bundle_of(to: &mut Client) -> Vec<u8> {
    to.generate_prekeys(1)
        .expect("generate prekey")
        .remove(0)
        .to_bytes()
}

/// `from` starts a session with `to` (from a fresh one-time prekey of `to`), sends one message
/// and `to` decrypts it: both sides have a session afterwards.
pub fn connect(from: &mut Client, from_id: &str, to: &mut Client, to_id: &str) {
    let bundle = bundle_of(to);
    from.create_session(to_id, &bundle).expect("create session");
    let hello = from.encrypt(to_id, b"hello").expect("encrypt");
    assert_eq!(
        to.decrypt(from_id, &hello).expect("decrypt first message"),
        b"hello"
    );
}

pub fn encrypt_n(client: &mut Client, session: &str, prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            client
                .encrypt(session, format!("{prefix} {i}").as_bytes())
                .expect("encrypt")
        })
        .collect()
}

pub fn queue<'a>(items: &'a [(String, Vec<u8>)]) -> Vec<QueuedMessage<'a>> {
    items
        .iter()
        .map(|(s, e)| QueuedMessage {
            session_id: s,
            envelope: e,
        })
        .collect()
}

pub fn run_batch(
    client: &mut Client,
    items: &[(String, Vec<u8>)],
) -> Result<Vec<Decrypted>, ClientError> {
    client.decrypt_batch(&queue(items), |_, _| ControlFlow::Continue(()))
}

/// The counter of an envelope's message.
pub fn counter_of(envelope: &[u8]) -> u32 {
    Envelope::from_bytes(envelope)
        .expect("envelope")
        .message()
        .cipher_message()
        .counter
}

pub fn code_of<T: std::fmt::Debug>(result: &Result<T, ClientError>) -> u16 {
    match result {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.code(),
    }
}

/// The staged-keys key of a session's send chain record: `u16 BE length ‖ session id`.
pub fn chain_key_of(session_id: &str) -> Vec<u8> {
    let mut key = u16::try_from(session_id.len())
        .unwrap()
        .to_be_bytes()
        .to_vec();
    key.extend_from_slice(session_id.as_bytes());
    key
}

/// The folder of the golden stores (`tests/golden`).
pub fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// An in-memory peer with a new identity, and that identity's bytes (to re-create it later).
pub fn peer_with_identity() -> (Client, Vec<u8>) {
    let identity = proteus_core::IdentityKeyPair::generate(&mut proteus_core::OsRng);
    let mut c = Client::in_memory().unwrap();
    c.import_identity(&identity.to_bytes()).unwrap();
    (c, identity.to_bytes().to_vec())
}

// --- interop vectors -------------------------------------------------------------------------

pub fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/proteus-js")
}

pub const VECTOR_FILES: [&str; 4] = [
    "basic_exchange",
    "multi_sender",
    "out_of_order",
    "prekey_then_cipher",
];

pub fn load_vector(name: &str) -> Value {
    let path = vectors_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn hex_of(v: &Value) -> Vec<u8> {
    hex::decode(
        v.as_str()
            .unwrap_or_else(|| panic!("not a hex string: {v}")),
    )
    .expect("hex")
}

pub fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

pub fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn array_of(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}
