//! The replayer of `proteus-interop-vectors` files (version 1): conversations recorded with
//! `@wireapp/proteus`, kept in tests/vectors/.
//!
//! A file is one JSON object; byte strings are lowercase hex. `parties` gives each party's
//! serialised identity key pair and prekeys; `bundles` the serialised prekey bundles; `messages`
//! every envelope with its plaintext (and, mostly, the library's own decoding of it); `events`
//! the library calls in order: `init_from_prekey`, `encrypt` (possibly clearing the pending
//! prekey afterwards), `encrypt_unrecorded` (messages sent but never delivered), and `decrypt`
//! with what it gave (`expect`: a plaintext, or an error class and code), the prekeys it
//! removed and, on most events, `session_after` (the session serialised after the event).
//! An event's `rng` lists the random draws the library made (32-byte key-pair seeds, 16-byte
//! session tags), so a replay that feeds them back in must produce the same envelopes and
//! session bytes. `index.json` lists a set's files.
//!
//! Two modes: replaying the draws (byte-exact envelopes and sessions), and loading the
//! `session_after` snapshots with fresh randomness (every outcome must still match).

mod errors;
mod fields;
mod replay;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use fields::arr;
use replay::Replay;

/// How randomness is reproduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Recorded random draws are replayed: envelopes and snapshots must be byte-identical.
    Recorded,
    /// Fresh randomness; each `session_after` snapshot is loaded after its event.
    Snapshots,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Recorded => "recorded",
            Self::Snapshots => "snapshots",
        })
    }
}

pub(super) type Res<T> = Result<T, String>;

/// The scenario files of a folder (JSON files with `events`), sorted by name.
pub fn scenario_files(dir: &Path) -> Res<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?
    {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let json: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            if json.get("events").is_some() {
                files.push(path);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("no scenario files in {}", dir.display()));
    }
    Ok(files)
}

/// Replays one file in one mode; returns a one-line summary or the first mismatch.
pub fn replay_file(path: &Path, mode: Mode) -> Res<String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let json: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut replay = Replay::new(&json, mode)?;
    let events = arr(&json, "events")?;
    for event in events {
        let seq = event.get("seq").and_then(Value::as_u64).unwrap_or_default();
        replay
            .event(event)
            .map_err(|e| format!("event {seq}: {e}"))?;
    }
    Ok(format!(
        "{} events, {} decrypted, {} rejected as expected, {} envelopes and {} snapshots matched{}{}",
        events.len(),
        replay.decrypted,
        replay.rejected,
        replay.envelopes_matched,
        replay.snapshots_matched,
        match replay.fast_forwarded {
            0 => String::new(),
            n => format!(", {n} expected divergences (gap > 1000 accepted here)"),
        },
        match replay.not_retried {
            0 => String::new(),
            n => format!(
                ", {n} expected divergences (a bad MAC on the state holding its chain is not \
                 retried as a new state: InvalidSignature here, 101 there)"
            ),
        }
    ))
}
