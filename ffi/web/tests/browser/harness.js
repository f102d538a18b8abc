// Loaded by harness.html: the package in a real page, driven by tests/browser/chromium.mjs through
// window.harness. Bytes cross to the test as base64.
import { Client, init } from '../../pkg/index.js';

const clients = new Map();
const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const text = (bytes) => new TextDecoder().decode(bytes);
const client = (name) => {
  const c = clients.get(name);
  if (!c) throw new Error(`no client ${name} in this page`);
  return c;
};

window.harness = {
  features: () => ({ locks: typeof navigator.locks?.request === 'function', indexedDB: typeof indexedDB === 'object' }),
  async open(name) {
    const c = await Client.open(name);
    clients.set(name, c);
    return c.fingerprint();
  },
  async close(name) {
    await client(name).close();
    clients.delete(name);
  },
  async prekey(name) {
    const [{ bundle }] = await client(name).generatePrekeys(1);
    return b64(bundle);
  },
  sessionIds: (name) => client(name).sessionIds(),
  async encrypt(name, sessionId, plaintext) {
    return b64(await client(name).encrypt(sessionId, plaintext));
  },
  /** Starts every encrypt at once: they queue on the store's lock. */
  async encryptMany(name, sessionId, plaintexts) {
    const c = client(name);
    return (await Promise.all(plaintexts.map((p) => c.encrypt(sessionId, p)))).map(b64);
  },
  async decrypt(name, sessionId, envelope) {
    return text(await client(name).decrypt(sessionId, unb64(envelope)));
  },
  async decryptBatch(name, messages) {
    let progress = 0;
    const results = await client(name).decryptBatch(
      messages.map(({ sessionId, envelope }) => ({ sessionId, envelope: unb64(envelope) })),
      (_, done, total) => {
        if (done === progress + 1 && total === messages.length) progress = done;
      },
    );
    return {
      progress,
      results: results.map((r) => ({
        messageId: r.messageId,
        plaintext: r.plaintext ? text(r.plaintext) : null,
        errorCode: r.errorCode ?? null,
        alreadySeen: r.alreadySeen,
      })),
    };
  },
  async errorOf(name, sessionId) {
    try {
      await client(name).encrypt(sessionId, 'x');
      return null;
    } catch (e) {
      return { name: e.name, code: e.code, kind: e.kind, isError: e instanceof Error };
    }
  },
};

await init();
document.getElementById('status').textContent = 'ready';
window.harnessReady = true;
