//! The bindings' error constants are generated from the table of every layer's codes
//! (`proteus_ffi_codes::all`) and checked in; this test fails when one of them is stale or was
//! edited by hand. To regenerate:
//!
//! ```text
//! PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files
//! ```
//!
//! Each language's own tests then check its constants against the registry at run time
//! (Kotlin and Swift against `errorCodes()` of the native library, JavaScript against the JSON).

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use proteus_ffi_codes::ErrorCode;
use proteus_ffi_codes::{all, reserved};

const HEADER: &str = "Generated from every layer's error codes (assembled in ffi/codes/src/lib.rs) by\n\
                      `PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files`. Do not edit.";

/// Every code, ascending.
static CODES: LazyLock<Vec<ErrorCode>> = LazyLock::new(all);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `PreKeyNotFound` -> `PRE_KEY_NOT_FOUND`.
fn screaming(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// `PreKeyNotFound` -> `preKeyNotFound`.
fn lower_camel(name: &str) -> String {
    let mut chars = name.chars();
    let first = chars.next().map(|c| c.to_ascii_lowercase());
    first.into_iter().chain(chars).collect()
}

fn comment(prefix: &str, text: &str) -> String {
    text.lines()
        .map(|l| format!("{prefix}{l}\n"))
        .collect::<String>()
}

fn json() -> String {
    let mut out = String::from("{\n  \"codes\": [\n");
    for (i, c) in CODES.iter().enumerate() {
        let comma = if i + 1 < CODES.len() { "," } else { "" };
        writeln!(
            out,
            "    {{ \"code\": {}, \"name\": \"{}\", \"kind\": \"{}\", \"family\": \"{}\", \"layer\": \"{}\", \"alreadySeen\": {}, \"meaning\": \"{}\" }}{comma}",
            c.number(),
            c.name(),
            c.kind(),
            c.family().name(),
            c.layer().name(),
            c.is_already_seen(),
            c.meaning(),
        )
        .unwrap();
    }
    out.push_str("  ],\n  \"reserved\": [\n");
    let reserved = reserved();
    for (i, (n, why)) in reserved.iter().enumerate() {
        let comma = if i + 1 < reserved.len() { "," } else { "" };
        writeln!(out, "    {{ \"code\": {n}, \"why\": \"{why}\" }}{comma}").unwrap();
    }
    out.push_str("  ]\n}\n");
    out
}

fn already_seen() -> Vec<u16> {
    CODES
        .iter()
        .filter(|c| c.is_already_seen())
        .map(|c| c.number())
        .collect()
}

fn javascript() -> String {
    let mut out = comment("// ", HEADER);
    out.push_str(
        "// Every code is the same number and kind natively (Rust, Kotlin, Swift); \
         tests/codes.test.mjs checks them\n// against ffi/error-codes.json.\n\n",
    );
    constants(&mut out, " = ");
    out.push_str(
        "\n/** The kind name of every code. */\nexport const ERROR_KINDS = Object.freeze({\n",
    );
    for c in CODES.iter() {
        writeln!(out, "  {}: '{}',", c.number(), c.kind()).unwrap();
    }
    out.push_str("});\n\n/** The family of every code: Engine, Decrypt, Decode, Input or System. */\nexport const ERROR_FAMILIES = Object.freeze({\n");
    for c in CODES.iter() {
        writeln!(out, "  {}: '{}',", c.number(), c.family().name()).unwrap();
    }
    out.push_str("});\n\n");
    let rule = already_seen()
        .iter()
        .map(|n| format!("code === {n}"))
        .collect::<Vec<_>>()
        .join(" || ");
    write!(
        out,
        "/**\n * Whether a message rejected with `code` was decrypted before (a duplicate or an outdated\n * \
         message): drop it silently. Not MessageKeyEvicted (214): that message was lost.\n */\n\
         export function isAlreadySeen(code) {{\n  return {rule};\n}}\n"
    )
    .unwrap();
    out
}

/// One documented constant per code: `export const NAME = 209;` in JS (`separator` " = "),
/// `export const NAME: 209;` in TypeScript (": ").
fn constants(out: &mut String, separator: &str) {
    for c in CODES.iter() {
        writeln!(
            out,
            "/** {} ({}, {}) */\nexport const {}{separator}{};",
            c.meaning(),
            c.kind(),
            c.family().name(),
            screaming(c.name()),
            c.number()
        )
        .unwrap();
    }
}

fn typescript() -> String {
    let mut out = comment("// ", HEADER);
    out.push('\n');
    constants(&mut out, ": ");
    out.push_str("\n/** Every code a ProteusError can have. */\nexport type ErrorCode =\n");
    for (i, c) in CODES.iter().enumerate() {
        let end = if i + 1 < CODES.len() { "" } else { ";" };
        writeln!(out, "  | {}{end}", c.number()).unwrap();
    }
    // One union of kind names per family (a kind is listed once, in its family).
    let mut families: Vec<&str> = Vec::new();
    for c in CODES.iter() {
        if !families.contains(&c.family().name()) {
            families.push(c.family().name());
        }
    }
    out.push_str("\n/** The families of codes: the hundreds digit (1xx Engine … 5xx System). */\nexport type ErrorFamily =\n");
    for (i, f) in families.iter().enumerate() {
        let end = if i + 1 < families.len() { "" } else { ";" };
        writeln!(out, "  | '{f}'{end}").unwrap();
    }
    for f in &families {
        let mut kinds: Vec<&str> = Vec::new();
        for c in CODES.iter().filter(|c| c.family().name() == *f) {
            if !kinds.contains(&c.kind()) {
                kinds.push(c.kind());
            }
        }
        write!(
            out,
            "\n/** The kind names of the {f} family. */\nexport type {f}ErrorKind =\n"
        )
        .unwrap();
        for (i, k) in kinds.iter().enumerate() {
            let end = if i + 1 < kinds.len() { "" } else { ";" };
            writeln!(out, "  | '{k}'{end}").unwrap();
        }
    }
    let all = families
        .iter()
        .map(|f| format!("{f}ErrorKind"))
        .collect::<Vec<_>>()
        .join(" | ");
    writeln!(
        out,
        "\n/** Every kind name an error can have. */\nexport type ErrorKind = {all};"
    )
    .unwrap();
    out.push_str(
        "\n/** The kind name of every code. */\nexport const ERROR_KINDS: Readonly<Record<number, ErrorKind>>;\n\
         /** The family of every code. */\nexport const ERROR_FAMILIES: Readonly<Record<number, ErrorFamily>>;\n\
         /** Whether a message rejected with `code` was decrypted before (duplicate or outdated): drop it. */\n\
         export function isAlreadySeen(code: number): boolean;\n",
    );
    out
}

fn kotlin() -> String {
    let mut out = comment("// ", HEADER);
    out.push_str(
        "package proteus\n\n/**\n * Every error code of the library: [code] is `ProteusException.code`, [kind] its `kind`, the same\n \
         * numbers and kinds as in Rust, Swift and JavaScript. ErrorCodesTest checks them against the native\n \
         * registry (`errorCodes()`).\n */\n\
         enum class ProteusErrorCode(val code: Int, val kind: String, val family: String, val alreadySeen: Boolean) {\n",
    );
    for c in CODES.iter() {
        writeln!(
            out,
            "    /** {} */\n    {}({}, \"{}\", \"{}\", {}),",
            c.meaning(),
            screaming(c.name()),
            c.number(),
            c.kind(),
            c.family().name(),
            c.is_already_seen()
        )
        .unwrap();
    }
    out.push_str(
        "    ;\n\n    companion object {\n        /** The entry of [code]; null for a code this version does not know. */\n        \
         fun fromCode(code: Int): ProteusErrorCode? = values().firstOrNull { it.code == code }\n    }\n}\n",
    );
    out
}

/// Swift's reserved words that a lowerCamel code name could be.
const SWIFT_KEYWORDS: &[&str] = &[
    "internal",
    "public",
    "private",
    "fileprivate",
    "open",
    "default",
    "case",
    "class",
    "static",
    "protocol",
    "extension",
    "import",
    "init",
    "deinit",
    "self",
    "super",
    "true",
    "false",
    "nil",
    "in",
    "is",
    "as",
    "try",
    "throw",
    "throws",
    "return",
    "where",
    "switch",
    "repeat",
    "operator",
];

fn swift() -> String {
    let mut out = comment("// ", HEADER);
    out.push_str(
        "\n/// Every error code of the library: `rawValue` is `ProteusError.code`, `kind` its `kind`, the same\n\
         /// numbers and kinds as in Rust, Kotlin and JavaScript. ErrorCodeTests checks them against the\n\
         /// native registry (`errorCodes()`).\npublic enum ProteusErrorCode: Int32, CaseIterable, Sendable {\n",
    );
    for c in CODES.iter() {
        let name = lower_camel(c.name());
        // A Swift keyword (`internal`) is declared in backticks; `.internal` needs none.
        let declared = if SWIFT_KEYWORDS.contains(&name.as_str()) {
            format!("`{name}`")
        } else {
            name
        };
        writeln!(
            out,
            "    /// {}\n    case {declared} = {}",
            c.meaning(),
            c.number()
        )
        .unwrap();
    }
    out.push_str("\n    /// The kind name errors of this code report.\n    public var kind: String {\n        switch self {\n");
    for c in CODES.iter() {
        writeln!(
            out,
            "        case .{}: return \"{}\"",
            lower_camel(c.name()),
            c.kind()
        )
        .unwrap();
    }
    out.push_str(
        "        }\n    }\n\n    /// Engine, Decrypt, Decode, Input or System: the hundreds digit.\n    public var family: String {\n        switch rawValue / 100 {\n        \
         case 1: return \"Engine\"\n        case 2: return \"Decrypt\"\n        case 3: return \"Decode\"\n        \
         case 4: return \"Input\"\n        default: return \"System\"\n        }\n    }\n\n",
    );
    let rule = CODES
        .iter()
        .filter(|c| c.is_already_seen())
        .map(|c| format!("self == .{}", lower_camel(c.name())))
        .collect::<Vec<_>>()
        .join(" || ");
    writeln!(
        out,
        "    /// Whether a message rejected with this code was decrypted before: drop it silently.\n    \
         public var isAlreadySeen: Bool {{\n        {rule}\n    }}\n}}"
    )
    .unwrap();
    out
}

/// The kind enum of the Kotlin and Swift bindings (`ErrorKind`), as Rust for proteus-uniffi:
/// one variant per kind name, and the kind of every code.
fn uniffi_kinds() -> String {
    let mut out = comment("// ", HEADER);
    out.push_str(
        "\n//! The kind of every error, an enum in Kotlin (`ErrorKind.SESSION_NOT_FOUND`) and Swift\n\
         //! (`.sessionNotFound`): one variant per kind name of the registry.\n\n\
         use proteus_ffi_codes::ErrorCode;\n\n\
         /// The stable name of an error's condition (`ProteusError.kind`). A kind spans a few codes\n\
         /// only where positions of one condition are told apart (InvalidSignature 206/207/210).\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]\n\
         pub enum ErrorKind {\n",
    );
    let mut kinds: Vec<ErrorCode> = Vec::new();
    for &c in CODES.iter() {
        if !kinds.iter().any(|k| k.kind() == c.kind()) {
            kinds.push(c);
        }
    }
    for c in &kinds {
        let codes: Vec<String> = CODES
            .iter()
            .filter(|o| o.kind() == c.kind())
            .map(|o| o.number().to_string())
            .collect();
        let doc = match codes.as_slice() {
            [_] => c.meaning().to_owned(),
            _ => format!("Codes {}: see `ErrorCode` for each.", codes.join(", ")),
        };
        writeln!(out, "    /// {doc}\n    {},", c.kind()).unwrap();
    }
    out.push_str(
        "}\n\nimpl ErrorKind {\n    /// The kind of `code`.\n    pub fn of(code: impl Into<ErrorCode>) -> Self {\n        match code.into().number() {\n",
    );
    for &c in CODES.iter() {
        // The constant's name where it is not the kind's (InvalidSignatureAhead).
        let name = if c.name() == c.kind() {
            String::new()
        } else {
            format!(" // {}", c.name())
        };
        writeln!(
            out,
            "            {} => Self::{},{name}",
            c.number(),
            c.kind()
        )
        .unwrap();
    }
    out.push_str(
        "            // A code newer than this file: the registry test regenerates it.\n            _ => Self::Internal,\n        }\n    }\n\n    \
         /// The kind's name, as `ErrorCode::kind` spells it.\n    pub fn name(self) -> &'static str {\n        match self {\n",
    );
    for c in &kinds {
        writeln!(out, "            Self::{} => \"{}\",", c.kind(), c.kind()).unwrap();
    }
    out.push_str("        }\n    }\n}\n");
    out
}

fn files() -> Vec<(&'static str, String)> {
    vec![
        ("ffi/error-codes.json", json()),
        ("ffi/web/js/codes.js", javascript()),
        ("ffi/web/js/codes.d.ts", typescript()),
        (
            "ffi/uniffi/kotlin/src/main/kotlin/proteus/ProteusErrorCode.kt",
            kotlin(),
        ),
        (
            "ffi/uniffi/swift/Sources/Proteus/ProteusErrorCode.swift",
            swift(),
        ),
        ("ffi/uniffi/src/kind.rs", uniffi_kinds()),
    ]
}

#[test]
fn meanings_need_no_escaping() {
    for c in CODES.iter() {
        let m = c.meaning();
        assert!(
            !m.contains(['"', '\\', '\n']) && !m.contains("*/") && m.ends_with('.'),
            "{c:?}: {m}"
        );
    }
}

#[test]
fn generated_constants_are_current() {
    let bless = std::env::var_os("PROTEUS_BLESS").is_some();
    let mut stale = Vec::new();
    for (path, want) in files() {
        let full = repo().join(path);
        let have = std::fs::read_to_string(&full).unwrap_or_default();
        if have != want {
            if bless {
                std::fs::write(&full, want).unwrap();
            } else {
                stale.push(path);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale or hand-edited: {stale:?}; regenerate with \
         PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files"
    );
}
