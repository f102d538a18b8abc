//! Known answers from the golden stores the web package wrote (ffi/web/tests/golden/, made with
//! the JS sealing of before this module): what can be checked without AES-GCM, which the crate
//! does not have (the web package runs Web Crypto's): the session-id hashes in stored keys, with
//! the key derived as Web Crypto derives it (HKDF-SHA256, zero salt, IDS_INFO), and the values'
//! format and commit header.

use super::format::{self, IDS_INFO};
use super::stored_key;
use super::tests::{hkdf, hmac};
use crate::storage::Table;

/// The golden stores' stored keys are the session ids hashed as this module hashes them, with
/// the key Web Crypto derived (HKDF-SHA256, zero salt, IDS_INFO).
#[test]
fn golden_stores_hash_session_ids_as_here() {
    for file in ["sealed-v2.json", "sealed-v1.json"] {
        let path = format!(
            "{}/../../ffi/web/tests/golden/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let golden: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let store_key: [u8; 32] = hex::decode(golden["storeKey"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let ids = hkdf(&store_key, IDS_INFO);
        let keys = |table: &str| -> Vec<Vec<u8>> {
            golden["tables"][table]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| hex::decode(r[0].as_str().unwrap()).unwrap())
                .collect()
        };
        let mut hashes = crate::collections::HashMap::default();
        for id in ["alice", "carol"] {
            hashes.insert(id.as_bytes().to_vec(), hmac(&ids, &[id.as_bytes()]));
        }
        let mut sessions = keys("sessions");
        sessions.sort();
        let mut expected: Vec<Vec<u8>> = ["alice", "carol"]
            .iter()
            .map(|id| stored_key(&hashes, Table::Sessions, id.as_bytes()).unwrap())
            .collect();
        expected.sort();
        assert_eq!(sessions, expected, "{file}");
        let pins: Vec<Vec<u8>> = keys("meta")
            .into_iter()
            .filter(|k| k.starts_with(b"pinned/"))
            .collect();
        assert!(
            pins.contains(&stored_key(&hashes, Table::Meta, b"pinned/alice").unwrap()),
            "{file}"
        );
        // Each staged key starts with a session's hash, where the session id was.
        for k in keys("staged_keys") {
            assert!(expected.iter().any(|h| k.starts_with(h)), "{file}");
        }
        // Values are in the file's format, and format 2's name their commit.
        let format = golden["format"].as_u64().unwrap() as u8;
        for r in golden["tables"]["prekeys"].as_array().unwrap() {
            let value = hex::decode(r[1].as_str().unwrap()).unwrap();
            assert_eq!(value[0], format);
            assert_eq!(format::commit_of(&value).is_some(), format == 2);
        }
    }
}
