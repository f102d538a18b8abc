// The package's functions that need no client: ids and fingerprints read from bytes.

import {
  bundleFingerprint as rawBundleFingerprint,
  messageId as rawMessageId,
  prekeyMessageFingerprint as rawPrekeyMessageFingerprint,
} from './proteus_web.js';
import { bytes } from './args.js';
import { adopt } from './errors.js';
import { requireInit } from './init.js';

/**
 * The stable id of a received message, as batch results carry it: lowercase hex of the
 * envelope's MAC (of SHA-256 of the bytes if they are not an envelope). Needs init().
 */
export function messageId(envelope) {
  requireInit();
  return rawMessageId(bytes(envelope, 'envelope'));
}

/**
 * The sender's identity fingerprint if `envelope` is a PreKeyMessage (it carries the identity),
 * else undefined: what to show when a peer's identity changed (RemoteIdentityChanged, 204).
 * Needs init().
 */
export function prekeyMessageFingerprint(envelope) {
  return decodeWith(rawPrekeyMessageFingerprint, envelope, 'envelope');
}

/** The identity fingerprint in a prekey bundle, to compare with remoteFingerprint(). Needs init(). */
export function bundleFingerprint(bundle) {
  return decodeWith(rawBundleFingerprint, bundle, 'bundle');
}

/** `raw(bytes)` for a module-level call that decodes its argument; its errors are ProteusErrors. */
function decodeWith(raw, value, what) {
  requireInit();
  try {
    return raw(bytes(value, what));
  } catch (e) {
    throw adopt(e);
  }
}
