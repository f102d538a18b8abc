// A project of someone else's driving a client that lives in a worker, through the package's
// './worker' and './remote' entry points used by name (here both ends of a MessageChannel in
// one thread; a page uses a module Worker). Run by scripts/suites/web.sh beside use.mjs.
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { Client, ProteusError } from '@proteus-engine/web';
import { connectWorker } from '@proteus-engine/web/remote';
import { serveClient } from '@proteus-engine/web/worker';

const { port1, port2 } = new MessageChannel();
serveClient(port1);
const bob = await connectWorker(port2).inMemory();
const alice = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
const queue = [{ sessionId: 'alice', envelope: await alice.encrypt('bob', 'hello from a consumer, via a worker') }];
const seen = [];
const results = await bob.decryptBatch(queue, (r, done, total) => {
  seen.push(`${done}/${total}`);
});
assert.deepEqual(seen, ['1/1']);
assert.equal(new TextDecoder().decode(results[0].plaintext), 'hello from a consumer, via a worker');
await assert.rejects(bob.encrypt('nobody', 'x'), ProteusError);
await bob.close();
port1.close();
console.log('consumer in a worker ok');
