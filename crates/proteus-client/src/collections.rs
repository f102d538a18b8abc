//! The client's hash maps and sets (session ids, staged-key ids). Natively std's: SipHash with
//! keys from the OS. In the web build (wasm32) std has no random source for those keys (it makes
//! them from a stack and a heap address, which wasm's linear memory makes the same on every
//! run), so SipHash gives no resistance to chosen keys there, only code: a multiply-xorshift
//! hasher takes its place, 3.3 KB less .wasm. Chosen colliding session ids could slow
//! lookups, but only the app's server picks them, and it can withhold messages anyway.

#[cfg(not(target_arch = "wasm32"))]
pub(crate) type BuildHasher = std::collections::hash_map::RandomState;
#[cfg(target_arch = "wasm32")]
pub(crate) type BuildHasher = core::hash::BuildHasherDefault<MultiplyXorshift>;

pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasher>;
pub(crate) type HashSet<T> = std::collections::HashSet<T, BuildHasher>;

/// A set of a few ordered values (the prekeys one operation used up) kept as a sorted vector: it
/// iterates in ascending order as a `BTreeSet` would, without the B-tree's code (2 KB of the web
/// build).
#[derive(Debug, Default)]
pub(crate) struct SortedSet<T>(Vec<T>);

impl<T: Ord> SortedSet<T> {
    /// An empty set.
    pub(crate) const fn new() -> Self {
        Self(Vec::new())
    }

    pub(crate) fn contains(&self, value: &T) -> bool {
        self.0.binary_search(value).is_ok()
    }

    /// Adds `value`; whether it was not in the set.
    pub(crate) fn insert(&mut self, value: T) -> bool {
        match self.0.binary_search(&value) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, value);
                true
            }
        }
    }

    /// The values in ascending order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }
}

/// Session ids, each once, in the order they were first added: the sessions an operation
/// changed (to commit), or a window's sessions (its runs). One hash table type for all of them
/// in the web build.
#[derive(Default)]
pub(crate) struct OrderedIds<'a> {
    ids: Vec<&'a str>,
    index: HashMap<&'a str, usize>,
}

impl<'a> OrderedIds<'a> {
    /// Adds `id` if it is new; its position either way. A run of one id (a backlog from one
    /// sender) is recognised without hashing.
    pub(crate) fn add(&mut self, id: &'a str) -> usize {
        match self.ids.last() {
            Some(&last) if last == id => self.ids.len() - 1,
            _ => *self.index.entry(id).or_insert_with(|| {
                self.ids.push(id);
                self.ids.len() - 1
            }),
        }
    }

    /// The ids, in the order they were first added.
    pub(crate) fn as_slice(&self) -> &[&'a str] {
        &self.ids
    }
}

/// An empty set with room for `n` elements.
pub(crate) fn set_with_capacity<T>(n: usize) -> HashSet<T> {
    HashSet::with_capacity_and_hasher(n, BuildHasher::default())
}

/// Per 8-byte word: xor it in, multiply by a large odd constant (differences move up), xor the
/// high half down (and back down). Both steps are bijections, so keys differing only in their
/// last word never collide. (FxHash's rotate-xor-multiply was tried first: its high-bit
/// differences reach the low bits only through a 5-bit rotation, and ids such as "user-1019:d"
/// and "user-1092:d" collided; the test below keeps them.)
#[cfg(any(target_arch = "wasm32", test))]
#[derive(Default, Clone, Copy)]
pub(crate) struct MultiplyXorshift {
    hash: u64,
}

#[cfg(any(target_arch = "wasm32", test))]
impl MultiplyXorshift {
    const K: u64 = 0xf135_7aea_2e62_a9c5;

    fn add(&mut self, word: u64) {
        let mixed = (self.hash ^ word).wrapping_mul(Self::K);
        self.hash = mixed ^ (mixed >> 32);
    }
}

#[cfg(any(target_arch = "wasm32", test))]
impl core::hash::Hasher for MultiplyXorshift {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            for (to, from) in word.iter_mut().zip(chunk) {
                *to = *from;
            }
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::{MultiplyXorshift, SortedSet};
    use core::hash::{BuildHasher, BuildHasherDefault};
    use std::collections::HashSet;

    #[test]
    fn distinct_session_ids_spread_over_the_low_bits() {
        // 4096 ids of the shape apps use, in a table of 4096 buckets: no bucket is crowded.
        let build = BuildHasherDefault::<MultiplyXorshift>::default();
        let mut buckets = vec![0u32; 4096];
        for i in 0..4096 {
            let id = format!("member-{:03}:device-{}", i / 8, i % 8);
            let bucket = (build.hash_one(id.as_str()) & 4095) as usize;
            if let Some(b) = buckets.get_mut(bucket) {
                *b += 1;
            }
        }
        assert!(
            buckets.iter().all(|&n| n <= 8),
            "a bucket holds {:?}",
            buckets.iter().max()
        );
        assert_ne!(build.hash_one("user-1019:d"), build.hash_one("user-1092:d"));
        let n = 200_000;
        let hashes: HashSet<u64> = (0..n)
            .map(|i| build.hash_one(format!("user-{i}:d{}", i % 7)))
            .collect();
        assert_eq!(hashes.len(), n, "no two of {n} ids share a hash");
    }

    #[test]
    fn a_sorted_set_holds_each_value_once_and_iterates_in_order() {
        let mut set = SortedSet::new();
        for v in [5u16, 1, 9, 5, 3, 1, 65535, 0] {
            let fresh = !set.contains(&v);
            assert_eq!(set.insert(v), fresh, "{v}");
            assert!(set.contains(&v));
        }
        assert!(!set.contains(&2));
        let values: Vec<u16> = set.iter().copied().collect();
        assert_eq!(values, [0, 1, 3, 5, 9, 65535]);
    }
}
