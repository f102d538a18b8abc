//! Reading a vector file's JSON fields, and comparing ours with what it recorded.

use proteus_core::{Envelope, Message};
use serde_json::Value;

use super::Res;

pub(super) fn get<'v>(v: &'v Value, key: &str) -> Res<&'v Value> {
    v.get(key).ok_or_else(|| format!("missing field `{key}`"))
}

pub(super) fn arr<'v>(v: &'v Value, key: &str) -> Res<&'v Vec<Value>> {
    get(v, key)?
        .as_array()
        .ok_or_else(|| format!("`{key}` is not an array"))
}

pub(super) fn text<'v>(v: &'v Value, key: &str) -> Res<&'v str> {
    get(v, key)?
        .as_str()
        .ok_or_else(|| format!("`{key}` is not a string"))
}

pub(super) fn num(v: &Value, key: &str) -> Res<u64> {
    get(v, key)?
        .as_u64()
        .ok_or_else(|| format!("`{key}` is not a number"))
}

pub(super) fn bytes(v: &Value, key: &str) -> Res<Vec<u8>> {
    hex::decode(text(v, key)?).map_err(|e| format!("`{key}` is not hex: {e}"))
}

pub(super) fn expect_eq(what: &str, ours: &[u8], theirs: &[u8]) -> Res<()> {
    if ours == theirs {
        Ok(())
    } else {
        Err(format!(
            "{what} differs:\n  ours   {}\n  theirs {}",
            hex::encode(ours),
            hex::encode(theirs)
        ))
    }
}

pub(super) fn check_decoded(env: &Envelope, d: &Value) -> Res<()> {
    let cm = env.message().cipher_message();
    let mut checks: Vec<(&str, String)> = vec![
        ("session_tag", cm.session_tag.to_string()),
        ("counter", cm.counter.to_string()),
        ("prev_counter", cm.prev_counter.to_string()),
        ("ratchet_key", cm.ratchet_key.fingerprint()),
        ("cipher_text_len", cm.cipher_text.len().to_string()),
    ];
    match env.message() {
        Message::Cipher(_) => checks.push(("type", "cipher".into())),
        Message::PreKey(p) => {
            checks.push(("type", "prekey".into()));
            checks.push(("prekey_id", p.prekey_id.to_string()));
            checks.push(("base_key", p.base_key.fingerprint()));
            checks.push(("identity_key", p.identity_key.fingerprint()));
        }
    }
    for (field, ours) in checks {
        let Some(theirs) = d.get(field) else { continue };
        let theirs = match theirs {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if theirs != ours {
            return Err(format!("decoded.{field}: ours {ours}, theirs {theirs}"));
        }
    }
    Ok(())
}
