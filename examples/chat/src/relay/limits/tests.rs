//! Tests of the relay's limits, each on a manual clock.

use super::*;

#[test]
fn a_nonce_is_the_relays_fresh_and_spent_once_per_user() {
    let clock = Clock::manual();
    let mut book = NonceBook::new(clock.clone(), Duration::from_secs(60), 2).unwrap();
    let a = book.issue();
    let fresh = book.check(&a).unwrap();
    assert!(!book.is_spent("alice", fresh));
    assert_eq!(book.spend("alice", fresh), Ok(()));
    assert!(book.is_spent("alice", fresh));
    assert!(!book.is_spent("bob", fresh));
    assert_eq!(book.spend("alice", fresh), Err(SpendError::Replayed));
    // Another relay's, a changed tag, garbage.
    let other = NonceBook::new(clock, Duration::from_secs(60), 2)
        .unwrap()
        .issue();
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
    // The clock moves only when the test moves it: the nonces of "here" are fresh however
    // slowly the loop runs.
    let clock = Clock::manual();
    let ttl = Duration::from_secs(30);
    let mut book = NonceBook::new(clock.clone(), ttl, 4).unwrap();
    let old = book.check(&book.issue()).unwrap();
    book.spend("gone", old).unwrap();
    clock.advance(ttl);
    for _ in 0..SWEEP_EVERY {
        let fresh = book.check(&book.issue()).unwrap();
        book.spend("here", fresh).unwrap_or(());
    }
    assert!(!book.used.contains_key("gone"));
    assert!(book.used.contains_key("here"));
}

#[test]
fn a_nonce_is_refused_from_the_end_of_its_window_on() {
    let clock = Clock::manual();
    let ttl = Duration::from_secs(30);
    let book = NonceBook::new(clock.clone(), ttl, 2).unwrap();
    let a = book.issue();
    clock.advance(ttl - Duration::from_millis(1));
    assert!(book.check(&a).is_some());
    clock.advance(Duration::from_millis(1));
    assert!(book.check(&a).is_none());
}

#[test]
fn a_bucket_refills_at_its_rate_up_to_its_burst() {
    let clock = Clock::manual();
    let mut book = RateBook::new(clock.clone(), 2.0, 0.5, 10);
    assert!(book.take(&1) && book.take(&1));
    assert!(!book.take(&1));
    assert!(book.take(&2), "another key has its own bucket");
    clock.advance(Duration::from_millis(1999));
    assert!(book.level(&1) < 1.0);
    clock.advance(Duration::from_millis(1));
    assert!(book.take(&1));
    assert!(!book.take(&1));
    assert!(!book.is_full(&1));
    clock.advance(Duration::from_secs(3600));
    assert!(book.is_full(&1));
}

/// A flood of new keys: the book never tracks more than its bound, sweeps at most once per
/// quarter of its size in new keys, shares one bucket among the keys it cannot track (so
/// they are limited, not let through), and tracks new keys again once old ones refill.
#[test]
fn a_rate_book_is_bounded_sweeps_seldom_and_limits_what_it_cannot_track() {
    let clock = Clock::manual();
    let max = 64;
    let mut book = RateBook::new(clock.clone(), 1.0, 0.001, max);
    let flood = 10 * max;
    let mut let_through = 0;
    for key in 0..flood {
        let_through += usize::from(book.take(&key));
        assert!(book.buckets.entries.len() <= max);
    }
    // The first `max` keys had their own bucket, the shared one let one more through.
    assert_eq!(let_through, max + 1);
    assert!(
        book.buckets.sweeps <= (flood - max) / (max / 4),
        "{}",
        book.buckets.sweeps
    );
    assert!(!book.take(&0), "a tracked key stays limited");
    // Once the tracked keys have refilled (1000 s), new keys are tracked again: at the
    // latest after a quarter of the bound in new keys (the next sweep).
    clock.advance(Duration::from_secs(1000));
    let fresh: Vec<bool> = (flood..flood + max / 2).map(|k| book.take(&k)).collect();
    assert!(fresh[max / 4..].iter().all(|&ok| ok), "{fresh:?}");
    assert!(book.buckets.entries.len() <= max);
}

/// The old book swept every key each time a new one arrived past the bound, and grew past
/// it when no bucket was full: at the bound, each new key now costs O(1) amortised.
#[test]
fn a_full_book_at_the_real_bound_stays_bounded() {
    let clock = Clock::manual();
    let mut book = RateBook::new(clock, REGISTER_BURST, REGISTER_PER_SECOND, MAX_TRACKED_KEYS);
    for key in 0..MAX_TRACKED_KEYS + 1000 {
        book.take(&key);
    }
    assert_eq!(book.buckets.entries.len(), MAX_TRACKED_KEYS);
    assert!(book.buckets.sweeps <= 1, "{}", book.buckets.sweeps);
}

#[test]
fn an_address_stays_known_for_its_window_and_the_book_is_bounded() {
    let clock = Clock::manual();
    let ttl = Duration::from_secs(60);
    let mut known = KnownAddresses::new(clock.clone(), ttl, 4);
    let a = AddressKey::of("192.0.2.1".parse().unwrap());
    assert!(!known.contains(a));
    known.note(a);
    clock.advance(ttl - Duration::from_millis(1));
    assert!(known.contains(a));
    clock.advance(Duration::from_millis(1));
    assert!(!known.contains(a));
    // Full of live addresses: a new one is not remembered (a stranger, as before).
    for i in 0..4u8 {
        known.note(AddressKey::of(IpAddr::V4(Ipv4Addr::new(198, 51, 100, i))));
    }
    let late = AddressKey::of("203.0.113.9".parse().unwrap());
    for _ in 0..10 {
        known.note(late);
    }
    assert!(!known.contains(late));
    assert_eq!(known.seen.entries.len(), 4);
}

#[test]
fn addresses_are_counted_by_ipv4_address_and_by_ipv6_64() {
    let key = |s: &str| AddressKey::of(s.parse().unwrap());
    assert_eq!(
        key("2001:db8:1:2::1"),
        key("2001:db8:1:2:ffff:ffff:ffff:ffff")
    );
    assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
    assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
    assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    assert_ne!(key("::ffff:192.0.2.7"), key("::ffff:192.0.2.8"));
}

fn served(admission: Admission) -> Option<ConnectionSlot> {
    match admission {
        Admission::Serve(slot) => Some(slot),
        _ => None,
    }
}

/// One IPv6 host holds at most the per-address limit (not that many per address of its
/// /64); strangers leave the reserve to known addresses; over a limit, a connection is
/// refused (503) while few refusals are in progress, then closed.
#[test]
fn connections_are_limited_per_address_and_per_64_with_room_for_known_users() {
    let book = Connections::new(ConnectionLimits {
        total: 8,
        reserved_for_known: 4,
        per_address: 2,
        refusing: 2,
    });
    let ip = |s: String| AddressKey::of(s.parse().unwrap());
    let mut held = Vec::new();
    // A host cycling through the addresses of its /64 gets 2 connections.
    for i in 1..=5 {
        let admission = book.admit(ip(format!("2001:db8:0:1::{i}")), false);
        held.extend(served(admission));
    }
    assert_eq!(held.len(), 2);
    // Strangers from other /64s take the unreserved room (4) and no more.
    for net in 2..=9 {
        let admission = book.admit(ip(format!("2001:db8:0:{net}::1")), false);
        held.extend(served(admission));
    }
    assert_eq!(held.len(), 4);
    // A known address still gets in, up to the total.
    let user = ip("2001:db8:0:99::1".into());
    let mut users = Vec::new();
    for _ in 0..2 {
        users.extend(served(book.admit(user, true)));
    }
    assert_eq!(users.len(), 2, "a known address was kept out by strangers");
    let other = ip("2001:db8:0:98::1".into());
    users.extend(served(book.admit(other, true)));
    users.extend(served(book.admit(other, true)));
    assert_eq!(users.len(), 4);
    // Full: refusals are answered while few are in progress, then closed at once.
    let a = book.admit(ip("2001:db8:0:97::1".into()), true);
    let b = book.admit(ip("2001:db8:0:97::2".into()), false);
    let c = book.admit(ip("2001:db8:0:97::3".into()), false);
    assert!(matches!(a, Admission::Refuse(_, _)));
    assert!(matches!(b, Admission::Refuse(_, _)));
    assert!(matches!(c, Admission::Close));
    drop((a, b));
    assert!(matches!(book.admit(user, true), Admission::Refuse(_, _)));
    // A closed connection gives its slot back.
    drop(users.pop());
    assert!(served(book.admit(other, true)).is_some());
}
