// Compiled by tsc (scripts/suites/node.sh), never run: the package's types as an application
// uses them. The instance types are the web package's own.
import {
  Client,
  ProteusError,
  backend,
  messageId,
  type BatchResult,
  type PreKeyBundle,
} from '../../index.js';

export async function use(path: string, key: Uint8Array): Promise<string> {
  const which: 'native' | 'wasm' = backend;
  const client: Client = await Client.open(path, { storeKey: key, create: false });
  const created: boolean = client.created;
  const { fingerprint, sessions } = await client.importCryptobox({ directory: '/var/lib/app/cryptobox' });
  void [fingerprint, sessions];
  const bundles: PreKeyBundle[] = await client.generatePrekeys(10);
  await client.createSession('peer', bundles[0].bundle);
  const envelope: Uint8Array = await client.encrypt('peer', 'text');
  // @ts-expect-error a session id is a string
  await client.encrypt(1, 'text');
  // @ts-expect-error a store key is bytes
  await Client.open(path, { storeKey: 'secret' });
  const results: BatchResult[] = await client.decryptBatch([{ sessionId: 'peer', envelope }], (r, done, total) => {
    void r.messageId;
    return done <= total;
  });
  try {
    await client.decrypt('peer', envelope);
  } catch (e) {
    if (e instanceof ProteusError) return `${e.code} ${e.kind}`;
  }
  await Client.sealStore(path, key);
  await Client.rekeyStore(path, key, new Uint8Array(32));
  await Client.deleteStore(path);
  const memory = await Client.inMemory();
  await memory.close();
  return `${which} ${created} ${results.length} ${messageId(envelope)}`;
}
