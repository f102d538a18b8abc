//! Senders' identity keys, checked for Diffie-Hellman, kept between sessions.

use std::collections::VecDeque;

use proteus_core::{CheckedIdentity, IdentityCache, IdentityKey};

use crate::collections::HashMap;

/// How many senders' checked identity keys a client keeps (about 250 bytes each). Checking one
/// costs about as much as a Diffie-Hellman; an identity kept here skips it when it starts
/// another session with us (a reset, a lost session). The oldest is dropped first.
pub(crate) const MAX_CHECKED_IDENTITIES: usize = 64;

/// The client's [`IdentityCache`]: public data only, never stale, so it survives reloads.
#[derive(Default)]
pub(crate) struct CheckedIdentities {
    kept: HashMap<IdentityKey, CheckedIdentity>,
    /// Oldest first.
    order: VecDeque<IdentityKey>,
}

impl IdentityCache for CheckedIdentities {
    fn get(&self, key: &IdentityKey) -> Option<&CheckedIdentity> {
        self.kept.get(key)
    }

    fn keep(&mut self, checked: CheckedIdentity) {
        let key = *checked.key();
        if self.kept.insert(key, checked).is_some() {
            return;
        }
        self.order.push_back(key);
        while self.order.len() > MAX_CHECKED_IDENTITIES {
            if let Some(oldest) = self.order.pop_front() {
                self.kept.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proteus_core::{IdentityKeyPair, OsRng};

    use super::*;

    fn checked() -> CheckedIdentity {
        CheckedIdentity::new(IdentityKeyPair::generate(&mut OsRng).public_key()).unwrap()
    }

    #[test]
    fn it_keeps_the_newest_identities_up_to_its_bound() {
        let mut cache = CheckedIdentities::default();
        let all: Vec<CheckedIdentity> =
            (0..MAX_CHECKED_IDENTITIES + 3).map(|_| checked()).collect();
        for c in &all {
            cache.keep(c.clone());
            // Keeping one again changes nothing.
            cache.keep(c.clone());
        }
        assert_eq!(cache.kept.len(), MAX_CHECKED_IDENTITIES);
        assert_eq!(cache.order.len(), MAX_CHECKED_IDENTITIES);
        for (i, c) in all.iter().enumerate() {
            assert_eq!(cache.get(c.key()).is_some(), i >= 3, "identity {i}");
        }
    }
}
