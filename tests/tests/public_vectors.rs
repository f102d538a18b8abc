//! Runs `replay-vectors` on the public vector set made by @wireapp/proteus 9.13.0, kept in the
//! repository (tests/vectors/proteus-js).

use std::process::Command;

#[test]
fn public_vectors_replay_in_both_modes() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/proteus-js");
    let out = Command::new(env!("CARGO_BIN_EXE_replay-vectors"))
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(out.status.success(), "replay-vectors failed: {last}");
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    assert!(!last.starts_with("0 passed"), "{last}");
}

#[test]
fn a_missing_folder_fails() {
    let out = Command::new(env!("CARGO_BIN_EXE_replay-vectors"))
        .arg("/nonexistent/vectors")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("0 passed, 1 failed\n"));
}
