// The chat's web client in a real headless Chromium (Debian's, driven by playwright-core from
// ffi/web/node_modules) against a real terminal client: a `proteus-chat relay` serving the page
// and the web package, `proteus-chat bob alice` on piped stdin/stdout, and the page as alice.
// Lines flow both ways, fingerprints match, and after a reload and while the page is closed the
// state and the queue carry on.
//
//   node --test examples/chat/tests/web/chromium.mjs
// Needs: target/debug/proteus-chat (cargo build -p proteus-chat; or PROTEUS_CHAT_BIN), the web
// package in ffi/web/pkg (ffi/web/build.sh), npm ci in ffi/web, /usr/bin/chromium (or CHROMIUM).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ENGINE, EXECUTABLE, launch } from '../../../../ffi/web/tests/support/browser.mjs';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const BIN = process.env.PROTEUS_CHAT_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(REPO, 'target'), 'debug/proteus-chat');
const WEB = path.join(REPO, 'examples/chat/web');
const PKG = process.env.PROTEUS_WEB_PKG ?? path.join(REPO, 'ffi/web/pkg');
const T = 60_000; // a hang guard for each wait: far above what a machine ten times slower needs
const QUEUED = 120; // sent while the page is closed: enough for the page's progress bar

/** A running proteus-chat: its output lines, and a way to type. */
class Proc {
  constructor(name, args) {
    this.name = name;
    this.lines = [];
    this.waiters = [];
    this.child = spawn(BIN, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop();
        for (const l of parts) this.#add(l);
      });
    }
    this.child.on('exit', (code) => this.#add(`[${name} exited with ${code}]`));
  }

  #add(l) {
    this.lines.push(l);
    this.waiters = this.waiters.filter((w) => !w(l));
  }

  /** The first line (from now on, or already seen if `seen`) that contains `text`. */
  waitFor(text, { timeout = T, seen = false } = {}) {
    const old = seen && this.lines.find((l) => l.includes(text));
    if (old) return Promise.resolve(old);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`${this.name} did not print "${text}" in ${timeout} ms; it printed:\n${this.lines.join('\n')}`));
      }, timeout);
      this.waiters.push((l) => {
        if (!l.includes(text)) return false;
        clearTimeout(timer);
        resolve(l);
        return true;
      });
    });
  }

  type(text) {
    this.child.stdin.write(`${text}\n`);
  }

  stop() {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    return new Promise((resolve) => (this.child.exitCode !== null ? resolve() : this.child.once('exit', resolve)));
  }
}

let data;
let relay;
let bob;
let url;
let addr;
let browser;
let context;
const pageErrors = [];
const consoleLines = [];
const delivered = []; // base64 envelopes

before(async () => {
  for (const [what, file] of [
    ['the proteus-chat binary (cargo build -p proteus-chat)', BIN],
    ['the web package (ffi/web/build.sh)', path.join(PKG, 'index.js')],
    [ENGINE, EXECUTABLE],
  ]) {
    assert.ok(existsSync(file), `missing ${what}: ${file}`);
  }
  data = await mkdtemp(path.join(tmpdir(), 'proteus-chat-web-'));
  relay = new Proc('relay', ['relay', '--listen', '127.0.0.1:0', '--data', data, '--web', WEB, '--web-pkg', PKG]);
  const listening = await relay.waitFor('listening on', { seen: true });
  addr = listening.match(/listening on (127\.0\.0\.1:\d+)/)[1];
  url = `http://${addr}/`;
  bob = new Proc('bob', ['bob', 'alice', '--relay', addr, '--data', data, '--no-embed']);
  await bob.waitFor('bob ↔ alice, end-to-end encrypted', { seen: true });
  browser = await launch('proteus-chat-chromium-');
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await bob?.stop();
  await relay?.stop();
  if (data) await rm(data, { recursive: true, force: true });
});

async function newPage(address) {
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('console', (m) => consoleLines.push(m.text()));
  // Every envelope the relay hands the page, to check later that the engine committed them.
  page.on('response', async (response) => {
    if (response.request().method() === 'GET' && new URL(response.url()).pathname === '/v1/queues/alice' && response.ok()) {
      const body = await response.json().catch(() => ({ messages: [] }));
      for (const m of body.messages) delivered.push(m.envelope);
    }
  });
  await page.goto(address);
  return page;
}

async function ready(page) {
  try {
    await page.locator('#status', { hasText: 'ready' }).waitFor({ timeout: T });
  } catch (e) {
    const state = await page.evaluate(() => ['status', 'error', 'log'].map((id) => `${id}: ${document.getElementById(id)?.innerText}`).join('\n'));
    throw new Error(`the page is not ready: ${e.message}\n${state}\nconsole: ${consoleLines.join('\n')}`);
  }
}
const logLine = (page, text) => page.locator('#log li', { hasText: text }).waitFor({ timeout: T });
const errorShown = async (page) => ((await page.locator('#error').isVisible()) ? page.locator('#error').textContent() : '');

async function say(page, text) {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

/**
 * "bob" with yet another identity, driven from a page of the relay's origin (not the chat page):
 * registers at the relay and queues for `to` a genuine prekey message `text`, then a forgery
 * carrying the genuine one's MAC. Returns its fingerprint.
 */
async function impostor(text, to = 'alice') {
  const tool = await context.newPage();
  await tool.goto(`${url}pkg/index.js`);
  const fingerprint = await tool.evaluate(async ([text, to]) => {
    const { Client, messageId } = await import('/pkg/index.js');
    const me = await Client.inMemory();
    const utf8 = new TextEncoder();
    const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
    const unb64 = (t) => Uint8Array.from(atob(t), (c) => c.charCodeAt(0));
    const call = async (method, path, body) => {
      const bytes = body === undefined ? new Uint8Array() : body instanceof Uint8Array ? body : utf8.encode(JSON.stringify(body));
      const { nonce } = await (await fetch('/v1/nonce')).json();
      const head = utf8.encode(`proteus-chat-relay-v2\nbob\n${nonce}\n${method}\n${path}\n`);
      const signed = new Uint8Array(head.length + bytes.length);
      signed.set(head);
      signed.set(bytes, head.length);
      const headers = { 'proteus-user': 'bob', 'proteus-nonce': nonce, 'proteus-signature': b64(await me.sign(signed)) };
      const response = await fetch(path, { method, headers, body: bytes.length > 0 ? bytes : undefined });
      const answer = await response.json();
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${answer.error}`);
      return answer;
    };
    await call('POST', '/v1/users/bob', { identity: b64(await me.identityKey()) });
    const prekeyMessage = async (sessionId, plaintext) => {
      const claimed = await call('POST', `/v1/prekeys/${to}/claim`);
      await me.createSession(sessionId, unb64(claimed.bundle));
      return me.encrypt(sessionId, plaintext);
    };
    const genuine = await prekeyMessage('one', text);
    const forged = await prekeyMessage('two', 'forged');
    forged.set(genuine.subarray(8, 40), 8); // a3 00 01 01 a1 00 58 20 <the 32-byte MAC>
    if (messageId(forged) !== messageId(genuine)) throw new Error('the forgery does not carry the MAC');
    await call('POST', `/v1/queues/${to}`, genuine);
    await call('POST', `/v1/queues/${to}`, forged);
    const fp = await me.fingerprint();
    await me.close();
    return fp;
  }, [text, to]);
  await tool.close();
  return fingerprint;
}

/** A new relay on the same address (the page's origin), with its own state. */
async function newRelay(name) {
  await relay.stop();
  relay = new Proc(name, ['relay', '--listen', addr, '--data', path.join(data, name), '--web', WEB, '--web-pkg', PKG]);
  await relay.waitFor('listening on', { seen: true });
}

describe('the web client against a terminal client', () => {
  let page;
  let myFingerprint;

  test('the relay serves the page and the package with their content types', async () => {
    for (const [file, type] of [
      ['', 'text/html'],
      ['chat.js', 'text/javascript'],
      ['pkg/index.js', 'text/javascript'],
      ['pkg/proteus_web_bg.wasm', 'application/wasm'],
    ]) {
      const response = await fetch(url + file);
      assert.equal(response.status, 200, file);
      assert.ok(response.headers.get('content-type').startsWith(type), `${file}: ${response.headers.get('content-type')}`);
    }
    assert.equal((await fetch(`${url}pkg/..%2f..%2fCargo.toml`)).status, 404);
  });

  test('alice in the page and bob in the terminal: lines flow both ways', async () => {
    page = await newPage(`${url}?me=alice&peer=bob`);
    await page.click('#start');
    await ready(page);
    assert.equal(await errorShown(page), '');
    myFingerprint = await page.locator('#my-fp').textContent();
    assert.match(myFingerprint, /^([0-9a-f]{8} ){7}[0-9a-f]{8}$/);

    await say(page, 'hello bob, this is alice in a browser');
    await bob.waitFor('alice: hello bob, this is alice in a browser', { seen: true });
    await logLine(page, 'alice: hello bob, this is alice in a browser');
    bob.type('hi alice! bob in a terminal');
    await logLine(page, 'bob: hi alice! bob in a terminal');
    await say(page, 'ratchet turns: émoji ✓');
    await bob.waitFor('alice: ratchet turns: émoji ✓', { seen: true });
    bob.type('and back');
    await logLine(page, 'bob: and back');

    // Each side shows the other's fingerprint as the other shows its own.
    bob.type('/fingerprint');
    const bobsOwn = (await bob.waitFor('* you (bob):')).split(':  ')[1];
    const bobsAlice = (await bob.waitFor('* alice:  ', { seen: true })).split(':  ')[1];
    assert.equal(bobsAlice, myFingerprint);
    assert.equal(await page.locator('#peer-fp').textContent(), bobsOwn);
    assert.ok(await page.locator('#warning').isHidden(), 'no identity warning');
  });

  test('after a reload the state is the same, and what came while the page was closed arrives', async () => {
    await page.reload();
    await ready(page);
    assert.equal(await page.locator('#my-fp').textContent(), myFingerprint, 'the identity came back from IndexedDB');
    await logLine(page, 'bob: and back'); // the history too
    await say(page, 'reloaded');
    await bob.waitFor('alice: reloaded', { seen: true });
    await page.close();

    const started = Date.now();
    for (let i = 1; i <= QUEUED; i++) bob.type(`queued line ${i} of ${QUEUED}`);
    bob.type('/status');
    await bob.waitFor('* outbox: 0 waiting', { timeout: 180_000 });
    const queuing = Date.now() - started;

    // A fresh page: it remembers who it was (no ?me=), and gets the backlog.
    page = await newPage(url);
    await ready(page);
    assert.equal(await page.locator('#my-fp').textContent(), myFingerprint);
    await logLine(page, `bob: queued line ${QUEUED} of ${QUEUED}`);
    const received = await page.locator('#log li.in').allTextContents();
    const queued = received.filter((l) => l.startsWith('bob: queued line '));
    assert.deepEqual(queued, Array.from({ length: QUEUED }, (_, i) => `bob: queued line ${i + 1} of ${QUEUED}`), 'each once, in order');
    const timing = await page.locator('#log li.note', { hasText: 'queued messages from 1 sender decrypted in' }).textContent();
    assert.equal(await page.locator('#progress').evaluate((p) => [p.value, p.max].join('/')), `${QUEUED}/${QUEUED}`);
    assert.deepEqual(page.workers().map((w) => new URL(w.url()).pathname), ['/proteus-worker.js'], 'the engine runs in a module Worker');
    console.log(`# bob queued ${QUEUED} lines in ${queuing} ms; the page: ${timing}`);

    // The engine committed every batch to IndexedDB: a second client on the same store (in the
    // page) finds each envelope the page was given already decrypted.
    assert.ok(delivered.length >= QUEUED + 2, `${delivered.length} envelopes seen`);
    const again = await page.evaluate(async (envelopes) => {
      const { Client } = await import('/pkg/index.js');
      const second = await Client.open('chat-alice');
      const queue = envelopes.map((e) => ({ sessionId: 'bob', envelope: Uint8Array.from(atob(e), (c) => c.charCodeAt(0)) }));
      const results = await second.decryptBatch(queue);
      await second.close();
      return results.map((r) => r.alreadySeen);
    }, delivered);
    assert.deepEqual(again, delivered.map(() => true), 'every delivered envelope is already seen by the stored client');

    await say(page, 'back again');
    await bob.waitFor('alice: back again', { seen: true });
    bob.type('welcome back');
    await logLine(page, 'bob: welcome back');
    assert.equal(await errorShown(page), '');
    await page.close();
  });

  test("a changed identity of bob's is a warning: nothing is sent until it is accepted", async () => {
    // A new relay on the same address (the page's origin), and "bob" with a new identity.
    await bob.stop();
    await relay.stop();
    relay = new Proc('relay-2', ['relay', '--listen', addr, '--data', path.join(data, 'second'), '--web', WEB, '--web-pkg', PKG]);
    await relay.waitFor('listening on', { seen: true });
    page = await newPage(url);
    await ready(page);
    bob = new Proc('new bob', ['bob', 'alice', '--relay', addr, '--data', path.join(data, 'new-bob'), '--no-embed']);
    await bob.waitFor('bob ↔ alice, end-to-end encrypted', { seen: true });
    bob.type("it's me, new phone");
    await page.locator('#warning', { hasText: "bob's identity key has CHANGED" }).waitFor({ timeout: T });
    await logLine(page, 'messages from bob are held until you accept');
    await say(page, 'who are you?');
    await logLine(page, "not sent: bob's identity key has changed");
    assert.equal(await page.locator('#log li', { hasText: "bob: it's me" }).count(), 0, 'held, not shown');

    await page.click('#accept');
    await logLine(page, "bob: it's me, new phone");
    assert.ok(await page.locator('#warning').isHidden());
    bob.type('/fingerprint');
    const newBob = (await bob.waitFor('* you (bob):')).split(':  ')[1];
    assert.equal(await page.locator('#peer-fp').textContent(), newBob);
    await say(page, 'welcome back');
    await bob.waitFor('alice: welcome back', { seen: true });
    assert.ok(!bob.lines.some((l) => l.includes('who are you?')), 'the line typed before accepting was not sent');
    assert.equal(await errorShown(page), '');
    assert.deepEqual(pageErrors, []);
    await page.close();
  });

  test("a forgery with a copied MAC does not displace a changed identity's held message", async () => {
    await bob.stop();
    await newRelay('relay-3');
    page = await newPage(url);
    // Closed even if this fails, so that the next test can open alice's page.
    try {
      await ready(page);
      const fingerprint = await impostor('the genuine one');
      await page.locator('#warning', { hasText: "bob's identity key has CHANGED" }).waitFor({ timeout: T });
      await page.locator('#log li', { hasText: 'messages from bob are held until you accept' }).first().waitFor({ timeout: T });
      assert.equal(await page.locator('#log li', { hasText: 'bob: the genuine one' }).count(), 0, 'held, not shown');
      await page.click('#accept');
      await logLine(page, 'bob: the genuine one');
      assert.equal(await page.locator('#log li', { hasText: 'bob: forged' }).count(), 0);
      assert.equal((await page.locator('#peer-fp').textContent()).replaceAll(' ', ''), fingerprint);
    } finally {
      await page.close();
    }
  });

  test('after the session is deleted, a changed identity is still checked before its first message is shown', async () => {
    // With no session, the engine alone would accept any identity's prekey message.
    await newRelay('relay-4');
    const tool = await context.newPage();
    await tool.goto(`${url}pkg/index.js`);
    await tool.evaluate(async () => {
      const { Client } = await import('/pkg/index.js');
      const alice = await Client.open('chat-alice');
      await alice.deleteSession('bob');
      await alice.close();
    });
    await tool.close();
    page = await newPage(url);
    await ready(page);
    await impostor('shown only once accepted');
    await page.locator('#warning', { hasText: "bob's identity key has CHANGED" }).waitFor({ timeout: T });
    await page.locator('#log li', { hasText: 'messages from bob are held until you accept' }).first().waitFor({ timeout: T });
    assert.equal(await page.locator('#log li', { hasText: 'bob: shown only' }).count(), 0, 'shown before the identity check');
    await page.click('#accept');
    await logLine(page, 'bob: shown only once accepted');
    assert.equal(await errorShown(page), '');
    assert.deepEqual(pageErrors, []);
    await page.close();
  });

  test("a page made before the engine pinned identities keeps its pins: they move into the engine", async () => {
    // dave's page as an older version left it: an engine store without pinning, and bob's
    // fingerprint pinned in the chat's own records (IndexedDB `proteus-chat:dave`, version 2).
    await bob.stop();
    await newRelay('relay-5');
    const tool = await context.newPage();
    await tool.goto(`${url}pkg/index.js`);
    const old = await tool.evaluate(async () => {
      const { Client } = await import('/pkg/index.js');
      const dave = await Client.open('chat-dave');
      await dave.close();
      const someone = await Client.inMemory();
      const fingerprint = await someone.fingerprint();
      await someone.close();
      const req = indexedDB.open('proteus-chat:dave', 2);
      req.onupgradeneeded = () => {
        const db = req.result;
        db.createObjectStore('messages', { keyPath: 'id' }).createIndex('n', 'n');
        db.createObjectStore('peers', { keyPath: 'name' }).put({ name: 'bob', fingerprint, pending: null });
        db.createObjectStore('outbox', { autoIncrement: true });
        const held = db.createObjectStore('heldByPeer', { keyPath: ['from', 'key'] });
        held.createIndex('n', 'n');
        held.createIndex('from', 'from');
      };
      await new Promise((resolve, reject) => {
        req.onsuccess = () => resolve(req.result.close());
        req.onerror = () => reject(req.error);
      });
      return fingerprint;
    });
    await tool.close();

    page = await newPage(`${url}?me=dave&peer=bob`);
    await page.click('#start');
    await ready(page);
    assert.equal((await page.locator('#peer-fp').textContent()).replaceAll(' ', ''), old, 'the old pin is shown');
    // A "bob" of another identity is refused by the engine's pin, which came from the records.
    const now = await impostor('from a stranger', 'dave');
    await page.locator('#warning', { hasText: "bob's identity key has CHANGED" }).waitFor({ timeout: T });
    await page.locator('#log li', { hasText: 'messages from bob are held until you accept' }).first().waitFor({ timeout: T });
    assert.equal(await page.locator('#log li', { hasText: 'bob: from a stranger' }).count(), 0, 'held, not shown');
    const [pinned, legacy] = await page.evaluate(async () => {
      const { Client } = await import('/pkg/index.js');
      const dave = await Client.open('chat-dave');
      const pin = await dave.pinnedIdentity('bob');
      await dave.close();
      const db = await new Promise((resolve) => {
        const req = indexedDB.open('proteus-chat:dave');
        req.onsuccess = () => resolve(req.result);
      });
      const rows = await new Promise((resolve) => {
        const req = db.transaction('peers').objectStore('peers').getAll();
        req.onsuccess = () => resolve(req.result);
      });
      db.close();
      return [pin, rows.length];
    });
    assert.equal(pinned, old, "the engine holds the records' pin");
    assert.equal(legacy, 0, "the records' pins are gone once moved");
    await page.click('#accept');
    await logLine(page, 'bob: from a stranger');
    assert.equal((await page.locator('#peer-fp').textContent()).replaceAll(' ', ''), now);
    assert.equal(await errorShown(page), '');
    assert.deepEqual(pageErrors, []);
    await page.close();
  });
});
