//! The relay's limits: challenges (nonces) that flooding cannot evict, token buckets (per user,
//! per address, per requester and target, per failed authentication), the addresses that
//! authenticated recently, and the connection counts. Every limit is a named constant here;
//! [`RelayConfig`](super::RelayConfig) takes its default from it.
//!
//! # Time
//!
//! Windows and refills are measured on a [`Clock`]: the system's monotonic clock, or in tests a
//! manual one that moves only when the test moves it, so that no test depends on the speed of
//! the machine it runs on.
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
//!
//! # Books
//!
//! Every map keyed by something a client chooses (an address, a claimed name, a pair of users)
//! holds at most [`MAX_TRACKED_KEYS`] keys. When one is full, it sweeps out the entries that
//! carry no information (a bucket full again is the same as a new one; an address not seen
//! within its window is the same as one never seen), at most once per a quarter of its size in
//! new keys, so a sweep's cost is spread over the arrivals before it. A key that still finds no
//! room is not tracked: a rate book charges it to one bucket that all such keys share (so a
//! flood of new keys is limited as one client, never let through), and an address that finds
//! no room is not remembered as known.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
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
/// The most messages one sender may have queued for one recipient.
pub const MAX_QUEUE_PER_SENDER: u64 = 10_000;
/// The most messages queued for one user from *strangers*: senders that user has never written
/// to. Accounts are cheap to make, so strangers as a group get this share of a queue and no
/// more: the rest of [`MAX_QUEUE`] stays for the user's contacts.
pub const MAX_QUEUE_FROM_STRANGERS: u64 = 10_000;
/// The most the relay's database may hold, in bytes (pages in use, as SQLite counts them). Past
/// it, sends, prekey uploads and new registrations are refused (507) until messages are read.
pub const MAX_STORE_BYTES: u64 = 4 << 30;
/// The most one-time prekeys kept for one user.
pub const MAX_PREKEYS: u64 = 1000;
/// The most bundles in one upload.
pub const MAX_UPLOAD: usize = 500;
/// The longest long-poll.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The most messages in one page of a queue.
pub const MAX_PAGE: u64 = 1000;
/// Registrations (of a new name, or of a taken name with another key) per address: burst…
pub const REGISTER_BURST: f64 = 20.0;
/// …and refill: one a minute.
pub const REGISTER_PER_SECOND: f64 = 1.0 / 60.0;
/// One-time prekeys one user may claim of one other user: burst (sessions restarted)…
pub const CLAIM_BURST: f64 = 10.0;
/// …and refill: ten an hour. Past that, a claim gets the last-resort prekey.
pub const CLAIM_PER_SECOND: f64 = 10.0 / 3600.0;
/// Failed authentications (an unknown name, a bad signature) allowed per address, and per
/// claimed user name, in a burst… Past it, a request is refused with 429 before its signature is
/// checked. A name's budget binds only addresses that have failed recently themselves, so
/// strangers forging requests in a user's name cannot lock the user out.
pub const AUTH_FAILURE_BURST: f64 = 10.0;
/// …and refill: one every ten seconds.
pub const AUTH_FAILURES_PER_SECOND: f64 = 0.1;
/// Open connections in all (each client request opens one; a long-poll holds one).
pub const MAX_CONNECTIONS: usize = 1024;
/// Of [`MAX_CONNECTIONS`], how many only *known* addresses may use: those a request
/// authenticated from within [`KNOWN_ADDRESS_TTL`]. Strangers holding every other connection
/// cannot keep the relay's users out.
pub const RESERVED_FOR_KNOWN: usize = 256;
/// How long an address stays known after a request from it authenticated.
pub const KNOWN_ADDRESS_TTL: Duration = Duration::from_secs(24 * 3600);
/// Open connections from one address: an IPv4 address, or an IPv6 /64 (one host usually has a
/// whole /64, so counting its addresses one by one would count nothing).
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;
/// Connections over a limit are answered 503 and closed; this many may be being answered at
/// once, and past that a connection over a limit is closed without an answer.
pub const MAX_REFUSING: usize = 64;
/// The time a client has to send a request's headers (slowloris).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The time a client has to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The most keys one book (a rate book, the known addresses) tracks; see the module's notes.
pub const MAX_TRACKED_KEYS: usize = 100_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The time the relay's windows and rate books are measured in.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// `None`: the system's monotonic clock. `Some`: a manual clock's current time.
    manual: Option<Arc<Mutex<Instant>>>,
}

impl Clock {
    /// The system's monotonic clock (the default).
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock that stands still until it is [advanced](Self::advance): tests step through
    /// windows and refills with it, whatever the speed of the machine.
    pub fn manual() -> Self {
        Self {
            manual: Some(Arc::new(Mutex::new(Instant::now()))),
        }
    }

    /// Moves a manual clock forward by `by` (the system clock is not moved).
    pub fn advance(&self, by: Duration) {
        if let Some(now) = &self.manual {
            let mut now = lock(now);
            *now = now.checked_add(by).unwrap_or(*now);
        }
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        match &self.manual {
            None => Instant::now(),
            Some(now) => *lock(now),
        }
    }
}

/// The part of an address one client is taken to control: an IPv4 address, or the /64 an IPv6
/// address is in. An IPv4 address seen as IPv6 (`::ffff:a.b.c.d`, a dual-stack listener) is the
/// IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AddressKey {
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// An IPv6 /64 (its first 64 bits; the rest are zero).
    V6(Ipv6Addr),
}

impl AddressKey {
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self::V4(v4),
            IpAddr::V6(v6) => Self::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        }
    }
}

/// A map of at most `max` keys; see the module's notes on books.
struct Bounded<K, V> {
    entries: HashMap<K, V>,
    max: usize,
    /// New keys seen since the last sweep (tracked or not).
    arrivals: usize,
    /// Sweeps made (tests check that they are spread out).
    sweeps: usize,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    fn new(max: usize) -> Self {
        Self {
            entries: HashMap::new(),
            max,
            arrivals: 0,
            sweeps: 0,
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.entries.get(key)
    }

    fn is_full(&self) -> bool {
        self.entries.len() >= self.max
    }

    /// `key`'s entry, made with `new` if there is room; `None` if there is none. When the map
    /// is full, it first sweeps out the entries `forgettable` calls so, if a quarter of its
    /// size in new keys has arrived since the last sweep.
    fn entry(
        &mut self,
        key: &K,
        forgettable: impl Fn(&V) -> bool,
        new: impl FnOnce() -> V,
    ) -> Option<&mut V> {
        if !self.entries.contains_key(key) {
            self.arrivals = self.arrivals.saturating_add(1);
            if self.is_full() && self.arrivals >= (self.max / 4).max(1) {
                self.entries.retain(|_, v| !forgettable(v));
                self.arrivals = 0;
                self.sweeps += 1;
            }
            if self.is_full() {
                return None;
            }
        }
        Some(self.entries.entry(key.clone()).or_insert_with(new))
    }
}

/// Issues and checks nonces; remembers the used ones per user.
pub(crate) struct NonceBook {
    /// HMAC keyed with a random key made at start; cloned for each tag.
    mac: Hmac<Sha256>,
    clock: Clock,
    started: Instant,
    ttl: Duration,
    max_per_user: usize,
    used: HashMap<String, HashMap<[u8; RANDOM_LEN], u64>>,
    /// Spends since the last sweep of users whose nonces are all past the window.
    spends: usize,
}

const TAG_LEN: usize = 16;
const RANDOM_LEN: usize = 16;
const NONCE_LEN: usize = 8 + RANDOM_LEN + TAG_LEN;

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
    pub(crate) fn new(clock: Clock, ttl: Duration, max_per_user: usize) -> Option<Self> {
        let mut key = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(key.as_mut_slice());
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_slice()).ok()?;
        Some(Self {
            mac,
            started: clock.now(),
            clock,
            ttl,
            max_per_user,
            used: HashMap::new(),
            spends: 0,
        })
    }

    fn now_ms(&self) -> u64 {
        let elapsed = self.clock.now().saturating_duration_since(self.started);
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
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

    /// Whether `user` has used `nonce` already (checked before a signature, so that a replay
    /// costs no signature check; [`spend`](Self::spend) decides).
    pub(crate) fn is_spent(&self, user: &str, nonce: FreshNonce) -> bool {
        self.used
            .get(user)
            .is_some_and(|used| used.contains_key(&nonce.random))
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
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens it holds at `now`.
    fn level(&self, now: Instant, burst: f64, per_second: f64) -> f64 {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * per_second;
        (self.tokens + refill).min(burst)
    }

    /// Takes a token at `now`; false if there is none.
    fn take(&mut self, now: Instant, burst: f64, per_second: f64) -> bool {
        self.tokens = self.level(now, burst, per_second);
        self.at = now;
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

/// A bucket per key: `burst` tokens, refilled at `per_second`; at most `max_keys` keys, the
/// keys there is no room for sharing one bucket (see the module's notes on books).
pub(crate) struct RateBook<K> {
    clock: Clock,
    burst: f64,
    per_second: f64,
    buckets: Bounded<K, Bucket>,
    /// The bucket of the keys there is no room to track.
    shared: Bucket,
}

impl<K: Hash + Eq + Clone> RateBook<K> {
    pub(crate) fn new(clock: Clock, burst: f64, per_second: f64, max_keys: usize) -> Self {
        let now = clock.now();
        Self {
            clock,
            burst,
            per_second,
            buckets: Bounded::new(max_keys),
            shared: Bucket {
                tokens: burst,
                at: now,
            },
        }
    }

    /// Takes a token from `key`'s bucket; false if there is none.
    pub(crate) fn take(&mut self, key: &K) -> bool {
        let (now, burst, rate) = (self.clock.now(), self.burst, self.per_second);
        let full_again = |b: &Bucket| b.level(now, burst, rate) >= burst;
        let new = || Bucket {
            tokens: burst,
            at: now,
        };
        self.buckets
            .entry(key, full_again, new)
            .unwrap_or(&mut self.shared)
            .take(now, burst, rate)
    }

    /// The tokens `key`'s bucket holds (nothing is taken).
    pub(crate) fn level(&self, key: &K) -> f64 {
        let (now, burst, rate) = (self.clock.now(), self.burst, self.per_second);
        match self.buckets.get(key) {
            Some(bucket) => bucket.level(now, burst, rate),
            None if self.buckets.is_full() => self.shared.level(now, burst, rate),
            None => burst,
        }
    }

    /// Whether `key`'s bucket is full: it has taken nothing within a refill.
    pub(crate) fn is_full(&self, key: &K) -> bool {
        self.level(key) >= self.burst
    }
}

/// The addresses a request authenticated from within a window (at most `max` of them).
pub(crate) struct KnownAddresses {
    clock: Clock,
    ttl: Duration,
    seen: Bounded<AddressKey, Instant>,
}

impl KnownAddresses {
    pub(crate) fn new(clock: Clock, ttl: Duration, max: usize) -> Self {
        Self {
            clock,
            ttl,
            seen: Bounded::new(max),
        }
    }

    /// A request from `address` authenticated.
    pub(crate) fn note(&mut self, address: AddressKey) {
        let (now, ttl) = (self.clock.now(), self.ttl);
        let stale = |at: &Instant| now.saturating_duration_since(*at) >= ttl;
        if let Some(at) = self.seen.entry(&address, stale, || now) {
            *at = now;
        }
    }

    /// Whether a request from `address` authenticated within the window.
    pub(crate) fn contains(&self, address: AddressKey) -> bool {
        let now = self.clock.now();
        self.seen
            .get(&address)
            .is_some_and(|at| now.saturating_duration_since(*at) < self.ttl)
    }
}

/// Open connections per address, bounded in total and per address, with room kept for known
/// addresses; and connections being refused.
#[derive(Debug)]
pub(crate) struct Connections {
    open: Mutex<Open>,
    limits: ConnectionLimits,
}

/// What [`Connections`] allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// Served connections in all…
    pub(crate) total: usize,
    /// …of which only known addresses may use this many.
    pub(crate) reserved_for_known: usize,
    /// Served connections per address.
    pub(crate) per_address: usize,
    /// Connections being answered 503 at once.
    pub(crate) refusing: usize,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    refusing: usize,
    per_address: HashMap<AddressKey, usize>,
}

/// What to do with a new connection.
pub(crate) enum Admission {
    /// Serve it (counted until the slot is dropped).
    Serve(ConnectionSlot),
    /// Answer 503 with this reason, and close it (counted among the refusals until dropped).
    Refuse(ConnectionSlot, &'static str),
    /// Close it at once: over a limit, and too many refusals are being answered.
    Close,
}

/// A counted connection; uncounted when dropped.
pub(crate) struct ConnectionSlot {
    book: Arc<Connections>,
    /// The address of a served connection; `None` for a refusal.
    served: Option<AddressKey>,
}

impl Connections {
    pub(crate) fn new(limits: ConnectionLimits) -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::new(Open::default()),
            limits,
        })
    }

    /// How many connections are served now.
    pub(crate) fn served(&self) -> usize {
        lock(&self.open).total
    }

    /// What to do with a new connection from `address` (`known`: a request from it
    /// authenticated recently).
    pub(crate) fn admit(self: &Arc<Self>, address: AddressKey, known: bool) -> Admission {
        let limits = self.limits;
        let mut open = lock(&self.open);
        let mine = open.per_address.get(&address).copied().unwrap_or(0);
        let room = if known {
            limits.total
        } else {
            limits.total.saturating_sub(limits.reserved_for_known)
        };
        let refusal = if mine >= limits.per_address {
            Some("too many open connections from this address")
        } else if open.total >= room {
            Some("too many open connections: try again later")
        } else {
            None
        };
        match refusal {
            None => {
                open.per_address.insert(address, mine + 1);
                open.total += 1;
                Admission::Serve(ConnectionSlot {
                    book: self.clone(),
                    served: Some(address),
                })
            }
            Some(_) if open.refusing >= limits.refusing => Admission::Close,
            Some(why) => {
                open.refusing += 1;
                let slot = ConnectionSlot {
                    book: self.clone(),
                    served: None,
                };
                Admission::Refuse(slot, why)
            }
        }
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.book.open);
        let Some(address) = self.served else {
            open.refusing = open.refusing.saturating_sub(1);
            return;
        };
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.per_address.get_mut(&address) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.per_address.remove(&address);
            }
        }
    }
}

#[cfg(test)]
mod tests;
