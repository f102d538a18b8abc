//! `uniffi-bindgen` for this workspace: generates the Kotlin and Swift sources from the built
//! library (UniFFI's library mode), with the names of ffi/uniffi/uniffi.toml.
//!
//! ```text
//! cargo run -p proteus-uniffi-bindgen -- generate [--no-format] \
//!     target/release/libproteus_uniffi.so --language kotlin --out-dir target/uniffi/kotlin
//! ```
//!
//! It is a package of its own that calls `uniffi_bindgen` directly (rather than `uniffi`'s `cli`
//! feature), so that neither the binding library nor `cargo test --workspace` builds the
//! generator and its command-line parser. ffi/uniffi/scripts/build.sh builds it in an unoptimised
//! profile of its own, which compiles much faster than the workspace's dev profile.

use std::process::ExitCode;

use camino::Utf8PathBuf;
use uniffi_bindgen::bindings::{GenerateOptions, TargetLanguage, generate};

const USAGE: &str = "usage: uniffi-bindgen generate [--no-format] LIBRARY --language kotlin|swift|python|ruby... \
--out-dir DIR [--config FILE] [--crate NAME] [--metadata-no-deps]";

fn parse(args: &[String]) -> Result<GenerateOptions, String> {
    let mut args = args.iter();
    if args.next().map(String::as_str) != Some("generate") {
        return Err(USAGE.into());
    }
    let (mut languages, mut source, mut out_dir) = (Vec::new(), None, None);
    let (mut config, mut crate_filter, mut format, mut metadata_no_deps) =
        (None, None, true, false);
    while let Some(arg) = args.next() {
        let mut value = || args.next().cloned().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--no-format" => format = false,
            "--metadata-no-deps" => metadata_no_deps = true,
            // Library mode is the only mode; the flag is accepted as UniFFI's own CLI does.
            "--library" => {}
            "--language" | "-l" => languages.push(match value()?.as_str() {
                "kotlin" => TargetLanguage::Kotlin,
                "swift" => TargetLanguage::Swift,
                "python" => TargetLanguage::Python,
                "ruby" => TargetLanguage::Ruby,
                other => return Err(format!("unknown language {other:?}")),
            }),
            "--out-dir" | "-o" => out_dir = Some(Utf8PathBuf::from(value()?)),
            "--config" | "-c" => config = Some(Utf8PathBuf::from(value()?)),
            "--crate" => crate_filter = Some(value()?),
            other if !other.starts_with('-') && source.is_none() => {
                source = Some(Utf8PathBuf::from(other));
            }
            other => return Err(format!("unexpected argument {other:?}\n{USAGE}")),
        }
    }
    if languages.is_empty() {
        return Err(format!("no --language\n{USAGE}"));
    }
    Ok(GenerateOptions {
        languages,
        source: source.ok_or(format!("no LIBRARY\n{USAGE}"))?,
        out_dir: out_dir.ok_or(format!("no --out-dir\n{USAGE}"))?,
        config_override: config,
        format,
        crate_filter,
        metadata_no_deps,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match generate(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("uniffi-bindgen: {e:?}");
            ExitCode::FAILURE
        }
    }
}
