//! The command line: `--help` is an answer (exit 0, usage on standard output), a mistake is not.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_proteus-chat");

#[test]
fn help_prints_the_usage_and_succeeds() {
    for flag in ["--help", "-h"] {
        let out = Command::new(BIN).arg(flag).output().unwrap();
        assert!(out.status.success(), "{flag}: {:?}", out.status);
        let stdout = String::from_utf8_lossy(&out.stdout);
        for option in [
            "--relay ADDR",
            "--no-embed",
            "--web-pkg DIR",
            "--max-message BYTES",
        ] {
            assert!(
                stdout.contains(option),
                "{flag}: {option} missing from {stdout}"
            );
        }
    }
}

#[test]
fn mistakes_fail_with_the_usage() {
    for args in [
        &["--bogus"][..],
        &["alice", "--relay"],
        &["relay", "--rate", "-1"],
        &["relay", "--rate=abc"],
        &["a", "b", "c"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("proteus-chat: "), "{args:?}: {stderr}");
    }
}

#[test]
fn an_option_may_carry_its_value_after_an_equals_sign() {
    // `--listen=ADDR` is read as `--listen ADDR`: an address that does not parse is reported
    // as that address, not as an unknown option.
    let out = Command::new(BIN)
        .args(["relay", "--listen=not an address"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not an address:"), "{stderr}");
}
