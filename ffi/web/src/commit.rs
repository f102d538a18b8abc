//! The loop of the commit protocol for the JS side: [`RawDriver`], over
//! [`CommitDriver`](proteus_client::CommitDriver), which decides every step of a call (read the
//! counter, run in one transaction and ahead of its read or not, reload, run, wait for the
//! application, store, run again or fail). `js/commit-engine.js` executes each action and reports
//! how it went; it keeps only the I/O, the call of the application's function and the platform's
//! error objects.
//!
//! Actions and reports cross as small numbers, in the order of [`ACTIONS`] and [`REPORTS`],
//! which `js/commit-engine.js` declares as constants (a test below checks them): one call into
//! wasm per step, no object built for it.

use proteus_client::{CommitAction, CommitDriver, CommitReport};
use wasm_bindgen::prelude::*;

use crate::RawJournal;

/// The actions' names in commit-engine.js, by their numbers.
#[cfg(test)]
const ACTIONS: [&str; 13] = [
    "READ",
    "TRANSACTION",
    "TRANSACTION_AHEAD",
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

/// The number of `Misreported` (a bug of the JS side): past the actions it knows, so that it
/// fails the call as an internal error.
const MISREPORTED: u8 = 13;

/// The driver of the commit protocol of one client, for the JS side. See the module docs.
#[wasm_bindgen]
pub struct RawDriver {
    driver: CommitDriver,
    /// The counter of the last `TRANSACTION_AHEAD`, to run on.
    ahead: u64,
}

#[wasm_bindgen]
impl RawDriver {
    /// The driver of the calls on `journal`.
    #[wasm_bindgen(constructor)]
    pub fn new(journal: &RawJournal) -> RawDriver {
        Self {
            driver: CommitDriver::new(journal.journal.clone()),
            ahead: 0,
        }
    }

    /// The client opens: the first action.
    pub fn open(&mut self) -> u8 {
        let action = self.driver.open();
        self.code(action)
    }

    /// A call starts: the first action. `in_one`: the store can run it in one transaction;
    /// `delivers`: it hands results to the application before its commit.
    pub fn call(&mut self, in_one: bool, delivers: bool) -> u8 {
        let action = self.driver.call(in_one, delivers);
        self.code(action)
    }

    /// The report of the last action (a number of [`REPORTS`]; `counter` for `COUNTER`): the
    /// next action. Counters cross as JS numbers (integers below 2^53, as the JS side stores
    /// them); anything else converts to some other count, which can only make the journal stale.
    pub fn next(&mut self, report: u8, counter: f64) -> u8 {
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
        let action = self.driver.next(report);
        self.code(action)
    }

    /// The counter a `TRANSACTION_AHEAD` runs on.
    #[wasm_bindgen(js_name = ranOn)]
    pub fn ran_on(&self) -> f64 {
        self.ahead as f64
    }

    fn code(&mut self, action: CommitAction) -> u8 {
        match action {
            CommitAction::ReadCounter => 0,
            CommitAction::Transaction { ahead: None } => 1,
            CommitAction::Transaction { ahead: Some(counter) } => {
                self.ahead = counter;
                2
            }
            CommitAction::Reload => 3,
            CommitAction::Run => 4,
            CommitAction::Await => 5,
            CommitAction::Store { strict: false } => 6,
            CommitAction::Store { strict: true } => 7,
            CommitAction::Write => 8,
            CommitAction::Leave => 9,
            CommitAction::Return => 10,
            CommitAction::FailCall => 11,
            CommitAction::Fail => 12,
            CommitAction::Misreported => MISREPORTED,
        }
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
            let line = format!(
                "const [{}] = [{}];",
                names.join(", "),
                numbers.join(", ")
            );
            assert!(js.contains(&line), "js/commit-engine.js must say: {line}");
        }
        assert_eq!(usize::from(MISREPORTED), ACTIONS.len());
        let mut driver = RawDriver::new(&RawJournal::new());
        for (action, name) in [
            (CommitAction::ReadCounter, "READ"),
            (CommitAction::Transaction { ahead: None }, "TRANSACTION"),
            (CommitAction::Transaction { ahead: Some(7) }, "TRANSACTION_AHEAD"),
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
        ] {
            assert_eq!(ACTIONS[usize::from(driver.code(action))], name);
        }
        assert_eq!(driver.ran_on(), 7.0);
        assert_eq!(driver.code(CommitAction::Misreported), MISREPORTED);
    }
}
