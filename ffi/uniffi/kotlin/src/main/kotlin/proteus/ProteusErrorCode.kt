// Generated from every layer's error codes (assembled in ffi/codes/src/lib.rs) by
// `PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files`. Do not edit.
package proteus

/**
 * Every error code of the library: [code] is `ProteusException.code`, [kind] its `kind`, the same
 * numbers and kinds as in Rust, Swift and JavaScript. ErrorCodesTest checks them against the native
 * registry (`errorCodes()`).
 */
enum class ProteusErrorCode(val code: Int, val kind: String, val family: String, val alreadySeen: Boolean) {
    /** A key is degenerate, or a Diffie-Hellman result was all zero. */
    DEGENERATED_KEY(100, "DegeneratedKey", "Engine", false),
    /** The prekey a message or a call names is not stored (used up, or never ours). */
    PRE_KEY_NOT_FOUND(101, "PreKeyNotFound", "Engine", false),
    /** The session has no state for its current tag (a corrupt session). */
    NO_SESSION_FOR_TAG(102, "NoSessionForTag", "Engine", false),
    /** The sending chain has used all its counters; the peer must reply first. */
    CHAIN_EXHAUSTED(103, "ChainExhausted", "Engine", false),
    /** There is no session with this id. */
    SESSION_NOT_FOUND(104, "SessionNotFound", "Engine", false),
    /** A session with this id exists already; delete it first to replace it. */
    SESSION_EXISTS(105, "SessionExists", "Engine", false),
    /** A session id is empty, too long or not UTF-8. */
    INVALID_SESSION_ID(106, "InvalidSessionId", "Engine", false),
    /** The identity cannot be replaced while sessions made with it exist. */
    IDENTITY_IN_USE(107, "IdentityInUse", "Engine", false),
    /** The application stopped a batch before its commit; nothing of it was committed. */
    BATCH_ABORTED(108, "BatchAborted", "Engine", false),
    /** Fewer one-time prekey ids are free than were asked for. */
    PRE_KEY_IDS_EXHAUSTED(110, "PreKeyIdsExhausted", "Engine", false),
    /** The store holds another identity, already in use; a cryptobox store is imported only into a new store (or one with the source's identity). */
    IMPORT_IDENTITY_MISMATCH(111, "ImportIdentityMismatch", "Engine", false),
    /** Records of the imported store do not decode; nothing was imported (the message names them by table and id). */
    IMPORT_BAD_RECORDS(112, "ImportBadRecords", "Engine", false),
    /** A call made while another call of the same client delivers its results (re-entrancy), or that waited for it longer than the client's wait timeout. */
    CLIENT_BUSY(120, "ClientBusy", "Engine", false),
    /** The application's batch callback threw; nothing of the batch was committed. */
    CALLBACK_FAILED(121, "CallbackFailed", "Engine", false),
    /** The client was closed (Swift `close()`); open the store again to go on. */
    CLIENT_CLOSED(122, "ClientClosed", "Engine", false),
    /** A session can only be created from a PreKeyMessage. */
    NOT_A_PRE_KEY_MESSAGE(201, "NotAPreKeyMessage", "Decrypt", false),
    /** The PreKeyMessage carries another identity than the session's remote identity. */
    REMOTE_IDENTITY_CHANGED(204, "RemoteIdentityChanged", "Decrypt", false),
    /** The session has no state for the message's session tag. */
    UNKNOWN_SESSION_TAG(205, "UnknownSessionTag", "Decrypt", false),
    /** The message's MAC did not verify; its counter was the chain's next one. */
    INVALID_SIGNATURE(206, "InvalidSignature", "Decrypt", false),
    /** The message's MAC did not verify; its counter was ahead of the chain. */
    INVALID_SIGNATURE_AHEAD(207, "InvalidSignature", "Decrypt", false),
    /** The message is older than the oldest kept key of its chain and was decrypted before. */
    OUTDATED_MESSAGE(208, "OutdatedMessage", "Decrypt", true),
    /** The message was already decrypted. */
    DUPLICATE_MESSAGE(209, "DuplicateMessage", "Decrypt", true),
    /** The message's MAC did not verify; its counter was behind the chain (a kept key). */
    INVALID_SIGNATURE_BEHIND(210, "InvalidSignature", "Decrypt", false),
    /** The message skips more messages than allowed, on a receive chain still at its start. */
    TOO_DISTANT_FUTURE_NEW_CHAIN(211, "TooDistantFuture", "Decrypt", false),
    /** The message skips more messages than allowed. */
    TOO_DISTANT_FUTURE(212, "TooDistantFuture", "Decrypt", false),
    /** The message's key was evicted (or cannot be told apart from one); it was not decrypted. */
    MESSAGE_KEY_EVICTED(214, "MessageKeyEvicted", "Decrypt", false),
    /** A session belongs to another local identity than this one. */
    LOCAL_IDENTITY_CHANGED(300, "LocalIdentityChanged", "Decode", false),
    /** A value had another CBOR type than the format requires. */
    UNEXPECTED_TYPE(301, "UnexpectedType", "Decode", false),
    /** The message type is neither cipher (1) nor prekey (2). */
    UNKNOWN_MESSAGE_TYPE(302, "UnknownMessageType", "Decode", false),
    /** A fixed-size byte string had the wrong length. */
    INVALID_LENGTH(303, "InvalidLength", "Decode", false),
    /** A length or count exceeded a decoder limit. */
    LIMIT_EXCEEDED(304, "LimitExceeded", "Decode", false),
    /** A map repeated a key. */
    DUPLICATE_FIELD(305, "DuplicateField", "Decode", false),
    /** The input ended in the middle of a value. */
    TRUNCATED(306, "Truncated", "Decode", false),
    /** Bytes were left over after the value. */
    TRAILING_BYTES(307, "TrailingBytes", "Decode", false),
    /** A CBOR feature Proteus never uses (indefinite lengths, tags, floats). */
    UNSUPPORTED_CBOR(308, "UnsupportedCbor", "Decode", false),
    /** An integer did not fit its field. */
    INTEGER_OUT_OF_RANGE(309, "IntegerOutOfRange", "Decode", false),
    /** A required field was absent. */
    MISSING_FIELD(310, "MissingField", "Decode", false),
    /** Values were nested deeper than the decoder allows. */
    TOO_DEEP(311, "TooDeep", "Decode", false),
    /** A public key is not a valid prime-order point, or a secret key does not match its public half. */
    INVALID_KEY(409, "InvalidKey", "Input", false),
    /** The plaintext is longer than the engine allows. */
    PLAINTEXT_TOO_LONG(410, "PlaintextTooLong", "Input", false),
    /** A fingerprint is not the 64 hex digits of a valid identity key. */
    INVALID_FINGERPRINT(411, "InvalidFingerprint", "Input", false),
    /** The prekey store failed. */
    PRE_KEY_STORE(501, "PreKeyStore", "System", false),
    /** Another process holds the store and did not release it in time. */
    STORE_BUSY(502, "StoreBusy", "System", false),
    /** The store cannot be read as a Proteus store; it was left as it is. */
    STORE_CORRUPT(503, "StoreCorrupt", "System", false),
    /** There is no store at this location. */
    STORE_NOT_FOUND(504, "StoreNotFound", "System", false),
    /** A store already exists where a new one was to be created. */
    STORE_ALREADY_EXISTS(505, "StoreAlreadyExists", "System", false),
    /** The store was written by a newer version of this library. */
    UNSUPPORTED_SCHEMA(506, "UnsupportedSchema", "System", false),
    /** The storage backend failed (I/O, SQLite, IndexedDB). */
    STORAGE_FAILURE(507, "StorageFailure", "System", false),
    /** The store is sealed with another key than the one given. */
    WRONG_STORE_KEY(508, "WrongStoreKey", "System", false),
    /** A key was given, but the store is not sealed. */
    STORE_NOT_SEALED(509, "StoreNotSealed", "System", false),
    /** The store is sealed: open it with its key. */
    STORE_KEY_REQUIRED(510, "StoreKeyRequired", "System", false),
    /** The store is older than the application's record of it (restored from a copy). */
    STORE_ROLLED_BACK(511, "StoreRolledBack", "System", false),
    /** Another client of the store (another tab) committed first; nothing of this call was stored. */
    STORE_CONFLICT(512, "StoreConflict", "System", false),
    /** This runtime has no durable store for the web package: `Client.open` needs IndexedDB, which Node.js lacks (there the durable store is the Node package's native addon). */
    STORE_UNAVAILABLE(513, "StoreUnavailable", "System", false),
    /** A record of a sealed store is missing, older than the store last committed, moved, or from another store: the store was tampered with and is refused. */
    STORE_TAMPERED(514, "StoreTampered", "System", false),
    /** The store to import cannot be read (a missing directory, an unknown layout, no identity, an I/O error). */
    IMPORT_SOURCE_UNREADABLE(515, "ImportSourceUnreadable", "System", false),
    /** A bug: a panic or trap inside the library. Close the client and open the store again. */
    INTERNAL(599, "Internal", "System", false),
    ;

    companion object {
        /** The entry of [code]; null for a code this version does not know. */
        fun fromCode(code: Int): ProteusErrorCode? = values().firstOrNull { it.code == code }
    }
}
