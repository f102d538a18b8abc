// Used by native/crash.test.mjs: decrypts a queue on the store with a callback that kills the
// process (SIGKILL: no cleanup at all) once it has seen `killAt` results, before the commit; or,
// with `killAfterMs`, that lets the batch go on and kills the process that many milliseconds
// after the last result was delivered: in the commit, or after it.

import { Client } from '../../index.js';

const job = JSON.parse(process.argv[2]);
const client = await Client.open(job.path, { create: false });
const queue = job.queue.map((e) => ({ sessionId: 'alice', envelope: Buffer.from(e, 'base64') }));
const kill = () => process.kill(process.pid, 'SIGKILL');
await client.decryptBatch(queue, (_, done) => {
  if (done === job.killAt) kill();
  if (job.killAfterMs !== undefined && done === queue.length) setTimeout(kill, job.killAfterMs);
});
if (job.killAfterMs !== undefined) await new Promise(() => setTimeout(() => {}, 60_000));
process.stdout.write('the batch was not stopped');
