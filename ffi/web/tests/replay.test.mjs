// A recorded first message (a PreKeyMessage on the last-resort prekey, which is never deleted)
// replayed later must not replace the live session, nor recreate a deleted one.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Client, ProteusError, init } from '../pkg/index.js';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);

async function rejectsWith(promise, code, kind) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, `expected a ProteusError, got ${e}`);
    assert.equal(e.code, code, `code of ${e.message}`);
    assert.equal(e.kind, kind);
    return true;
  });
}

/** Messages both ways, `turns` times: each turn is a ratchet step on both sides. */
async function converse(alice, bob, turns) {
  for (let turn = 0; turn < turns; turn++) {
    assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', `a${turn}`))), `a${turn}`);
    assert.equal(text(await alice.decrypt('bob', await bob.encrypt('alice', `b${turn}`))), `b${turn}`);
  }
}

describe('a replayed PreKeyMessage on the last-resort prekey', () => {
  test('is a duplicate once the session has moved on, and the session lives on', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    await alice.createSession('bob', (await bob.lastResortBundle()).bundle);
    const first = await alice.encrypt('bob', 'first');
    assert.equal(text(await bob.decrypt('alice', first)), 'first');
    // Six turns: the receive chain `first` was on is gone from Bob's state.
    await converse(alice, bob, 6);
    await rejectsWith(bob.decrypt('alice', first), 209, 'DuplicateMessage');
    // Nothing changed: both directions still work.
    await converse(alice, bob, 2);
  });

  test('does not recreate a deleted session; a new handshake does', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    await alice.createSession('bob', (await bob.lastResortBundle()).bundle);
    const first = await alice.encrypt('bob', 'first');
    assert.equal(text(await bob.decrypt('alice', first)), 'first');
    await bob.deleteSession('alice');
    await rejectsWith(bob.decrypt('alice', first), 209, 'DuplicateMessage');
    assert.equal(await bob.hasSession('alice'), false);
    // Alice starts over on the same last-resort prekey: a new base key, accepted.
    await alice.deleteSession('bob');
    await alice.createSession('bob', (await bob.lastResortBundle()).bundle);
    assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', 'again'))), 'again');
    await converse(alice, bob, 1);
  });
});
