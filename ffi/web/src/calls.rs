//! The client's calls that every binding offers alike (`proteus-ffi-surface`), as plain calls
//! of the wasm client; what a call commits, the JS side stores before it hands out the result
//! (`commit-engine.js`). A pinned identity crosses as a string, "" for none (less glue than an
//! option; `client-calls.js` makes it undefined).

use wasm_bindgen::prelude::*;

use crate::{RawClient, js_error};

/// An argument of a kind as the body takes it: a secret's copy in the module's memory is wiped
/// when the call is over.
macro_rules! argument {
    (SecretData, $arg:ident) => {
        zeroize::Zeroizing::new($arg)
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
    (MaybeText, $value:expr) => {
        $value.unwrap_or_default()
    };
    (SecretBytes, $value:expr) => {
        crate::js::bytes(&$value)
    };
    (Bundle, $value:expr) => {
        $value.to_bytes()
    };
    (Bundles, $value:expr) => {
        $value.iter().map(crate::bundle_object).collect()
    };
    ($kind:ident, $value:expr) => {
        $value
    };
}

macro_rules! wasm_calls {
    ($(
        $(#[$meta:meta])*
        fn $name:ident / $js:ident ( $($arg:ident : $kind:ident [$($ty:tt)*]),* )
            -> $ret:ident [$($rty:tt)*] = |$c:ident| $body:expr;
    )*) => {
        #[wasm_bindgen]
        impl RawClient {
            $(
                $(#[$meta])*
                #[wasm_bindgen(js_name = $js)]
                pub fn $name(&mut self, $($arg: $($ty)*),*) -> Result<$($rty)*, JsValue> {
                    $(let $arg = argument!($kind, $arg);)*
                    let $c = &mut self.client;
                    let result: Result<_, proteus_client::ClientError> = $body;
                    result.map(|value| result!($ret, value)).map_err(|e| js_error(&e))
                }
            )*
        }
    };
}

proteus_ffi_surface::client_calls!(wasm_calls {
    Id: [&str], Str: [&str], Data: [&[u8]], SecretData: [Vec<u8>], U32: [u32], Amount: [u32],
    PrekeyId: [u16], Unit: [()], Bool: [bool], Count: [u32], Text: [String],
    MaybeText: [String], Texts: [Vec<String>], Bytes: [Vec<u8>], SecretBytes: [JsValue],
    Bundle: [Vec<u8>], Bundles: [Vec<JsValue>],
});
