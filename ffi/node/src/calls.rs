//! The client's calls that every binding offers alike (`proteus-ffi-surface`), as Promises:
//! each runs on libuv's pool (`task.rs`); bytes cross as `Uint8Array` (a secret argument's
//! copy is wiped after the call), a count as `u32` (saturated).

use napi::bindgen_prelude::{AsyncTask, Uint8Array};
use napi_derive::napi;
use proteus_client::ClientError;
use zeroize::Zeroizing;

use crate::secret::SecretBytes;
use crate::task::{Call, run};
use crate::{RawClient, RawPrekeyBundle, bundle_object, bytes, js};

/// An argument of a kind as the body takes it (moved to the pool's thread).
macro_rules! argument {
    (Data, $arg:ident) => {
        $arg.to_vec()
    };
    (SecretData, $arg:ident) => {
        Zeroizing::new($arg.to_vec())
    };
    (Amount, $arg:ident) => {
        usize::try_from($arg).unwrap_or(usize::MAX)
    };
    ($kind:ident, $arg:ident) => {
        $arg
    };
}

/// A result of a kind as it crosses.
macro_rules! result {
    (Count, $value:expr) => {
        u32::try_from($value).unwrap_or(u32::MAX)
    };
    (Bytes, $value:expr) => {
        bytes($value)
    };
    (SecretBytes, $value:expr) => {
        SecretBytes::new($value)
    };
    (Bundle, $value:expr) => {
        bytes($value.to_bytes())
    };
    (Bundles, $value:expr) => {
        $value.iter().map(bundle_object).collect()
    };
    ($kind:ident, $value:expr) => {
        $value
    };
}

macro_rules! node_calls {
    ($(
        $(#[$meta:meta])*
        fn $name:ident / $js:ident ( $($arg:ident : $kind:ident [$($ty:tt)*]),* )
            -> $ret:ident [$($rty:tt)*] = |$c:ident| $body:expr;
    )*) => {
        #[napi]
        impl RawClient {
            $(
                $(#[$meta])*
                #[napi]
                pub fn $name(&self, $($arg: $($ty)*),*) -> AsyncTask<Call<$($rty)*>> {
                    $(let $arg = argument!($kind, $arg);)*
                    run(&self.shared, move |$c| {
                        let result: Result<_, ClientError> = $body;
                        js(result).map(|value| result!($ret, value))
                    })
                }
            )*
        }
    };
}

proteus_ffi_surface::client_calls!(node_calls {
    Id: [String], Str: [String], Data: [Uint8Array], SecretData: [Uint8Array], U32: [u32],
    Amount: [u32], PrekeyId: [u16], Unit: [()], Bool: [bool], Count: [u32], Text: [String],
    MaybeText: [Option<String>], Texts: [Vec<String>], Bytes: [Uint8Array],
    SecretBytes: [SecretBytes], Bundle: [Uint8Array], Bundles: [Vec<RawPrekeyBundle>],
});
