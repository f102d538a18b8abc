//! Error codes: how a layer declares the codes it reports, and the protocol engine's own,
//! [`ErrorCode`].
//!
//! Every error enum maps its variants to a code once, in its `error_code()`, and gets `code()`
//! and `kind()` from it ([`impl_kind_and_code!`](crate::impl_kind_and_code)). Each layer
//! declares the codes it reports itself, as an enum made by [`error_codes!`](crate::error_codes),
//! in its own crate: this module the engine's, `proteus_client::codes` the client's and its
//! store's, and the bindings theirs (`ffi/codes`). A layer's errors report its own codes and
//! those of the layers below, in an enum of the layers' enums made by
//! [`error_code_layers!`](crate::error_code_layers) (`proteus_client::codes::ErrorCode`). `ffi/codes`
//! assembles every layer's codes into the one table the bindings' constants (Kotlin, Swift,
//! JavaScript) are generated from, and checks the rules below over all of it.
//!
//! Rules: a code names one condition; a code once given is never reused for another (retired
//! and foreign numbers are in each layer's `RESERVED`); the family is the hundreds digit. Wire's
//! numbers are kept where Wire has the condition (docs/protocol.md §11). A kind name may span a
//! few codes only where Wire tells positions of one condition apart (InvalidSignature
//! 206/207/210, TooDistantFuture 211/212).

/// The family of a code: its hundreds digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Family {
    /// 1xx: the engine or the client was used in a way it refuses.
    Engine,
    /// 2xx: a message was rejected.
    Decrypt,
    /// 3xx: bytes did not decode.
    Decode,
    /// 4xx: an input decoded but is not acceptable.
    Input,
    /// 5xx: the store, the system or a bug.
    System,
}

impl Family {
    /// The family's name, as the generated bindings spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Engine => "Engine",
            Self::Decrypt => "Decrypt",
            Self::Decode => "Decode",
            Self::Input => "Input",
            Self::System => "System",
        }
    }
}

/// The family of `number`: its hundreds digit.
pub const fn family_of(number: u16) -> Family {
    match number / 100 {
        1 => Family::Engine,
        2 => Family::Decrypt,
        3 => Family::Decode,
        4 => Family::Input,
        _ => Family::System,
    }
}

/// Whether a message rejected with the code `number` was decrypted before (duplicate or
/// outdated): apps drop these silently. Not [`ErrorCode::MessageKeyEvicted`]: that message was
/// lost.
pub const fn is_already_seen(number: u16) -> bool {
    number == ErrorCode::DuplicateMessage.number() || number == ErrorCode::OutdatedMessage.number()
}

/// The kind name of an [`error_codes!`](crate::error_codes) entry: its own, else its name.
#[doc(hidden)]
#[macro_export]
macro_rules! __kind_name {
    ($name:ident) => {
        stringify!($name)
    };
    ($name:ident: $kind:ident) => {
        stringify!($kind)
    };
}

/// Declares a layer's error codes: an enum with one variant per code, whose `number()`,
/// `name()`, `kind()`, `meaning()`, `family()` and `is_already_seen()` read them, and `ALL`,
/// every code in the order given (ascending). Each entry is its meaning (as doc comments, one
/// sentence), the name of the code, its number, and its kind name when it is not the name:
///
/// ```
/// proteus_core::error_codes! {
///     /// Some layer's codes.
///     pub enum SomeCode {
///         /// The message was already decrypted.
///         DuplicateMessage = 209;
///         /// The message's MAC did not verify; its counter was ahead of the chain.
///         InvalidSignatureAhead = 207: InvalidSignature;
///     }
/// }
/// assert_eq!(SomeCode::InvalidSignatureAhead.kind(), "InvalidSignature");
/// assert_eq!(SomeCode::DuplicateMessage.meaning(), "The message was already decrypted.");
/// assert_eq!(SomeCode::ALL.len(), 2);
/// ```
#[macro_export]
macro_rules! error_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident {
            $($(#[doc = $doc:literal])* $name:ident = $number:literal $(: $kind:ident)?;)*
        }
    ) => {
        $(#[$meta])*
        // No explicit discriminants: dense ones make every lookup below a small table, and a
        // lookup that is never called (a meaning, a kind in the web build) is not linked.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        $vis enum $enum {
            $(
                $(#[doc = $doc])*
                #[doc = concat!("\n\nCode ", $number, ", kind `", $crate::__kind_name!($name $(: $kind)?), "`.")]
                $name,
            )*
        }

        impl $enum {
            /// Every code, in ascending order.
            pub const ALL: &'static [Self] = &[$(Self::$name),*];

            /// The stable number.
            pub const fn number(self) -> u16 {
                match self {
                    $(Self::$name => $number,)*
                }
            }

            /// The name of the code's constant (CamelCase; the bindings convert it).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($name),)*
                }
            }

            /// The kind name errors of this code report (`"DuplicateMessage"`, `"StoreBusy"`).
            pub const fn kind(self) -> &'static str {
                match self {
                    $(Self::$name => $crate::__kind_name!($name $(: $kind)?),)*
                }
            }

            /// What it means, in one line.
            pub const fn meaning(self) -> &'static str {
                match self {
                    $(Self::$name => concat!($($doc),*),)*
                }
                .trim_ascii()
            }

            /// The family: the hundreds digit.
            pub const fn family(self) -> $crate::codes::Family {
                $crate::codes::family_of(self.number())
            }

            /// Whether a message rejected with this code was decrypted before (duplicate or
            /// outdated): apps drop these silently.
            pub const fn is_already_seen(self) -> bool {
                $crate::codes::is_already_seen(self.number())
            }
        }
    };
}

/// Declares the codes a layer's errors report: an enum of its own codes and those of the
/// layers below, one variant per layer's enum (made by [`error_codes!`](crate::error_codes) or
/// by this macro), with the same methods read through, and `From` each layer's enum.
///
/// ```
/// proteus_core::error_codes! {
///     /// A layer's own codes.
///     pub enum OwnCode {
///         /// There is no session with this id.
///         SessionNotFound = 104;
///     }
/// }
/// proteus_core::error_code_layers! {
///     /// Every code the layer reports.
///     pub enum LayerCode {
///         /// The engine's.
///         Core(proteus_core::ErrorCode),
///         /// Its own.
///         Own(OwnCode),
///     }
/// }
/// let code = LayerCode::from(proteus_core::ErrorCode::DuplicateMessage);
/// assert_eq!((code.number(), code.is_already_seen()), (209, true));
/// assert_eq!(LayerCode::Own(OwnCode::SessionNotFound).kind(), "SessionNotFound");
/// ```
#[macro_export]
macro_rules! error_code_layers {
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident {
            $($(#[doc = $doc:literal])* $variant:ident($layer:ty),)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        $vis enum $enum {
            $($(#[doc = $doc])* $variant($layer),)*
        }

        impl $enum {
            /// The stable number.
            pub const fn number(self) -> u16 {
                match self {
                    $(Self::$variant(code) => code.number(),)*
                }
            }

            /// The name of the code's constant (CamelCase; the bindings convert it).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant(code) => code.name(),)*
                }
            }

            /// The kind name errors of this code report (`"DuplicateMessage"`, `"StoreBusy"`).
            pub const fn kind(self) -> &'static str {
                match self {
                    $(Self::$variant(code) => code.kind(),)*
                }
            }

            /// What it means, in one line.
            pub const fn meaning(self) -> &'static str {
                match self {
                    $(Self::$variant(code) => code.meaning(),)*
                }
            }

            /// The family: the hundreds digit.
            pub const fn family(self) -> $crate::codes::Family {
                $crate::codes::family_of(self.number())
            }

            /// Whether a message rejected with this code was decrypted before (duplicate or
            /// outdated): apps drop these silently.
            pub const fn is_already_seen(self) -> bool {
                $crate::codes::is_already_seen(self.number())
            }
        }

        $(
            impl From<$layer> for $enum {
                fn from(code: $layer) -> Self {
                    Self::$variant(code)
                }
            }
        )*
    };
}

crate::error_codes! {
    /// A code the protocol engine reports.
    pub enum ErrorCode {
        /// A key is degenerate, or a Diffie-Hellman result was all zero.
        DegeneratedKey = 100;
        /// The prekey a message or a call names is not stored (used up, or never ours).
        PreKeyNotFound = 101;
        /// The session has no state for its current tag (a corrupt session).
        NoSessionForTag = 102;
        /// The sending chain has used all its counters; the peer must reply first.
        ChainExhausted = 103;
        /// A session can only be created from a PreKeyMessage.
        NotAPreKeyMessage = 201;
        /// The PreKeyMessage carries another identity than the session's remote identity.
        RemoteIdentityChanged = 204;
        /// The session has no state for the message's session tag.
        UnknownSessionTag = 205;
        /// The message's MAC did not verify; its counter was the chain's next one.
        InvalidSignature = 206;
        /// The message's MAC did not verify; its counter was ahead of the chain.
        InvalidSignatureAhead = 207: InvalidSignature;
        /// The message is older than the oldest kept key of its chain and was decrypted before.
        OutdatedMessage = 208;
        /// The message was already decrypted.
        DuplicateMessage = 209;
        /// The message's MAC did not verify; its counter was behind the chain (a kept key).
        InvalidSignatureBehind = 210: InvalidSignature;
        /// The message skips more messages than allowed, on a receive chain still at its start.
        TooDistantFutureNewChain = 211: TooDistantFuture;
        /// The message skips more messages than allowed.
        TooDistantFuture = 212;
        /// The message's key was evicted (or cannot be told apart from one); it was not decrypted.
        MessageKeyEvicted = 214;
        /// A session belongs to another local identity than this one.
        LocalIdentityChanged = 300;
        /// A value had another CBOR type than the format requires.
        UnexpectedType = 301;
        /// The message type is neither cipher (1) nor prekey (2).
        UnknownMessageType = 302;
        /// A fixed-size byte string had the wrong length.
        InvalidLength = 303;
        /// A length or count exceeded a decoder limit.
        LimitExceeded = 304;
        /// A map repeated a key.
        DuplicateField = 305;
        /// The input ended in the middle of a value.
        Truncated = 306;
        /// Bytes were left over after the value.
        TrailingBytes = 307;
        /// A CBOR feature Proteus never uses (indefinite lengths, tags, floats).
        UnsupportedCbor = 308;
        /// An integer did not fit its field.
        IntegerOutOfRange = 309;
        /// A required field was absent.
        MissingField = 310;
        /// Values were nested deeper than the decoder allows.
        TooDeep = 311;
        /// A public key is not a valid prime-order point, or a secret key does not match its public half.
        InvalidKey = 409;
        /// The plaintext is longer than the engine allows.
        PlaintextTooLong = 410;
        /// The prekey store failed.
        PreKeyStore = 501;
    }
}

/// Numbers no code may take, with why: codes Wire gives another meaning (the client keeps its
/// own retired numbers).
pub const RESERVED: &[(u16, &str)] = &[
    (200, "Wire Rust: an unknown message type (302 here)"),
    (
        202,
        "Wire Rust: an invalid message (201 and 205 here, as Wire JS)",
    ),
    (203, "Wire JS: a prekey not found (101 here)"),
    (
        213,
        "Wire: RemoteEncryptionError, an application-level error",
    ),
    (
        406,
        "Wire Rust and core-crypto: every MAC failure (206, 207 and 210 here)",
    ),
];

/// Gives an error enum its `kind()` and `code()`, read from its own `const fn error_code(&self)`
/// (the one place its variants' codes are stated, as a layer's code enum), so that every error
/// reports them alike. Used by this crate and `proteus-client`.
#[doc(hidden)]
#[macro_export]
macro_rules! impl_kind_and_code {
    ($error:ty) => {
        impl $error {
            /// A stable name of the condition (`"DuplicateMessage"`, `"StoreBusy"`, …), the same
            /// in every binding, alongside [`code`](Self::code).
            pub const fn kind(&self) -> &'static str {
                self.error_code().kind()
            }

            /// The stable numeric code, the same in every binding.
            pub const fn code(&self) -> u16 {
                self.error_code().number()
            }
        }
    };
}

/// The engine's own list; the rules over every layer's codes together are checked where they
/// are assembled (`ffi/codes`).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_codes_are_ascending_and_not_reserved() {
        for pair in ErrorCode::ALL.windows(2) {
            assert!(pair[0].number() < pair[1].number(), "{pair:?}");
        }
        for code in ErrorCode::ALL {
            assert!(
                RESERVED.iter().all(|&(n, _)| n != code.number()),
                "{code:?}"
            );
        }
    }

    #[test]
    fn a_code_reads_as_declared() {
        let c = ErrorCode::InvalidSignatureBehind;
        assert_eq!(
            (c.number(), c.name(), c.kind(), c.family()),
            (
                210,
                "InvalidSignatureBehind",
                "InvalidSignature",
                Family::Decrypt
            )
        );
        assert_eq!(
            c.meaning(),
            "The message's MAC did not verify; its counter was behind the chain (a kept key)."
        );
        let seen: Vec<_> = ErrorCode::ALL
            .iter()
            .filter(|c| c.is_already_seen())
            .collect();
        assert_eq!(
            seen,
            [&ErrorCode::OutdatedMessage, &ErrorCode::DuplicateMessage]
        );
    }
}
