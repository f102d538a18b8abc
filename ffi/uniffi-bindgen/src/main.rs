//! `uniffi-bindgen` for this workspace, in a package of its own so that the binding library does
//! not depend on clap. Usage (see ffi/uniffi/README.md):
//!
//! ```text
//! cargo run -p proteus-uniffi-bindgen -- generate --no-format \
//!     target/release/libproteus_uniffi.so --language kotlin --out-dir target/uniffi/kotlin
//! ```
//!
//! ffi/uniffi/scripts/build.sh builds it in an unoptimised profile of its own, which compiles
//! much faster than the workspace's dev profile.

fn main() {
    uniffi::uniffi_bindgen_main()
}
