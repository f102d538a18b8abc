//! The few JavaScript built-ins the adapter makes, declared here rather than taken from
//! `js-sys`: that crate brings its futures runtime (JSPI hooks, closure shims reachable from
//! the function table) into every module that links it, about 3 KB of wasm this package never
//! runs.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// A JS `Error`.
    #[wasm_bindgen(js_name = Error)]
    pub(crate) type Error;

    #[wasm_bindgen(constructor, js_class = "Error")]
    pub(crate) fn new(message: &str) -> Error;

    #[wasm_bindgen(method, setter, js_class = "Error")]
    pub(crate) fn set_name(this: &Error, name: &str);

    /// A JS `RangeError`: an argument of the JS side out of its range.
    #[wasm_bindgen(js_name = RangeError)]
    pub(crate) type RangeError;

    #[wasm_bindgen(constructor, js_class = "RangeError")]
    pub(crate) fn new(message: &str) -> RangeError;

    /// A plain JS object.
    #[wasm_bindgen(js_name = Object)]
    pub(crate) type Object;

    #[wasm_bindgen(constructor, js_class = "Object")]
    pub(crate) fn new() -> Object;

    /// `Reflect.set(target, key, value)`: on the fresh objects made here it cannot fail.
    #[wasm_bindgen(js_namespace = Reflect, js_name = set)]
    pub(crate) fn set(target: &JsValue, key: &str, value: &JsValue) -> bool;

    /// A JS `Array`.
    #[wasm_bindgen(js_name = Array)]
    pub(crate) type Array;

    #[wasm_bindgen(constructor, js_class = "Array")]
    pub(crate) fn new() -> Array;

    #[wasm_bindgen(method, js_class = "Array")]
    pub(crate) fn push(this: &Array, value: &JsValue) -> u32;

    /// A JS `Uint8Array`.
    #[wasm_bindgen(js_name = Uint8Array)]
    pub(crate) type Bytes;

    /// A copy of `bytes` (a view of wasm memory during the call) in a new `Uint8Array`: what
    /// Rust keeps (and wipes, for secrets) stays on the Rust side.
    #[wasm_bindgen(constructor, js_class = "Uint8Array")]
    pub(crate) fn new(bytes: &[u8]) -> Bytes;

    /// A JS `Uint32Array`.
    #[wasm_bindgen(js_name = Uint32Array)]
    pub(crate) type Words;

    /// A copy of `words` in a new `Uint32Array`.
    #[wasm_bindgen(constructor, js_class = "Uint32Array")]
    pub(crate) fn new(words: &[u32]) -> Words;
}

/// A `RangeError` as the value a call throws.
pub(crate) fn range_error(message: &str) -> JsValue {
    RangeError::new(message).into()
}

/// A `Uint8Array` copy of `bytes`, as a JS value.
pub(crate) fn bytes(bytes: &[u8]) -> JsValue {
    Bytes::new(bytes).into()
}
