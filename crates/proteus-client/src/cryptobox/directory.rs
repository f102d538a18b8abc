//! Reading a cryptobox store from a directory (docs/migration.md, "Source layouts"):
//!
//! * **@wireapp/store-engine-fs** (Wire's Node and Electron clients): `keys/`, `prekeys/` and
//!   `sessions/`, one JSON file `<key>.dat` per record, `{ id, serialised, created, version }`
//!   with `serialised` the record's bytes in base64 (older versions: the bytes themselves).
//! * **Wire's Rust cryptobox** (Wire's Android and iOS clients before core-crypto):
//!   `identities/local` (the identity as [`CryptoboxRecords::identity`] takes it; before
//!   cryptobox 0.4, `identities/local_identity`), `prekeys/<id>` and
//!   `sessions/<session id>`, each file the record's bytes; `*.tmp` files are writes it never
//!   finished.
//!
//! Only reads; a record that cannot be read is reported like one that does not decode.

use std::fs;
use std::path::Path;

use base64::Engine as _;
use zeroize::Zeroizing;

use super::{BadRecord, CryptoboxRecords, ImportError, LOCAL_IDENTITY, SourceRecord, SourceTable};
use crate::codes::ClientCode;

/// The largest record file read (a session with all its staged message keys is far smaller).
pub const MAX_RECORD_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The file extension of @wireapp/store-engine-fs's records.
const DAT: &str = "dat";

impl CryptoboxRecords {
    /// Reads the cryptobox store in the directory `path`, whichever of the two layouts it has.
    pub fn read_directory(path: &Path) -> Result<Self, ImportError> {
        if path.join("keys").is_dir() {
            read_layout(path, &FS_ENGINE)
        } else if path.join("identities").is_dir() {
            read_layout(path, &RUST_CRYPTOBOX)
        } else if path.is_dir() {
            Err(unreadable(
                "neither a `keys` directory (@wireapp/store-engine-fs) nor an `identities` \
                 directory (Wire's Rust cryptobox) is in it",
            ))
        } else {
            Err(unreadable("it is not a directory"))
        }
    }
}

/// Where a layout keeps its records and how a file holds one.
struct Layout {
    /// Where the identity may be (the first that exists is read), and how its file holds it.
    identity: &'static [(&'static str, &'static str, Encoding)],
    prekeys: &'static str,
    sessions: &'static str,
    /// The file extension of a record (the file name without it is the record's id).
    extension: Option<&'static str>,
    /// The extension of files that are not records (unfinished writes).
    ignored: Option<&'static str>,
    /// How a file holds a record's bytes.
    encoding: Encoding,
}

#[derive(Clone, Copy)]
enum Encoding {
    /// store-engine-fs's JSON (see [`decode_json_record`]).
    Json,
    /// The bytes themselves.
    Raw,
}

impl Encoding {
    fn decode(self, file: Vec<u8>) -> Result<Zeroizing<Vec<u8>>, String> {
        match self {
            Self::Json => decode_json_record(file),
            Self::Raw => Ok(Zeroizing::new(file)),
        }
    }
}

const FS_ENGINE: Layout = Layout {
    identity: &[("keys", "local_identity.dat", Encoding::Json)],
    prekeys: "prekeys",
    sessions: "sessions",
    extension: Some(DAT),
    ignored: None,
    encoding: Encoding::Json,
};

const RUST_CRYPTOBOX: Layout = Layout {
    identity: &[
        ("identities", "local", Encoding::Raw),
        ("identities", "local_identity", Encoding::Raw),
    ],
    prekeys: "prekeys",
    sessions: "sessions",
    extension: None,
    ignored: Some("tmp"),
    encoding: Encoding::Raw,
};

fn read_layout(root: &Path, layout: &Layout) -> Result<CryptoboxRecords, ImportError> {
    let Some((path, encoding)) = layout
        .identity
        .iter()
        .map(|(dir, file, encoding)| (root.join(dir).join(file), *encoding))
        .find(|(path, _)| path.is_file())
    else {
        let (dir, file, _) = layout
            .identity
            .first()
            .copied()
            .unwrap_or(("", "", Encoding::Raw));
        return Err(unreadable(&format!("there is no identity ({dir}/{file})")));
    };
    let identity = read_file(&path)
        .and_then(|file| encoding.decode(file))
        .map_err(|reason| {
            ImportError::BadRecords(vec![bad(SourceTable::Identity, LOCAL_IDENTITY, reason)])
        })?;
    let mut records = CryptoboxRecords::new(identity, Vec::new(), Vec::new());
    for table in [SourceTable::PreKeys, SourceTable::Sessions] {
        let name = match table {
            SourceTable::PreKeys => layout.prekeys,
            _ => layout.sessions,
        };
        let dir = root.join(name);
        if !dir.is_dir() {
            continue;
        }
        let entries = fs::read_dir(&dir).map_err(|e| unreadable(&format!("{name}: {e}")))?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| unreadable(&format!("{name}: {e}")))?;
            let path = entry.path();
            let Some(id) = record_id(&path, layout.extension, layout.ignored) else {
                continue;
            };
            files.push((id, path));
        }
        // Directory order is the file system's: read in a stable one.
        files.sort();
        for (id, path) in files {
            match read_file(&path).and_then(|file| layout.encoding.decode(file)) {
                Ok(bytes) => {
                    let record = SourceRecord { id, bytes };
                    match table {
                        SourceTable::PreKeys => records.prekeys.push(record),
                        _ => records.sessions.push(record),
                    }
                }
                Err(reason) => records.unreadable.push(bad(table, &id, reason)),
            }
        }
    }
    Ok(records)
}

/// The record id a file holds (its name, without the layout's extension), or `None` for a file
/// that is not a record (another extension, an ignored one, a hidden file, a directory).
fn record_id(path: &Path, extension: Option<&str>, ignored: Option<&str>) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let ignored = ignored.is_some_and(|ext| {
        name.strip_suffix(ext)
            .is_some_and(|stem| stem.ends_with('.'))
    });
    if name.starts_with('.') || ignored {
        return None;
    }
    match extension {
        Some(ext) => {
            let id = name.strip_suffix(ext)?.strip_suffix('.')?;
            Some(id.to_owned())
        }
        None => Some(name.to_owned()),
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    let len = fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_RECORD_FILE_BYTES {
        return Err(format!("{len} bytes, more than a record can be"));
    }
    fs::read(path).map_err(|e| e.to_string())
}

/// A record of @wireapp/store-engine-fs: JSON with the bytes in `serialised`, as base64 text or
/// (older versions) as the bytes themselves, a JSON array or an object of index → byte.
fn decode_json_record(file: Vec<u8>) -> Result<Zeroizing<Vec<u8>>, String> {
    let file = Zeroizing::new(file);
    let json: serde_json::Value =
        serde_json::from_slice(&file).map_err(|e| format!("not JSON: {e}"))?;
    let serialised = json.get("serialised").ok_or("no `serialised` field")?;
    let bytes =
        match serialised {
            serde_json::Value::String(text) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("`serialised` is not base64: {e}"))?,
            serde_json::Value::Array(items) => items
                .iter()
                .map(byte)
                .collect::<Option<Vec<u8>>>()
                .ok_or("`serialised` is not a list of bytes")?,
            serde_json::Value::Object(map) => {
                let mut bytes = vec![0u8; map.len()];
                for (index, value) in map {
                    let slot = index
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| bytes.get_mut(i))
                        .ok_or("`serialised` is not an array of bytes")?;
                    *slot = byte(value).ok_or("`serialised` is not an array of bytes")?;
                }
                bytes
            }
            _ => return Err("`serialised` is neither base64 text nor bytes".to_owned()),
        };
    Ok(Zeroizing::new(bytes))
}

fn byte(value: &serde_json::Value) -> Option<u8> {
    value.as_u64().and_then(|n| u8::try_from(n).ok())
}

fn bad(table: SourceTable, id: &str, reason: String) -> BadRecord {
    BadRecord {
        table,
        id: id.to_owned(),
        code: ClientCode::ImportSourceUnreadable.number(),
        reason,
    }
}

fn unreadable(what: &str) -> ImportError {
    ImportError::SourceUnreadable(what.to_owned())
}
