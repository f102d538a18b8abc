//! An end-to-end encrypted chat between terminals, over a small authenticated relay.
//!
//! * [`api`]: what relay and clients share: routes, JSON bodies, error codes, the signed message.
//! * [`relay`]: the server. It keeps prekey bundles and queued envelopes in SQLite, and sees
//!   neither plaintexts nor secret keys. Clients sign each request with their identity key
//!   over a fresh challenge. A folder of parts: `config`, `limits` (nonces, rates, failed
//!   authentications, connections, the clock), `routes`, `auth`, the handlers `users`,
//!   `prekeys` and `queues`, `db`, `errors`, `files` (the web client's static files).
//! * [`net`]: the relay's client side: signed requests, nonces, long-poll.
//! * [`client`]: the chat client: a [`proteus_client::Client`] in the data directory, the
//!   backlog decrypted with the batch API, fingerprints checked on first use, prekeys
//!   refilled. Its parts: `terminal`, `embed` (relay takeover), `poll`, `prekeys`, `inbox`,
//!   `identity` (pinning), `commands`, `outbox`, `records` (the chat's SQLite records).
//!
//! The binary `proteus-chat` puts them together: `proteus-chat alice bob` chats, `proteus-chat
//! relay` runs a relay on its own.

#![forbid(unsafe_code)]

pub mod api;
pub mod client;
pub mod net;
pub mod relay;

/// The relay's default address.
pub const DEFAULT_RELAY: &str = "127.0.0.1:7417";
