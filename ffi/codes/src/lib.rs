//! The bindings' own error codes, and every layer's codes assembled into the one table of error
//! codes that the bindings' constants (Kotlin, Swift, JavaScript, `ffi/error-codes.json`) are
//! generated from (`tests/error_code_files.rs`) and that UniFFI's `errorCodes()` lists.
//!
//! Each layer declares the codes it reports itself, with `proteus_core::error_codes!`, in its
//! own crate: the engine in `proteus_core::codes`, the client and its store in
//! `proteus_client::codes` (including 599 `Internal`: the client reports it for a broken
//! invariant, and the bindings for their own bugs, a panic or a trap), and the bindings here.
//!
//! Why the bindings' codes live here, in a crate of their own under `ffi/`: the engine and the
//! client never report them, so they should not name them; and no one binding's crate is their
//! home. `ClientBusy`, `CallbackFailed` and `ClientClosed` are reported both by the Kotlin/Swift
//! adapter (`ffi/uniffi`) and by the web package's JavaScript; `StoreConflict` and
//! `StoreUnavailable` by that JavaScript alone, which has no Rust to declare them in. The table
//! of every code needs every layer's list, so it is assembled here too, above the client, and
//! the rules every code keeps (ascending, distinct, never a reserved number, a kind within one
//! family) are checked over all of it.

use proteus_client::codes::ClientCode;

proteus_core::error_codes! {
    /// A code of the Kotlin/Swift adapter and of the web package (its JavaScript).
    pub enum BindingsCode {
        /// A call made while another call of the same client delivers its results (re-entrancy),
        /// or that waited for it longer than the client's wait timeout.
        ClientBusy = 120;
        /// The application's batch callback threw; nothing of the batch was committed.
        CallbackFailed = 121;
        /// The client was closed (Swift `close()`); open the store again to go on.
        ClientClosed = 122;
    }
}

proteus_core::error_codes! {
    /// A code only the web package reports (its JavaScript: IndexedDB and tabs).
    pub enum WebCode {
        /// Another client of the store (another tab) committed first; nothing of this call was stored.
        StoreConflict = 512;
        /// This runtime has no durable store for the web package: `Client.open` needs IndexedDB,
        /// which Node.js lacks (there the durable store is the Node package's native addon).
        StoreUnavailable = 513;
    }
}

proteus_core::error_code_layers! {
    /// Any code of the library: the client's errors' (the engine's and the client's own), the
    /// bindings' and the web package's.
    pub enum ErrorCode {
        /// A code the client's errors report (`proteus_client::codes::ErrorCode`).
        Client(proteus_client::codes::ErrorCode),
        /// The bindings'.
        Bindings(BindingsCode),
        /// The web package's.
        Web(WebCode),
    }
}

impl From<proteus_core::ErrorCode> for ErrorCode {
    fn from(code: proteus_core::ErrorCode) -> Self {
        Self::Client(code.into())
    }
}

impl From<ClientCode> for ErrorCode {
    fn from(code: ClientCode) -> Self {
        Self::Client(code.into())
    }
}

impl ErrorCode {
    /// The layer that declares (and reports) the code.
    pub const fn layer(self) -> Layer {
        match self {
            Self::Client(proteus_client::codes::ErrorCode::Core(_)) => Layer::Core,
            Self::Client(_) => Layer::Client,
            Self::Bindings(_) => Layer::Bindings,
            Self::Web(_) => Layer::Web,
        }
    }
}

/// Which layer declares (and reports) a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// The protocol engine (`proteus_core::ErrorCode`).
    Core,
    /// The client and its storage (`proteus_client::codes::ClientCode`).
    Client,
    /// The Kotlin/Swift and web bindings themselves ([`BindingsCode`]).
    Bindings,
    /// Only the web package ([`WebCode`]).
    Web,
}

impl Layer {
    /// Every layer, from the engine up.
    pub const ALL: [Self; 4] = [Self::Core, Self::Client, Self::Bindings, Self::Web];

    /// The layer's name, as the generated table spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Core => "Core",
            Self::Client => "Client",
            Self::Bindings => "Bindings",
            Self::Web => "Web",
        }
    }

    /// The codes the layer declares, ascending.
    pub fn codes(self) -> Vec<ErrorCode> {
        fn each<C: Copy + Into<ErrorCode>>(codes: &[C]) -> Vec<ErrorCode> {
            codes.iter().map(|&c| c.into()).collect()
        }
        match self {
            Self::Core => each(proteus_core::ErrorCode::ALL),
            Self::Client => each(ClientCode::ALL),
            Self::Bindings => each(BindingsCode::ALL),
            Self::Web => each(WebCode::ALL),
        }
    }

    /// The numbers the layer retired or leaves to Wire's meaning, with why.
    pub const fn reserved(self) -> &'static [(u16, &'static str)] {
        match self {
            Self::Core => proteus_core::codes::RESERVED,
            Self::Client => proteus_client::codes::RESERVED,
            Self::Bindings | Self::Web => &[],
        }
    }
}

/// Every code of every layer, in ascending order.
pub fn all() -> Vec<ErrorCode> {
    let mut all: Vec<_> = Layer::ALL.iter().flat_map(|layer| layer.codes()).collect();
    all.sort_by_key(|code| code.number());
    all
}

/// Every number no code may take, in ascending order, with why.
pub fn reserved() -> Vec<(u16, &'static str)> {
    let mut all: Vec<_> = Layer::ALL
        .iter()
        .flat_map(|layer| layer.reserved().iter().copied())
        .collect();
    all.sort_by_key(|&(number, _)| number);
    all
}

/// The code of `number`, if this version knows it.
pub fn from_number(number: u16) -> Option<ErrorCode> {
    all().into_iter().find(|code| code.number() == number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes() -> Vec<ErrorCode> {
        all()
    }

    #[test]
    fn numbers_are_ascending_and_distinct() {
        for pair in codes().windows(2) {
            assert!(pair[0].number() < pair[1].number(), "{pair:?}");
        }
        for layer in Layer::ALL {
            for pair in layer.codes().windows(2) {
                assert!(pair[0].number() < pair[1].number(), "{layer:?}: {pair:?}");
            }
        }
        let reserved = reserved();
        for pair in reserved.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{pair:?}");
        }
    }

    #[test]
    fn every_number_is_in_its_family_range_and_not_reserved() {
        let reserved = reserved();
        for code in codes() {
            assert!((100..600).contains(&code.number()), "{code:?}");
            assert!(
                reserved.iter().all(|&(n, _)| n != code.number()),
                "{code:?} takes a reserved number"
            );
            assert_eq!(from_number(code.number()), Some(code));
            assert!(!code.meaning().is_empty(), "{code:?}");
        }
        assert_eq!(from_number(109), None);
    }

    #[test]
    fn a_kind_spans_several_codes_only_within_one_family() {
        let codes = codes();
        for a in &codes {
            for b in &codes {
                if a.kind() == b.kind() {
                    assert_eq!(a.family(), b.family(), "{a:?} {b:?}");
                    assert!(
                        a.name().starts_with(a.kind()),
                        "{a:?}: a constant's name starts with its kind"
                    );
                }
            }
        }
        let shared: Vec<_> = codes
            .iter()
            .filter(|c| c.name() != c.kind())
            .map(|c| c.number())
            .collect();
        assert_eq!(shared, [207, 210, 211]);
    }

    #[test]
    fn already_seen_is_duplicate_or_outdated_only() {
        let seen: Vec<_> = codes()
            .iter()
            .filter(|c| c.is_already_seen())
            .map(|c| c.number())
            .collect();
        assert_eq!(seen, [208, 209]);
    }

    /// 599 is the client's (its `Internal`); the bindings name theirs only.
    #[test]
    fn each_code_is_declared_by_the_layer_that_reports_it() {
        let layer_of = |n| from_number(n).map(ErrorCode::layer);
        assert_eq!(layer_of(599), Some(Layer::Client));
        assert_eq!(layer_of(120), Some(Layer::Bindings));
        assert_eq!(layer_of(512), Some(Layer::Web));
        assert_eq!(layer_of(501), Some(Layer::Core));
    }
}
