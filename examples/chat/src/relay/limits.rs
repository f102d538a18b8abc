//! The relay's limits: challenges (nonces) that flooding cannot evict, token buckets (per user,
//! per address, per requester and target), and the connection count per address.
//!
//! # Nonces
//!
//! A nonce is stateless until it is used: `issued (ms since the relay started, 8 bytes) ||
//! random (16 bytes) || HMAC-SHA-256(relay key, issued || random)[..16]`, in hex. Handing one
//! out costs no memory, so `GET /v1/nonce` cannot be used to push anything out. A request is
//! accepted only if its nonce carries the relay's tag and is younger than the time window
//! ([`NONCE_TTL`]); once its signature verifies, the nonce is recorded in the *signing user's*
//! set of used nonces. An entry leaves that set only when its nonce is past the window, i.e.
//! when the window check alone already refuses it: no eviction ever re-admits a replay. A set
//! that is full (more than [`MAX_USED_NONCES_PER_USER`] requests of that user in one window)
//! refuses further requests with 429 instead of forgetting anything; only the user can fill
//! their own set, since only a verified signature adds to it. The key is made at start, so a
//! restarted relay refuses older nonces (clients fetch a fresh one and retry).

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use proteus_core::{OsRng, Rng};
use sha2::Sha256;
use zeroize::Zeroizing;

/// How long a nonce is valid after it is issued.
pub const NONCE_TTL: Duration = Duration::from_secs(300);
/// The most nonces one user may use within [`NONCE_TTL`] (above the default rate limit's
/// `burst + rate × window`, so it only bites when the rate limit is raised).
pub const MAX_USED_NONCES_PER_USER: usize = 65_536;
/// The largest envelope accepted, in bytes.
pub const MAX_ENVELOPE: usize = 64 * 1024;
/// The largest request body accepted, in bytes (a prekey upload is the largest).
pub const MAX_BODY: usize = 256 * 1024;
/// Requests per second each user may make, on average…
pub const RATE_PER_SECOND: f64 = 200.0;
/// …and in a burst (a backlog's acknowledgements, a prekey refill).
pub const BURST: f64 = 3000.0;
/// The most messages queued for one user, from everyone.
pub const MAX_QUEUE: u64 = 100_000;
/// The most one-time prekeys kept for one user.
pub const MAX_PREKEYS: u64 = 1000;
/// The most bundles in one upload.
pub const MAX_UPLOAD: usize = 500;
/// The longest long-poll.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The most messages in one page of a queue.
pub const MAX_PAGE: u64 = 1000;
/// The most messages one sender may have queued for one recipient.
pub const MAX_QUEUE_PER_SENDER: u64 = 10_000;
/// Registrations (of a new name, or of a taken name with another key) per address: burst…
pub const REGISTER_BURST: f64 = 20.0;
/// …and refill: one a minute.
pub const REGISTER_PER_SECOND: f64 = 1.0 / 60.0;
/// One-time prekeys one user may claim of one other user: burst (sessions restarted)…
pub const CLAIM_BURST: f64 = 10.0;
/// …and refill: ten an hour. Past that, a claim gets the last-resort prekey.
pub const CLAIM_PER_SECOND: f64 = 10.0 / 3600.0;
/// Open connections in all (each client request opens one; a long-poll holds one).
pub const MAX_CONNECTIONS: usize = 1024;
/// Open connections from one address.
pub const MAX_CONNECTIONS_PER_IP: usize = 64;
/// The time a client has to send a request's headers (slowloris).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The time a client has to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Past this many tracked keys, a rate book forgets the keys whose bucket is full again
/// (indistinguishable from a new key).
pub const MAX_TRACKED_BUCKETS: usize = 100_000;

const TAG_LEN: usize = 16;
const RANDOM_LEN: usize = 16;
const NONCE_LEN: usize = 8 + RANDOM_LEN + TAG_LEN;

/// Issues and checks nonces; remembers the used ones per user.
pub(crate) struct NonceBook {
    /// HMAC keyed with a random key made at start; cloned for each tag.
    mac: Hmac<Sha256>,
    started: Instant,
    ttl: Duration,
    max_per_user: usize,
    used: HashMap<String, HashMap<[u8; RANDOM_LEN], u64>>,
    /// Spends since the last sweep of users whose nonces are all past the window.
    spends: usize,
}

/// Every this many spends, the users whose used nonces are all past the window are forgotten
/// (their sets would refuse nothing the window check does not).
const SWEEP_EVERY: usize = 4096;

/// A nonce whose tag and age were checked, not yet spent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FreshNonce {
    issued_ms: u64,
    random: [u8; RANDOM_LEN],
}

/// Why a nonce was refused when spent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SpendError {
    /// Used before.
    Replayed,
    /// The user used too many in one window.
    TooMany,
}

impl NonceBook {
    /// `None` only if HMAC refused a 32-byte key (it takes any length).
    pub(crate) fn new(ttl: Duration, max_per_user: usize) -> Option<Self> {
        let mut key = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(key.as_mut_slice());
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_slice()).ok()?;
        Some(Self {
            mac,
            started: Instant::now(),
            ttl,
            max_per_user,
            used: HashMap::new(),
            spends: 0,
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn tag(&self, issued_ms: u64, random: &[u8; RANDOM_LEN]) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(&issued_ms.to_be_bytes());
        mac.update(random);
        mac
    }

    /// A fresh nonce (nothing is stored).
    pub(crate) fn issue(&self) -> String {
        let issued_ms = self.now_ms();
        let mut random = [0u8; RANDOM_LEN];
        OsRng.fill_bytes(&mut random);
        let tag = self.tag(issued_ms, &random).finalize().into_bytes();
        let mut bytes = Vec::with_capacity(NONCE_LEN);
        bytes.extend_from_slice(&issued_ms.to_be_bytes());
        bytes.extend_from_slice(&random);
        bytes.extend_from_slice(tag.get(..TAG_LEN).unwrap_or_default());
        hex::encode(bytes)
    }

    /// The nonce if this relay issued it within the window (constant-time tag check).
    pub(crate) fn check(&self, nonce: &str) -> Option<FreshNonce> {
        let bytes = hex::decode(nonce).ok()?;
        if bytes.len() != NONCE_LEN {
            return None;
        }
        let (issued, rest) = bytes.split_at(8);
        let (random, tag) = rest.split_at(RANDOM_LEN);
        let issued_ms = u64::from_be_bytes(issued.try_into().ok()?);
        let random: [u8; RANDOM_LEN] = random.try_into().ok()?;
        self.tag(issued_ms, &random)
            .verify_truncated_left(tag)
            .ok()?;
        let age = self.now_ms().checked_sub(issued_ms)?;
        (u128::from(age) < self.ttl.as_millis()).then_some(FreshNonce { issued_ms, random })
    }

    /// Records `nonce` as used by `user`: refused if it was used before, or if `user` has used
    /// too many in one window. Only nonces past the window are forgotten.
    pub(crate) fn spend(&mut self, user: &str, nonce: FreshNonce) -> Result<(), SpendError> {
        let now = self.now_ms();
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let live = |issued: &u64| now.saturating_sub(*issued) < ttl;
        self.spends += 1;
        if self.spends >= SWEEP_EVERY {
            self.spends = 0;
            self.used.retain(|_, used| used.values().any(live));
        }
        let max = self.max_per_user;
        let used = self.used.entry(user.to_owned()).or_default();
        if used.contains_key(&nonce.random) {
            return Err(SpendError::Replayed);
        }
        if used.len() >= max {
            used.retain(|_, issued| live(issued));
            if used.len() >= max {
                return Err(SpendError::TooMany);
            }
        }
        used.insert(nonce.random, nonce.issued_ms);
        Ok(())
    }
}

/// A token bucket.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A bucket per key: `burst` tokens, refilled at `per_second`.
pub(crate) struct RateBook<K> {
    buckets: HashMap<K, Bucket>,
}

impl<K: Hash + Eq + Clone> RateBook<K> {
    pub(crate) fn new() -> Self {
        Self {
            buckets: HashMap::new(),
        }
    }

    /// Takes a token from `key`'s bucket; false if there is none.
    pub(crate) fn take(&mut self, key: &K, burst: f64, per_second: f64) -> bool {
        let now = Instant::now();
        if self.buckets.len() >= MAX_TRACKED_BUCKETS && !self.buckets.contains_key(key) {
            self.buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < burst
            });
        }
        let bucket = self.buckets.entry(key.clone()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }
}

/// Open connections per address, bounded in total and per address.
pub(crate) struct Connections {
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
    max_total: usize,
    max_per_ip: usize,
}

/// One admitted connection; counted until dropped.
pub(crate) struct ConnectionSlot {
    book: Arc<Connections>,
    ip: IpAddr,
}

impl Connections {
    pub(crate) fn new(max_total: usize, max_per_ip: usize) -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::new((0, HashMap::new())),
            max_total,
            max_per_ip,
        })
    }

    /// A slot for a new connection from `ip`, or `None` if the relay or `ip` has too many.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<ConnectionSlot> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (total, per_ip) = &mut *open;
        let mine = per_ip.entry(ip).or_insert(0);
        if *total >= self.max_total || *mine >= self.max_per_ip {
            if *mine == 0 {
                per_ip.remove(&ip);
            }
            return None;
        }
        *mine += 1;
        *total += 1;
        Some(ConnectionSlot {
            book: self.clone(),
            ip,
        })
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self
            .book
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (total, per_ip) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(n) = per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_the_relays_fresh_and_spent_once_per_user() {
        let mut book = NonceBook::new(Duration::from_secs(60), 2).unwrap();
        let a = book.issue();
        let fresh = book.check(&a).unwrap();
        assert_eq!(book.spend("alice", fresh), Ok(()));
        assert_eq!(book.spend("alice", fresh), Err(SpendError::Replayed));
        // Another relay's, a changed tag, garbage.
        let other = NonceBook::new(Duration::from_secs(60), 2).unwrap().issue();
        assert!(book.check(&other).is_none());
        let mut flipped = a.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(book.check(std::str::from_utf8(&flipped).unwrap()).is_none());
        assert!(book.check("zz").is_none());
        // Full within the window: refused, nothing forgotten.
        let b = book.check(&book.issue()).unwrap();
        assert_eq!(book.spend("alice", b), Ok(()));
        let c = book.check(&book.issue()).unwrap();
        assert_eq!(book.spend("alice", c), Err(SpendError::TooMany));
        assert_eq!(book.spend("alice", fresh), Err(SpendError::Replayed));
        assert_eq!(book.spend("bob", c), Ok(()));
    }

    #[test]
    fn users_whose_nonces_are_all_past_the_window_are_forgotten() {
        let mut book = NonceBook::new(Duration::from_millis(30), 4).unwrap();
        let old = book.check(&book.issue()).unwrap();
        book.spend("gone", old).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        for _ in 0..SWEEP_EVERY {
            let fresh = book.check(&book.issue()).unwrap();
            book.spend("here", fresh).unwrap_or(());
        }
        assert!(!book.used.contains_key("gone"));
        assert!(book.used.contains_key("here"));
    }

    #[test]
    fn an_old_nonce_is_refused() {
        let book = NonceBook::new(Duration::from_millis(30), 2).unwrap();
        let a = book.issue();
        std::thread::sleep(Duration::from_millis(60));
        assert!(book.check(&a).is_none());
    }
}
