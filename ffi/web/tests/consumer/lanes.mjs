// A project of someone else's opting in to the lanes build by name (the packed package): the
// `./lanes` export resolves, its module is in the tarball, and the API runs on it.
// Run by scripts/suites/web.sh in a fresh directory outside the repository.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { Client } from '@proteus-engine/web';
import { initLanes, lanesWasm } from '@proteus-engine/web/lanes';

assert.ok(statSync(lanesWasm).size > statSync(new URL('./proteus_web_bg.wasm', lanesWasm)).size);
await initLanes();
const alice = await Client.inMemory();
const bob = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
const results = await bob.decryptBatch([{ sessionId: 'alice', envelope: await alice.encrypt('bob', 'hello from lanes') }]);
assert.equal(new TextDecoder().decode(results[0].plaintext), 'hello from lanes');
console.log('consumer (lanes) ok');
