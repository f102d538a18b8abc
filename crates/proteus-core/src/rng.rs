//! The operating system's random number generator, for callers that need no replay.

use rand_core::{Infallible, TryCryptoRng, TryRng};

/// Randomness from the operating system (`getrandom`), for production use.
///
/// Every operation of the engine takes its randomness as a parameter so tests can replay
/// recorded draws; pass `&mut OsRng` everywhere else. If the operating system cannot provide
/// randomness at all this panics rather than produce weak keys: there is no safe way to go on.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRng;

impl TryRng for OsRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }

    #[allow(clippy::panic)]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        if let Err(e) = getrandom::fill(dst) {
            panic!("the operating system's random number generator failed: {e}");
        }
        Ok(())
    }
}

impl TryCryptoRng for OsRng {}

/// Replays recorded random draws, for tests and interop vectors.
///
/// Each `fill_bytes` call takes the next recorded draw, which should have the requested length
/// (32 bytes for a key seed, 16 for a session tag). A draw of another length, or a call after
/// the last draw, is served from zero bytes and marks the replay as [`diverged`]: check it after
/// the operation. It never panics, so a broken replay fails a test instead of aborting it.
///
/// [`diverged`]: RecordedRng::diverged
#[derive(Debug, Default, Clone)]
pub struct RecordedRng {
    draws: std::collections::VecDeque<zeroize::Zeroizing<Vec<u8>>>,
    diverged: bool,
}

impl RecordedRng {
    /// Replays `draws` in order.
    pub fn new<I: IntoIterator<Item = Vec<u8>>>(draws: I) -> Self {
        Self {
            draws: draws.into_iter().map(zeroize::Zeroizing::new).collect(),
            diverged: false,
        }
    }

    /// Whether a draw was requested that the recording did not have (or had with another length).
    pub fn diverged(&self) -> bool {
        self.diverged
    }

    /// How many recorded draws are left.
    pub fn remaining(&self) -> usize {
        self.draws.len()
    }
}

impl TryRng for RecordedRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        match self.draws.pop_front() {
            Some(draw) if draw.len() == dst.len() => dst.copy_from_slice(&draw),
            _ => {
                dst.fill(0);
                self.diverged = true;
            }
        }
        Ok(())
    }
}

impl TryCryptoRng for RecordedRng {}
