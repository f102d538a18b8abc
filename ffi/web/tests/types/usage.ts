// Compiled (not run) by `tsc -p tests/types`: the package's types describe what the tests use.
import {
  CLIENT_BUSY,
  Client,
  ProteusError,
  STORE_CONFLICT,
  STORE_NOT_FOUND,
  bundleFingerprint,
  init,
  messageId,
  type BatchResult,
} from '../../pkg/index.js';

export async function usage(): Promise<number> {
  await init();
  const alice: Client = await Client.inMemory();
  const bob = await Client.open('bob');
  const isNew: boolean = bob.created;
  const persisted: boolean | undefined = await bob.persisted;
  const existing = await Client.open('carol', { create: false, persist: false, allowWithoutWebLocks: true }).catch((e: unknown) => {
    if (e instanceof ProteusError && e.code === STORE_NOT_FOUND) return undefined;
    throw e;
  });
  await existing?.close();
  const [{ id, bundle }] = await bob.generatePrekeys(1);
  const fp: string = bundleFingerprint(bundle);
  await alice.createSession('bob', bundle);
  const envelope: Uint8Array = await alice.encrypt('bob', 'hello');
  const envelopes: Uint8Array[] = await alice.encryptBatch([{ sessionId: 'bob', plaintext: new Uint8Array([1]) }]);
  const results: BatchResult[] = await bob.decryptBatch(
    [{ sessionId: 'alice', envelope }, ...envelopes.map((e) => ({ sessionId: 'alice', envelope: e }))],
    (result, done, total) => done < total && result.messageId === messageId(envelope),
  );
  const stored = new Map<string, Uint8Array>();
  await bob.decryptBatch([{ sessionId: 'alice', envelope }], async (result) => {
    if (result.plaintext) stored.set(result.messageId, result.plaintext);
  });
  try {
    await bob.decrypt('alice', envelope);
  } catch (e) {
    if (e instanceof ProteusError && e.kind === 'DuplicateMessage') return e.code;
    if (e instanceof ProteusError && (e.code === CLIENT_BUSY || e.code === STORE_CONFLICT)) return 0;
  }
  const remaining: number = await bob.prekeysRemaining();
  await bob.close();
  return id + remaining + results.length + fp.length + Number(isNew) + Number(persisted ?? 0);
}
