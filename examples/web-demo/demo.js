// Two clients of the web package in one page: Alice and Bob, each on IndexedDB. They live in a
// module Worker (proteus-worker.js), so the page keeps drawing while Bob decrypts his backlog in
// one batch: the results reach the page's callback in chunks, and the bar moves with them.
import { connectWorker } from '../../ffi/web/pkg/remote.js';

const $ = (id) => document.getElementById(id);
const text = (bytes) => new TextDecoder().decode(bytes);
const BACKLOG = 10_000;
const proteus = connectWorker(new Worker(new URL('./proteus-worker.js', import.meta.url), { type: 'module' }));

let alice;
let bob;

function show(side, line, outgoing) {
  const li = document.createElement('li');
  li.textContent = line;
  if (outgoing) li.className = 'out';
  const log = $(`${side}-log`);
  log.append(li);
  while (log.children.length > 30) log.firstElementChild.remove();
  log.scrollTop = log.scrollHeight;
}

function busy(on) {
  for (const id of ['alice-send', 'bob-send', 'queue', 'reset']) $(id).disabled = on;
}

async function start() {
  [alice, bob] = await Promise.all([proteus.open('demo-alice'), proteus.open('demo-bob')]);
  // First visit: Alice starts a session from one of Bob's prekeys, Bob gets it with her first message.
  if (!(await alice.hasSession('bob'))) {
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
  }
  $('alice-fp').textContent = await alice.fingerprint();
  $('bob-fp').textContent = await bob.fingerprint();
  busy(false);
  $('status').textContent = 'ready';
}

async function send(from, fromName, to, toName) {
  const input = $(`${fromName}-input`);
  const line = input.value.trim();
  if (!line) return;
  input.value = '';
  // Alice knows Bob's session as "bob", Bob knows Alice's as "alice".
  const envelope = await from.encrypt(toName, line);
  show(fromName, line, true);
  const plaintext = await to.decrypt(fromName, envelope);
  show(toName, text(plaintext), false);
}

$('alice-form').addEventListener('submit', (e) => {
  e.preventDefault();
  send(alice, 'alice', bob, 'bob').catch(fail);
});
$('bob-form').addEventListener('submit', (e) => {
  e.preventDefault();
  send(bob, 'bob', alice, 'alice').catch(fail);
});

$('queue').addEventListener('click', async () => {
  busy(true);
  try {
    $('progress').value = 0;
    $('backlog-result').textContent = `Alice is sending ${BACKLOG} messages…`;
    const messages = Array.from({ length: BACKLOG }, (_, i) => ({ sessionId: 'bob', plaintext: `backlog message ${i + 1} of ${BACKLOG}` }));
    const envelopes = await alice.encryptBatch(messages);
    const queue = envelopes.map((envelope) => ({ sessionId: 'alice', envelope }));
    $('backlog-result').textContent = 'Bob is decrypting…';
    let decrypted = 0;
    let last = '';
    const started = performance.now();
    // One batch, one commit: the callback sees every result before the commit, in chunks that
    // arrive while the worker decrypts.
    await bob.decryptBatch(queue, (r, done) => {
      if (r.plaintext) {
        decrypted += 1;
        last = text(r.plaintext);
      }
      $('progress').value = done;
    });
    const total = performance.now() - started;
    show('bob', `${last} (and ${decrypted - 1} before it)`, false);
    $('backlog-result').textContent = `${decrypted} messages decrypted in ${total.toFixed(1)} ms in one batch (${(total / decrypted * 1000).toFixed(1)} µs each, in a Worker, with one IndexedDB commit)`;
  } catch (e) {
    fail(e);
  } finally {
    busy(false);
  }
});

$('reset').addEventListener('click', async () => {
  busy(true);
  await Promise.all([alice.close(), bob.close()]);
  await Promise.all([proteus.deleteStore('demo-alice'), proteus.deleteStore('demo-bob')]);
  location.reload();
});

function fail(e) {
  $('status').textContent = `error: ${e.kind ?? e.name} ${e.code ?? ''} ${e.message}`;
  console.error(e);
}

fetch(new URL('../../ffi/web/pkg/proteus_web_bg.wasm', import.meta.url))
  .then((r) => r.arrayBuffer())
  .then((b) => {
    $('wasm-size').textContent = `${Math.round(b.byteLength / 1024)} KB`;
  })
  .catch(() => {});
start().catch(fail);
