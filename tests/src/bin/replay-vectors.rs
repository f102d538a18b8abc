//! Replays Proteus interop-vector files (format `proteus-interop-vectors` v1) against this engine.
//!
//! `replay-vectors DIR...` replays every scenario file in the folders, in two modes each:
//! `recorded` feeds the recorded random draws back in and expects identical envelopes and
//! session snapshots; `snapshots` uses fresh randomness and loads each `session_after` snapshot.
//! It prints one line per file and mode and ends with `N passed, M failed`.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use proteus_tests::vectors::{Mode, replay_file, scenario_files};

fn main() -> ExitCode {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: replay-vectors DIR...");
        return ExitCode::from(2);
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for dir in &dirs {
        let files = match scenario_files(dir) {
            Ok(files) => files,
            Err(e) => {
                println!("FAIL {}: {e}", dir.display());
                failed += 1;
                continue;
            }
        };
        for file in files {
            for mode in [Mode::Recorded, Mode::Snapshots] {
                match replay_file(&file, mode) {
                    Ok(summary) => {
                        passed += 1;
                        println!("ok   {} [{mode}] {summary}", file.display());
                    }
                    Err(e) => {
                        failed += 1;
                        println!("FAIL {} [{mode}] {e}", file.display());
                    }
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
