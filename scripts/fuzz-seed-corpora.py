#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/corpus/<target>/) from the interop vectors.

Usage: scripts/fuzz-seed-corpora.py [VECTOR_DIR...]  (defaults: tests/vectors/proteus-js
and tests/vectors/generated). Files are named by their SHA-256, so re-running adds nothing twice.
"""
import glob, hashlib, json, os, random, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dirs = sys.argv[1:] or [os.path.join(ROOT, "tests", "vectors", "proteus-js"),
                        os.path.join(ROOT, "tests", "vectors", "generated")]
PER_TARGET = 80
seeds = {t: [] for t in ["envelope", "prekey_bundle", "prekey", "identity_key_pair", "session",
                         "store_records", "interaction"]}

for d in dirs:
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        v = json.load(open(path))
        if "events" not in v:
            continue
        for p in v.get("parties", {}).values():
            seeds["identity_key_pair"].append(bytes.fromhex(p["identity_keypair"]))
            seeds["identity_key_pair"].append(bytes.fromhex(p["identity_public"]))
            for pk in p.get("prekeys", []):
                seeds["prekey"].append(bytes.fromhex(pk["bytes"]))
        for b in v.get("bundles", []):
            seeds["prekey_bundle"].append(bytes.fromhex(b["bytes"]))
        for m in v.get("messages", []):
            seeds["envelope"].append(bytes.fromhex(m["envelope"]))
        for e in v["events"]:
            if "envelope" in e:
                seeds["envelope"].append(bytes.fromhex(e["envelope"]))
            if "session_after" in e:
                seeds["session"].append(bytes.fromhex(e["session_after"]))

# docs/protocol.md §14: Bob's session (the identity the session target loads for).
seeds["session"].append(bytes.fromhex(
    "a600010150000102030405060708090a0b0c0d0e0f02a100a1005820d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c4803a100a1005820d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c977873704f605a150000102030405060708090a0b0c0d0e0fa40081a300a200a10058200e94d5bf844ab77575cd8dce5accd953c4b9ce705f05d5a091f63364fba21174010101a100582017cb79fb2b4120f2b1ec65e4198d6e08b28e813feb01e4a400839b85e18080ce028001a200a200a1005820953be09c80f749218b6058e6ae69647c46a8ff8943dfa2106ce820ed6caf635c010101a200a1005840666666666666666666666666666666666666666666666666666666666666666634b4d9043156cb6dcf0beb0a2949b7559c940d2bcb6dbe8c53a9b30278e3a74601a100582034b4d9043156cb6dcf0beb0a2949b7559c940d2bcb6dbe8c53a9b30278e3a74602a100a1005820f912aadedc047ce4927d61e0bd203d5f20ff0ebf305dbd354172bcf69964bc200300"))

# store_records: `table ‖ key length ‖ value length (u16 BE) ‖ key ‖ value` records, then an envelope.
def record(table, key, value):
    return bytes([table, len(key)]) + len(value).to_bytes(2, "big") + key + value
bob_identity = bytes.fromhex(
    "a3000101a10058404444444444444444444444444444444444444444444444444444444444444444d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c4802a100a1005820d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c48")
bob_session = seeds["session"][-1]
for env in seeds["envelope"][:20]:
    seeds["store_records"].append(record(0, b"identity", bob_identity) + record(2, b"alice", bob_session) + env)

# interaction: an 8-byte seed, then operations.
rng = random.Random(1)
for _ in range(24):
    seeds["interaction"].append(bytes(rng.randrange(256) for _ in range(8 + 2 * rng.randrange(4, 60))))

written = 0
for target, items in seeds.items():
    out = os.path.join(ROOT, "fuzz", "corpus", target)
    os.makedirs(out, exist_ok=True)
    unique = {hashlib.sha256(b).hexdigest(): b for b in items}
    # Keep a spread: the smallest and the largest, then evenly spaced in between.
    chosen = sorted(unique.items(), key=lambda kv: len(kv[1]))
    if len(chosen) > PER_TARGET:
        step = len(chosen) / PER_TARGET
        chosen = [chosen[int(i * step)] for i in range(PER_TARGET)]
    for name, data in chosen:
        path = os.path.join(out, name[:16])
        if not os.path.exists(path):
            open(path, "wb").write(data)
            written += 1
print(f"wrote {written} seed files under fuzz/corpus/")
