//! The client's calls that every binding offers alike (`proteus-ffi-surface`), as Kotlin's
//! `suspend fun` and Swift's `async throws`: each runs on the worker pool (`worker.rs`).
//! Integers cross as Kotlin's signed `Int`, so a `U32` argument is range-checked here
//! (`IntegerOutOfRange`, 309) and a count saturates at `i32::MAX`.

use proteus_client::ClientError;

use crate::bytes::{Bytes, SecretBytes};
use crate::client::{Client, count};
use crate::error::ProteusError;
use crate::types::PreKeyBundle;

/// An argument of a kind as the body takes it.
macro_rules! argument {
    (U32, $arg:ident) => {
        u32::try_from($arg)
            .map_err(|_| ProteusError::out_of_range(stringify!($arg), $arg.into()))?
    };
    (PrekeyId, $arg:ident) => {
        u16::try_from($arg)
            .map_err(|_| ProteusError::out_of_range(stringify!($arg), $arg.into()))?
    };
    (Amount, $arg:ident) => {
        count(stringify!($arg), $arg, usize::MAX)?
    };
    ($kind:ident, $arg:ident) => {
        $arg
    };
}

/// A result of a kind as it crosses.
macro_rules! result {
    (Count, $value:expr) => {
        i32::try_from($value).unwrap_or(i32::MAX)
    };
    (Bytes, $value:expr) => {
        Bytes($value)
    };
    (SecretBytes, $value:expr) => {
        SecretBytes::new($value)
    };
    (Bundle, $value:expr) => {
        PreKeyBundle::from($value)
    };
    (Bundles, $value:expr) => {
        $value.into_iter().map(PreKeyBundle::from).collect()
    };
    ($kind:ident, $value:expr) => {
        $value
    };
}

macro_rules! uniffi_calls {
    ($(
        $(#[$meta:meta])*
        fn $name:ident / $js:ident ( $($arg:ident : $kind:ident [$($ty:tt)*]),* )
            -> $ret:ident [$($rty:tt)*] = |$c:ident| $body:expr;
    )*) => {
        /// The calls every binding offers alike (`proteus-ffi-surface`).
        #[uniffi::export]
        impl Client {
            $(
                $(#[$meta])*
                pub async fn $name(&self, $($arg: $($ty)*),*) -> Result<$($rty)*, ProteusError> {
                    $(let $arg = argument!($kind, $arg);)*
                    self.run(move |$c| {
                        let result: Result<_, ClientError> = $body;
                        result.map(|value| result!($ret, value))
                    })
                    .await
                }
            )*
        }
    };
}

proteus_ffi_surface::client_calls!(uniffi_calls {
    Id: [String], Str: [String], Data: [Bytes], SecretData: [SecretBytes], U32: [i32],
    Amount: [i32], PrekeyId: [i32], Unit: [()], Bool: [bool], Count: [i32], Text: [String],
    MaybeText: [Option<String>], Texts: [Vec<String>], Bytes: [Bytes], SecretBytes: [SecretBytes],
    Bundle: [PreKeyBundle], Bundles: [Vec<PreKeyBundle>],
});
