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
