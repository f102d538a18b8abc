//! The open plan (`Session::decrypt_run`, `plan_opens`, `apply_opened`) against decrypting one
//! message at a time: on random runs (in order, reordered, duplicated, forged MACs and counters,
//! gaps past the staged-key limit, a ratchet step within the run) both give the same result for
//! every message and the same session, byte for byte, whichever way the jobs are run.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::convert::Infallible;

use proptest::prelude::*;
use proteus_core::plan::{OpenJob, Opened, open_jobs, open_jobs_in_lanes};
use proteus_core::{Envelope, IdentityKeyPair, Message, PreKey, PreKeyBundle, PreKeyId, Session};

/// SplitMix64: both sides of a comparison draw the same keys in a ratchet step.
#[derive(Clone)]
struct TestRng(u64);

impl rand_core::TryRng for TestRng {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.try_next_u64()? >> 32) as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Ok(z ^ (z >> 31))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let word = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        Ok(())
    }
}
impl rand_core::TryCryptoRng for TestRng {}

#[derive(Debug, Clone)]
enum Step {
    /// Alice sends a message that is queued.
    Send,
    /// Alice sends this many messages that are lost.
    Lose(u16),
    /// Alice decrypts Bob's next reply: her next message carries a new ratchet key.
    Ratchet,
}

#[derive(Debug, Clone)]
enum Mutation {
    Swap(prop::sample::Index, prop::sample::Index),
    Duplicate(prop::sample::Index),
    ForgeMac(prop::sample::Index, u8),
    ForgeCounter(prop::sample::Index, u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => Just(Step::Send),
        2 => (1u16..40).prop_map(Step::Lose),
        1 => Just(Step::Lose(1_050)),
        1 => Just(Step::Ratchet),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(a, b)| Mutation::Swap(a, b)),
        any::<prop::sample::Index>().prop_map(Mutation::Duplicate),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::ForgeMac(i, b)),
        (
            any::<prop::sample::Index>(),
            prop_oneof![0u32..3_000, Just(150_000)]
        )
            .prop_map(|(i, c)| Mutation::ForgeCounter(i, c)),
    ]
}

/// Bob's session after Alice's first message (so Bob has a state), serialised, with Bob's
/// identity, and the queue of envelopes Alice sent after it, mutated.
fn conversation(seed: u64, steps: &[Step], mutations: &[Mutation]) -> Fixture {
    let rng = &mut TestRng(seed);
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let prekey = PreKey::generate(PreKeyId::new(1), rng);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let bundle = PreKeyBundle::new(bob.public_key(), &prekey);
    let mut a = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
    let first = a.encrypt(b"first").unwrap();
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &first)
        .unwrap()
        .session;
    // Bob's replies are encrypted now, so that his session is the same in both runs.
    let mut replies: Vec<Envelope<'static>> = (0..4).map(|i| b.encrypt(&[i]).unwrap()).collect();
    replies.reverse();
    let mut queue: Vec<Envelope<'static>> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Send => queue.push(a.encrypt(&(i as u32).to_be_bytes()).unwrap()),
            Step::Lose(n) => {
                for _ in 0..*n {
                    a.encrypt(b"lost").unwrap();
                }
            }
            Step::Ratchet => {
                if let Some(reply) = replies.pop() {
                    a.decrypt(rng, &alice, &mut prekeys, &reply).unwrap();
                }
            }
        }
    }
    for m in mutations {
        if queue.is_empty() {
            break;
        }
        match m {
            Mutation::Swap(x, y) => {
                let (x, y) = (x.index(queue.len()), y.index(queue.len()));
                queue.swap(x, y);
            }
            Mutation::Duplicate(x) => {
                let x = x.index(queue.len());
                queue.insert(x, queue[x].clone());
            }
            Mutation::ForgeMac(x, bit) => {
                let x = x.index(queue.len());
                let mut mac = *queue[x].mac();
                mac[usize::from(bit % 32)] ^= 1 << (bit % 8);
                queue.insert(x, Envelope::from_message(queue[x].message().clone(), mac));
            }
            Mutation::ForgeCounter(x, counter) => {
                let x = x.index(queue.len());
                let mut message = queue[x].message().clone();
                match &mut message {
                    Message::Cipher(cm) => cm.counter = *counter,
                    Message::PreKey(pkm) => pkm.message.counter = *counter,
                }
                queue.insert(x, Envelope::from_message(message, *queue[x].mac()));
            }
        }
    }
    Fixture {
        bob,
        session: b.to_bytes().to_vec(),
        queue,
        seed: seed ^ 0x5555,
    }
}

struct Fixture {
    bob: IdentityKeyPair,
    session: Vec<u8>,
    queue: Vec<Envelope<'static>>,
    seed: u64,
}

/// Result codes (or plaintexts) and the session bytes after one-by-one decryption.
fn one_by_one(f: &Fixture) -> (Vec<Result<Vec<u8>, String>>, Vec<u8>) {
    let mut s = Session::from_bytes(f.bob.public_key(), &f.session).unwrap();
    let (rng, mut prekeys) = (&mut TestRng(f.seed), BTreeMap::<PreKeyId, PreKey>::new());
    let results = f
        .queue
        .iter()
        .map(|e| {
            s.decrypt(rng, &f.bob, &mut prekeys, e)
                .map_err(|e| format!("{e:?}"))
        })
        .collect();
    (results, s.to_bytes().to_vec())
}

/// The same through `decrypt_run`, with `open` running the jobs.
fn planned(
    f: &Fixture,
    open: impl FnMut(&[OpenJob<'_>]) -> Vec<Opened>,
) -> (Vec<Result<Vec<u8>, String>>, Vec<u8>) {
    let mut s = Session::from_bytes(f.bob.public_key(), &f.session).unwrap();
    let (rng, mut prekeys) = (&mut TestRng(f.seed), BTreeMap::<PreKeyId, PreKey>::new());
    let run: Vec<&Envelope<'_>> = f.queue.iter().collect();
    let results = s
        .decrypt_run(rng, &f.bob, &mut prekeys, &mut (), &run, open)
        .into_iter()
        .map(|r| r.map_err(|e| format!("{e:?}")))
        .collect();
    (results, s.to_bytes().to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_planned_run_decrypts_as_one_message_at_a_time(
        seed in any::<u64>(),
        steps in prop::collection::vec(step(), 1..60),
        mutations in prop::collection::vec(mutation(), 0..12),
    ) {
        let f = conversation(seed, &steps, &mutations);
        let expected = one_by_one(&f);
        prop_assert_eq!(&planned(&f, open_jobs), &expected);
        // Four at a time in the lanes of the four-lane SHA-256 (the web build's opener).
        prop_assert_eq!(&planned(&f, open_jobs_in_lanes), &expected);
        // And job for job as `OpenJob::open` opens it (a job the lanes failed wrongly would
        // be hidden above: it goes the ordinary way).
        let mut mismatches = 0;
        planned(&f, |jobs| {
            let lanes = open_jobs_in_lanes(jobs);
            let one_by_one: Vec<Opened> = jobs.iter().map(OpenJob::open).collect();
            if format!("{lanes:?}") != format!("{one_by_one:?}") {
                mismatches += 1;
            }
            lanes
        });
        prop_assert_eq!(mismatches, 0);
        // Jobs are independent: opened last to first, the results are the same.
        let reversed = planned(&f, |jobs| {
            let mut out: Vec<Opened> = jobs.iter().rev().map(OpenJob::open).collect();
            out.reverse();
            out
        });
        prop_assert_eq!(&reversed, &expected);
    }
}

#[test]
fn an_in_order_run_is_planned_whole() {
    let steps = vec![Step::Send; 100];
    let f = conversation(7, &steps, &[]);
    let s = Session::from_bytes(f.bob.public_key(), &f.session).unwrap();
    let run: Vec<&Envelope<'_>> = f.queue.iter().collect();
    let jobs = s.plan_opens(&run);
    assert_eq!(jobs.len(), 100);
    assert!(jobs.iter().enumerate().all(|(i, j)| j.index() == i));
    assert!(open_jobs(&jobs).iter().all(Result::is_ok));
    let (results, _) = planned(&f, open_jobs);
    assert!(results.iter().all(Result::is_ok));
}

#[test]
fn a_job_whose_premise_no_longer_holds_is_refused() {
    let f = conversation(9, &[Step::Send, Step::Send, Step::Send], &[]);
    let mut s = Session::from_bytes(f.bob.public_key(), &f.session).unwrap();
    let run: Vec<&Envelope<'_>> = f.queue.iter().collect();
    let mut jobs = s.plan_opens(&run).into_iter();
    let (first, second) = (jobs.next().unwrap(), jobs.next().unwrap());
    let (a, b) = (first.open(), second.open());
    assert!(a.is_ok() && b.is_ok());
    let before = s.to_bytes();
    // The second message's job assumed the first applied: applied first, it is refused.
    assert_eq!(s.apply_opened(&f.bob, second, b), None);
    assert_eq!(s.to_bytes(), before, "a refused job changed the session");
    assert_eq!(
        s.apply_opened(&f.bob, first, a).as_deref(),
        Some(&0u32.to_be_bytes()[..])
    );
    // Planned again from the session as it is now, the second message applies.
    let again = s.plan_opens(&run[1..]).into_iter().next().unwrap();
    let opened = again.open();
    assert_eq!(
        s.apply_opened(&f.bob, again, opened).as_deref(),
        Some(&1u32.to_be_bytes()[..])
    );
}
