// Compiled (not run) by `tsc -p tests/types`: the types of the worker entry points.
import { ProteusError, type BatchResult } from '../../pkg/index.js';
import { RemoteClient, connectWorker } from '../../pkg/remote.js';
import { serveClient } from '../../pkg/worker.js';

export function inTheWorker(): void {
  serveClient();
  const { port1 } = new MessageChannel();
  serveClient(port1, { allowWithoutWebLocks: true });
}

export async function onThePage(worker: Worker): Promise<number> {
  const proteus = connectWorker(worker);
  const client: RemoteClient = await proteus.open('alice', { create: false, persist: false });
  const memory = await proteus.inMemory();
  const created: boolean = client.created;
  const persisted: boolean | undefined = await client.persisted;
  const [{ bundle }] = await memory.generatePrekeys(1);
  await client.createSession('bob', bundle);
  const envelope: Uint8Array = await client.encrypt('bob', 'hello');
  const id: string = await proteus.messageId(envelope);
  const sender: string | undefined = await proteus.prekeyMessageFingerprint(envelope);
  let shown = 0;
  const results: BatchResult[] = await memory.decryptBatch([{ sessionId: 'alice', envelope }], async (r, done, total) => {
    shown = done / total;
    return r.plaintext !== undefined;
  });
  // @ts-expect-error: a RemoteClient has Client's methods, not any others
  client.noSuchMethod();
  await client.close();
  await proteus.deleteStore('alice');
  try {
    await memory.decrypt('nobody', envelope);
  } catch (e) {
    if (e instanceof ProteusError && e.kind === 'SessionNotFound') return e.code;
  }
  return results.length + shown + id.length + (sender?.length ?? 0) + Number(created) + Number(persisted);
}
