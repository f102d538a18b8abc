//! A run of messages to one session, split so that their independent work can run in parallel.
//!
//! Stepping a receive chain is sequential and cheap (one HMAC per message); the rest of opening a
//! message — its message keys (HMAC and HKDF), the MAC check and ChaCha20 — depends only on that
//! step. [`Session::plan_opens`] steps the chains ahead over a run of messages, assuming each
//! message before decrypts, without changing the session, and returns an [`OpenJob`] for each
//! message it could plan. Jobs are independent (`Send + Sync`): the caller runs them as it likes
//! (one after another, on threads, in SIMD lanes; the core does no scheduling). Their results are
//! applied in queue order by [`Session::apply_opened`], which applies one only if the session is
//! still exactly as its plan assumed; otherwise the message goes through
//! [`Session::decrypt_with_cache`]. [`Session::decrypt_run`] does all of this, so its results and
//! the session after it are those of decrypting the messages one by one.

#[cfg(any(
    test,
    feature = "test-support",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
mod lanes;

use rand_core::CryptoRng;

use super::Session;
use super::chain::{ChainUpdate, open};
use super::derived::{ChainKey, MessageKeys};
use crate::crypto::KeySchedule;
use crate::error::{CounterPosition, DecryptError};
use crate::keys::{IdentityCache, IdentityKeyPair, PublicKey};
use crate::limits::MAX_FAST_FORWARD;
use crate::message::{Envelope, Message, SessionTag};
use crate::prekey_store::PreKeyStore;
use crate::secret_vec::SecretVec;

/// The outcome of opening one message: its plaintext, or why it did not open.
pub type Opened = Result<Vec<u8>, DecryptError>;

/// The independent part of decrypting one planned message: derive its message keys, check its
/// MAC, decrypt. Computed by [`Session::plan_opens`]; run with [`open`](Self::open) or
/// [`open_jobs`]; applied with [`Session::apply_opened`].
pub struct OpenJob<'e> {
    envelope: &'e Envelope<'e>,
    /// The message's position in the run that was planned.
    index: usize,
    keys: JobKeys,
    position: CounterPosition,
    premise: Premise,
}

enum JobKeys {
    /// The HMAC key schedule of the chain key at the message's counter.
    Chain { keyed: KeySchedule, counter: u32 },
    /// A staged (skipped) key of the chain.
    Staged(MessageKeys),
}

/// What the plan assumed of the session when it made the job, checked before applying it.
enum Premise {
    /// The chain's key is `from`; the message moves it to `next`, staging the keys of `skipped`.
    Advance {
        from: ChainKey,
        next: ChainKey,
        skipped: Vec<ChainKey>,
        unstaged_below: u32,
        max_staged: u32,
    },
    /// The chain still holds the staged key the job has.
    Staged,
}

impl OpenJob<'_> {
    /// The position of the job's message in the run given to [`Session::plan_opens`].
    pub fn index(&self) -> usize {
        self.index
    }

    /// The envelope this job opens.
    pub fn envelope(&self) -> &Envelope<'_> {
        self.envelope
    }

    /// Derives the message keys, checks the MAC over the message bytes as received, decrypts.
    /// Changes nothing; the result is applied with [`Session::apply_opened`].
    pub fn open(&self) -> Opened {
        let derived;
        let keys = match &self.keys {
            JobKeys::Chain { keyed, counter } => {
                derived = MessageKeys::from_keyed(keyed, *counter);
                &derived
            }
            JobKeys::Staged(keys) => keys,
        };
        let envelope = self.envelope;
        open(
            keys,
            envelope.message_bytes(),
            envelope.mac(),
            envelope.message().cipher_message(),
            self.position,
        )
    }
}

/// Opens every job of `jobs`, in order: one by one natively (SHA-NI), four at a time in SIMD
/// lanes in a wasm build with simd128 (`session/plan/lanes.rs`); the same results either way.
pub fn open_jobs(jobs: &[OpenJob<'_>]) -> Vec<Opened> {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return lanes::open_jobs_in_lanes::<crate::sha256x4::Simd128>(jobs);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    jobs.iter().map(OpenJob::open).collect()
}

/// [`open_jobs`] on the four-lane SHA-256 whatever the build (its portable lanes natively),
/// for tests that compare it with the one-by-one opener (`test-support` only).
#[cfg(feature = "test-support")]
pub fn open_jobs_in_lanes(jobs: &[OpenJob<'_>]) -> Vec<Opened> {
    lanes::open_jobs_in_lanes::<crate::sha256x4::Fastest>(jobs)
}

/// A receive chain as the plan sees it after the messages planned so far.
struct Speculative {
    tag: SessionTag,
    ratchet_key: PublicKey,
    chain_key: ChainKey,
    /// Counters of staged keys already given to a job of this plan.
    used_staged: Vec<u32>,
}

/// How many messages a run plans after the session did not do what a plan assumed (a forged or
/// reordered message, a ratchet step): a plan past such a message is wasted, so a run that
/// keeps diverging plans little ahead, and twice as far after each segment that went as
/// planned. Planning costs what stepping the chains one message at a time costs, so the waste
/// is bounded by the work done.
const AFTER_DIVERGENCE: usize = 8;
/// The most messages planned at once, and how far a run plans at first: each segment is one
/// round of jobs, and every round costs the caller a hand-over to its threads.
const MAX_SEGMENT: usize = 512;

impl Session {
    /// Plans the opening of `envelopes` (a run of messages to this session, in queue order),
    /// assuming each message before decrypts, without changing the session. Messages that
    /// cannot be planned (a new ratchet key or session state, a counter behind the chain that is
    /// not staged, a gap beyond the limits) get no job: they go through
    /// [`decrypt_with_cache`](Self::decrypt_with_cache). Jobs come in the order of their
    /// messages.
    pub fn plan_opens<'e>(&self, envelopes: &[&'e Envelope<'e>]) -> Vec<OpenJob<'e>> {
        let mut chains = Vec::new();
        envelopes
            .iter()
            .enumerate()
            .filter_map(|(i, envelope)| self.plan_one(i, envelope, &mut chains))
            .collect()
    }

    fn plan_one<'e>(
        &self,
        index: usize,
        envelope: &'e Envelope<'e>,
        chains: &mut Vec<Speculative>,
    ) -> Option<OpenJob<'e>> {
        if let Message::PreKey(pkm) = envelope.message()
            && pkm.identity_key != self.remote_identity
        {
            return None;
        }
        let msg = envelope.message().cipher_message();
        let entry = self.states.iter().find(|e| e.tag == msg.session_tag)?;
        let chain = entry
            .state
            .recv_chains()
            .find(|c| c.ratchet_key == msg.ratchet_key)?;
        let at = match chains
            .iter()
            .position(|s| s.tag == msg.session_tag && s.ratchet_key == msg.ratchet_key)
        {
            Some(at) => at,
            None => {
                chains.push(Speculative {
                    tag: msg.session_tag,
                    ratchet_key: msg.ratchet_key,
                    chain_key: chain.chain_key.clone(),
                    used_staged: Vec::new(),
                });
                chains.len() - 1
            }
        };
        let spec = chains.get_mut(at)?;
        let (c, k) = (msg.counter, spec.chain_key.idx);
        if c < k {
            // Only keys staged before the run; one skipped within it goes the ordinary way.
            if c >= chain.chain_key.idx || spec.used_staged.contains(&c) {
                return None;
            }
            let keys = chain.staged.iter().find(|mk| mk.counter == c)?.clone();
            spec.used_staged.push(c);
            return Some(OpenJob {
                envelope,
                index,
                keys: JobKeys::Staged(keys),
                position: CounterPosition::Behind,
                premise: Premise::Staged,
            });
        }
        // As `RecvChain::decrypt` steps: only the chain keys of the last `max_staged` skipped
        // indices are kept; their message keys are derived once the message applies.
        let gap = c - k;
        if gap > MAX_FAST_FORWARD {
            return None;
        }
        let max_staged = self.max_counter_gap;
        let keep = gap.min(max_staged);
        let first_staged = c - keep;
        let from = spec.chain_key.clone();
        let mut skipped = Vec::new();
        let (keyed, next) = if gap == 0 {
            from.keyed_step()?
        } else {
            let mut ck = from.clone();
            while ck.idx < first_staged {
                ck = ck.next()?;
            }
            skipped.reserve(keep as usize);
            while ck.idx < c {
                let next = ck.next()?;
                skipped.push(ck);
                ck = next;
            }
            ck.keyed_step()?
        };
        spec.chain_key = next.clone();
        Some(OpenJob {
            envelope,
            index,
            keys: JobKeys::Chain { keyed, counter: c },
            position: if gap == 0 {
                CounterPosition::InSync
            } else {
                CounterPosition::Ahead
            },
            premise: Premise::Advance {
                from,
                next,
                skipped,
                unstaged_below: first_staged,
                max_staged,
            },
        })
    }

    /// Applies an opened job, in queue order, if it opened and the session is exactly as its
    /// plan assumed: then the session changes as [`decrypt`](Self::decrypt) would have changed
    /// it, and the plaintext is returned. `None` otherwise, with nothing changed: the caller
    /// decrypts the message with [`decrypt_with_cache`](Self::decrypt_with_cache), which gives
    /// its real outcome.
    pub fn apply_opened(
        &mut self,
        identity: &IdentityKeyPair,
        job: OpenJob<'_>,
        opened: Opened,
    ) -> Option<Vec<u8>> {
        match self.settle(identity, job, opened) {
            Some(Ok(plaintext)) => Some(plaintext),
            _ => None,
        }
    }

    /// The message's outcome from its opened job, if the session is exactly as the job's plan
    /// assumed: its plaintext (the session then changed as [`decrypt`](Self::decrypt) would
    /// have changed it), or why it did not open, which is what decrypting it would say: the same
    /// keys, the same MAC check, and nothing changed. `None` if the session is not as the plan
    /// assumed (nothing changed either). So a forged message costs one step of its chain, the
    /// plan's, never a second one.
    fn settle(
        &mut self,
        identity: &IdentityKeyPair,
        job: OpenJob<'_>,
        opened: Opened,
    ) -> Option<Opened> {
        let envelope = job.envelope;
        if identity.public_key() != &self.local_identity {
            return None;
        }
        if let Message::PreKey(pkm) = envelope.message()
            && pkm.identity_key != self.remote_identity
        {
            return None;
        }
        let msg = envelope.message().cipher_message();
        let max_staged = self.max_counter_gap;
        let chain = self
            .states
            .iter_mut()
            .find(|e| e.tag == msg.session_tag)?
            .state
            .recv_chain_mut(&msg.ratchet_key)?;
        let update = match (job.premise, &job.keys) {
            (Premise::Staged, JobKeys::Staged(keys)) => {
                let pos = chain.staged.iter().position(|mk| mk.same_as(keys))?;
                let plaintext = match opened {
                    Ok(plaintext) => plaintext,
                    Err(e) => return Some(Err(e)),
                };
                (ChainUpdate::UseStaged(pos), plaintext)
            }
            (
                Premise::Advance {
                    from,
                    next,
                    skipped,
                    unstaged_below,
                    max_staged: planned,
                },
                JobKeys::Chain { .. },
            ) => {
                if planned != max_staged || !chain.chain_key.same_as(&from) {
                    return None;
                }
                let plaintext = match opened {
                    Ok(plaintext) => plaintext,
                    Err(e) => return Some(Err(e)),
                };
                let mut keys = SecretVec::with_capacity(skipped.len());
                for ck in &skipped {
                    keys.push(ck.message_keys());
                }
                let update = ChainUpdate::Advance {
                    chain_key: next,
                    skipped: keys,
                    unstaged_below,
                };
                (update, plaintext)
            }
            _ => return None,
        };
        let (update, plaintext) = update;
        chain.apply(update, max_staged as usize);
        self.pending_prekey = None;
        self.session_tag = msg.session_tag;
        Some(Ok(plaintext))
    }

    /// Decrypts a run of messages to this session, in order, with the same results and the same
    /// session after it as [`decrypt_with_cache`](Self::decrypt_with_cache) called on each: the
    /// run is planned a segment at a time, `open` runs each segment's jobs (it must return one
    /// result per job, in order, e.g. [`open_jobs`] or the same on threads), and the results are
    /// applied in order. `rng`, `prekeys` and `identities` serve the messages that go the
    /// ordinary way.
    pub fn decrypt_run<'e, R, S, C, O>(
        &mut self,
        rng: &mut R,
        identity: &IdentityKeyPair,
        prekeys: &mut S,
        identities: &mut C,
        envelopes: &[&'e Envelope<'e>],
        mut open: O,
    ) -> Vec<Opened>
    where
        R: CryptoRng + ?Sized,
        S: PreKeyStore + ?Sized,
        C: IdentityCache + ?Sized,
        O: FnMut(&[OpenJob<'e>]) -> Vec<Opened>,
    {
        let mut results = Vec::with_capacity(envelopes.len());
        let mut segment = MAX_SEGMENT;
        let mut start = 0;
        while let Some(run) = envelopes.get(start..(start + segment).min(envelopes.len())) {
            if run.is_empty() {
                break;
            }
            let jobs = self.plan_opens(run);
            let opened = if jobs.is_empty() {
                Vec::new()
            } else {
                open(&jobs)
            };
            let mut planned = jobs.into_iter().zip(opened).peekable();
            let mut diverged = None;
            for (i, envelope) in run.iter().enumerate() {
                let job = planned.next_if(|(job, _)| job.index == i);
                let (result, changed_unplanned) = match job {
                    Some((job, opened)) => match self.settle(identity, job, opened) {
                        Some(Ok(plaintext)) => (Ok(plaintext), false),
                        // Rejected as planned: nothing changed, but the plan assumed it would
                        // decrypt, so the rest of it is void.
                        Some(Err(e)) => (Err(e), true),
                        // Not what the plan assumed: the rest of its plan is void.
                        None => (
                            self.decrypt_with_cache(rng, identity, prekeys, identities, envelope),
                            true,
                        ),
                    },
                    None => {
                        let result =
                            self.decrypt_with_cache(rng, identity, prekeys, identities, envelope);
                        // A rejected message changed nothing; a decrypted one the plan did not
                        // foresee (a ratchet step, a new state) changed the chains it planned.
                        let changed = result.is_ok();
                        (result, changed)
                    }
                };
                results.push(result);
                if changed_unplanned {
                    diverged = Some(i);
                    break;
                }
            }
            match diverged {
                Some(i) => {
                    start += i + 1;
                    segment = AFTER_DIVERGENCE;
                }
                None => {
                    start += run.len();
                    segment = (segment * 2).min(MAX_SEGMENT);
                }
            }
        }
        results
    }
}
