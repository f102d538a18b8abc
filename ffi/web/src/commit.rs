//! The loop of the commit protocol for the JS side: the [`RawJournal`]'s driver
//! ([`CommitDriver`](proteus_client::CommitDriver)) decides every step of a call (read the
//! counter, run in one transaction and ahead of its read or not, reload, run, wait for the
//! application, store, run again or fail); `js/commit-engine.js` executes each action and
//! reports how it went. It keeps only the I/O, the call of the application's function and the
//! platform's error objects.
//!
//! Actions and reports cross as numbers, in the order of `ACTIONS` and `REPORTS`, which
//! `js/commit-engine.js` declares as constants (a test below checks them): one call into wasm per
//! step, no object built for it. The driver is the journal's (no class of its own, whose glue
//! would cost more than its code).

use proteus_client::{CommitAction, CommitReport};
use wasm_bindgen::prelude::*;

use crate::RawJournal;

/// The actions' names in commit-engine.js, by their numbers. `AHEAD` is the first of its own:
/// `AHEAD + counter` runs the call in one transaction, ahead of its read, on `counter`.
#[cfg(test)]
const ACTIONS: [&str; 14] = [
    "READ",
    "TRANSACTION",
    "RELOAD",
    "RUN",
    "AWAIT",
    "STORE",
    "STORE_STRICT",
    "WRITE",
    "LEAVE",
    "RETURN",
    "FAIL_CALL",
    "FAIL",
    "MISREPORTED",
    "AHEAD",
];

/// The reports' names in commit-engine.js, by their numbers.
#[cfg(test)]
const REPORTS: [&str; 8] = [
    "COUNTER",
    "DONE",
    "RAN",
    "DEFERRED",
    "THREW",
    "CONFLICT",
    "STALE_RUN",
    "FAILED",
];

/// `Misreported`: the JS side reported what was not asked (its bug), or a report it does not
/// know; the call fails as an internal error.
const MISREPORTED: f64 = 12.0;
/// `Transaction { ahead: Some(counter) }` is `AHEAD + counter`: the counter crosses with the
/// action, exactly (counters are integers below 2^53, as the JS side stores them).
const AHEAD: f64 = 13.0;

/// The number of `action` for the JS side.
fn code(action: CommitAction) -> f64 {
    match action {
        CommitAction::ReadCounter => 0.0,
        CommitAction::Transaction { ahead: None } => 1.0,
        CommitAction::Reload => 2.0,
        CommitAction::Run => 3.0,
        CommitAction::Await => 4.0,
        CommitAction::Store { strict: false } => 5.0,
        CommitAction::Store { strict: true } => 6.0,
        CommitAction::Write => 7.0,
        CommitAction::Leave => 8.0,
        CommitAction::Return => 9.0,
        CommitAction::FailCall => 10.0,
        CommitAction::Fail => 11.0,
        CommitAction::Misreported => MISREPORTED,
        CommitAction::Transaction {
            ahead: Some(counter),
        } => AHEAD + counter as f64,
    }
}

#[wasm_bindgen]
impl RawJournal {
    /// The client opens on the journal (load, store a new identity, return whether one was
    /// made): the first action.
    pub fn open(&mut self) -> f64 {
        code(self.driver.open())
    }

    /// A call starts: the first action. `in_one`: the store can run it in one transaction;
    /// `delivers`: it hands results to the application before its commit.
    pub fn call(&mut self, in_one: bool, delivers: bool) -> f64 {
        code(self.driver.call(in_one, delivers))
    }

    /// The report of the last action (a number of `REPORTS`; `counter` for `COUNTER`): the
    /// next action. A counter that is not an integer below 2^53 (a damaged store) converts to
    /// some other count, which can only make the journal stale.
    pub fn next(&mut self, report: u8, counter: f64) -> f64 {
        let report = match report {
            0 => CommitReport::Counter(counter as u64),
            1 => CommitReport::Done,
            2 => CommitReport::Ran,
            3 => CommitReport::Deferred,
            4 => CommitReport::Threw,
            5 => CommitReport::Conflict,
            6 => CommitReport::StaleRun,
            7 => CommitReport::Failed,
            _ => return MISREPORTED,
        };
        code(self.driver.next(report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// commit-engine.js numbers the actions and reports as this module does.
    #[test]
    fn the_js_side_numbers_the_actions_and_reports_alike() {
        let js = include_str!("../js/commit-engine.js");
        for names in [&ACTIONS[..], &REPORTS[..]] {
            let numbers: Vec<String> = (0..names.len()).map(|i| i.to_string()).collect();
            let line = format!("const [{}] = [{}];", names.join(", "), numbers.join(", "));
            assert!(js.contains(&line), "js/commit-engine.js must say: {line}");
        }
        for (action, name) in [
            (CommitAction::ReadCounter, "READ"),
            (CommitAction::Transaction { ahead: None }, "TRANSACTION"),
            (CommitAction::Reload, "RELOAD"),
            (CommitAction::Run, "RUN"),
            (CommitAction::Await, "AWAIT"),
            (CommitAction::Store { strict: false }, "STORE"),
            (CommitAction::Store { strict: true }, "STORE_STRICT"),
            (CommitAction::Write, "WRITE"),
            (CommitAction::Leave, "LEAVE"),
            (CommitAction::Return, "RETURN"),
            (CommitAction::FailCall, "FAIL_CALL"),
            (CommitAction::Fail, "FAIL"),
            (CommitAction::Misreported, "MISREPORTED"),
            (CommitAction::Transaction { ahead: Some(0) }, "AHEAD"),
        ] {
            assert_eq!(ACTIONS[code(action) as usize], name);
        }
        let far = (1u64 << 53) - 14;
        assert_eq!(
            code(CommitAction::Transaction { ahead: Some(far) }) - AHEAD,
            far as f64
        );
        let mut journal = RawJournal::new();
        assert_eq!(journal.next(8, 0.0), MISREPORTED);
    }
}
