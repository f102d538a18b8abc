//! The loop of the host's commit protocol, sans I/O: which step of an operation comes next.
//!
//! The [`Journal`] decides each step on its own (stale? what to store? run again?); this
//! sequences them, so that the host (the web package's `commit-engine.js`) only executes what it
//! is asked and reports how it went. Nothing here does I/O or waits: [`CommitDriver::call`] or
//! [`CommitDriver::open`] starts an operation and answers with the first [`CommitAction`]; each
//! [`CommitReport`] of the host answers with the next, until [`CommitAction::Return`] or a
//! failure ends the operation.
//!
//! A call runs one of two ways:
//!
//! * **In one transaction** (a plain IndexedDB store): the host opens one readwrite transaction
//!   that reads the commit counter; in the read's success event, while the transaction is still
//!   active, it reports the counter, and runs the call and writes its commit if asked. If the
//!   call hands nothing to the application before its commit, it may run *ahead* of the read, on
//!   the counter the journal stands at: the transaction then aborts if another client committed
//!   in between (a stale run: nothing of it was stored or handed out), and the call runs again
//!   after a reload, the other way. A stale run costs a whole call, so once one happened, calls
//!   read first until one finds the store unchanged.
//! * **Read, run, store** (a store that seals asynchronously, a memory store): read the counter,
//!   reload if the journal is stale, run the call, store its commit in a transaction of its own.
//!
//! A call whose result the application settles asynchronously before the commit (a batch's
//! callback returned promises) waits for that, then stores its commit in a transaction of its own;
//! the compare-and-swap keeps it exact. A call that failed still stores what was pending. A lost
//! compare-and-swap runs the operation again if [`Journal::retry`] allows it, else fails it.

use super::Journal;

/// What the host does next, in answer to the start of an operation or a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitAction {
    /// Read the store's commit counter; report [`CommitReport::Counter`] (or a failure).
    ReadCounter,
    /// Open ONE readwrite transaction that reads the commit counter; report the counter
    /// ([`CommitReport::Counter`]) in the read's success event and execute what comes back while
    /// the transaction is active, up to [`Write`](CommitAction::Write) or
    /// [`Leave`](CommitAction::Leave); then report how the transaction ended. With `ahead`, report
    /// that counter at once, without waiting for the read, and abort the transaction if the read
    /// finds another ([`CommitReport::StaleRun`]).
    Transaction {
        /// The counter to run on ahead of the read.
        ahead: Option<u64>,
    },
    /// Read every record and open the client on them (the journal reloads); report
    /// [`CommitReport::Done`].
    Reload,
    /// Run the call (and hand its result to the application's settlement, if any); report
    /// [`Ran`](CommitReport::Ran), [`Deferred`](CommitReport::Deferred) or
    /// [`Threw`](CommitReport::Threw).
    Run,
    /// Wait for the application's settlement of the result; report Done (or a failure).
    Await,
    /// Take the journal's commit ([`Journal::take_commit`]) and store it in a transaction of its
    /// own, a compare-and-swap on its counters; report Done (or a conflict, or a failure).
    /// `strict`: with strict durability whatever the call's (a reload's commit: a new identity).
    Store {
        /// Strict durability, not the call's.
        strict: bool,
    },
    /// In the open transaction: take the journal's commit and write it there.
    Write,
    /// In the open transaction: write nothing.
    Leave,
    /// The operation is over: hand out what the call returned.
    Return,
    /// The operation failed with the call's own error.
    FailCall,
    /// The operation failed with the failure reported last (a store's failure, a lost
    /// compare-and-swap, a settlement that failed).
    Fail,
    /// The host reported what was not asked for (a bug of the host): the operation is over and
    /// fails as an internal error.
    Misreported,
}

/// What the host reports of the action it was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitReport {
    /// The store's commit counter, as read (by `ReadCounter` or in the transaction).
    Counter(u64),
    /// The action completed: the records reloaded, the commit stored, the transaction committed,
    /// the settlement resolved.
    Done,
    /// The call returned, and its settlement, if any, completed at once.
    Ran,
    /// The call returned, and its settlement is pending.
    Deferred,
    /// The call failed (its own error, kept by the host).
    Threw,
    /// The compare-and-swap lost: another client committed first.
    Conflict,
    /// The transaction found the store at another counter than the call ran ahead on.
    StaleRun,
    /// The action failed (the host keeps the error).
    Failed,
}

/// How the call went in the transaction, known once the transaction ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The journal was stale: nothing ran.
    Stale,
    Ran,
    Threw,
    Deferred,
}

/// Which action the driver waits to hear of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Reading,
    Reloading,
    /// The commit of a reload (a new identity).
    StoringReload,
    Running,
    Awaiting,
    /// The call's commit; `threw`: the call failed, and fails once it is stored.
    Storing {
        threw: bool,
    },
    /// In the transaction: its counter.
    Counting,
    /// In the transaction: the call.
    RunningIn,
    /// The transaction's end.
    Closing(Outcome),
}

/// The state of the host's commit protocol over one [`Journal`]: one operation at a time (the
/// host's calls take turns under its lock). See the module docs.
#[derive(Debug)]
pub struct CommitDriver {
    journal: Journal,
    state: State,
    /// The operation opens the client (reload, store, return) rather than running a call.
    opening: bool,
    /// The host can run the call in one transaction.
    in_one: bool,
    /// The call hands results to the application before its commit.
    delivers: bool,
    /// Whether the last call run in one transaction found the store where this client left it:
    /// only then does a call run ahead of the read.
    ahead_pays: bool,
}

impl CommitDriver {
    /// The driver of the operations on `journal` (a clone of the client's).
    pub fn new(journal: Journal) -> Self {
        Self {
            journal,
            state: State::Idle,
            opening: false,
            in_one: false,
            delivers: false,
            ahead_pays: true,
        }
    }

    /// Opening the client: reload the records, store the commit that made an identity if the
    /// store had none, return. A lost compare-and-swap (another client made one first) reloads.
    pub fn open(&mut self) -> CommitAction {
        self.start(true, false, false);
        self.to(State::Reloading, CommitAction::Reload)
    }

    /// A call starts. `in_one`: the host can run it in one transaction (a plain IndexedDB store).
    /// `delivers`: it hands results to the application before its commit, so it never runs ahead
    /// and a lost compare-and-swap fails it.
    pub fn call(&mut self, in_one: bool, delivers: bool) -> CommitAction {
        self.start(false, in_one, delivers);
        self.attempt()
    }

    /// The host's report of the action it was asked for: the next action.
    pub fn next(&mut self, report: CommitReport) -> CommitAction {
        use CommitReport as R;
        use State as S;
        match (self.state, report) {
            (S::Idle, _) => self.finish(CommitAction::Misreported),
            (_, R::Failed) => self.finish(CommitAction::Fail),
            (S::StoringReload | S::Storing { .. } | S::Closing(_), R::Conflict) => {
                if !self.journal.retry() {
                    return self.finish(CommitAction::Fail);
                }
                if self.opening {
                    return self.to(S::Reloading, CommitAction::Reload);
                }
                self.attempt()
            }
            (S::Reading, R::Counter(counter)) => match self.journal.begin(counter) {
                true => self.to(S::Reloading, CommitAction::Reload),
                false => self.run(S::Running, CommitAction::Run),
            },
            (S::Reloading, R::Done) => match self.pending() {
                true => self.to(S::StoringReload, CommitAction::Store { strict: true }),
                false => self.reloaded(),
            },
            (S::StoringReload, R::Done) => {
                self.journal.committed();
                self.reloaded()
            }
            (S::Running, R::Ran) | (S::Awaiting, R::Done) => self.store(false),
            (S::Running, R::Threw) => self.store(true),
            (S::Running, R::Deferred) => self.to(S::Awaiting, CommitAction::Await),
            (S::Storing { threw }, R::Done) => {
                self.journal.committed();
                self.finish(match threw {
                    true => CommitAction::FailCall,
                    false => CommitAction::Return,
                })
            }
            (S::Counting, R::Counter(counter)) => match self.journal.begin(counter) {
                true => self.to(S::Closing(Outcome::Stale), CommitAction::Leave),
                false => self.run(S::RunningIn, CommitAction::Run),
            },
            (S::RunningIn, R::Ran) => self.write(Outcome::Ran),
            (S::RunningIn, R::Threw) => self.write(Outcome::Threw),
            (S::RunningIn, R::Deferred) => {
                self.to(S::Closing(Outcome::Deferred), CommitAction::Leave)
            }
            (S::Counting | S::RunningIn | S::Closing(_), R::StaleRun) => {
                self.ahead_pays = false;
                self.to(S::Reading, CommitAction::ReadCounter)
            }
            (S::Closing(outcome), R::Done) => {
                self.journal.committed();
                self.ahead_pays = outcome != Outcome::Stale;
                match outcome {
                    Outcome::Stale => self.to(S::Reading, CommitAction::ReadCounter),
                    Outcome::Ran => self.finish(CommitAction::Return),
                    Outcome::Threw => self.finish(CommitAction::FailCall),
                    Outcome::Deferred => self.to(S::Awaiting, CommitAction::Await),
                }
            }
            _ => self.finish(CommitAction::Misreported),
        }
    }

    /// An operation starts afresh; one the host abandoned (a trap, an exception of its own) ends.
    fn start(&mut self, opening: bool, in_one: bool, delivers: bool) {
        if self.state != State::Idle {
            self.journal.end();
        }
        self.opening = opening;
        self.in_one = in_one;
        self.delivers = delivers;
    }

    /// An attempt of the call, from the read of the counter.
    fn attempt(&mut self) -> CommitAction {
        if !self.in_one {
            return self.to(State::Reading, CommitAction::ReadCounter);
        }
        let ahead = match !self.delivers && self.ahead_pays {
            true => Some(self.journal.host().counter),
            false => None,
        };
        self.to(State::Counting, CommitAction::Transaction { ahead })
    }

    /// The records are reloaded and their commit, if any, stored.
    fn reloaded(&mut self) -> CommitAction {
        match self.opening {
            true => self.finish(CommitAction::Return),
            false => self.run(State::Running, CommitAction::Run),
        }
    }

    /// The call runs: what it hands out before its commit makes a lost compare-and-swap final.
    fn run(&mut self, state: State, action: CommitAction) -> CommitAction {
        if self.delivers {
            self.journal.hand_out();
        }
        self.to(state, action)
    }

    /// After the call, out of the transaction: its commit, if any, then its outcome.
    fn store(&mut self, threw: bool) -> CommitAction {
        match (self.pending(), threw) {
            (true, _) => self.to(
                State::Storing { threw },
                CommitAction::Store { strict: false },
            ),
            (false, true) => self.finish(CommitAction::FailCall),
            (false, false) => self.finish(CommitAction::Return),
        }
    }

    /// After the call, in the transaction: its commit, if any, is written there.
    fn write(&mut self, outcome: Outcome) -> CommitAction {
        let action = match self.pending() {
            true => CommitAction::Write,
            false => CommitAction::Leave,
        };
        self.to(State::Closing(outcome), action)
    }

    /// Whether the client committed writes the host has not taken.
    fn pending(&self) -> bool {
        !self.journal.host().pending.is_empty()
    }

    fn to(&mut self, state: State, action: CommitAction) -> CommitAction {
        self.state = state;
        action
    }

    /// The operation is over, however it went.
    fn finish(&mut self, action: CommitAction) -> CommitAction {
        if self.state != State::Idle {
            self.journal.end();
        }
        self.to(State::Idle, action)
    }
}

#[cfg(test)]
mod tests;
