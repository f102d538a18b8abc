//! The declared calls expand (every binding's macro sees this shape) and are all part of the
//! public surface every binding's tests compare with (`ffi/api-surface.json`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

macro_rules! js_names {
    ($(
        $(#[$meta:meta])*
        fn $name:ident / $js:ident ( $($arg:ident : $kind:ident [$($ty:tt)*]),* )
            -> $ret:ident [$($rty:tt)*] = |$c:ident| $body:expr;
    )*) => {
        &[$((stringify!($name), stringify!($js), &[$(stringify!($kind)),*] as &[&str], stringify!($ret))),*]
    };
}

type Call = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
);

const CALLS: &[Call] = proteus_ffi_surface::client_calls!(js_names {
    Id: [&str], Str: [&str], Data: [&[u8]], SecretData: [Vec<u8>], U32: [u32], Amount: [u32],
    PrekeyId: [u16], Unit: [()], Bool: [bool], Count: [u32], Text: [String],
    MaybeText: [Option<String>], Texts: [Vec<String>], Bytes: [Vec<u8>], SecretBytes: [Vec<u8>],
    Bundle: [Vec<u8>], Bundles: [Vec<Vec<u8>>],
});

fn surface_methods() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../api-surface.json");
    let surface: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    surface["client"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_declared_call_is_on_the_public_surface() {
    let methods = surface_methods();
    assert!(CALLS.len() >= 15, "{} calls", CALLS.len());
    for (_, js, _, _) in CALLS {
        assert!(
            methods.iter().any(|m| m == js),
            "{js} is not in api-surface.json"
        );
    }
}

#[test]
fn each_js_name_is_the_rust_name_in_camel_case() {
    for (rust, js, _, _) in CALLS {
        let mut camel = String::new();
        let mut upper = false;
        for ch in rust.chars() {
            if ch == '_' {
                upper = true;
            } else if upper {
                camel.push(ch.to_ascii_uppercase());
                upper = false;
            } else {
                camel.push(ch);
            }
        }
        assert_eq!(&camel, js, "{rust}");
    }
}

#[test]
fn kinds_are_the_documented_ones() {
    for (rust, _, args, ret) in CALLS {
        for kind in *args {
            assert!(
                [
                    "Id",
                    "Str",
                    "Data",
                    "SecretData",
                    "U32",
                    "Amount",
                    "PrekeyId"
                ]
                .contains(kind),
                "{rust}: argument kind {kind}"
            );
        }
        assert!(
            [
                "Unit",
                "Bool",
                "Count",
                "Text",
                "MaybeText",
                "Texts",
                "Bytes",
                "SecretBytes",
                "Bundle",
                "Bundles",
            ]
            .contains(ret),
            "{rust}: result kind {ret}"
        );
    }
}
