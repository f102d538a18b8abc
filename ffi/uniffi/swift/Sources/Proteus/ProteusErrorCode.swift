// Generated from every layer's error codes (assembled in ffi/codes/src/lib.rs) by
// `PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files`. Do not edit.

/// Every error code of the library: `rawValue` is `ProteusError.code`, `kind` its `kind`, the same
/// numbers and kinds as in Rust, Kotlin and JavaScript. ErrorCodeTests checks them against the
/// native registry (`errorCodes()`).
public enum ProteusErrorCode: Int32, CaseIterable, Sendable {
    /// A key is degenerate, or a Diffie-Hellman result was all zero.
    case degeneratedKey = 100
    /// The prekey a message or a call names is not stored (used up, or never ours).
    case preKeyNotFound = 101
    /// The session has no state for its current tag (a corrupt session).
    case noSessionForTag = 102
    /// The sending chain has used all its counters; the peer must reply first.
    case chainExhausted = 103
    /// There is no session with this id.
    case sessionNotFound = 104
    /// A session with this id exists already; delete it first to replace it.
    case sessionExists = 105
    /// A session id is empty, too long or not UTF-8.
    case invalidSessionId = 106
    /// The identity cannot be replaced while sessions made with it exist.
    case identityInUse = 107
    /// The application stopped a batch before its commit; nothing of it was committed.
    case batchAborted = 108
    /// Fewer one-time prekey ids are free than were asked for.
    case preKeyIdsExhausted = 110
    /// The store holds another identity, already in use; a cryptobox store is imported only into a new store (or one with the source's identity).
    case importIdentityMismatch = 111
    /// Records of the imported store do not decode; nothing was imported (the message names them by table and id).
    case importBadRecords = 112
    /// A call made while another call of the same client delivers its results (re-entrancy), or that waited for it longer than the client's wait timeout.
    case clientBusy = 120
    /// The application's batch callback threw; nothing of the batch was committed.
    case callbackFailed = 121
    /// The client was closed (Swift `close()`); open the store again to go on.
    case clientClosed = 122
    /// A session can only be created from a PreKeyMessage.
    case notAPreKeyMessage = 201
    /// The PreKeyMessage carries another identity than the session's remote identity.
    case remoteIdentityChanged = 204
    /// The session has no state for the message's session tag.
    case unknownSessionTag = 205
    /// The message's MAC did not verify; its counter was the chain's next one.
    case invalidSignature = 206
    /// The message's MAC did not verify; its counter was ahead of the chain.
    case invalidSignatureAhead = 207
    /// The message is older than the oldest kept key of its chain and was decrypted before.
    case outdatedMessage = 208
    /// The message was already decrypted.
    case duplicateMessage = 209
    /// The message's MAC did not verify; its counter was behind the chain (a kept key).
    case invalidSignatureBehind = 210
    /// The message skips more messages than allowed, on a receive chain still at its start.
    case tooDistantFutureNewChain = 211
    /// The message skips more messages than allowed.
    case tooDistantFuture = 212
    /// The message's key was evicted (or cannot be told apart from one); it was not decrypted.
    case messageKeyEvicted = 214
    /// A session belongs to another local identity than this one.
    case localIdentityChanged = 300
    /// A value had another CBOR type than the format requires.
    case unexpectedType = 301
    /// The message type is neither cipher (1) nor prekey (2).
    case unknownMessageType = 302
    /// A fixed-size byte string had the wrong length.
    case invalidLength = 303
    /// A length or count exceeded a decoder limit.
    case limitExceeded = 304
    /// A map repeated a key.
    case duplicateField = 305
    /// The input ended in the middle of a value.
    case truncated = 306
    /// Bytes were left over after the value.
    case trailingBytes = 307
    /// A CBOR feature Proteus never uses (indefinite lengths, tags, floats).
    case unsupportedCbor = 308
    /// An integer did not fit its field.
    case integerOutOfRange = 309
    /// A required field was absent.
    case missingField = 310
    /// Values were nested deeper than the decoder allows.
    case tooDeep = 311
    /// A public key is not a valid prime-order point, or a secret key does not match its public half.
    case invalidKey = 409
    /// The plaintext is longer than the engine allows.
    case plaintextTooLong = 410
    /// A fingerprint is not the 64 hex digits of a valid identity key.
    case invalidFingerprint = 411
    /// The prekey store failed.
    case preKeyStore = 501
    /// Another process holds the store and did not release it in time.
    case storeBusy = 502
    /// The store cannot be read as a Proteus store; it was left as it is.
    case storeCorrupt = 503
    /// There is no store at this location.
    case storeNotFound = 504
    /// A store already exists where a new one was to be created.
    case storeAlreadyExists = 505
    /// The store was written by a newer version of this library.
    case unsupportedSchema = 506
    /// The storage backend failed (I/O, SQLite, IndexedDB).
    case storageFailure = 507
    /// The store is sealed with another key than the one given.
    case wrongStoreKey = 508
    /// A key was given, but the store is not sealed.
    case storeNotSealed = 509
    /// The store is sealed: open it with its key.
    case storeKeyRequired = 510
    /// The store is older than the application's record of it (restored from a copy).
    case storeRolledBack = 511
    /// Another client of the store (another tab) committed first; nothing of this call was stored.
    case storeConflict = 512
    /// This runtime has no durable store for the web package: `Client.open` needs IndexedDB, which Node.js lacks (there the durable store is the Node package's native addon).
    case storeUnavailable = 513
    /// A record of a sealed store is missing, older than the store last committed, moved, or from another store: the store was tampered with and is refused.
    case storeTampered = 514
    /// The store to import cannot be read (a missing directory, an unknown layout, no identity, an I/O error).
    case importSourceUnreadable = 515
    /// A bug: a panic or trap inside the library. Close the client and open the store again.
    case `internal` = 599

    /// The kind name errors of this code report.
    public var kind: String {
        switch self {
        case .degeneratedKey: return "DegeneratedKey"
        case .preKeyNotFound: return "PreKeyNotFound"
        case .noSessionForTag: return "NoSessionForTag"
        case .chainExhausted: return "ChainExhausted"
        case .sessionNotFound: return "SessionNotFound"
        case .sessionExists: return "SessionExists"
        case .invalidSessionId: return "InvalidSessionId"
        case .identityInUse: return "IdentityInUse"
        case .batchAborted: return "BatchAborted"
        case .preKeyIdsExhausted: return "PreKeyIdsExhausted"
        case .importIdentityMismatch: return "ImportIdentityMismatch"
        case .importBadRecords: return "ImportBadRecords"
        case .clientBusy: return "ClientBusy"
        case .callbackFailed: return "CallbackFailed"
        case .clientClosed: return "ClientClosed"
        case .notAPreKeyMessage: return "NotAPreKeyMessage"
        case .remoteIdentityChanged: return "RemoteIdentityChanged"
        case .unknownSessionTag: return "UnknownSessionTag"
        case .invalidSignature: return "InvalidSignature"
        case .invalidSignatureAhead: return "InvalidSignature"
        case .outdatedMessage: return "OutdatedMessage"
        case .duplicateMessage: return "DuplicateMessage"
        case .invalidSignatureBehind: return "InvalidSignature"
        case .tooDistantFutureNewChain: return "TooDistantFuture"
        case .tooDistantFuture: return "TooDistantFuture"
        case .messageKeyEvicted: return "MessageKeyEvicted"
        case .localIdentityChanged: return "LocalIdentityChanged"
        case .unexpectedType: return "UnexpectedType"
        case .unknownMessageType: return "UnknownMessageType"
        case .invalidLength: return "InvalidLength"
        case .limitExceeded: return "LimitExceeded"
        case .duplicateField: return "DuplicateField"
        case .truncated: return "Truncated"
        case .trailingBytes: return "TrailingBytes"
        case .unsupportedCbor: return "UnsupportedCbor"
        case .integerOutOfRange: return "IntegerOutOfRange"
        case .missingField: return "MissingField"
        case .tooDeep: return "TooDeep"
        case .invalidKey: return "InvalidKey"
        case .plaintextTooLong: return "PlaintextTooLong"
        case .invalidFingerprint: return "InvalidFingerprint"
        case .preKeyStore: return "PreKeyStore"
        case .storeBusy: return "StoreBusy"
        case .storeCorrupt: return "StoreCorrupt"
        case .storeNotFound: return "StoreNotFound"
        case .storeAlreadyExists: return "StoreAlreadyExists"
        case .unsupportedSchema: return "UnsupportedSchema"
        case .storageFailure: return "StorageFailure"
        case .wrongStoreKey: return "WrongStoreKey"
        case .storeNotSealed: return "StoreNotSealed"
        case .storeKeyRequired: return "StoreKeyRequired"
        case .storeRolledBack: return "StoreRolledBack"
        case .storeConflict: return "StoreConflict"
        case .storeUnavailable: return "StoreUnavailable"
        case .storeTampered: return "StoreTampered"
        case .importSourceUnreadable: return "ImportSourceUnreadable"
        case .internal: return "Internal"
        }
    }

    /// Engine, Decrypt, Decode, Input or System: the hundreds digit.
    public var family: String {
        switch rawValue / 100 {
        case 1: return "Engine"
        case 2: return "Decrypt"
        case 3: return "Decode"
        case 4: return "Input"
        default: return "System"
        }
    }

    /// Whether a message rejected with this code was decrypted before: drop it silently.
    public var isAlreadySeen: Bool {
        self == .outdatedMessage || self == .duplicateMessage
    }
}
