//! A vector of secrets that leaves no copy behind in memory it gives back.
//!
//! A plain `Vec` that grows copies its elements into a new buffer and frees the old one as it
//! is, and removing an element leaves a stale copy in the spare capacity; either way key bytes
//! end up in freed memory. `SecretVec` grows by cloning into the new buffer and wiping the old
//! one, and wipes its whole capacity (spare part included, via `zeroize`) when dropped.

use std::ops::{Deref, RangeTo};

use zeroize::Zeroize;

pub(crate) struct SecretVec<T: Zeroize + Clone>(Vec<T>);

impl<T: Zeroize + Clone> SecretVec<T> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    /// Makes room for `additional` more elements without leaving copies behind.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let needed = self.0.len().saturating_add(additional);
        if needed <= self.0.capacity() {
            return;
        }
        let mut grown = Vec::with_capacity(needed.max(self.0.capacity().saturating_mul(2)).max(4));
        grown.extend(self.0.iter().cloned());
        let mut old = std::mem::replace(&mut self.0, grown);
        old.zeroize();
    }

    pub(crate) fn push(&mut self, value: T) {
        self.reserve(1);
        self.0.push(value);
    }

    pub(crate) fn insert(&mut self, index: usize, value: T) {
        self.reserve(1);
        self.0.insert(index, value);
    }

    /// Appends clones of `values` (the caller's copies are its own to wipe).
    pub(crate) fn extend_cloned(&mut self, values: &[T]) {
        self.reserve(values.len());
        self.0.extend_from_slice(values);
    }

    pub(crate) fn remove(&mut self, index: usize) {
        if index < self.0.len() {
            let mut removed = self.0.remove(index);
            removed.zeroize();
        }
    }

    /// Drops the elements in `range` (from the front).
    pub(crate) fn remove_front(&mut self, range: RangeTo<usize>) {
        let end = range.end.min(self.0.len());
        for value in self.0.drain(..end) {
            let mut value = value;
            value.zeroize();
        }
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    pub(crate) fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.0.iter_mut()
    }

    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.0.get_mut(index)
    }
}

impl<T: Zeroize + Clone> Deref for SecretVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Zeroize + Clone> Clone for SecretVec<T> {
    fn clone(&self) -> Self {
        let mut copy = Vec::with_capacity(self.0.capacity());
        copy.extend(self.0.iter().cloned());
        Self(copy)
    }
}

impl<T: Zeroize + Clone> Zeroize for SecretVec<T> {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl<T: Zeroize + Clone> Drop for SecretVec<T> {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl<'a, T: Zeroize + Clone> IntoIterator for &'a SecretVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
