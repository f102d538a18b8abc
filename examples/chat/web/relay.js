// Signed requests to the relay the page came from (its protocol: README.md).

import { b64, utf8 } from './encoding.js';

export class RelayError extends Error {
  constructor(status, code, message) {
    super(status === 0 ? message : `the relay refused (${status} ${code}): ${message}`);
    this.status = status;
    this.code = code;
  }

  /** Worth trying again later: the relay was away, busy or failing. */
  get transient() {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

/** Signed requests to the relay this page came from (see README.md). */
export class Relay {
  #nonces = [];

  constructor(user, sign) {
    this.user = user;
    this.sign = sign;
  }

  async #fetch(path, init) {
    let response;
    let text;
    try {
      response = await fetch(path, { cache: 'no-store', ...init });
      text = await response.text();
    } catch (e) {
      throw new RelayError(0, 'unreachable', `the relay is unreachable (${e.message})`);
    }
    const nonce = response.headers.get('replay-nonce');
    if (nonce && this.#nonces.length < 8) this.#nonces.push(nonce);
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      throw new RelayError(response.status, 'protocol', `not a JSON answer (HTTP ${response.status})`);
    }
    if (!response.ok) throw new RelayError(response.status, body.error ?? 'unknown', body.message ?? '');
    return body;
  }

  async #nonce() {
    return this.#nonces.pop() ?? (await this.#fetch('/v1/nonce')).nonce;
  }

  /** A signed request; `body` is bytes, an object (sent as JSON) or nothing. */
  async call(method, path, body) {
    const bytes = body === undefined ? new Uint8Array() : body instanceof Uint8Array ? body : utf8.encode(JSON.stringify(body));
    for (let attempt = 0; ; attempt++) {
      const nonce = await this.#nonce();
      // The signature covers the parts of the request, then the body itself.
      const head = utf8.encode(`proteus-chat-relay-v2\n${this.user}\n${nonce}\n${method}\n${path}\n`);
      const signed = new Uint8Array(head.length + bytes.length);
      signed.set(head);
      signed.set(bytes, head.length);
      const signature = await this.sign(signed);
      const headers = { 'proteus-user': this.user, 'proteus-nonce': nonce, 'proteus-signature': b64(signature) };
      if (bytes.length > 0) headers['content-type'] = body instanceof Uint8Array ? 'application/octet-stream' : 'application/json';
      try {
        return await this.#fetch(path, { method, headers, body: bytes.length > 0 ? bytes : undefined });
      } catch (e) {
        // A stale nonce (the relay restarted): take a fresh one and try again.
        if (!(e instanceof RelayError && e.code === 'bad_nonce' && attempt < 3)) throw e;
        this.#nonces = [];
      }
    }
  }
}
