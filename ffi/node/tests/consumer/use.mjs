// A project of someone else's: the packed Node package installed from its tarball, used by name,
// on the durable native store. Run by scripts/suites/node.sh in a fresh directory outside the
// repository.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, ProteusError, backend } from '@proteus-engine/node';

assert.equal(backend, 'native');
const dir = mkdtempSync(join(tmpdir(), 'proteus-consumer-'));
const path = join(dir, 'bob.db');
const alice = await Client.inMemory();
const bob = await Client.open(path);
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
const envelope = await alice.encrypt('bob', 'hello from a consumer');
await bob.close();
// The session and the prekey are in the file: a new client on it decrypts.
const reopened = await Client.open(path, { create: false });
const results = await reopened.decryptBatch([{ sessionId: 'alice', envelope }]);
assert.equal(new TextDecoder().decode(results[0].plaintext), 'hello from a consumer');
assert.equal(results[0].sender, await alice.fingerprint());
await assert.rejects(reopened.decrypt('alice', envelope), (e) => e instanceof ProteusError && e.kind === 'DuplicateMessage');
await reopened.close();
rmSync(dir, { recursive: true, force: true });
console.log('consumer ok');
