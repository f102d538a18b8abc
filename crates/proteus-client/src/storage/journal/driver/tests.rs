use zeroize::Zeroizing;

use super::super::{MAX_COMMIT_ATTEMPTS, encode_writes};
use super::*;
use crate::storage::{Storage, Table, Write};

use CommitAction as A;
use CommitReport as R;

fn put(key: &[u8]) -> Write {
    Write::Put {
        table: Table::Sessions,
        key: key.to_vec(),
        value: Zeroizing::new(b"v".to_vec()),
    }
}

/// A driver over a journal loaded at `counter`, and the journal (the host's handle).
fn driver(counter: u64) -> (CommitDriver, Journal) {
    let journal = Journal::load(&encode_writes(&[]).unwrap(), counter).unwrap();
    (CommitDriver::new(journal.clone()), journal)
}

/// The client commits a write, as a call does.
fn commits(journal: &Journal) {
    journal.clone().commit(&[put(b"k")]).unwrap();
}

/// The host reloads the journal at `counter`; `identity`: opening made a commit (a new identity).
fn reload(journal: &Journal, counter: u64, identity: bool) {
    let records = encode_writes(&[put(b"r")]).unwrap();
    journal
        .reload(&records, counter, |journal| match identity {
            true => journal.clone().commit(&[put(b"id")]),
            false => Ok(()),
        })
        .unwrap();
}

/// The host takes the commit it was asked to store: its counters.
fn take(journal: &Journal) -> (u64, u64) {
    let commit = journal.take_commit().unwrap().unwrap();
    (commit.expected, commit.next)
}

#[test]
fn a_call_reads_the_counter_runs_and_stores_its_commit() {
    let (mut driver, journal) = driver(3);
    assert_eq!(driver.call(false, false), A::ReadCounter);
    assert_eq!(driver.next(R::Counter(3)), A::Run);
    commits(&journal);
    assert_eq!(driver.next(R::Ran), A::Store { strict: false });
    assert_eq!(take(&journal), (3, 4));
    assert_eq!(driver.next(R::Done), A::Return);
    // The journal stands at the stored commit: the next call runs at once.
    assert_eq!(driver.call(false, false), A::ReadCounter);
    assert_eq!(driver.next(R::Counter(4)), A::Run);
    // A call that commits nothing stores nothing.
    assert_eq!(driver.next(R::Ran), A::Return);
}

#[test]
fn a_stale_journal_reloads_and_stores_what_reloading_committed_before_the_call_runs() {
    let (mut driver, journal) = driver(3);
    driver.call(false, false);
    assert_eq!(driver.next(R::Counter(5)), A::Reload);
    reload(&journal, 5, false);
    assert_eq!(driver.next(R::Done), A::Run);
    assert_eq!(driver.next(R::Ran), A::Return);

    driver.call(false, false);
    assert_eq!(driver.next(R::Counter(6)), A::Reload);
    reload(&journal, 6, true);
    assert_eq!(driver.next(R::Done), A::Store { strict: true });
    assert_eq!(take(&journal), (6, 7));
    assert_eq!(driver.next(R::Done), A::Run);
    assert_eq!(driver.next(R::Ran), A::Return);
    assert!(!journal.begin(7));
}

#[test]
fn a_lost_compare_and_swap_runs_the_call_again_a_bounded_number_of_times() {
    let (mut driver, journal) = driver(0);
    let mut action = driver.call(false, false);
    for attempt in 1..=MAX_COMMIT_ATTEMPTS {
        assert_eq!(action, A::ReadCounter);
        // Another client committed: the journal is stale from the second attempt on.
        let counter = u64::from(attempt) - 1;
        action = driver.next(R::Counter(counter));
        if attempt > 1 {
            assert_eq!(action, A::Reload);
            reload(&journal, counter, false);
            action = driver.next(R::Done);
        }
        assert_eq!(action, A::Run);
        commits(&journal);
        assert_eq!(driver.next(R::Ran), A::Store { strict: false });
        take(&journal);
        action = driver.next(R::Conflict);
    }
    assert_eq!(action, A::Fail);
    // The next call starts afresh, and reloads first: its commit was not stored.
    assert_eq!(driver.call(false, false), A::ReadCounter);
    assert_eq!(driver.next(R::Counter(9)), A::Reload);
}

#[test]
fn a_call_that_handed_out_results_fails_on_a_lost_compare_and_swap() {
    for in_one in [false, true] {
        let (mut driver, journal) = driver(2);
        let first = driver.call(in_one, true);
        if in_one {
            // What it hands out cannot be taken back: it never runs ahead of the read.
            assert_eq!(first, A::Transaction { ahead: None });
        } else {
            assert_eq!(first, A::ReadCounter);
        }
        assert_eq!(driver.next(R::Counter(2)), A::Run);
        commits(&journal);
        if in_one {
            assert_eq!(driver.next(R::Ran), A::Write);
        } else {
            assert_eq!(driver.next(R::Ran), A::Store { strict: false });
        }
        take(&journal);
        assert_eq!(driver.next(R::Conflict), A::Fail);
        // That was the operation's: the next one may run again.
        driver.call(false, false);
        assert_eq!(driver.next(R::Counter(3)), A::Reload);
        reload(&journal, 3, false);
        assert_eq!(driver.next(R::Done), A::Run);
        commits(&journal);
        assert_eq!(driver.next(R::Ran), A::Store { strict: false });
        take(&journal);
        assert_eq!(driver.next(R::Conflict), A::ReadCounter);
    }
}

#[test]
fn in_one_transaction_a_call_runs_ahead_on_the_counter_the_journal_stands_at() {
    let (mut driver, journal) = driver(3);
    assert_eq!(driver.call(true, false), A::Transaction { ahead: Some(3) });
    assert_eq!(driver.next(R::Counter(3)), A::Run);
    commits(&journal);
    assert_eq!(driver.next(R::Ran), A::Write);
    assert_eq!(take(&journal), (3, 4));
    assert_eq!(driver.next(R::Done), A::Return);
    assert_eq!(driver.call(true, false), A::Transaction { ahead: Some(4) });
    assert_eq!(driver.next(R::Counter(4)), A::Run);
    assert_eq!(driver.next(R::Ran), A::Leave);
    assert_eq!(driver.next(R::Done), A::Return);
}

#[test]
fn a_run_ahead_that_turns_out_stale_is_discarded_and_runs_again_after_a_reload() {
    let (mut driver, journal) = driver(3);
    assert_eq!(driver.call(true, false), A::Transaction { ahead: Some(3) });
    assert_eq!(driver.next(R::Counter(3)), A::Run);
    commits(&journal);
    assert_eq!(driver.next(R::Ran), A::Write);
    take(&journal);
    // The read found 5: the transaction aborted, nothing of the run counts.
    assert_eq!(driver.next(R::StaleRun), A::ReadCounter);
    assert_eq!(driver.next(R::Counter(5)), A::Reload);
    reload(&journal, 5, false);
    assert_eq!(driver.next(R::Done), A::Run);
    commits(&journal);
    assert_eq!(driver.next(R::Ran), A::Store { strict: false });
    assert_eq!(take(&journal), (5, 6));
    assert_eq!(driver.next(R::Done), A::Return);
    // Running ahead did not pay: the next call reads first, and runs ahead again once a read
    // found the store where this client left it.
    assert_eq!(driver.call(true, false), A::Transaction { ahead: None });
    assert_eq!(driver.next(R::Counter(6)), A::Run);
    assert_eq!(driver.next(R::Ran), A::Leave);
    assert_eq!(driver.next(R::Done), A::Return);
    assert_eq!(driver.call(true, false), A::Transaction { ahead: Some(6) });
}

#[test]
fn a_stale_journal_in_the_transaction_runs_nothing_there_and_reads_first() {
    let (mut driver, journal) = driver(3);
    assert_eq!(driver.call(true, false), A::Transaction { ahead: Some(3) });
    // A commit of ours was not stored (the journal is ahead of the store).
    commits(&journal);
    assert_eq!(driver.next(R::Counter(3)), A::Leave);
    assert_eq!(driver.next(R::Done), A::ReadCounter);
    assert_eq!(driver.next(R::Counter(3)), A::Reload);
    reload(&journal, 3, false);
    assert_eq!(driver.next(R::Done), A::Run);
    assert_eq!(driver.next(R::Ran), A::Return);
    assert_eq!(driver.call(true, false), A::Transaction { ahead: None });
}

#[test]
fn a_deferred_commit_is_stored_once_the_application_settled_the_results() {
    for in_one in [false, true] {
        let (mut driver, journal) = driver(1);
        driver.call(in_one, true);
        assert_eq!(driver.next(R::Counter(1)), A::Run);
        commits(&journal);
        if in_one {
            // Nothing is written in the transaction, which cannot wait for the application.
            assert_eq!(driver.next(R::Deferred), A::Leave);
            assert_eq!(driver.next(R::Done), A::Await);
        } else {
            assert_eq!(driver.next(R::Deferred), A::Await);
        }
        assert_eq!(driver.next(R::Done), A::Store { strict: false });
        assert_eq!(take(&journal), (1, 2));
        assert_eq!(driver.next(R::Done), A::Return);
    }
}

#[test]
fn a_settlement_that_failed_stores_nothing_and_leaves_the_journal_stale() {
    let (mut driver, journal) = driver(1);
    driver.call(true, true);
    driver.next(R::Counter(1));
    commits(&journal);
    driver.next(R::Deferred);
    assert_eq!(driver.next(R::Done), A::Await);
    assert_eq!(driver.next(R::Failed), A::Fail);
    assert!(journal.begin(1));
}

#[test]
fn a_failed_call_still_stores_what_was_pending() {
    let (mut driver, journal) = driver(1);
    driver.call(false, false);
    driver.next(R::Counter(1));
    commits(&journal);
    assert_eq!(driver.next(R::Threw), A::Store { strict: false });
    take(&journal);
    assert_eq!(driver.next(R::Done), A::FailCall);
    driver.call(false, false);
    driver.next(R::Counter(2));
    assert_eq!(driver.next(R::Threw), A::FailCall);

    driver.call(true, false);
    assert_eq!(driver.next(R::Counter(2)), A::Run);
    commits(&journal);
    assert_eq!(driver.next(R::Threw), A::Write);
    take(&journal);
    assert_eq!(driver.next(R::Done), A::FailCall);
    assert!(!journal.begin(3));
}

#[test]
fn opening_stores_a_new_identity_and_loads_the_one_another_client_stored_first() {
    let (mut driver, journal) = driver(0);
    assert_eq!(driver.open(), A::Reload);
    reload(&journal, 0, true);
    assert_eq!(driver.next(R::Done), A::Store { strict: true });
    take(&journal);
    assert_eq!(driver.next(R::Conflict), A::Reload);
    reload(&journal, 1, false);
    assert_eq!(driver.next(R::Done), A::Return);
    assert!(!journal.begin(1));
}

#[test]
fn a_failure_of_the_host_fails_the_operation() {
    let (mut driver, journal) = driver(1);
    driver.call(false, false);
    assert_eq!(driver.next(R::Failed), A::Fail);
    driver.call(true, false);
    driver.next(R::Counter(1));
    commits(&journal);
    driver.next(R::Ran);
    take(&journal);
    assert_eq!(driver.next(R::Failed), A::Fail);
    // The commit may or may not be stored: the journal is stale until reloaded.
    assert!(journal.begin(2));
}

#[test]
fn a_report_out_of_order_ends_the_operation_and_the_next_starts_afresh() {
    let (mut driver, journal) = driver(1);
    driver.call(false, false);
    assert_eq!(driver.next(R::Ran), A::Misreported);
    assert_eq!(driver.next(R::Done), A::Misreported);
    assert_eq!(driver.next(R::Conflict), A::Misreported);
    // An operation the host abandoned (after it handed results out) ends when the next starts.
    driver.call(false, true);
    assert_eq!(driver.next(R::Counter(1)), A::Run);
    driver.call(false, false);
    assert_eq!(driver.next(R::Counter(1)), A::Run);
    commits(&journal);
    driver.next(R::Ran);
    take(&journal);
    assert_eq!(driver.next(R::Conflict), A::ReadCounter);
}
