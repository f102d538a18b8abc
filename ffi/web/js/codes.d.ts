// Generated from every layer's error codes (assembled in ffi/codes/src/lib.rs) by
// `PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files`. Do not edit.

/** A key is degenerate, or a Diffie-Hellman result was all zero. (DegeneratedKey, Engine) */
export const DEGENERATED_KEY: 100;
/** The prekey a message or a call names is not stored (used up, or never ours). (PreKeyNotFound, Engine) */
export const PRE_KEY_NOT_FOUND: 101;
/** The session has no state for its current tag (a corrupt session). (NoSessionForTag, Engine) */
export const NO_SESSION_FOR_TAG: 102;
/** The sending chain has used all its counters; the peer must reply first. (ChainExhausted, Engine) */
export const CHAIN_EXHAUSTED: 103;
/** There is no session with this id. (SessionNotFound, Engine) */
export const SESSION_NOT_FOUND: 104;
/** A session with this id exists already; delete it first to replace it. (SessionExists, Engine) */
export const SESSION_EXISTS: 105;
/** A session id is empty, too long or not UTF-8. (InvalidSessionId, Engine) */
export const INVALID_SESSION_ID: 106;
/** The identity cannot be replaced while sessions made with it exist. (IdentityInUse, Engine) */
export const IDENTITY_IN_USE: 107;
/** The application stopped a batch before its commit; nothing of it was committed. (BatchAborted, Engine) */
export const BATCH_ABORTED: 108;
/** Fewer one-time prekey ids are free than were asked for. (PreKeyIdsExhausted, Engine) */
export const PRE_KEY_IDS_EXHAUSTED: 110;
/** The store holds another identity, already in use; a cryptobox store is imported only into a new store (or one with the source's identity). (ImportIdentityMismatch, Engine) */
export const IMPORT_IDENTITY_MISMATCH: 111;
/** Records of the imported store do not decode; nothing was imported (the message names them by table and id). (ImportBadRecords, Engine) */
export const IMPORT_BAD_RECORDS: 112;
/** A call made while another call of the same client delivers its results (re-entrancy), or that waited for it longer than the client's wait timeout. (ClientBusy, Engine) */
export const CLIENT_BUSY: 120;
/** The application's batch callback threw; nothing of the batch was committed. (CallbackFailed, Engine) */
export const CALLBACK_FAILED: 121;
/** The client was closed (Swift `close()`); open the store again to go on. (ClientClosed, Engine) */
export const CLIENT_CLOSED: 122;
/** A session can only be created from a PreKeyMessage. (NotAPreKeyMessage, Decrypt) */
export const NOT_A_PRE_KEY_MESSAGE: 201;
/** The PreKeyMessage carries another identity than the session's remote identity. (RemoteIdentityChanged, Decrypt) */
export const REMOTE_IDENTITY_CHANGED: 204;
/** The session has no state for the message's session tag. (UnknownSessionTag, Decrypt) */
export const UNKNOWN_SESSION_TAG: 205;
/** The message's MAC did not verify; its counter was the chain's next one. (InvalidSignature, Decrypt) */
export const INVALID_SIGNATURE: 206;
/** The message's MAC did not verify; its counter was ahead of the chain. (InvalidSignature, Decrypt) */
export const INVALID_SIGNATURE_AHEAD: 207;
/** The message is older than the oldest kept key of its chain and was decrypted before. (OutdatedMessage, Decrypt) */
export const OUTDATED_MESSAGE: 208;
/** The message was already decrypted. (DuplicateMessage, Decrypt) */
export const DUPLICATE_MESSAGE: 209;
/** The message's MAC did not verify; its counter was behind the chain (a kept key). (InvalidSignature, Decrypt) */
export const INVALID_SIGNATURE_BEHIND: 210;
/** The message skips more messages than allowed, on a receive chain still at its start. (TooDistantFuture, Decrypt) */
export const TOO_DISTANT_FUTURE_NEW_CHAIN: 211;
/** The message skips more messages than allowed. (TooDistantFuture, Decrypt) */
export const TOO_DISTANT_FUTURE: 212;
/** The message's key was evicted (or cannot be told apart from one); it was not decrypted. (MessageKeyEvicted, Decrypt) */
export const MESSAGE_KEY_EVICTED: 214;
/** A session belongs to another local identity than this one. (LocalIdentityChanged, Decode) */
export const LOCAL_IDENTITY_CHANGED: 300;
/** A value had another CBOR type than the format requires. (UnexpectedType, Decode) */
export const UNEXPECTED_TYPE: 301;
/** The message type is neither cipher (1) nor prekey (2). (UnknownMessageType, Decode) */
export const UNKNOWN_MESSAGE_TYPE: 302;
/** A fixed-size byte string had the wrong length. (InvalidLength, Decode) */
export const INVALID_LENGTH: 303;
/** A length or count exceeded a decoder limit. (LimitExceeded, Decode) */
export const LIMIT_EXCEEDED: 304;
/** A map repeated a key. (DuplicateField, Decode) */
export const DUPLICATE_FIELD: 305;
/** The input ended in the middle of a value. (Truncated, Decode) */
export const TRUNCATED: 306;
/** Bytes were left over after the value. (TrailingBytes, Decode) */
export const TRAILING_BYTES: 307;
/** A CBOR feature Proteus never uses (indefinite lengths, tags, floats). (UnsupportedCbor, Decode) */
export const UNSUPPORTED_CBOR: 308;
/** An integer did not fit its field. (IntegerOutOfRange, Decode) */
export const INTEGER_OUT_OF_RANGE: 309;
/** A required field was absent. (MissingField, Decode) */
export const MISSING_FIELD: 310;
/** Values were nested deeper than the decoder allows. (TooDeep, Decode) */
export const TOO_DEEP: 311;
/** A public key is not a valid prime-order point, or a secret key does not match its public half. (InvalidKey, Input) */
export const INVALID_KEY: 409;
/** The plaintext is longer than the engine allows. (PlaintextTooLong, Input) */
export const PLAINTEXT_TOO_LONG: 410;
/** A fingerprint is not the 64 hex digits of a valid identity key. (InvalidFingerprint, Input) */
export const INVALID_FINGERPRINT: 411;
/** The prekey store failed. (PreKeyStore, System) */
export const PRE_KEY_STORE: 501;
/** Another process holds the store and did not release it in time. (StoreBusy, System) */
export const STORE_BUSY: 502;
/** The store cannot be read as a Proteus store; it was left as it is. (StoreCorrupt, System) */
export const STORE_CORRUPT: 503;
/** There is no store at this location. (StoreNotFound, System) */
export const STORE_NOT_FOUND: 504;
/** A store already exists where a new one was to be created. (StoreAlreadyExists, System) */
export const STORE_ALREADY_EXISTS: 505;
/** The store was written by a newer version of this library. (UnsupportedSchema, System) */
export const UNSUPPORTED_SCHEMA: 506;
/** The storage backend failed (I/O, SQLite, IndexedDB). (StorageFailure, System) */
export const STORAGE_FAILURE: 507;
/** The store is sealed with another key than the one given. (WrongStoreKey, System) */
export const WRONG_STORE_KEY: 508;
/** A key was given, but the store is not sealed. (StoreNotSealed, System) */
export const STORE_NOT_SEALED: 509;
/** The store is sealed: open it with its key. (StoreKeyRequired, System) */
export const STORE_KEY_REQUIRED: 510;
/** The store is older than the application's record of it (restored from a copy). (StoreRolledBack, System) */
export const STORE_ROLLED_BACK: 511;
/** Another client of the store (another tab) committed first; nothing of this call was stored. (StoreConflict, System) */
export const STORE_CONFLICT: 512;
/** This runtime has no durable store for the web package: `Client.open` needs IndexedDB, which Node.js lacks (there the durable store is the Node package's native addon). (StoreUnavailable, System) */
export const STORE_UNAVAILABLE: 513;
/** A record of a sealed store is missing, older than the store last committed, moved, or from another store: the store was tampered with and is refused. (StoreTampered, System) */
export const STORE_TAMPERED: 514;
/** The store to import cannot be read (a missing directory, an unknown layout, no identity, an I/O error). (ImportSourceUnreadable, System) */
export const IMPORT_SOURCE_UNREADABLE: 515;
/** A bug: a panic or trap inside the library. Close the client and open the store again. (Internal, System) */
export const INTERNAL: 599;

/** Every code a ProteusError can have. */
export type ErrorCode =
  | 100
  | 101
  | 102
  | 103
  | 104
  | 105
  | 106
  | 107
  | 108
  | 110
  | 111
  | 112
  | 120
  | 121
  | 122
  | 201
  | 204
  | 205
  | 206
  | 207
  | 208
  | 209
  | 210
  | 211
  | 212
  | 214
  | 300
  | 301
  | 302
  | 303
  | 304
  | 305
  | 306
  | 307
  | 308
  | 309
  | 310
  | 311
  | 409
  | 410
  | 411
  | 501
  | 502
  | 503
  | 504
  | 505
  | 506
  | 507
  | 508
  | 509
  | 510
  | 511
  | 512
  | 513
  | 514
  | 515
  | 599;

/** The families of codes: the hundreds digit (1xx Engine … 5xx System). */
export type ErrorFamily =
  | 'Engine'
  | 'Decrypt'
  | 'Decode'
  | 'Input'
  | 'System';

/** The kind names of the Engine family. */
export type EngineErrorKind =
  | 'DegeneratedKey'
  | 'PreKeyNotFound'
  | 'NoSessionForTag'
  | 'ChainExhausted'
  | 'SessionNotFound'
  | 'SessionExists'
  | 'InvalidSessionId'
  | 'IdentityInUse'
  | 'BatchAborted'
  | 'PreKeyIdsExhausted'
  | 'ImportIdentityMismatch'
  | 'ImportBadRecords'
  | 'ClientBusy'
  | 'CallbackFailed'
  | 'ClientClosed';

/** The kind names of the Decrypt family. */
export type DecryptErrorKind =
  | 'NotAPreKeyMessage'
  | 'RemoteIdentityChanged'
  | 'UnknownSessionTag'
  | 'InvalidSignature'
  | 'OutdatedMessage'
  | 'DuplicateMessage'
  | 'TooDistantFuture'
  | 'MessageKeyEvicted';

/** The kind names of the Decode family. */
export type DecodeErrorKind =
  | 'LocalIdentityChanged'
  | 'UnexpectedType'
  | 'UnknownMessageType'
  | 'InvalidLength'
  | 'LimitExceeded'
  | 'DuplicateField'
  | 'Truncated'
  | 'TrailingBytes'
  | 'UnsupportedCbor'
  | 'IntegerOutOfRange'
  | 'MissingField'
  | 'TooDeep';

/** The kind names of the Input family. */
export type InputErrorKind =
  | 'InvalidKey'
  | 'PlaintextTooLong'
  | 'InvalidFingerprint';

/** The kind names of the System family. */
export type SystemErrorKind =
  | 'PreKeyStore'
  | 'StoreBusy'
  | 'StoreCorrupt'
  | 'StoreNotFound'
  | 'StoreAlreadyExists'
  | 'UnsupportedSchema'
  | 'StorageFailure'
  | 'WrongStoreKey'
  | 'StoreNotSealed'
  | 'StoreKeyRequired'
  | 'StoreRolledBack'
  | 'StoreConflict'
  | 'StoreUnavailable'
  | 'StoreTampered'
  | 'ImportSourceUnreadable'
  | 'Internal';

/** Every kind name an error can have. */
export type ErrorKind = EngineErrorKind | DecryptErrorKind | DecodeErrorKind | InputErrorKind | SystemErrorKind;

/** The kind name of every code. */
export const ERROR_KINDS: Readonly<Record<number, ErrorKind>>;
/** The family of every code. */
export const ERROR_FAMILIES: Readonly<Record<number, ErrorFamily>>;
/** Whether a message rejected with `code` was decrypted before (duplicate or outdated): drop it. */
export function isAlreadySeen(code: number): boolean;
