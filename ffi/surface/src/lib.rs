//! The client's calls that every binding offers alike — Kotlin and Swift (UniFFI), the web
//! package (wasm-bindgen) and the Node addon (napi-rs) — declared once, in [`client_calls!`].
//!
//! Each call is declared with its documentation, its arguments and result by *kind*, and its
//! body: what it does with the client (`proteus_client::Client`). A binding expands the list in
//! its own idiom — Kotlin's `suspend fun` and Swift's `async throws` on UniFFI's worker pool, a
//! Promise on libuv's pool in Node, a plain call in wasm — with its own types for each kind,
//! its own conversions and its own error crossing. So adding such a call to every language is
//! one declaration here (plus the JS argument checks and the TypeScript types, which are the
//! JS packages' API, and `ffi/api-surface.json`, which the bindings' tests compare with).
//!
//! Calls whose shape differs between languages (opening and closing, batches and their
//! delivery, the cryptobox import) are written in each binding.
//!
//! # Kinds
//!
//! The body sees each argument as its Rust value and returns `Result<T, ClientError>`:
//!
//! | argument kind | the body sees                  | result kind   | the body returns           |
//! |---------------|--------------------------------|---------------|----------------------------|
//! | `Id`          | a session id (`&str`-like)     | `Unit`        | `()`                       |
//! | `Str`         | a string (`&str`-like)         | `Bool`        | `bool`                     |
//! | `Data`        | bytes (`&[u8]`-like)           | `Count`       | `usize`                    |
//! | `SecretData`  | secret bytes (`&[u8]`-like), wiped after the call | `Text` | `String`      |
//! | `U32`         | `u32`                          | `MaybeText`   | `Option<String>`           |
//! | `Amount`      | `usize`                        | `Texts`       | `Vec<String>`              |
//! | `PrekeyId`    | `u16`                          | `Bytes`       | `Vec<u8>`                  |
//! |               |                                | `SecretBytes` | `Zeroizing<Vec<u8>>`       |
//! |               |                                | `Bundle`      | `PreKeyBundle`             |
//! |               |                                | `Bundles`     | `Vec<PreKeyBundle>`        |
//!
//! A binding whose language has no such integer (Kotlin's `Int` is signed) checks the range
//! before the call; one that cannot return a count in full saturates it.
//!
//! # Expansion
//!
//! `client_calls!(binding { Id: [T], Str: [T], Data: [T], SecretData: [T], U32: [T], Amount: [T],
//! PrekeyId: [T], Unit: [T], Bool: [T], Count: [T], Text: [T], MaybeText: [T], Texts: [T],
//! Bytes: [T], SecretBytes: [T], Bundle: [T], Bundles: [T] })` calls the binding's macro
//! `binding!` with every call, each as
//!
//! ```text
//! #[doc = ...]* fn rust_name / jsName ( arg: Kind [Type], ... ) -> Kind [Type] = |client| body;
//! ```
//!
//! where each `[Type]` is the binding's type of that kind, already substituted (the attribute
//! macros of wasm-bindgen, napi-rs and UniFFI read the types as written, so they must not be
//! macro calls), and the kinds are there for the binding's conversions.

#![no_std]

/// Calls `$binding!` with the client's shared calls, each kind replaced by the binding's type
/// (see the [crate docs](crate)).
#[macro_export]
macro_rules! client_calls {
    ($binding:ident {
        Id: [$($Id:tt)*], Str: [$($Str:tt)*], Data: [$($Data:tt)*],
        SecretData: [$($SecretData:tt)*], U32: [$($U32:tt)*], Amount: [$($Amount:tt)*],
        PrekeyId: [$($PrekeyId:tt)*], Unit: [$($Unit:tt)*],
        Bool: [$($Bool:tt)*], Count: [$($Count:tt)*], Text: [$($Text:tt)*],
        MaybeText: [$($MaybeText:tt)*], Texts: [$($Texts:tt)*], Bytes: [$($Bytes:tt)*],
        SecretBytes: [$($SecretBytes:tt)*], Bundle: [$($Bundle:tt)*],
        Bundles: [$($Bundles:tt)*] $(,)?
    }) => {
        $binding! {
            /// Our fingerprint: lowercase hex of the identity key (64 characters).
            fn fingerprint / fingerprint () -> Text [$($Text)*] = |c| Ok(c.fingerprint());

            /// Our identity's public key: the 32 bytes of the Ed25519 key (`fingerprint` is its
            /// hex).
            fn identity_key / identityKey () -> Bytes [$($Bytes)*] =
                |c| Ok(c.identity().public_key().as_bytes().to_vec());

            /// An Ed25519 signature of `message` by our identity key (64 bytes), e.g. to answer a
            /// server's authentication challenge; it verifies with `identityKey`. Prefix the
            /// message with a context string of your own: the identity key also signs prekey
            /// bundles.
            fn sign / sign (message: Data [$($Data)*]) -> Bytes [$($Bytes)*] =
                |c| Ok(c.sign(&message).to_vec());

            /// Raises how many skipped-message keys each chain keeps: 1000 (the default, and the
            /// least) to 10,000. A message may skip up to 100,000 messages whatever this is; the
            /// keys of the oldest skipped ones beyond this limit are evicted
            /// (`MessageKeyEvicted`, 214).
            fn set_max_counter_gap / setMaxCounterGap (gap: U32 [$($U32)*]) -> Unit [$($Unit)*] =
                |c| {
                    c.set_session_config(c.session_config().with_max_counter_gap(gap));
                    Ok(())
                };

            /// Generates `count` one-time prekeys and returns their bundles, for publishing.
            /// Ids are never reused while a prekey with that id is stored
            /// (`PreKeyIdsExhausted`, 110, if fewer are free).
            fn generate_prekeys / generatePrekeys (count: Amount [$($Amount)*])
                -> Bundles [$($Bundles)*] = |c| c.generate_prekeys(count);

            /// Generates one-time prekeys until `target` are stored and returns the new ones'
            /// bundles, for publishing (none if the stock is full). Ids go on from the last one
            /// handed out and wrap around after 65534, so a message in flight to a used prekey
            /// never meets a new one of the same id. `prekeysRemaining` is the stock.
            fn top_up_prekeys / topUpPrekeys (target: Amount [$($Amount)*])
                -> Bundles [$($Bundles)*] = |c| c.top_up_prekeys(target);

            /// The bundle of the last-resort prekey (id 65535), which is never used up.
            fn last_resort_bundle / lastResortBundle () -> Bundle [$($Bundle)*] =
                |c| c.last_resort_bundle();

            /// The bundle of a stored prekey (`PreKeyNotFound`, 101, if there is none).
            fn prekey_bundle / prekeyBundle (id: PrekeyId [$($PrekeyId)*])
                -> Bundle [$($Bundle)*] = |c| c.prekey_bundle(::proteus_core::PreKeyId::new(id));

            /// How many one-time prekeys are left (the last-resort prekey is not counted).
            fn prekeys_remaining / prekeysRemaining () -> Count [$($Count)*] =
                |c| c.prekeys_remaining();

            /// Starts a session with the owner of `bundle` (its bytes, as published) under an id
            /// of the application's choice, such as `"user:device"`.
            fn create_session / createSession (session_id: Id [$($Id)*], bundle: Data [$($Data)*])
                -> Unit [$($Unit)*] = |c| c.create_session(&session_id, &bundle);

            /// Replaces the session `session_id` with a new one from `bundle` (the peer's fresh
            /// prekey bundle), in one commit; returns whether the peer's identity differs from
            /// the old session's. Messages sent on the old session and not yet decrypted then
            /// fail with `UnknownSessionTag` (205), or `PreKeyNotFound` (101) for a PreKeyMessage
            /// to a used prekey. `SessionNotFound` (104) if there is no session to replace.
            fn reset_session / resetSession (session_id: Id [$($Id)*], bundle: Data [$($Data)*])
                -> Bool [$($Bool)*] = |c| c.reset_session(&session_id, &bundle);

            /// Whether a session with this id exists.
            fn has_session / hasSession (session_id: Id [$($Id)*]) -> Bool [$($Bool)*] =
                |c| c.has_session(&session_id);

            /// The ids of all sessions.
            fn session_ids / sessionIds () -> Texts [$($Texts)*] = |c| c.session_ids();

            /// The peer's fingerprint in a session.
            fn remote_fingerprint / remoteFingerprint (session_id: Id [$($Id)*])
                -> Text [$($Text)*] = |c| c.remote_fingerprint(&session_id);

            /// Deletes a session and its staged keys (nothing happens if there is none).
            fn delete_session / deleteSession (session_id: Id [$($Id)*]) -> Unit [$($Unit)*] =
                |c| c.delete_session(&session_id);

            /// Deletes the session `session_id`, its staged keys and the identity pinned for it,
            /// in one commit: for a peer the application is done with (a contact removed, a
            /// device logged out), whose pin would otherwise stay in the store for good. The id
            /// is then as one never seen: with identity pinning, the next identity seen for it is
            /// pinned anew. Nothing happens if there is neither a session nor a pin.
            fn forget_session / forgetSession (session_id: Id [$($Id)*]) -> Unit [$($Unit)*] =
                |c| c.forget_session(&session_id);

            /// The fingerprint (lowercase hex) of the identity pinned for `session_id`, or none.
            /// With identity pinning on (an option of opening the client) the first identity
            /// seen for a session id is pinned; a PreKeyMessage or a bundle of another one is
            /// refused with `RemoteIdentityChanged` (204), changing nothing, until
            /// `acceptIdentity`.
            fn pinned_identity / pinnedIdentity (session_id: Id [$($Id)*])
                -> MaybeText [$($MaybeText)*] = |c| c.pinned_identity(&session_id);

            /// Pins the identity `fingerprint` names (64 hex digits, as `remoteFingerprint` and a
            /// batch result's `sender` give it) for `session_id`, in one commit, and deletes a
            /// session of another identity under that id: a refused PreKeyMessage then decrypts
            /// (same message id), a refused bundle then makes the session with `createSession`.
            /// A malformed fingerprint is `InvalidFingerprint` (411).
            fn accept_identity / acceptIdentity (session_id: Id [$($Id)*], fingerprint: Str [$($Str)*])
                -> Unit [$($Unit)*] = |c| c.accept_identity(&session_id, &fingerprint);

            /// Encrypts for the session's peer. The advanced sending chain is committed before
            /// the envelope is returned.
            fn encrypt / encrypt (session_id: Id [$($Id)*], plaintext: Data [$($Data)*])
                -> Bytes [$($Bytes)*] = |c| c.encrypt(&session_id, &plaintext);

            /// Decrypts one message and commits the result. A PreKeyMessage from a new peer
            /// creates the session (its one-time prekey is deleted in the same commit).
            fn decrypt / decrypt (session_id: Id [$($Id)*], envelope: Data [$($Data)*])
                -> Bytes [$($Bytes)*] = |c| c.decrypt(&session_id, &envelope);

            /// Replaces the identity with one serialised by Wire's Proteus (or this library).
            /// Only allowed while there are no sessions (`IdentityInUse`, 107).
            fn import_identity / importIdentity (identity: SecretData [$($SecretData)*])
                -> Unit [$($Unit)*] = |c| c.import_identity(&identity);

            /// Stores a prekey serialised by Wire's Proteus (or this library), replacing one with
            /// the same id; returns its id.
            fn import_prekey / importPrekey (prekey: SecretData [$($SecretData)*])
                -> Count [$($Count)*] =
                |c| c.import_prekey(&prekey).map(|id| usize::from(id.value()));

            /// Stores a session serialised by Wire's Proteus (or this library) under
            /// `session_id`.
            fn import_session / importSession
                (session_id: Id [$($Id)*], session: SecretData [$($SecretData)*])
                -> Unit [$($Unit)*] = |c| c.import_session(&session_id, &session);

            /// The identity key pair, serialised as Wire's Proteus does. It holds the secret key:
            /// wipe it after use.
            fn export_identity / exportIdentity () -> SecretBytes [$($SecretBytes)*] =
                |c| Ok(c.export_identity());

            /// A session, serialised as Wire's Proteus does. It holds secret keys.
            fn export_session / exportSession (session_id: Id [$($Id)*])
                -> SecretBytes [$($SecretBytes)*] = |c| c.export_session(&session_id);
        }
    };
}
