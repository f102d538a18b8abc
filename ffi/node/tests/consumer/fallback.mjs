// The packed package's wasm fallback, in someone else's project (PROTEUS_BACKEND=wasm, as on a
// platform without a prebuilt addon): everything it loads is in the tarball, whose wasm/ holds
// one module. Run by scripts/suites/node.sh in a fresh directory outside the repository.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { Client, backend } from '@proteus-engine/node';

assert.equal(backend, 'wasm');
const installed = new URL('./node_modules/@proteus-engine/node/wasm/', import.meta.url);
assert.deepEqual(readdirSync(installed).filter((f) => f.endsWith('.wasm')), ['proteus_web_bg.wasm']);
const alice = await Client.inMemory();
const bob = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
const envelope = await alice.encrypt('bob', 'hello from the fallback');
const [result] = await bob.decryptBatch([{ sessionId: 'alice', envelope }]);
assert.equal(new TextDecoder().decode(result.plaintext), 'hello from the fallback');
console.log('consumer fallback ok');
