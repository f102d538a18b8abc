//! A generator that replays recorded draws: for tests and for interop vectors recorded from
//! another implementation. Behind the `test-support` feature, never in the default API.

use rand_core::{Infallible, TryCryptoRng, TryRng};

/// Replays recorded random draws, for tests and interop vectors.
///
/// Each `fill_bytes` call takes the next recorded draw, which must have the requested length
/// (32 bytes for a key seed, 16 for a session tag). A call after the last draw, or a draw of
/// another length, means the replay has left the recording: that **panics** with a message
/// saying which, because silently handing out zero bytes would let a test go on with keys
/// nobody recorded (and a zero seed is a valid but public key). This type is fed only by test
/// data; production code uses [`OsRng`](crate::OsRng).
#[derive(Debug, Default, Clone)]
pub struct RecordedRng {
    draws: std::collections::VecDeque<zeroize::Zeroizing<Vec<u8>>>,
    served: usize,
}

impl RecordedRng {
    /// Replays `draws` in order.
    pub fn new<I: IntoIterator<Item = Vec<u8>>>(draws: I) -> Self {
        Self {
            draws: draws.into_iter().map(zeroize::Zeroizing::new).collect(),
            served: 0,
        }
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

    // A test tool: a replay that leaves its recording must stop the test, not go on with zeros.
    #[allow(clippy::panic)]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        let n = self.served;
        match self.draws.pop_front() {
            Some(draw) if draw.len() == dst.len() => dst.copy_from_slice(&draw),
            Some(draw) => panic!(
                "RecordedRng: draw {n} has {} bytes but {} were requested",
                draw.len(),
                dst.len()
            ),
            None => panic!(
                "RecordedRng exhausted: {} bytes requested after all {n} recorded draws",
                dst.len()
            ),
        }
        self.served += 1;
        Ok(())
    }
}

impl TryCryptoRng for RecordedRng {}

#[cfg(test)]
mod tests {
    use rand_core::Rng;

    use super::RecordedRng;

    #[test]
    fn recorded_draws_are_replayed_in_order() {
        let mut rng = RecordedRng::new([vec![1; 32], vec![2; 16]]);
        let (mut a, mut b) = ([0u8; 32], [0u8; 16]);
        rng.fill_bytes(&mut a);
        rng.fill_bytes(&mut b);
        assert_eq!((a, b, rng.remaining()), ([1; 32], [2; 16], 0));
    }

    #[test]
    #[should_panic(expected = "RecordedRng exhausted")]
    fn an_exhausted_recording_panics_instead_of_returning_zeros() {
        let mut rng = RecordedRng::new([vec![7; 32]]);
        let mut out = [0xffu8; 32];
        rng.fill_bytes(&mut out);
        rng.fill_bytes(&mut out);
    }

    #[test]
    #[should_panic(expected = "has 16 bytes but 32 were requested")]
    fn a_draw_of_another_length_panics() {
        let mut rng = RecordedRng::new([vec![7; 16]]);
        rng.fill_bytes(&mut [0u8; 32]);
    }
}
