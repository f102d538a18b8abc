use std::collections::BTreeMap;

use super::*;
use crate::{Client, ClientError};

fn put(key: &[u8], value: &[u8]) -> Write {
    Write::Put {
        table: Table::Sessions,
        key: key.to_vec(),
        value: Zeroizing::new(value.to_vec()),
    }
}

fn loaded(writes: &[Write], counter: u64) -> Journal {
    Journal::load(&encode_writes(writes).unwrap(), counter).unwrap()
}

#[test]
fn loading_queues_nothing_and_commits_queue_their_writes() {
    let journal = loaded(&[put(b"a", b"1")], 3);
    assert!(journal.take_commit().unwrap().is_none());
    let mut storage = journal.clone();
    storage.commit(&[put(b"b", b"2")]).unwrap();
    let delete = Write::Delete {
        table: Table::Sessions,
        key: b"a".to_vec(),
    };
    storage.commit(std::slice::from_ref(&delete)).unwrap();
    let commit = journal.take_commit().unwrap().unwrap();
    assert_eq!(
        decode_writes(&commit.writes).unwrap(),
        vec![put(b"b", b"2"), delete]
    );
    assert_eq!((commit.expected, commit.next), (3, 4));
    journal.committed();
    assert!(journal.take_commit().unwrap().is_none());
    assert_eq!(storage.get(Table::Sessions, b"a").unwrap(), None);
    assert_eq!(storage.scan(Table::Sessions, b"").unwrap().len(), 1);
}

#[test]
fn stale_when_the_host_counter_moved_until_reloaded() {
    let journal = loaded(&[put(b"a", b"1")], 5);
    assert!(!journal.begin(5));
    assert!(journal.begin(6));
    assert!(journal.begin(4));
    journal
        .reload(&encode_writes(&[put(b"z", b"9")]).unwrap(), 6, |_| {
            Ok::<_, StoreError>(())
        })
        .unwrap();
    assert!(!journal.begin(6));
    assert_eq!(journal.get(Table::Sessions, b"a").unwrap(), None);
    assert!(journal.get(Table::Sessions, b"z").unwrap().is_some());
}

#[test]
fn a_commit_counts_once_the_host_stored_it() {
    let journal = loaded(&[], 0);
    journal.clone().commit(&[put(b"a", b"1")]).unwrap();
    // Committed by the client, not taken: ahead of the host's store.
    assert!(journal.begin(0));
    let commit = journal.take_commit().unwrap().unwrap();
    assert_eq!((commit.expected, commit.next), (0, 1));
    // Taken, not reported stored (the transaction failed, or is still running).
    assert!(journal.begin(0));
    assert!(journal.begin(1));
    journal.committed();
    assert!(!journal.begin(1));
    assert!(journal.begin(0));
    // The next commit builds on it.
    journal.clone().commit(&[put(b"b", b"2")]).unwrap();
    let commit = journal.take_commit().unwrap().unwrap();
    assert_eq!((commit.expected, commit.next), (1, 2));
}

#[test]
fn a_commit_the_host_did_not_store_leaves_the_journal_stale_until_reloaded() {
    let journal = loaded(&[], 7);
    journal.clone().commit(&[put(b"a", b"1")]).unwrap();
    let _lost = journal.take_commit().unwrap().unwrap();
    assert!(journal.begin(7));
    // No second commit on top of one that may not be stored.
    journal.clone().commit(&[put(b"b", b"2")]).unwrap();
    assert!(journal.take_commit().is_err());
    assert!(journal.begin(7));
    journal.reload(&[], 7, |_| Ok::<_, StoreError>(())).unwrap();
    assert!(!journal.begin(7));
    assert!(journal.take_commit().unwrap().is_none());
    assert_eq!(journal.get(Table::Sessions, b"a").unwrap(), None);
}

#[test]
fn a_failed_reload_changes_nothing_or_stays_stale() {
    let journal = loaded(&[put(b"a", b"1")], 2);
    // Records that do not decode: nothing changes.
    assert!(
        journal
            .reload(&[9, 0], 3, |_| Ok::<_, StoreError>(()))
            .is_err()
    );
    assert!(journal.get(Table::Sessions, b"a").unwrap().is_some());
    assert!(!journal.begin(2));
    // What was built over the journal could not be rebuilt: stale, whatever the counter.
    let failed = journal.reload(&[], 3, |_| Err::<(), _>(StoreError::Corrupt("x".into())));
    assert!(failed.is_err());
    assert!(journal.begin(3));
    journal.reload(&[], 3, |_| Ok::<_, StoreError>(())).unwrap();
    assert!(!journal.begin(3));
}

#[test]
fn a_lost_compare_and_swap_is_retried_a_bounded_number_of_times() {
    let journal = loaded(&[], 0);
    for _ in 1..MAX_COMMIT_ATTEMPTS {
        assert!(journal.retry());
    }
    assert!(!journal.retry());
    // A new operation starts afresh; a reload within an operation does not.
    journal.end();
    assert!(journal.retry());
    journal.reload(&[], 1, |_| Ok::<_, StoreError>(())).unwrap();
    for _ in 2..MAX_COMMIT_ATTEMPTS {
        assert!(journal.retry());
    }
    assert!(!journal.retry());
}

#[test]
fn an_operation_that_handed_out_results_is_never_retried() {
    let journal = loaded(&[], 0);
    journal.hand_out();
    assert!(!journal.retry());
    journal.reload(&[], 1, |_| Ok::<_, StoreError>(())).unwrap();
    assert!(!journal.retry());
    journal.end();
    assert!(journal.retry());
}

/// A host's store: the records and the commit counter, stored by compare-and-swap.
#[derive(Default)]
struct Host {
    records: BTreeMap<(usize, Vec<u8>), Zeroizing<Vec<u8>>>,
    counter: u64,
}

impl Host {
    fn load(&self) -> Zeroizing<Vec<u8>> {
        let puts: Vec<Write> = self
            .records
            .iter()
            .map(|((table, key), value)| Write::Put {
                table: Table::ALL[*table],
                key: key.clone(),
                value: value.clone(),
            })
            .collect();
        encode_writes(&puts).unwrap()
    }

    fn store(&mut self, commit: &Commit) -> bool {
        if commit.expected != self.counter {
            return false;
        }
        for write in decode_writes(&commit.writes).unwrap() {
            let index = |t| Table::ALL.iter().position(|x| *x == t).unwrap();
            match write {
                Write::Put { table, key, value } => {
                    self.records.insert((index(table), key), value);
                }
                Write::Delete { table, key } => {
                    self.records.remove(&(index(table), key));
                }
            }
        }
        self.counter = commit.next;
        true
    }
}

/// One client of the host's store (a tab), as the web package drives it.
struct Tab {
    journal: Journal,
    client: Client,
}

fn reopen(journal: &Journal) -> Result<Client, ClientError> {
    Client::with_storage(Box::new(journal.clone()))
}

impl Tab {
    fn open(host: &mut Host) -> Self {
        let journal = Journal::load(&host.load(), host.counter).unwrap();
        let client = reopen(&journal).unwrap();
        if let Some(commit) = journal.take_commit().unwrap() {
            assert!(host.store(&commit));
            journal.committed();
        }
        Self { journal, client }
    }

    /// Begins an attempt: reloads if stale, and stores what reloading committed.
    fn begin(&mut self, host: &mut Host) {
        if self.journal.begin(host.counter) {
            self.client = self
                .journal
                .reload(&host.load(), host.counter, reopen)
                .unwrap();
            assert!(self.journal.take_commit().unwrap().is_none());
        }
    }

    /// Stores the attempt's commit: `Ok(true)` stored (or nothing to store), `Ok(false)` run
    /// again, `Err(())` StoreConflict.
    fn finish(&mut self, host: &mut Host) -> Result<bool, ()> {
        let stored = match self.journal.take_commit().unwrap() {
            None => true,
            Some(commit) => host.store(&commit),
        };
        if stored {
            self.journal.committed();
            self.journal.end();
            return Ok(true);
        }
        if self.journal.retry() {
            return Ok(false);
        }
        self.journal.end();
        Err(())
    }
}

/// Two tabs of one client encrypt to one peer with no lock between them: every attempt of one
/// may be cut by a whole operation of the other before its compare-and-swap. Every envelope a
/// tab hands out must decrypt at the peer: no message key is used twice.
#[test]
fn two_tabs_without_a_lock_never_reuse_a_message_key() {
    let mut host = Host::default();
    let mut tabs = [Tab::open(&mut host), Tab::open(&mut host)];
    let mut bob = Client::in_memory().unwrap();
    let bundle = bob.generate_prekeys(1).unwrap().remove(0).to_bytes();
    tabs[0].begin(&mut host);
    tabs[0].client.create_session("bob", &bundle).unwrap();
    assert_eq!(tabs[0].finish(&mut host), Ok(true));

    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut sent = Vec::new();
    let (mut conflicts, mut cut) = (0, 0);
    for i in 0..200 {
        let (a, b) = if random() % 2 == 0 { (0, 1) } else { (1, 0) };
        let text = format!("message {i}");
        loop {
            tabs[a].begin(&mut host);
            let envelope = tabs[a].client.encrypt("bob", text.as_bytes()).unwrap();
            if random() % 3 == 0 {
                // The other tab runs a whole operation in between.
                cut += 1;
                let other = format!("message {i} from the other tab");
                loop {
                    tabs[b].begin(&mut host);
                    let e = tabs[b].client.encrypt("bob", other.as_bytes()).unwrap();
                    if tabs[b].finish(&mut host).unwrap() {
                        sent.push((e, other));
                        break;
                    }
                }
            }
            match tabs[a].finish(&mut host) {
                Ok(true) => {
                    sent.push((envelope, text));
                    break;
                }
                Ok(false) => conflicts += 1,
                Err(()) => panic!("the operation is retried, not failed"),
            }
        }
    }
    assert!(
        cut > 30 && conflicts >= cut,
        "{cut} cut, {conflicts} conflicts"
    );
    for (envelope, text) in &sent {
        let plaintext = bob.decrypt("alice", envelope).unwrap();
        assert_eq!(plaintext.as_slice(), text.as_bytes());
    }
}

/// A batch whose results reached the application fails when its commit loses, and its messages
/// decrypt again (the same plaintexts) once the tab reloaded.
#[test]
fn a_batch_that_handed_out_results_fails_on_a_lost_compare_and_swap_and_runs_again_later() {
    let mut host = Host::default();
    let mut tabs = [Tab::open(&mut host), Tab::open(&mut host)];
    let mut alice = Client::in_memory().unwrap();
    tabs[0].begin(&mut host);
    let bundle = tabs[0].client.generate_prekeys(1).unwrap().remove(0);
    assert_eq!(tabs[0].finish(&mut host), Ok(true));
    alice.create_session("bob", &bundle.to_bytes()).unwrap();
    let envelopes: Vec<Vec<u8>> = (0..3)
        .map(|i| alice.encrypt("bob", format!("hi {i}").as_bytes()).unwrap())
        .collect();
    let queue: Vec<crate::QueuedMessage<'_>> = envelopes
        .iter()
        .map(|envelope| crate::QueuedMessage {
            session_id: "alice",
            envelope,
        })
        .collect();
    let batch = |tab: &mut Tab, journal: &Journal| {
        let mut got = Vec::new();
        tab.client
            .decrypt_batch(&queue, |m, _| {
                journal.hand_out();
                got.push(m.outcome.as_ref().unwrap().to_vec());
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
        got
    };

    tabs[0].begin(&mut host);
    let journal = tabs[0].journal.clone();
    let first = batch(&mut tabs[0], &journal);
    // The other tab commits first.
    tabs[1].begin(&mut host);
    tabs[1].client.generate_prekeys(1).unwrap();
    assert_eq!(tabs[1].finish(&mut host), Ok(true));
    assert_eq!(tabs[0].finish(&mut host), Err(()));

    tabs[0].begin(&mut host);
    let again = batch(&mut tabs[0], &journal);
    assert_eq!(tabs[0].finish(&mut host), Ok(true));
    assert_eq!(first, again);
    assert_eq!(again[2], b"hi 2");
}

/// A client kept across a reload (not rebuilt) sees what another tab committed: the journal
/// reports itself stale to the client's commit protocol once, and the client reloads its
/// cached session instead of reusing a message key.
#[test]
fn a_client_kept_across_a_reload_reloads_its_caches() {
    let mut host = Host::default();
    let mut alice = Client::in_memory().unwrap();
    let bundle = alice.generate_prekeys(1).unwrap().remove(0).to_bytes();
    let mut a = Tab::open(&mut host);
    a.begin(&mut host);
    a.client.create_session("alice", &bundle).unwrap();
    assert!(a.finish(&mut host).unwrap());
    a.client.has_session("alice").unwrap(); // cached in A

    let mut b = Tab::open(&mut host);
    b.begin(&mut host);
    let from_b = b.client.encrypt("alice", b"from b").unwrap();
    assert!(b.finish(&mut host).unwrap());

    assert!(a.journal.begin(host.counter), "A is stale");
    a.journal
        .reload(&host.load(), host.counter, |_| Ok::<_, ClientError>(()))
        .unwrap();
    let from_a = a.client.encrypt("alice", b"from a").unwrap();
    assert!(a.finish(&mut host).unwrap());
    assert_eq!(alice.decrypt("bob", &from_b).unwrap(), b"from b");
    assert_eq!(alice.decrypt("bob", &from_a).unwrap(), b"from a");

    let mut journal = a.journal.clone();
    assert_eq!(
        Storage::begin(&mut journal).unwrap(),
        super::super::Freshness::Fresh
    );
}
