// The web client of proteus-chat: the same chat as the terminal client (src/client/), in a page
// served by the relay. The engine is the web package (served at /pkg/), its state in IndexedDB,
// its client living in a module Worker (proteus-worker.js) so a backlog decrypts in one batch
// while the page keeps drawing; the chat's own records (messages by id, held messages, the
// outbox) are in a second IndexedDB database. Identities are pinned by the engine (the
// `identityPinning` option), as in the terminal client. The relay's protocol is in README.md
// beside this file.

import { b64, unb64, utf8 } from './encoding.js';
import { MAX_HELD_PER_PEER, Records } from './records.js';
import { Relay, RelayError } from './relay.js';

const NAME = /^[a-z0-9][a-z0-9._-]{0,31}$/;
const LOW_PREKEYS = 25; // refill the relay's one-time prekeys below this many…
const PREKEY_BATCH = 100; // …with this many
const MAX_TEXT = 4000; // bytes in a line
const PAGE = 1000; // messages per fetch
const PROGRESS_FROM = 100; // show a progress bar for a backlog of at least this many
const LONG_POLL = 20; // seconds
const LAST = 'proteus-chat:last'; // localStorage: who this page was, for the next load

const $ = (id) => document.getElementById(id);
const fromUtf8 = new TextDecoder();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let pkg; // the web package's module (messageId, bundleFingerprint, the error codes)
let me;
let peer;
let client;
let records;
let relay;
let outboxBlocked = false;
/** Identities of bundles the engine refused (RemoteIdentityChanged), by peer, until accepted. */
const pendingBundles = new Map();

// --- small helpers -------------------------------------------------------------------------

const grouped = (fingerprint) => fingerprint.match(/.{1,8}/g).join(' ');
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** An error to show as it is. */
class ChatError extends Error {}

/** Runs the functions given one after the other (decryption, sending, prekeys, accepting). */
function serial() {
  let tail = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn);
    tail = run.catch(() => {});
    return run;
  };
}
const turn = serial();

// --- the page ------------------------------------------------------------------------------

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
}

function status(text, warn = false) {
  $('status').textContent = text;
  $('status').className = warn ? 'warn' : '';
}

/** Adds a line to the log: kind is 'in', 'out', 'note' or 'warn'. */
function line(text, kind) {
  const li = document.createElement('li');
  li.textContent = text;
  li.className = kind;
  const log = $('log');
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.append(li);
  while (log.children.length > 2000) log.firstElementChild.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

const note = (text) => line(`* ${text}`, 'note');
const warn = (text) => line(`! ${text}`, 'warn');

function showMessage(m) {
  line(`${m.outgoing ? me : m.peer}: ${m.text}`, m.outgoing ? 'out' : 'in');
}

async function showFingerprints() {
  $('my-fp').textContent = grouped(await client.fingerprint());
  const known = await pinned(peer);
  if (known) $('peer-fp').textContent = grouped(known);
  const now = await pending(peer);
  $('warning').hidden = now === undefined;
  if (now) {
    $('warning-text').textContent =
      `WARNING: ${peer}'s identity key has CHANGED. Known: ${known ? grouped(known) : '(none)'}; now: ${grouped(now)}. ` +
      `${peer} may have reinstalled, or someone may be impersonating ${peer}. Compare fingerprints with ${peer} ` +
      `over another channel. Nothing is sent to ${peer}, and ${peer}'s new messages are held, until you accept.`;
  }
}

// --- the chat ------------------------------------------------------------------------------

/** Registers our name with our identity key, then tops up our prekeys at the relay. */
async function announce() {
  let answer;
  try {
    answer = await relay.call('POST', `/v1/users/${me}`, { identity: b64(await client.identityKey()) });
  } catch (e) {
    if (e.code === 'identity_conflict') {
      throw new ChatError(
        `The relay has ${me} registered with another identity key (a terminal client or another browser?). ` +
          `Pick another name, or use the browser that holds ${me}'s keys.`,
      );
    }
    throw e;
  }
  if (answer.created) note(`registered ${me} at the relay with your identity key`);
  await topUp(answer.prekeys_remaining, true);
}

/** Publishes new one-time prekeys when the relay has fewer than LOW_PREKEYS left. */
async function topUp(remaining, withLastResort) {
  if (remaining >= LOW_PREKEYS && !withLastResort) return;
  const prekeys = remaining < LOW_PREKEYS ? await client.generatePrekeys(PREKEY_BATCH) : [];
  const { bundle: lastResort } = await client.lastResortBundle();
  try {
    await relay.call('PUT', `/v1/prekeys/${me}`, { prekeys: prekeys.map((p) => b64(p.bundle)), last_resort: b64(lastResort) });
    if (prekeys.length > 0) note(`published ${prekeys.length} new one-time prekeys at the relay (${remaining} were left)`);
  } catch (e) {
    warn(`could not publish prekeys: ${e.message}`);
  }
}

// --- identities: pinned by the engine; what it refuses waits for the user ---------------------

/** The identity the engine pinned for `name`, or else its session's (made before pinning). */
async function pinned(name) {
  const pin = await client.pinnedIdentity(name);
  if (pin !== undefined) return pin;
  return (await client.hasSession(name)) ? client.remoteFingerprint(name) : undefined;
}

/** A changed identity of `name` waiting to be accepted: a refused bundle's, or the last one a held message claims. */
async function pending(name) {
  if (pendingBundles.has(name)) return pendingBundles.get(name);
  const pin = await pinned(name);
  const held = await records.held(name);
  return held
    .map((h) => h.fingerprint)
    .reverse()
    .find((f) => f !== '' && f !== pin);
}

function changedWarning(from, known, now) {
  warn(`WARNING: ${from}'s identity key has CHANGED (known ${known ? grouped(known) : '(none)'}, now ${grouped(now)})`);
}

/**
 * Moves the pins of a page made before the engine pinned identities (its records' `peers`) into
 * the engine, then drops them: the user's trust decisions are kept, not re-made on first sight.
 * A pin the engine has already wins; a peer whose session has another identity than the old pin
 * keeps its session's (pinned at its next commit) rather than lose the session.
 */
async function migratePins() {
  const old = await records.legacyPins();
  for (const { name, fingerprint } of old) {
    const session = (await client.hasSession(name)) ? await client.remoteFingerprint(name) : undefined;
    if ((await client.pinnedIdentity(name)) !== undefined || (session !== undefined && session !== fingerprint)) continue;
    try {
      await client.acceptIdentity(name, fingerprint);
    } catch (e) {
      if (e.code !== pkg.INVALID_FINGERPRINT) throw e;
    }
  }
  if (old.length > 0) await records.dropLegacyPins();
}

/**
 * Decrypts a batch `[{sessionId, envelope}]` and stores its plaintexts in IndexedDB before the
 * engine commits: the callback's last call returns the store's Promise, which the commit waits
 * for. A crash before the commit re-delivers the batch; the ids already stored are dropped.
 * A prekey message of another identity than the pinned one is refused by the engine
 * (RemoteIdentityChanged) and held, unread, until the user accepts that identity.
 * `progress(done, total)`, if given, follows the results as they reach the page.
 */
async function decrypt(batch, notes = [], progress = undefined) {
  // Who has no identity yet: a session made now is a first sight.
  const unpinned = new Set();
  for (const name of new Set(batch.map((m) => m.sessionId))) {
    if ((await pinned(name)) === undefined) unpinned.add(name);
  }
  const received = [];
  const held = [];
  const firstSeen = new Map();
  let fresh = [];
  if (batch.length > 0) {
    await client.decryptBatch(batch, (r, done, total) => {
      progress?.(done, total);
      if (r.plaintext) {
        received.push({ id: r.messageId, peer: r.sessionId, outgoing: false, text: fromUtf8.decode(r.plaintext) });
        if (r.sender && unpinned.has(r.sessionId) && !firstSeen.has(r.sessionId)) firstSeen.set(r.sessionId, r.sender);
      } else if (r.errorCode === pkg.REMOTE_IDENTITY_CHANGED && r.sender) {
        held.push({ from: r.sessionId, fingerprint: r.sender, envelope: batch[done - 1].envelope });
      } else if (r.alreadySeen) {
        // committed before: shown then
      } else {
        notes.push(`a message from ${r.sessionId} could not be decrypted: ${r.errorKind} (${r.errorCode})`);
      }
      if (done === total) {
        return records.recordBatch(received).then((stored) => {
          fresh = stored;
        });
      }
      return undefined;
    });
  }
  for (const [from, fingerprint] of firstSeen) {
    note(`${from}'s fingerprint: ${grouped(fingerprint)} (first seen; compare it with what ${from}'s client shows)`);
  }
  notes.push(...(await hold(held)));
  if (firstSeen.has(peer) || held.some((h) => h.from === peer)) await showFingerprints();
  for (const n of notes) warn(n);
  for (const m of fresh) showMessage(m);
  return batch.length;
}

/** Keeps envelopes the engine refused for their identity; returns what to tell the user. */
async function hold(held) {
  const notes = [];
  if (held.length === 0) return notes;
  const known = new Map();
  for (const from of new Set(held.map((h) => h.from))) known.set(from, { pin: await pinned(from), pending: await pending(from) });
  const dropped = await records.hold(held);
  const warned = new Set();
  for (const h of held) {
    const { pin, pending: waiting } = known.get(h.from);
    if (waiting === h.fingerprint || warned.has(`${h.from} ${h.fingerprint}`)) continue;
    warned.add(`${h.from} ${h.fingerprint}`);
    changedWarning(h.from, pin, h.fingerprint);
  }
  for (const from of known.keys()) {
    notes.push(`messages from ${from} are held until you accept ${from}'s new identity`);
  }
  if (dropped > 0) notes.push(`${dropped} more held message(s) dropped: at most ${MAX_HELD_PER_PEER} are held per peer`);
  return notes;
}

/**
 * Decrypts queued messages in one batch (moving the progress bar if `bar`), then acknowledges
 * them at the relay.
 */
async function receive(messages, prekeysRemaining, bar = false) {
  const last = messages.at(-1).seq;
  const batch = [];
  for (const m of messages) {
    const envelope = unb64(m.envelope);
    if (envelope && NAME.test(m.from)) batch.push({ sessionId: m.from, envelope });
    else warn(`the relay sent a malformed message (#${m.seq}); dropped`);
  }
  const progress = (done, total) => {
    $('progress').max = total;
    $('progress').value = done;
    $('backlog-text').textContent = `decrypting the backlog: ${done} of ${total} messages`;
  };
  await decrypt(batch, [], bar ? progress : undefined);
  try {
    await relay.call('DELETE', `/v1/queues/${me}?up_to=${last}`);
  } catch (e) {
    // Only means the same envelopes come again: they are dropped by id.
    warn(`could not acknowledge messages at the relay: ${e.message}`);
  }
  await topUp(prekeysRemaining, false);
  return last;
}

/**
 * Everything queued while the page was closed, fetched page by page and decrypted in one batch
 * (one commit), with a progress bar for a large backlog.
 */
async function backlog() {
  let cursor = 0;
  let prekeysRemaining = 0;
  let bar = false;
  const messages = [];
  const started = performance.now();
  for (;;) {
    const page = await relay.call('GET', `/v1/queues/${me}?after=${cursor}&limit=${PAGE}`);
    prekeysRemaining = page.prekeys_remaining;
    if (page.messages.length === 0) break;
    if (!bar && messages.length + page.messages.length + page.remaining >= PROGRESS_FROM) {
      bar = true;
      $('progress').max = messages.length + page.messages.length + page.remaining;
      $('backlog-text').textContent = 'fetching the backlog';
      $('backlog').hidden = false;
    }
    messages.push(...page.messages);
    cursor = page.messages.at(-1).seq;
  }
  if (messages.length === 0) {
    await turn(() => topUp(prekeysRemaining, false));
    return 0;
  }
  cursor = await turn(() => receive(messages, prekeysRemaining, bar));
  $('backlog').hidden = true;
  const ms = (performance.now() - started).toFixed(1);
  const senders = new Set(messages.map((m) => m.from)).size;
  note(`${plural(messages.length, 'queued message')} from ${plural(senders, 'sender')} decrypted in ${ms} ms`);
  return cursor;
}

/** Long-polls the queue; notices a lost relay and carries on when it is back. */
async function poll(cursor) {
  let failures = 0;
  for (;;) {
    let page;
    try {
      page = await relay.call('GET', `/v1/queues/${me}?after=${cursor}&wait=${LONG_POLL}`);
    } catch (e) {
      if (e.code === 'unknown_user') {
        // A new relay (its state lost): register again.
        await turn(announce).catch((e2) => warn(e2.message));
        await sleep(200);
        continue;
      }
      failures += 1;
      if (failures === 1) status(`lost the relay (${e.message}); reconnecting. What you type is kept and sent when it is back.`, true);
      await sleep(failures < 5 ? 300 : 2000);
      continue;
    }
    if (failures > 0) {
      failures = 0;
      cursor = 0; // maybe another relay, with its own numbering: seen ids are dropped
      status('the relay is back');
      await turn(async () => {
        await announce();
        await flushOutbox();
      }).catch((e) => warn(e.message));
      continue;
    }
    if (page.messages.length === 0) {
      if (page.prekeys_remaining < LOW_PREKEYS) await turn(() => topUp(page.prekeys_remaining, false));
      continue;
    }
    try {
      cursor = await turn(() => receive(page.messages, page.prekeys_remaining));
    } catch (e) {
      warn(`could not decrypt or store messages: ${e.message}`);
      await sleep(1000);
    }
  }
}

/** Sends what waits in the outbox, in order; stops at the first transient failure. */
async function flushOutbox() {
  for (const { key, peer: to, envelope } of await records.outbox()) {
    try {
      await relay.call('POST', `/v1/queues/${to}`, envelope);
      await records.outboxDone(key);
    } catch (e) {
      if (!(e instanceof RelayError) || e.transient) {
        if (!outboxBlocked) note(`kept in the outbox, sent when the relay is back (${e.message})`);
        outboxBlocked = true;
        return;
      }
      warn(`the relay refused a message to ${to} (${e.code}: ${e.message}); dropped`);
      await records.outboxDone(key);
    }
  }
  outboxBlocked = false;
}

/** Encrypts and sends a line (through the outbox, so nothing typed is lost while the relay is away). */
async function send(text) {
  if (utf8.encode(text).length > MAX_TEXT) return warn(`not sent: a line is at most ${MAX_TEXT} bytes`);
  if ((await pending(peer)) !== undefined) {
    await showFingerprints();
    return warn(`not sent: ${peer}'s identity key has changed; compare fingerprints and accept it first`);
  }
  if (!(await client.hasSession(peer))) {
    let claimed;
    try {
      claimed = await relay.call('POST', `/v1/prekeys/${peer}/claim`);
    } catch (e) {
      if (e.code === 'unknown_user' || e.code === 'no_prekeys') {
        return warn(`not sent: ${peer} has not joined the relay yet (run \`proteus-chat ${peer} ${me}\`)`);
      }
      return warn(`not sent: ${e.message}`);
    }
    const bundle = unb64(claimed.bundle) ?? new Uint8Array();
    const firstSight = (await client.pinnedIdentity(peer)) === undefined;
    try {
      await client.createSession(peer, bundle);
    } catch (e) {
      if (e.code !== pkg.REMOTE_IDENTITY_CHANGED) return warn(`not sent: the relay gave a bad bundle for ${peer}: ${e.message}`);
      // Another identity than the pinned one: it waits for the user.
      const now = pkg.bundleFingerprint(bundle);
      if ((await pending(peer)) !== now) changedWarning(peer, await pinned(peer), now);
      pendingBundles.set(peer, now);
      await showFingerprints();
      return warn('not sent');
    }
    if (firstSight) {
      const fingerprint = await client.remoteFingerprint(peer);
      note(`${peer}'s fingerprint: ${grouped(fingerprint)} (first seen; compare it with what ${peer}'s client shows)`);
      await showFingerprints();
    }
  }
  const envelope = await client.encrypt(peer, text);
  showMessage(await records.recordSent(pkg.messageId(envelope), peer, text, envelope));
  await flushOutbox();
}

/** Trusts the peer's changed identity and decrypts what was held. */
async function accept() {
  const now = await pending(peer);
  if (now === undefined) return;
  // Re-pins, and deletes a session of the old identity: the held messages make the new one.
  await client.acceptIdentity(peer, now);
  pendingBundles.delete(peer);
  note(`${peer}'s new identity ${grouped(now)} is accepted`);
  await showFingerprints();
  const held = await records.held(peer);
  if (held.length > 0) {
    // Only what claimed the accepted identity (or was held before the claim was recorded): a
    // forgery among them fails to decrypt, the genuine one does not.
    const mine = held.filter((h) => h.fingerprint === now || h.fingerprint === '');
    const notes = [];
    if (mine.length < held.length) notes.push(`${held.length - mine.length} held message(s) claimed another identity of ${peer}; dropped`);
    await decrypt(
      mine.map((h) => ({ sessionId: peer, envelope: h.envelope })),
      notes,
    );
    await records.dropHeld(held);
  }
  await showFingerprints();
}

const tabLocks = new Set();

/** Only one page per user: a second one would race the first for the queue. */
async function holdTabLock(user) {
  if (!navigator.locks || tabLocks.has(user)) return true;
  const got = await new Promise((resolve) => {
    navigator.locks.request(`proteus-chat-page:${user}`, { ifAvailable: true }, (lock) => {
      resolve(lock !== null);
      return lock ? new Promise(() => {}) : undefined; // held until the page goes
    });
  });
  if (got) tabLocks.add(user);
  return got;
}

async function start(meName, peerName) {
  for (const name of [meName, peerName]) {
    if (!NAME.test(name)) throw new ChatError(`invalid user name "${name}": 1 to 32 of a-z, 0-9, '.', '_', '-', starting with a letter or digit`);
  }
  if (meName === peerName) throw new ChatError('chatting with yourself is not supported');
  [me, peer] = [meName, peerName];
  if (!(await holdTabLock(me))) throw new ChatError(`${me} is already open in another tab of this browser: use that one`);
  let remote;
  try {
    pkg = await import('/pkg/index.js');
    remote = await import('/pkg/remote.js');
    await pkg.init();
  } catch (e) {
    throw new ChatError(
      `The web package did not load from /pkg/ (${e.message}). Build it with ffi/web/build.sh, ` +
        'and start the relay from the checkout or with --web-pkg ffi/web/pkg.',
    );
  }
  if (!globalThis.indexedDB) throw new ChatError('this browser gives the page no IndexedDB (a private window?): the keys need it');
  try {
    // The engine's client lives in a module Worker: its batches never block this page.
    const worker = new Worker('/proteus-worker.js', { type: 'module' });
    client = await remote.connectWorker(worker).open(`chat-${me}`, { identityPinning: true });
    records = await Records.open(me);
    await migratePins();
  } catch (e) {
    throw new ChatError(`could not open ${me}'s state in IndexedDB: ${e.message}`);
  }
  relay = new Relay(me, (message) => client.sign(message));
  localStorage.setItem(LAST, JSON.stringify({ me, peer }));
  history.replaceState(null, '', location.pathname);

  $('setup').hidden = true;
  $('chat').hidden = false;
  $('title').textContent = `${me} ↔ ${peer}`;
  document.title = `${me} ↔ ${peer} · proteus-chat`;
  $('my-name').textContent = `you (${me})`;
  $('peer-name').textContent = peer;
  await showFingerprints();
  for (const m of await records.messages(200)) showMessage(m);

  status('connecting to the relay…');
  let cursor = 0;
  try {
    await turn(announce);
    cursor = await backlog();
    await turn(flushOutbox);
  } catch (e) {
    if (e instanceof ChatError) throw e;
    warn(e.message); // the relay is away: the long-poll retries
  }
  for (const id of ['input', 'send']) $(id).disabled = false;
  status(`ready: ${me} ↔ ${peer}, end-to-end encrypted via ${location.host}`);
  $('input').focus();
  poll(cursor);
  setInterval(() => {
    if (outboxBlocked) turn(flushOutbox).catch((e) => warn(e.message));
  }, 2000);
}

// --- wiring --------------------------------------------------------------------------------

function failed(e) {
  showError(e instanceof ChatError ? e.message : `${e.name}: ${e.message}`);
  console.error(e);
}

window.addEventListener('unhandledrejection', (event) => failed(event.reason));

$('setup').addEventListener('submit', (event) => {
  event.preventDefault();
  $('error').hidden = true;
  $('start').disabled = true;
  start($('me').value.trim(), $('peer').value.trim()).catch(startFailed);
});

/** Back to the form, the error above it. */
function startFailed(e) {
  failed(e);
  localStorage.removeItem(LAST);
  $('chat').hidden = true;
  $('setup').hidden = false;
  $('start').disabled = false;
  $('me').value ||= me ?? '';
  $('peer').value ||= peer ?? '';
}

$('send-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('input').value;
  if (text.trim() === '') return;
  $('input').value = '';
  turn(() => send(text)).catch((e) => warn(`not sent: ${e.message}`));
});

$('accept').addEventListener('click', () => turn(accept).catch((e) => warn(e.message)));

$('leave').addEventListener('click', () => {
  localStorage.removeItem(LAST);
  location.reload();
});

// Who this page was last time comes back; ?me=alice&peer=bob fills the form for someone else.
const params = new URLSearchParams(location.search);
let last;
try {
  last = JSON.parse(localStorage.getItem(LAST) ?? 'null');
} catch {
  last = null;
}
if (last && (!params.has('me') || (params.get('me') === last.me && params.get('peer') === last.peer))) {
  start(last.me, last.peer).catch(startFailed);
} else {
  $('me').value = params.get('me') ?? '';
  $('peer').value = params.get('peer') ?? '';
  $('setup').hidden = false;
}
