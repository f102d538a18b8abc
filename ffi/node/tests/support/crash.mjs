// Used by native/crash.test.mjs: decrypts a queue on the store with a callback that kills the
// process (SIGKILL: no cleanup at all) once it has seen `killAt` results, before the commit.

import { Client } from '../../index.js';

const job = JSON.parse(process.argv[2]);
const client = await Client.open(job.path, { create: false });
const queue = job.queue.map((e) => ({ sessionId: 'alice', envelope: Buffer.from(e, 'base64') }));
await client.decryptBatch(queue, (_, done) => {
  if (done === job.killAt) process.kill(process.pid, 'SIGKILL');
});
process.stdout.write('the batch was not stopped');
