// Hand-written companion of the generated bindings (proteus.kt): the stable code and kind of
// every ProteusException, as properties of the exception type itself.
package proteus

/** The stable numeric code, the same in Rust, Kotlin, Swift and JavaScript. */
val ProteusException.code: Int
    get() = when (this) {
        is ProteusException.Failure -> this.code
    }

/** The stable name of the condition, such as `"DuplicateMessage"` or `"StoreBusy"`. */
val ProteusException.kind: String
    get() = when (this) {
        is ProteusException.Failure -> this.kind
    }


/** The registered code of this error ([ProteusErrorCode]); null only for a code newer than these constants. */
val ProteusException.errorCode: ProteusErrorCode?
    get() = ProteusErrorCode.fromCode(code)
