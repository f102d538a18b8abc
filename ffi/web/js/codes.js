// Generated from every layer's error codes (assembled in ffi/codes/src/lib.rs) by
// `PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files`. Do not edit.
// Every code is the same number and kind natively (Rust, Kotlin, Swift); tests/codes.test.mjs checks them
// against ffi/error-codes.json.

/** A key is degenerate, or a Diffie-Hellman result was all zero. (DegeneratedKey, Engine) */
export const DEGENERATED_KEY = 100;
/** The prekey a message or a call names is not stored (used up, or never ours). (PreKeyNotFound, Engine) */
export const PRE_KEY_NOT_FOUND = 101;
/** The session has no state for its current tag (a corrupt session). (NoSessionForTag, Engine) */
export const NO_SESSION_FOR_TAG = 102;
/** The sending chain has used all its counters; the peer must reply first. (ChainExhausted, Engine) */
export const CHAIN_EXHAUSTED = 103;
/** There is no session with this id. (SessionNotFound, Engine) */
export const SESSION_NOT_FOUND = 104;
/** A session with this id exists already; delete it first to replace it. (SessionExists, Engine) */
export const SESSION_EXISTS = 105;
/** A session id is empty, too long or not UTF-8. (InvalidSessionId, Engine) */
export const INVALID_SESSION_ID = 106;
/** The identity cannot be replaced while sessions made with it exist. (IdentityInUse, Engine) */
export const IDENTITY_IN_USE = 107;
/** The application stopped a batch before its commit; nothing of it was committed. (BatchAborted, Engine) */
export const BATCH_ABORTED = 108;
/** Fewer one-time prekey ids are free than were asked for. (PreKeyIdsExhausted, Engine) */
export const PRE_KEY_IDS_EXHAUSTED = 110;
/** The store holds another identity, already in use; a cryptobox store is imported only into a new store (or one with the source's identity). (ImportIdentityMismatch, Engine) */
export const IMPORT_IDENTITY_MISMATCH = 111;
/** Records of the imported store do not decode; nothing was imported (the message names them by table and id). (ImportBadRecords, Engine) */
export const IMPORT_BAD_RECORDS = 112;
/** A call made while another call of the same client delivers its results (re-entrancy), or that waited for it longer than the client's wait timeout. (ClientBusy, Engine) */
export const CLIENT_BUSY = 120;
/** The application's batch callback threw; nothing of the batch was committed. (CallbackFailed, Engine) */
export const CALLBACK_FAILED = 121;
/** The client was closed (Swift `close()`); open the store again to go on. (ClientClosed, Engine) */
export const CLIENT_CLOSED = 122;
/** A session can only be created from a PreKeyMessage. (NotAPreKeyMessage, Decrypt) */
export const NOT_A_PRE_KEY_MESSAGE = 201;
/** The PreKeyMessage carries another identity than the session's remote identity. (RemoteIdentityChanged, Decrypt) */
export const REMOTE_IDENTITY_CHANGED = 204;
/** The session has no state for the message's session tag. (UnknownSessionTag, Decrypt) */
export const UNKNOWN_SESSION_TAG = 205;
/** The message's MAC did not verify; its counter was the chain's next one. (InvalidSignature, Decrypt) */
export const INVALID_SIGNATURE = 206;
/** The message's MAC did not verify; its counter was ahead of the chain. (InvalidSignature, Decrypt) */
export const INVALID_SIGNATURE_AHEAD = 207;
/** The message is older than the oldest kept key of its chain and was decrypted before. (OutdatedMessage, Decrypt) */
export const OUTDATED_MESSAGE = 208;
/** The message was already decrypted. (DuplicateMessage, Decrypt) */
export const DUPLICATE_MESSAGE = 209;
/** The message's MAC did not verify; its counter was behind the chain (a kept key). (InvalidSignature, Decrypt) */
export const INVALID_SIGNATURE_BEHIND = 210;
/** The message skips more messages than allowed, on a receive chain still at its start. (TooDistantFuture, Decrypt) */
export const TOO_DISTANT_FUTURE_NEW_CHAIN = 211;
/** The message skips more messages than allowed. (TooDistantFuture, Decrypt) */
export const TOO_DISTANT_FUTURE = 212;
/** The message's key was evicted (or cannot be told apart from one); it was not decrypted. (MessageKeyEvicted, Decrypt) */
export const MESSAGE_KEY_EVICTED = 214;
/** A session belongs to another local identity than this one. (LocalIdentityChanged, Decode) */
export const LOCAL_IDENTITY_CHANGED = 300;
/** A value had another CBOR type than the format requires. (UnexpectedType, Decode) */
export const UNEXPECTED_TYPE = 301;
/** The message type is neither cipher (1) nor prekey (2). (UnknownMessageType, Decode) */
export const UNKNOWN_MESSAGE_TYPE = 302;
/** A fixed-size byte string had the wrong length. (InvalidLength, Decode) */
export const INVALID_LENGTH = 303;
/** A length or count exceeded a decoder limit. (LimitExceeded, Decode) */
export const LIMIT_EXCEEDED = 304;
/** A map repeated a key. (DuplicateField, Decode) */
export const DUPLICATE_FIELD = 305;
/** The input ended in the middle of a value. (Truncated, Decode) */
export const TRUNCATED = 306;
/** Bytes were left over after the value. (TrailingBytes, Decode) */
export const TRAILING_BYTES = 307;
/** A CBOR feature Proteus never uses (indefinite lengths, tags, floats). (UnsupportedCbor, Decode) */
export const UNSUPPORTED_CBOR = 308;
/** An integer did not fit its field. (IntegerOutOfRange, Decode) */
export const INTEGER_OUT_OF_RANGE = 309;
/** A required field was absent. (MissingField, Decode) */
export const MISSING_FIELD = 310;
/** Values were nested deeper than the decoder allows. (TooDeep, Decode) */
export const TOO_DEEP = 311;
/** A public key is not a valid prime-order point, or a secret key does not match its public half. (InvalidKey, Input) */
export const INVALID_KEY = 409;
/** The plaintext is longer than the engine allows. (PlaintextTooLong, Input) */
export const PLAINTEXT_TOO_LONG = 410;
/** A fingerprint is not the 64 hex digits of a valid identity key. (InvalidFingerprint, Input) */
export const INVALID_FINGERPRINT = 411;
/** The prekey store failed. (PreKeyStore, System) */
export const PRE_KEY_STORE = 501;
/** Another process holds the store and did not release it in time. (StoreBusy, System) */
export const STORE_BUSY = 502;
/** The store cannot be read as a Proteus store; it was left as it is. (StoreCorrupt, System) */
export const STORE_CORRUPT = 503;
/** There is no store at this location. (StoreNotFound, System) */
export const STORE_NOT_FOUND = 504;
/** A store already exists where a new one was to be created. (StoreAlreadyExists, System) */
export const STORE_ALREADY_EXISTS = 505;
/** The store was written by a newer version of this library. (UnsupportedSchema, System) */
export const UNSUPPORTED_SCHEMA = 506;
/** The storage backend failed (I/O, SQLite, IndexedDB). (StorageFailure, System) */
export const STORAGE_FAILURE = 507;
/** The store is sealed with another key than the one given. (WrongStoreKey, System) */
export const WRONG_STORE_KEY = 508;
/** A key was given, but the store is not sealed. (StoreNotSealed, System) */
export const STORE_NOT_SEALED = 509;
/** The store is sealed: open it with its key. (StoreKeyRequired, System) */
export const STORE_KEY_REQUIRED = 510;
/** The store is older than the application's record of it (restored from a copy). (StoreRolledBack, System) */
export const STORE_ROLLED_BACK = 511;
/** Another client of the store (another tab) committed first; nothing of this call was stored. (StoreConflict, System) */
export const STORE_CONFLICT = 512;
/** This runtime has no durable store for the web package: `Client.open` needs IndexedDB, which Node.js lacks (there the durable store is the Node package's native addon). (StoreUnavailable, System) */
export const STORE_UNAVAILABLE = 513;
/** A record of a sealed store is missing, older than the store last committed, moved, or from another store: the store was tampered with and is refused. (StoreTampered, System) */
export const STORE_TAMPERED = 514;
/** The store to import cannot be read (a missing directory, an unknown layout, no identity, an I/O error). (ImportSourceUnreadable, System) */
export const IMPORT_SOURCE_UNREADABLE = 515;
/** A bug: a panic or trap inside the library. Close the client and open the store again. (Internal, System) */
export const INTERNAL = 599;

/** The kind name of every code. */
export const ERROR_KINDS = Object.freeze({
  100: 'DegeneratedKey',
  101: 'PreKeyNotFound',
  102: 'NoSessionForTag',
  103: 'ChainExhausted',
  104: 'SessionNotFound',
  105: 'SessionExists',
  106: 'InvalidSessionId',
  107: 'IdentityInUse',
  108: 'BatchAborted',
  110: 'PreKeyIdsExhausted',
  111: 'ImportIdentityMismatch',
  112: 'ImportBadRecords',
  120: 'ClientBusy',
  121: 'CallbackFailed',
  122: 'ClientClosed',
  201: 'NotAPreKeyMessage',
  204: 'RemoteIdentityChanged',
  205: 'UnknownSessionTag',
  206: 'InvalidSignature',
  207: 'InvalidSignature',
  208: 'OutdatedMessage',
  209: 'DuplicateMessage',
  210: 'InvalidSignature',
  211: 'TooDistantFuture',
  212: 'TooDistantFuture',
  214: 'MessageKeyEvicted',
  300: 'LocalIdentityChanged',
  301: 'UnexpectedType',
  302: 'UnknownMessageType',
  303: 'InvalidLength',
  304: 'LimitExceeded',
  305: 'DuplicateField',
  306: 'Truncated',
  307: 'TrailingBytes',
  308: 'UnsupportedCbor',
  309: 'IntegerOutOfRange',
  310: 'MissingField',
  311: 'TooDeep',
  409: 'InvalidKey',
  410: 'PlaintextTooLong',
  411: 'InvalidFingerprint',
  501: 'PreKeyStore',
  502: 'StoreBusy',
  503: 'StoreCorrupt',
  504: 'StoreNotFound',
  505: 'StoreAlreadyExists',
  506: 'UnsupportedSchema',
  507: 'StorageFailure',
  508: 'WrongStoreKey',
  509: 'StoreNotSealed',
  510: 'StoreKeyRequired',
  511: 'StoreRolledBack',
  512: 'StoreConflict',
  513: 'StoreUnavailable',
  514: 'StoreTampered',
  515: 'ImportSourceUnreadable',
  599: 'Internal',
});

/** The family of every code: Engine, Decrypt, Decode, Input or System. */
export const ERROR_FAMILIES = Object.freeze({
  100: 'Engine',
  101: 'Engine',
  102: 'Engine',
  103: 'Engine',
  104: 'Engine',
  105: 'Engine',
  106: 'Engine',
  107: 'Engine',
  108: 'Engine',
  110: 'Engine',
  111: 'Engine',
  112: 'Engine',
  120: 'Engine',
  121: 'Engine',
  122: 'Engine',
  201: 'Decrypt',
  204: 'Decrypt',
  205: 'Decrypt',
  206: 'Decrypt',
  207: 'Decrypt',
  208: 'Decrypt',
  209: 'Decrypt',
  210: 'Decrypt',
  211: 'Decrypt',
  212: 'Decrypt',
  214: 'Decrypt',
  300: 'Decode',
  301: 'Decode',
  302: 'Decode',
  303: 'Decode',
  304: 'Decode',
  305: 'Decode',
  306: 'Decode',
  307: 'Decode',
  308: 'Decode',
  309: 'Decode',
  310: 'Decode',
  311: 'Decode',
  409: 'Input',
  410: 'Input',
  411: 'Input',
  501: 'System',
  502: 'System',
  503: 'System',
  504: 'System',
  505: 'System',
  506: 'System',
  507: 'System',
  508: 'System',
  509: 'System',
  510: 'System',
  511: 'System',
  512: 'System',
  513: 'System',
  514: 'System',
  515: 'System',
  599: 'System',
});

/**
 * Whether a message rejected with `code` was decrypted before (a duplicate or an outdated
 * message): drop it silently. Not MessageKeyEvicted (214): that message was lost.
 */
export function isAlreadySeen(code) {
  return code === 208 || code === 209;
}
