// A project of someone else's: the packed package installed from its tarball, used by name.
// Run by scripts/suites/web.sh in a fresh directory outside the repository.
import assert from 'node:assert/strict';
import { Client, ProteusError, isDecodeError } from '@proteus-engine/web';

const alice = await Client.inMemory();
const bob = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
const results = await bob.decryptBatch([{ sessionId: 'alice', envelope: await alice.encrypt('bob', 'hello from a consumer') }]);
assert.equal(new TextDecoder().decode(results[0].plaintext), 'hello from a consumer');
assert.equal(results[0].sender, await alice.fingerprint());
// One message to every device of a conversation: one commit, a result per recipient.
const [toBob, toCarol] = await alice.encryptFor(['bob', 'carol'], 'to the group');
assert.equal(new TextDecoder().decode(await bob.decrypt('alice', toBob.envelope)), 'to the group');
assert.equal(toCarol.errorKind, 'SessionNotFound'); // no session with carol: a result, not a failure
await assert.rejects(bob.decrypt('nobody', new Uint8Array([1, 2, 3])), (e) => e instanceof ProteusError && isDecodeError(e));
// The internal wasm-bindgen client is not part of the package's API.
// (Node says ERR_PACKAGE_PATH_NOT_EXPORTED; Bun and Deno refuse it as ERR_MODULE_NOT_FOUND.)
await assert.rejects(import('@proteus-engine/web/proteus_web.js'), (e) =>
  ['ERR_PACKAGE_PATH_NOT_EXPORTED', 'ERR_MODULE_NOT_FOUND'].includes(e.code),
);
console.log('consumer ok');
