// Identity pinning on whichever backend index.js chose (PROTEUS_BACKEND=native and =wasm): the
// identityPinning option, pinnedIdentity and acceptIdentity; natively also on a store file,
// reopened.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client, ProteusError, backend } from '../../index.js';

const text = (bytes) => new TextDecoder().decode(bytes);

async function rejectsWith(promise, code, kind) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, `expected a ProteusError, got ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.kind, kind);
    return true;
  });
}

async function firstMessage(from, to) {
  const [{ bundle }] = await to.generatePrekeys(1);
  await from.createSession('bob', bundle);
  return from.encrypt('bob', 'hello');
}

test('forgetSession deletes the session and its pin: the id is pinned anew', async () => {
  const bob = await Client.inMemory({ identityPinning: true });
  const alice = await Client.inMemory();
  await bob.decrypt('alice', await firstMessage(alice, bob));
  await bob.forgetSession('alice');
  assert.equal(await bob.hasSession('alice'), false);
  assert.equal(await bob.pinnedIdentity('alice'), undefined);
  const carol = await Client.inMemory();
  assert.equal(text(await bob.decrypt('alice', await firstMessage(carol, bob))), 'hello');
  assert.equal(await bob.pinnedIdentity('alice'), await carol.fingerprint());
  await bob.forgetSession('nobody');
  assert.throws(() => bob.forgetSession(7), TypeError);
  await rejectsWith(bob.forgetSession(''), 106, 'InvalidSessionId');
});

test('a new identity under a pinned session id waits for acceptIdentity, in a batch too', async () => {
  const bob = await Client.inMemory({ identityPinning: true });
  const alice = await Client.inMemory();
  assert.equal(await bob.pinnedIdentity('alice'), undefined);
  assert.equal(text(await bob.decrypt('alice', await firstMessage(alice, bob))), 'hello');
  assert.equal(await bob.pinnedIdentity('alice'), await alice.fingerprint());
  await bob.deleteSession('alice');
  assert.equal(await bob.pinnedIdentity('alice'), await alice.fingerprint());

  const other = await Client.inMemory();
  const held = await firstMessage(other, bob);
  await rejectsWith(bob.decrypt('alice', held), 204, 'RemoteIdentityChanged');
  const [refused] = await bob.decryptBatch([{ sessionId: 'alice', envelope: held }]);
  assert.equal(refused.errorCode, 204);
  assert.equal(refused.sender, await other.fingerprint());

  await bob.acceptIdentity('alice', await other.fingerprint());
  assert.equal(await bob.pinnedIdentity('alice'), await other.fingerprint());
  const [again] = await bob.decryptBatch([{ sessionId: 'alice', envelope: held }]);
  assert.equal(text(again.plaintext), 'hello');
  assert.equal(again.messageId, refused.messageId);
  await bob.close();
});

test('a bundle of another identity is refused until accepted; bad input is a typed error', async () => {
  const bob = await Client.inMemory({ identityPinning: true });
  const alice = await Client.inMemory();
  const other = await Client.inMemory();
  await bob.createSession('alice', (await alice.generatePrekeys(1))[0].bundle);
  const [{ bundle }] = await other.generatePrekeys(1);
  await rejectsWith(bob.resetSession('alice', bundle), 204, 'RemoteIdentityChanged');
  await bob.acceptIdentity('alice', await other.fingerprint());
  assert.equal(await bob.hasSession('alice'), false);
  await bob.createSession('alice', bundle);
  assert.equal(await bob.remoteFingerprint('alice'), await other.fingerprint());

  await rejectsWith(bob.acceptIdentity('alice', 'abc'), 411, 'InvalidFingerprint');
  await rejectsWith(bob.acceptIdentity('alice', 'g'.repeat(64)), 411, 'InvalidFingerprint');
  await rejectsWith(bob.pinnedIdentity(''), 106, 'InvalidSessionId');
  assert.throws(() => bob.acceptIdentity('alice', null), TypeError);
  assert.throws(() => bob.pinnedIdentity(3), TypeError);
  await assert.rejects(Client.inMemory({ identityPinning: 1 }), TypeError);
  await bob.close();
});

test('without the option nothing is pinned', async () => {
  const bob = await Client.inMemory();
  const alice = await Client.inMemory();
  await bob.decrypt('alice', await firstMessage(alice, bob));
  assert.equal(await bob.pinnedIdentity('alice'), undefined);
  await bob.close();
});

test('a pin survives reopening the store file', { skip: backend !== 'native' && 'the wasm fallback has no file store' }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-pins-'));
  try {
    const path = join(dir, 'store.db');
    const carol = await Client.inMemory();
    const bob = await Client.open(path, { identityPinning: true });
    await bob.createSession('carol', (await carol.generatePrekeys(1))[0].bundle);
    await bob.deleteSession('carol');
    await bob.close();
    const reopened = await Client.open(path, { identityPinning: true });
    assert.equal(await reopened.pinnedIdentity('carol'), await carol.fingerprint());
    const other = await Client.inMemory();
    await rejectsWith(reopened.createSession('carol', (await other.generatePrekeys(1))[0].bundle), 204, 'RemoteIdentityChanged');
    await reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
