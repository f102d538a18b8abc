//! Benches of the headline workload: a client comes back online and decrypts its queued messages.
//!
//! Levels:
//!
//! * the protocol core alone, in memory ([`core_queue`]; the `decrypt_queue` bench);
//! * the client of `proteus-client` with its stores ([`scenarios`], [`stores`], [`run`]; the
//!   `client_queue` bench and the `proteus-bench` runner), plus a scale test of up to 100,000
//!   queued messages over 1000 sessions ([`scale`]);
//! * sending one message to a large conversation ([`fanout`]);
//! * importing a cryptobox store of 10,000 sessions ([`import`]);
//! * a notification extension's cold open, one message and close ([`extension`]);
//! * the same scenarios on another engine, vodozemac's Olm, beside ours ([`peers`]);
//! * the client's batch threads off and on, side by side ([`threads_ab`]).
//!
//! Everything here uses only the public API of `proteus-core` and `proteus-client`.

#![forbid(unsafe_code)]

use std::error::Error;

pub mod chat;
pub mod core_queue;
pub mod extension;
pub mod fanout;
pub mod fast_forward;
pub mod forged;
pub mod idle;
pub mod import;
pub mod memory;
pub mod peers;
pub mod run;
pub mod scale;
pub mod scenarios;
pub mod stats;
pub mod stores;
pub mod threads_ab;

pub use chat::chat_plaintext;
pub use core_queue::{EstablishedPair, Party, Queue, decrypt_all, established_pair, queue_of};

/// The error type of the scenario builders and runners.
pub type BoxError = Box<dyn Error + Send + Sync>;
