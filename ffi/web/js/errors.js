// The package's errors: ProteusError (a stable numeric `code`, its `kind` and `family`, as
// natively), the type guard of each family, and the errors the package raises itself.

import {
  CLIENT_BUSY,
  CLIENT_CLOSED,
  ERROR_FAMILIES,
  ERROR_KINDS,
  INTERNAL,
  STORAGE_FAILURE,
  STORE_CONFLICT,
  STORE_NOT_FOUND,
  STORE_UNAVAILABLE,
} from './codes.js';

/** Every failure of the client: a stable numeric `code`, its `kind` and `family`, as natively. */
export class ProteusError extends Error {
  constructor(message, code, kind, options) {
    super(message, options);
    this.name = 'ProteusError';
    this.code = code;
    this.kind = kind;
    this.family = ERROR_FAMILIES[code];
  }
}

const isFamily = (family) => (e) => e instanceof ProteusError && e.family === family;

/** Whether `e` is a ProteusError of the Engine family (1xx: a call the engine refuses). */
export const isEngineError = isFamily('Engine');
/** Whether `e` is a ProteusError of the Decrypt family (2xx: a message was rejected). */
export const isDecryptError = isFamily('Decrypt');
/** Whether `e` is a ProteusError of the Decode family (3xx: bytes did not decode). */
export const isDecodeError = isFamily('Decode');
/** Whether `e` is a ProteusError of the Input family (4xx: an input is not acceptable). */
export const isInputError = isFamily('Input');
/** Whether `e` is a ProteusError of the System family (5xx: the store, the system or a bug). */
export const isSystemError = isFamily('System');

/**
 * Errors made in wasm are Errors named ProteusError with a code: make them instances, with the
 * registry's kind and family of the code (the wasm module carries no kind names).
 */
export function adopt(e) {
  if (e instanceof Error && !(e instanceof ProteusError) && e.name === 'ProteusError' && typeof e.code === 'number') {
    Object.setPrototypeOf(e, ProteusError.prototype);
    e.kind = ERROR_KINDS[e.code];
    e.family = ERROR_FAMILIES[e.code];
  }
  return e;
}

/** A ProteusError of the package itself: its kind is the registry's for `code`. */
export function failure(code, message, options) {
  return new ProteusError(message, code, ERROR_KINDS[code], options);
}

export function storageFailure(cause) {
  const detail = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return failure(STORAGE_FAILURE, `storage failure: ${detail}`, { cause });
}

/** A failure of a store's I/O as a ProteusError (those of sealing are ProteusErrors already). */
export const storeFailure = (e) => (e instanceof ProteusError ? e : storageFailure(e));

export function internalError(cause) {
  return failure(
    INTERNAL,
    'internal error in the wasm client; close it and open the store again (nothing committed is lost)',
    { cause },
  );
}

export function busyError() {
  return failure(
    CLIENT_BUSY,
    'the client is busy: a decryptBatch is delivering its results (a call from its callback would wait for the batch, which waits for the callback); call after the batch resolved',
  );
}

export function conflictError(cause) {
  return failure(
    STORE_CONFLICT,
    'another client of this store (another tab) committed first: nothing of this call was stored, and the client reloaded the store; call again',
    { cause },
  );
}

export function notFoundError(name) {
  return failure(STORE_NOT_FOUND, `no store proteus:${name} with an identity (opened with create: false)`);
}

/**
 * A store call (Client.open, deleteStore, sealStore, rekeyStore) in a runtime without IndexedDB
 * and without an `indexedDB` option: Node.js, where the durable store is the Node package's
 * native addon.
 */
export function unavailableError() {
  return failure(
    STORE_UNAVAILABLE,
    'no durable store here: this runtime has no IndexedDB, where the web package keeps its stores. ' +
      "In Node.js and Electron's main process, the durable store is the native addon of " +
      '@proteus-engine/node (SQLite, Client.open(path)): install that package; if you use it ' +
      'already, it is running its wasm fallback because no prebuilt addon loaded for this platform ' +
      "(or PROTEUS_BACKEND=wasm is set): install the addon's package for this platform or build " +
      "the addon from source (the Platforms section of that package's README). Otherwise pass " +
      "{ indexedDB } (an IDBFactory, e.g. fake-indexeddb's) to Client.open, or use " +
      'Client.inMemory(), which needs no store.',
  );
}

export const isConflict = (e) => e instanceof ProteusError && e.code === STORE_CONFLICT;

export function closedError() {
  return failure(CLIENT_CLOSED, 'the client is closed; open the store again to go on');
}

/** `f()`, a call into the wasm client; its errors are ProteusErrors. */
export function wasm(f) {
  try {
    return f();
  } catch (e) {
    throw adopt(e);
  }
}
