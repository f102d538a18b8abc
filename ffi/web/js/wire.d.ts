// Types of wire.js: the message protocol between remote.js (a page) and worker.js (a Worker).
// Applications use connectWorker / serveClient; these are for tools that speak the protocol.

/** Results per chunk message of a decryptBatch. */
export const CHUNK: number;

/** An error as a message carries it. */
export interface WireError {
  name: string;
  message: string;
  /** A ProteusError's code. */
  code?: number;
  /** A ProteusError's kind. */
  kind?: string;
}

export function toWire(error: unknown): WireError;
export function fromWire(
  wire: WireError,
  makeProteusError: (message: string, code: number, kind: string, options?: ErrorOptions) => Error,
  cause?: unknown,
): Error;
