// Hand-written companion of the generated bindings (Proteus.swift): the stable code, kind and
// detail of every ProteusError, whatever its family, as properties of the error itself.

extension ProteusError {
    private var parts: (code: Int32, kind: ErrorKind, detail: String) {
        switch self {
        case let .Engine(code, kind, detail), let .Decrypt(code, kind, detail),
             let .Decode(code, kind, detail), let .Input(code, kind, detail),
             let .System(code, kind, detail):
            return (code, kind, detail)
        }
    }

    /// The stable numeric code, the same in Rust, Kotlin, Swift and JavaScript.
    public var code: Int32 { parts.code }

    /// The stable name of the condition, such as `.duplicateMessage` or `.storeBusy`.
    public var kind: ErrorKind { parts.kind }

    /// What happened, for logs (never key material or user data).
    public var detail: String { parts.detail }

    /// The registered code of this error; nil only for a code newer than these constants.
    public var errorCode: ProteusErrorCode? {
        ProteusErrorCode(rawValue: code)
    }
}
