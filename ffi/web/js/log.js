// The package's log: what the client does, for an app that turns it on with setLogger. The
// events are those of the native client's log (proteus-client's logging.rs), at the same
// levels; the web module's Rust logs nothing (it would cost 5 KB of wasm), so the events the
// host sees are logged here: a client opened, a reload because another tab committed, a commit
// conflict and its retry, each batch's summary. Lines hold no key, no plaintext, no session id
// or fingerprint.

const LEVELS = ['off', 'error', 'warn', 'info', 'debug', 'trace'];

let logger;
let threshold = 0;

/**
 * Sends the package's log lines up to `level` ('error', 'warn', 'info', 'debug', 'trace') to
 * `fn(level, message)`; `setLogger(null)` or level 'off' turns the log off (the default: then it
 * costs nothing).
 */
export function setLogger(fn, level = 'info') {
  const rank = checkLogger(fn, level);
  logger = fn ?? undefined;
  threshold = logger === undefined ? 0 : rank;
}

/** The rank of `level` (0 for off), after checking both arguments of setLogger (TypeError). */
export function checkLogger(fn, level) {
  if (fn !== null && fn !== undefined && typeof fn !== 'function') {
    throw new TypeError('the logger must be a function (level, message) or null');
  }
  const rank = LEVELS.indexOf(level);
  if (rank < 0) throw new TypeError(`unknown log level ${String(level)}: one of ${LEVELS.join(', ')}`);
  return rank;
}

/** Whether lines at `level` go anywhere: check before building an expensive line. */
export function logs(level) {
  return LEVELS.indexOf(level) <= threshold && threshold > 0;
}

/** Logs `message` at `level`. A logger that throws does not break the call that logged. */
export function log(level, message) {
  if (!logs(level)) return;
  try {
    logger(level, message);
  } catch {
    // The app's logger failed: its problem, not the call's.
  }
}

/** The summary's line: the native client's format (BatchSummary's Display), in milliseconds. */
export function batchLine(s) {
  const failures = Object.entries(s.failedByCode).map(([code, n]) => `${n} × ${code}`);
  const ms = (t) => `${t.toFixed(3)} ms`;
  return `batch: ${s.total} messages: ${s.decrypted} decrypted, ${s.alreadySeen} already seen, ` +
    `${s.keyEvicted} key evicted, ${s.failed} failed${failures.length ? ` (${failures.join(', ')})` : ''}; ` +
    `decrypt ${ms(s.decryptMs)}, delivery ${ms(s.deliveryMs)}, commit ${ms(s.commitMs)}`;
}

/**
 * A batch's summary from the wasm client's flat counts (RawClient.lastBatchCounts: total,
 * decrypted, already seen, key evicted, then code and count pairs) and the times measured here.
 */
export function batchSummary(counts, times) {
  const [total = 0, decrypted = 0, alreadySeen = 0, keyEvicted = 0] = counts;
  const failedByCode = {};
  let failed = 0;
  for (let i = 4; i + 1 < counts.length; i += 2) {
    failedByCode[counts[i]] = counts[i + 1];
    failed += counts[i + 1];
  }
  return { total, decrypted, alreadySeen, keyEvicted, failed, failedByCode, ...times };
}
