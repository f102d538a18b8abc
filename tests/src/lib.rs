//! Shared code of the cross-implementation tests.

#![forbid(unsafe_code)]

pub mod fuzzing;
pub mod vectors;
