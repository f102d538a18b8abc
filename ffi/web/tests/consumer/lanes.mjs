// A project of someone else's written against the opt-in lanes build (the packed package): the
// `./lanes` export resolves to the package's one module (the lanes one now), the old module
// name resolves to it too, and the API runs on it.
// Run by scripts/suites/web.sh in a fresh directory outside the repository.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Client } from '@proteus-engine/web';
import { initLanes, lanesWasm } from '@proteus-engine/web/lanes';

const require = createRequire(import.meta.url);
const main = pathToFileURL(require.resolve('@proteus-engine/web/proteus_web_bg.wasm')).href;
assert.equal(lanesWasm.href, main);
assert.equal(pathToFileURL(require.resolve('@proteus-engine/web/proteus_web_lanes_bg.wasm')).href, main);
await initLanes();
const alice = await Client.inMemory();
const bob = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
const results = await bob.decryptBatch([{ sessionId: 'alice', envelope: await alice.encrypt('bob', 'hello from lanes') }]);
assert.equal(new TextDecoder().decode(results[0].plaintext), 'hello from lanes');
console.log('consumer (lanes) ok');
