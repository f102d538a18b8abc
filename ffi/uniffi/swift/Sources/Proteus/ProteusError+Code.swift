// Hand-written companion of the generated bindings (Proteus.swift): the stable code and kind of
// every ProteusError as properties of the error itself.

extension ProteusError {
    /// The stable numeric code, the same in Rust, Kotlin, Swift and JavaScript.
    public var code: Int32 {
        switch self {
        case let .Failure(code, _, _): return code
        }
    }

    /// The stable name of the condition, such as "DuplicateMessage" or "StoreBusy".
    public var kind: String {
        switch self {
        case let .Failure(_, kind, _): return kind
        }
    }

    /// What happened, for logs (never key material).
    public var detail: String {
        switch self {
        case let .Failure(_, _, detail): return detail
        }
    }

    /// The registered code of this error; nil only for a code newer than these constants.
    public var errorCode: ProteusErrorCode? {
        ProteusErrorCode(rawValue: code)
    }
}
