// One process of the two-process test (native/processes.test.mjs): opens the store, waits for
// the common start time, then decrypts its share of the queue and encrypts its own messages,
// alternating, one call (one commit) each. Prints what it decrypted and the envelopes it made.

import { Client } from '../../index.js';

const job = JSON.parse(process.argv[2]);
const client = await Client.open(job.path, { create: false });
await new Promise((resolve) => setTimeout(resolve, Math.max(0, job.startAt - Date.now())));
const plaintexts = [];
const envelopes = [];
const steps = Math.max(job.decrypt.length, job.encrypt);
for (let i = 0; i < steps; i++) {
  if (i < job.decrypt.length) {
    const plaintext = await client.decrypt('alice', Buffer.from(job.decrypt[i], 'base64'));
    plaintexts.push(new TextDecoder().decode(plaintext));
  }
  if (i < job.encrypt) {
    envelopes.push(Buffer.from(await client.encrypt('alice', `${job.tag}${i}`)).toString('base64'));
  }
}
await client.close();
process.stdout.write(JSON.stringify({ plaintexts, envelopes }));
