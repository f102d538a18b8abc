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
  BATCH_ABORTED,
  WRONG_STORE_KEY,
  isDecodeError,
  isDecryptError,
  isEngineError,
  isInputError,
  isSystemError,
  type DecryptErrorKind,
  type EngineErrorKind,
  type ErrorCode,
  type ErrorFamily,
  type ErrorKind,
  type FanoutResult,
  type ImportReport,
  type StoreKey,
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
  const report: ImportReport = await bob.importCryptobox({ indexedDB: 'wire-cryptobox' }, {
    onProgress: ({ done, total }) => void (done <= total),
    skipBadRecords: true,
  });
  const skipped: string[] = report.skipped.map((s) => `${s.table}/${s.id}: ${s.code} ${s.reason}`);
  const moved: boolean = report.alreadyImported || report.sessions > 0;
  void skipped;
  void moved;
  await bob.importCryptobox({ records: { identity: new Uint8Array(0), sessions: [{ id: 'peer', bytes: new Uint8Array(0) }] } });
  // @ts-expect-error a source is one of indexedDB, directory or records
  await bob.importCryptobox({ path: 'x' });
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


// Issue 16: `await using`, typed error families, sealed stores and fan-out.
export async function sealedFanout(): Promise<number> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const hkdf: StoreKey = await crypto.subtle.importKey('raw', bytes, 'HKDF', false, ['deriveKey']);
  await using alice = await Client.open('alice', { storeKey: hkdf });
  await Client.sealStore('plain', bytes, { allowWithoutWebLocks: true });
  await Client.rekeyStore('plain', bytes, hkdf);
  const results: FanoutResult[] = await alice.encryptFor(['bob:phone', 'bob:laptop'], 'to the group');
  let sent = 0;
  for (const r of results) {
    if (r.envelope !== undefined) {
      const envelope: Uint8Array = r.envelope;
      sent += envelope.length;
    } else {
      const code: ErrorCode = r.errorCode;
      const kind: ErrorKind = r.errorKind;
      sent += code + kind.length;
    }
  }
  try {
    await alice.decrypt('bob:phone', new Uint8Array([1]));
  } catch (e) {
    if (isDecryptError(e)) {
      const kind: DecryptErrorKind = e.kind;
      // @ts-expect-error: a Decrypt error's kind is not an Engine kind
      const wrong: EngineErrorKind = e.kind;
      const family: 'Decrypt' = e.family;
      return kind.length + String(wrong).length + family.length;
    }
    if (isEngineError(e) && e.code === BATCH_ABORTED) return e.code;
    if (isSystemError(e) && e.code === WRONG_STORE_KEY) return e.code;
    if (isDecodeError(e) || isInputError(e)) return e.code;
    if (e instanceof ProteusError) {
      const family: ErrorFamily = e.family;
      return family.length;
    }
  }
  // @ts-expect-error: not a kind of the registry
  const unknown: ErrorKind = 'NoSuchKind';
  return sent + unknown.length;
}

// The opt-in lanes build: the same API once its module is loaded.
import { initLanes, lanesWasm } from '../../pkg/lanes.js';
const lanesLoaded: Promise<void> = initLanes();
const lanesUrl: URL = lanesWasm;
void lanesLoaded;
void init(lanesUrl);
