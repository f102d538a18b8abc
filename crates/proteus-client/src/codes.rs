//! The error codes of the client: its own ([`ClientCode`]: misuse of the client, 1xx; its
//! store, 5xx; its own bugs, 599), and every code its errors report ([`ErrorCode`]: the
//! engine's and its own). The bindings' own codes are theirs (`ffi/codes`), where every layer's
//! codes are assembled into the one table the bindings' constants are generated from.

proteus_core::error_codes! {
    /// A code the client reports itself.
    pub enum ClientCode {
        /// There is no session with this id.
        SessionNotFound = 104;
        /// A session with this id exists already; delete it first to replace it.
        SessionExists = 105;
        /// A session id is empty, too long or not UTF-8.
        InvalidSessionId = 106;
        /// The identity cannot be replaced while sessions made with it exist.
        IdentityInUse = 107;
        /// The application stopped a batch before its commit; nothing of it was committed.
        BatchAborted = 108;
        /// Fewer one-time prekey ids are free than were asked for.
        PreKeyIdsExhausted = 110;
        /// The store holds another identity, already in use; a cryptobox store is imported
        /// only into a new store (or one with the source's identity).
        ImportIdentityMismatch = 111;
        /// Records of the imported store do not decode; nothing was imported (the message
        /// names them by table and id).
        ImportBadRecords = 112;
        /// A fingerprint is not the 64 hex digits of a valid identity key.
        InvalidFingerprint = 411;
        /// Another process holds the store and did not release it in time.
        StoreBusy = 502;
        /// The store cannot be read as a Proteus store; it was left as it is.
        StoreCorrupt = 503;
        /// There is no store at this location.
        StoreNotFound = 504;
        /// A store already exists where a new one was to be created.
        StoreAlreadyExists = 505;
        /// The store was written by a newer version of this library.
        UnsupportedSchema = 506;
        /// The storage backend failed (I/O, SQLite, IndexedDB).
        StorageFailure = 507;
        /// The store is sealed with another key than the one given.
        WrongStoreKey = 508;
        /// A key was given, but the store is not sealed.
        StoreNotSealed = 509;
        /// The store is sealed: open it with its key.
        StoreKeyRequired = 510;
        /// The store is older than the application's record of it (restored from a copy).
        StoreRolledBack = 511;
        /// A record of a sealed store is missing, older than the store last committed, moved, or
        /// from another store: the store was tampered with and is refused.
        StoreTampered = 514;
        /// The store to import cannot be read (a missing directory, an unknown layout, no
        /// identity, an I/O error).
        ImportSourceUnreadable = 515;
        /// A bug: a panic or trap inside the library. Close the client and open the store again.
        Internal = 599;
    }
}

proteus_core::error_code_layers! {
    /// A code the client's errors report: the engine's (protocol errors keep their codes,
    /// docs/protocol.md §11) or the client's own.
    pub enum ErrorCode {
        /// The protocol engine's.
        Core(proteus_core::ErrorCode),
        /// The client's own.
        Client(ClientCode),
    }
}

/// Numbers no code may take, with why: the client's retired codes.
pub const RESERVED: &[(u16, &str)] = &[(
    109,
    "retired: was the client's PreKeyNotFound, now 101 like the engine's",
)];
