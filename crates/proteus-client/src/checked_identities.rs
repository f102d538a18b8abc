//! Senders' identity keys, checked for Diffie-Hellman, kept between sessions.

use proteus_core::{CheckedIdentity, IdentityCache, IdentityKey};

/// How many senders' checked identity keys a client keeps (about 200 bytes each). Checking one
/// costs about as much as a Diffie-Hellman; an identity kept here skips it when it starts
/// another session with us (a reset, a lost session). The oldest is dropped first.
pub(crate) const MAX_CHECKED_IDENTITIES: usize = 64;

/// The client's [`IdentityCache`]: public data only, never stale, so it survives reloads. A
/// short list searched in order (64 comparisons of 32 bytes cost nothing beside the check they
/// save, and no map code goes into the web build).
#[derive(Default)]
pub(crate) struct CheckedIdentities {
    /// Oldest first.
    kept: Vec<CheckedIdentity>,
}

impl IdentityCache for CheckedIdentities {
    fn get(&self, key: &IdentityKey) -> Option<&CheckedIdentity> {
        self.kept.iter().find(|c| c.key() == key)
    }

    fn keep(&mut self, checked: CheckedIdentity) {
        if self.get(checked.key()).is_some() {
            return;
        }
        if self.kept.len() >= MAX_CHECKED_IDENTITIES {
            self.kept.remove(0);
        }
        self.kept.push(checked);
    }
}

/// The checked identities as one decryption sees them: the client's, and those it checks
/// itself, which the client keeps afterwards (a batch run's once its outcomes are handed over).
/// One type for every decrypt path, so the engine's decrypt code is built once for it.
pub(crate) struct PendingIdentities<'r> {
    pub(crate) shared: &'r CheckedIdentities,
    pub(crate) kept: &'r mut Vec<CheckedIdentity>,
}

impl IdentityCache for PendingIdentities<'_> {
    fn get(&self, key: &IdentityKey) -> Option<&CheckedIdentity> {
        self.shared
            .get(key)
            .or_else(|| self.kept.iter().find(|c| c.key() == key))
    }

    fn keep(&mut self, checked: CheckedIdentity) {
        self.kept.push(checked);
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
        for (i, c) in all.iter().enumerate() {
            assert_eq!(cache.get(c.key()).is_some(), i >= 3, "identity {i}");
        }
    }
}
