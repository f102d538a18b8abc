//! `uniffi-bindgen` for this workspace, in a package of its own so that the binding library does
//! not depend on clap. Usage (see ffi/uniffi/README.md):
//!
//! ```text
//! cargo run -p proteus-uniffi-bindgen -- generate --no-format \
//!     target/release/libproteus_uniffi.so --language kotlin --out-dir target/uniffi/kotlin
//! ```

fn main() {
    uniffi::uniffi_bindgen_main()
}
