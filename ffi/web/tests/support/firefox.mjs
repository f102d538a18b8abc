// Debian's Firefox ESR for the browser tests, driven over WebDriver BiDi by puppeteer-core (which
// never downloads a browser: it is given Debian's executable): headless, as root, without a
// display. launch() has the interface of chromium.mjs's: a context whose newPage() returns a page
// with the part of playwright's Page API that the browser tests and the browser bench use
// (goto, reload, evaluate, waitForFunction, locator(selector, { hasText }), fill, click, press,
// waitForEvent, workers, on('pageerror' | 'console' | 'request' | 'response')), and the
// context's route(). Each page is a window of its own, so that every page is visible and draws
// frames as Chromium's pages do (a background tab of Firefox's gets no animation frames).
//
// What Firefox cannot do here, and the callers refuse it: the Chrome DevTools protocol (the
// browser bench's --profile, a CPU profile through CDP).

import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const FIREFOX = process.env.FIREFOX ?? '/usr/bin/firefox-esr';

/** As chromium.mjs's: a bound against a hang, generous for a machine ten times slower. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/**
 * The bound of one protocol call (an evaluate that runs a whole import or a 10,000-message batch
 * is one call): that of the longest test, the cryptobox import's 15 minutes.
 */
const PROTOCOL_TIMEOUT_MS = 15 * 60_000;
/** How often a wait in the page looks again (playwright polls on animation frames; this does not depend on them). */
const POLL_MS = 25;

/**
 * Firefox preferences besides puppeteer's own (which already turn off updates, telemetry and
 * most background connections). navigator.storage.persist() would wait for a permission prompt
 * that nobody answers headless: it is answered as declined, at once (persisted is then false,
 * as for a site Chromium grants no persistence). performance.now() is not rounded to Firefox's
 * default 1 ms (for a page that is not cross-origin isolated; Chromium's is 0.1 ms), nor
 * jittered, so that the browser bench's figures of a few milliseconds mean something: only the
 * clock's grain changes.
 */
const PREFS = {
  'privacy.reduceTimerPrecision': false,
  'dom.storageManager.prompt.testing': true,
  'dom.storageManager.prompt.testing.allow': false,
  'browser.shell.checkDefaultBrowser': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'network.connectivity-service.enabled': false,
  'network.captive-portal-service.enabled': false,
};

/**
 * A Firefox on its own profile directory (so IndexedDB persists across its pages and, with
 * `profile`, across browsers), and `close()`, which also deletes a profile it made itself.
 * `kill()` ends the browser as a crash would (SIGKILL to its main process).
 */
export async function launch(prefix = 'proteus-firefox-', { profile } = {}) {
  const own = profile === undefined;
  const dir = own ? await mkdtemp(path.join(tmpdir(), prefix)) : profile;
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX,
    headless: true,
    userDataDir: dir,
    extraPrefsFirefox: PREFS,
    protocolTimeout: PROTOCOL_TIMEOUT_MS,
    // The pages' windows are sized as playwright sizes Chromium's pages.
    defaultViewport: { width: 1280, height: 720 },
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  const context = new Context(browser, await browser.version());
  return {
    context,
    profile: dir,
    async close() {
      await browser.close().catch(() => {});
      if (own) await rm(dir, { recursive: true, force: true });
    },
    async kill() {
      const child = browser.process();
      if (!child?.pid) throw new Error('no browser process to kill');
      const exited = new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
      process.kill(child.pid, 'SIGKILL');
      await exited;
      await browser.close().catch(() => {});
      // puppeteer puts the profile's own prefs files back once the process has exited, without
      // waiting for it: a browser started on the profile meanwhile finds them half moved.
      await until(() => ['user.js', 'prefs.js'].every((f) => !existsSync(path.join(dir, `${f}.puppeteer`))));
    },
  };
}

/** Resolves once `condition()` holds; a bound against a hang, not a timing. */
async function until(condition, boundMs = 120_000) {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > boundMs) throw new Error(`waited ${boundMs} ms for the profile`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** playwright's glob of a URL: `**` any characters, `*` any but `/`, `?` a literal. */
function globRegExp(glob) {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else re += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

class Context {
  #browser;
  #version;
  #pages = new Set();
  #routes = [];

  constructor(browser, version) {
    this.#browser = browser;
    this.#version = version;
  }

  /** As playwright's: `{ version() }`, e.g. `firefox/153.8.0`. */
  browser() {
    const version = this.#version;
    return { version: () => version };
  }

  pages() {
    return [...this.#pages];
  }

  async newPage() {
    const raw = await this.#browser.newPage({ type: 'window' });
    raw.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
    raw.setDefaultNavigationTimeout(DEFAULT_TIMEOUT_MS);
    const page = new Page(raw, this);
    this.#pages.add(page);
    raw.once('close', () => this.#pages.delete(page));
    if (this.#routes.length > 0) await this.#intercept(raw);
    return page;
  }

  /**
   * As playwright's context.route(glob, handler): the handler gets `{ request(), fulfill({ path |
   * body, contentType, status }), continue() }` for each request of a page of this context whose
   * URL matches. Requests of the pages' workers go to the network as they are.
   */
  async route(glob, handler) {
    this.#routes.push({ re: globRegExp(glob), handler });
    if (this.#routes.length === 1) for (const page of this.#pages) await this.#intercept(page.raw);
  }

  async #intercept(raw) {
    await raw.setRequestInterception(true);
    raw.on('request', async (request) => {
      if (request.isInterceptResolutionHandled()) return;
      const route = this.#routes.find((r) => r.re.test(request.url()));
      if (!route) return request.continue();
      await route.handler({
        request: () => request,
        async fulfill({ path: file, body, contentType, status = 200 }) {
          const content = file === undefined ? body : await readFile(file);
          await request.respond({ status, contentType, body: content });
        },
        continue: () => request.continue(),
      });
    });
  }

  /** Only the browser bench's --profile asks for it: a Chromium protocol, which Firefox does not speak. */
  newCDPSession() {
    throw new Error('Firefox has no Chrome DevTools protocol: CPU profiles (--profile) are Chromium only');
  }
}

/**
 * In the page: the elements that `selector` selects whose text contains `hasText` (as playwright
 * matches a string: case-insensitive, whitespace collapsed), and which of them are visible
 * (a non-empty box, and not visibility: hidden).
 */
function find(selector, hasText) {
  const norm = (s) => s.replace(/\s+/g, ' ').trim().toLowerCase();
  const text = hasText === undefined ? undefined : norm(hasText);
  const all = [...document.querySelectorAll(selector)].filter((e) => text === undefined || norm(e.textContent ?? '').includes(text));
  const visible = (e) => {
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== 'hidden';
  };
  return all.map((e) => ({ visible: visible(e), text: e.textContent }));
}

function findElement(selector, hasText, nth) {
  const norm = (s) => s.replace(/\s+/g, ' ').trim().toLowerCase();
  const text = hasText === undefined ? undefined : norm(hasText);
  return [...document.querySelectorAll(selector)].filter((e) => text === undefined || norm(e.textContent ?? '').includes(text))[nth];
}

/** Whether an error of an evaluate means only that the page navigated meanwhile (then: ask again). */
const navigated = (e) => /context|destroyed|navigat|discarded|no such (frame|realm)|realm/i.test(String(e?.message ?? e));

class Locator {
  constructor(page, selector, hasText, nth) {
    this.page = page;
    this.selector = selector;
    this.hasText = hasText;
    this.nth = nth;
  }

  get #what() {
    return `locator('${this.selector}'${this.hasText === undefined ? '' : `, { hasText: ${JSON.stringify(this.hasText)} }`})${this.nth === undefined ? '' : `.nth(${this.nth})`}`;
  }

  first() {
    return new Locator(this.page, this.selector, this.hasText, 0);
  }

  nth(n) {
    return new Locator(this.page, this.selector, this.hasText, n);
  }

  /** The matching elements now: [{ visible, text }]. */
  async #matches() {
    return this.page.raw.evaluate(find, this.selector, this.hasText);
  }

  /** The one element meant (strict, as playwright: more than one without first()/nth() is an error), or undefined. */
  #one(matches) {
    if (this.nth !== undefined) return matches[this.nth];
    if (matches.length > 1) throw new Error(`strict mode violation: ${this.#what} resolved to ${matches.length} elements`);
    return matches[0];
  }

  /** Waits until `ok(matches)` (the page may navigate meanwhile). */
  async #until(ok, timeout = DEFAULT_TIMEOUT_MS, what = 'to be visible') {
    const deadline = Date.now() + timeout;
    for (;;) {
      let matches;
      try {
        matches = await this.#matches();
      } catch (e) {
        if (!navigated(e)) throw e;
      }
      if (matches !== undefined && ok(matches)) return matches;
      if (Date.now() > deadline) throw new Error(`Timeout ${timeout} ms exceeded waiting for ${this.#what} ${what}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** As playwright's: state 'visible' (default), 'attached', 'hidden' or 'detached'. */
  async waitFor({ timeout = DEFAULT_TIMEOUT_MS, state = 'visible' } = {}) {
    const tests = {
      visible: (m) => this.#one(m)?.visible === true,
      attached: (m) => this.#one(m) !== undefined,
      hidden: (m) => this.#one(m)?.visible !== true,
      detached: (m) => this.#one(m) === undefined,
    };
    await this.#until(tests[state], timeout, `to be ${state}`);
  }

  async textContent({ timeout } = {}) {
    return this.#one(await this.#until((m) => this.#one(m) !== undefined, timeout, 'to be attached')).text;
  }

  async allTextContents() {
    return (await this.#matches()).map((m) => m.text);
  }

  async count() {
    return (await this.#matches()).length;
  }

  async isVisible() {
    return this.#one(await this.#matches())?.visible === true;
  }

  async isHidden() {
    return !(await this.isVisible());
  }

  /** `fn(element, arg)` in the page, on the one element meant. */
  async evaluate(fn, arg) {
    const matches = await this.#until((m) => this.#one(m) !== undefined, DEFAULT_TIMEOUT_MS, 'to be attached');
    const index = this.nth ?? 0;
    this.#one(matches);
    const handle = await this.page.raw.evaluateHandle(findElement, this.selector, this.hasText, index);
    try {
      return await handle.evaluate(fn, arg);
    } finally {
      await handle.dispose().catch(() => {});
    }
  }
}

class Page {
  constructor(raw, context) {
    this.raw = raw;
    this.ctx = context;
  }

  context() {
    return this.ctx;
  }

  on(event, listener) {
    this.raw.on(event, listener);
    return this;
  }

  once(event, listener) {
    this.raw.once(event, listener);
    return this;
  }

  /** Waits for the page's load event (as playwright's, the rest of its events are not needed). */
  waitForEvent(event, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Timeout ${timeout} ms exceeded waiting for event "${event}"`)), timeout);
      this.raw.once(event, (value) => {
        clearTimeout(timer);
        resolve(value);
      });
    });
  }

  goto(url, options) {
    return this.raw.goto(url, options);
  }

  reload(options) {
    return this.raw.reload(options);
  }

  close() {
    return this.raw.close();
  }

  url() {
    return this.raw.url();
  }

  /** As playwright's: `fn(arg)` with one argument (none if undefined), or an expression. */
  evaluate(fn, arg) {
    return arg === undefined ? this.raw.evaluate(fn) : this.raw.evaluate(fn, arg);
  }

  /** As playwright's: until `fn(arg)` is truthy, looked at every POLL_MS, not on animation frames. */
  async waitForFunction(fn, arg, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
    const args = arg === undefined ? [] : [arg];
    return this.raw.waitForFunction(fn, { polling: POLL_MS, timeout }, ...args);
  }

  locator(selector, { hasText } = {}) {
    return new Locator(this, selector, hasText);
  }

  /** As playwright's: waits for the field, focuses it, sets its value and fires `input`. */
  async fill(selector, value) {
    await this.locator(selector).waitFor();
    await this.raw.$eval(
      selector,
      (e, v) => {
        e.focus();
        e.value = v;
        e.dispatchEvent(new Event('input', { bubbles: true }));
      },
      value,
    );
  }

  /** A real click (mouse events through BiDi), once the element is visible, enabled and still. */
  async click(selector, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
    await this.raw.locator(selector).setTimeout(timeout).click();
  }

  /** Focuses the element and presses `key` (a real key event through BiDi). */
  async press(selector, key) {
    await this.locator(selector).waitFor();
    await this.raw.focus(selector);
    await this.raw.keyboard.press(key);
  }

  /** The page's dedicated workers, each with `url()`. */
  workers() {
    return this.raw.workers();
  }
}
