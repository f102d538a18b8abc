//! Secret bytes handed to JS (an exported identity or session): copied into memory that JS owns,
//! and the Rust copy wiped.
//!
//! napi-rs hands a `Vec<u8>` to JS as an external buffer that points into the Rust heap and
//! is freed, not wiped, when JS collects it: the secret would stay in freed memory. Here JS
//! gets its own copy (the same as any bytes it makes) and the only Rust copy, held as
//! [`Zeroizing`], is wiped as soon as the copy exists.

use napi::bindgen_prelude::{ToNapiValue, TypeName, Uint8ArraySlice, ValueType};
use napi::{Env, sys};
use zeroize::Zeroizing;

/// Bytes that hold a secret, resolved to JS as a `Uint8Array` of its own.
pub struct SecretBytes(Zeroizing<Vec<u8>>);

impl SecretBytes {
    pub(crate) fn new(bytes: Zeroizing<Vec<u8>>) -> Self {
        Self(bytes)
    }
}

impl TypeName for SecretBytes {
    fn type_name() -> &'static str {
        "Uint8Array"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

#[allow(unsafe_code)]
impl ToNapiValue for SecretBytes {
    /// # Safety
    ///
    /// As the trait's: `env` is the valid environment napi-rs converts the value in.
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let copy = Uint8ArraySlice::copy_from(&Env::from_raw(env), &*val.0)?;
        let copy: &Uint8ArraySlice<'_> = &copy;
        // SAFETY: `env` is valid (the caller's guarantee) and `copy` was made in it.
        let value = unsafe { ToNapiValue::to_napi_value(env, copy) };
        // `val` drops here: the Rust copy is wiped.
        drop(val);
        value
    }
}
