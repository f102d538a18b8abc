//! The README's examples are the programs the test command runs: its JavaScript, Kotlin and
//! Swift blocks are the consumer projects of scripts/suites/ (its Rust blocks are doctests of
//! proteus-client).

use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The first fenced block of `language` after the heading `heading`.
fn block(readme: &str, heading: &str, language: &str) -> Option<String> {
    let after = readme.split_once(&format!("\n{heading}\n"))?.1;
    let body = after.split_once(&format!("```{language}\n"))?.1;
    Some(body.split_once("\n```")?.0.to_owned())
}

#[test]
fn the_readme_examples_are_the_consumer_programs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for (heading, language, program) in [
        (
            "### JavaScript (browser or Node)",
            "js",
            "ffi/web/tests/consumer/use.mjs",
        ),
        (
            "### Kotlin",
            "kotlin",
            "ffi/uniffi/kotlin/consumer/src/main/kotlin/Main.kt",
        ),
        (
            "### Swift",
            "swift",
            "ffi/uniffi/swift/consumer/Sources/Consumer/main.swift",
        ),
    ] {
        let shown = block(&readme, heading, language)
            .unwrap_or_else(|| panic!("README.md has no {language} block under {heading}"));
        let run = std::fs::read_to_string(root().join(program)).expect(program);
        assert_eq!(
            shown,
            run.trim_end(),
            "README.md {heading} differs from {program}"
        );
    }
}
