//! The chat client: one user talking to one peer through a relay.
//!
//! State lives in the data directory: the engine's store (`store.sqlite`: identity, prekeys,
//! sessions) and the chat's own records (`chat.sqlite`, see [`records`]). Session ids are
//! peer user names (one device per user).
//!
//! Delivery is exactly-once and in order per sender: the relay numbers each recipient's
//! messages; a page of them is decrypted with [`Client::decrypt_batch`], whose last `deliver`
//! call writes the plaintexts to `chat.sqlite` by message id before the engine commits; only
//! then are the lines shown and the page acknowledged (deleted at the relay). A page delivered
//! again after a crash is dropped by message id (or comes back from the engine as duplicates).
//!
//! Its parts:
//!
//! * this module: [`ChatOptions`], [`ChatError`], [`run`] (start, reach or become the relay,
//!   the event loop);
//! * `terminal`: printing, safe text, fingerprints in groups, standard input, Ctrl-C/SIGTERM;
//! * `embed`: relay takeover (a relay in this process when none answers);
//! * `poll`: the long-poll loop and the events it sends to the chat;
//! * `prekeys`: registration and prekey refills at the relay;
//! * `inbox`: the backlog and live pages, batch-decrypted, recorded, shown, acknowledged;
//! * `identity`: identities pinned by the engine on first use, held messages, `/accept`;
//! * `commands`: what is typed at the prompt; `outbox`: sending, kept until the relay has it;
//! * [`records`]: the chat's own SQLite records (received, sent, outbox, held).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use proteus_client::{Client, ClientError, OpenMode, SqliteOptions, StoreError};
use tokio::sync::mpsc;

use self::embed::Embedder;
use self::poll::{Event, poll};
use self::records::ChatDb;
use self::terminal::{Quit, read_lines, say};
use crate::api;
use crate::net::RelayClient;
use crate::relay::RelayConfig;

mod commands;
mod embed;
mod identity;
mod inbox;
mod outbox;
mod poll;
mod prekeys;
pub mod records;
mod terminal;

pub use self::terminal::{grouped, printable};

/// How the chat starts.
#[derive(Debug, Clone)]
pub struct ChatOptions {
    /// Our user name.
    pub me: String,
    /// Whom we talk to.
    pub peer: String,
    /// The relay's address.
    pub relay: SocketAddr,
    /// The data directory: our state in `<data>/<me>/`, an embedded relay's in `<data>/relay/`.
    pub data: PathBuf,
    /// Whether to run the relay in this process when none answers at a loopback address.
    pub embed: bool,
    /// Static files for an embedded relay to serve (the web client).
    pub web_dir: Option<PathBuf>,
    /// The web package for an embedded relay to serve at `/pkg/`.
    pub web_pkg_dir: Option<PathBuf>,
}

/// The chat could not start or had to stop.
#[derive(Debug)]
pub struct ChatError(pub String);

impl std::fmt::Display for ChatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChatError {}

impl From<rusqlite::Error> for ChatError {
    fn from(e: rusqlite::Error) -> Self {
        Self(format!("chat records: {e}"))
    }
}

impl From<ClientError> for ChatError {
    fn from(e: ClientError) -> Self {
        Self(format!("engine: {e} ({} {})", e.kind(), e.code()))
    }
}

/// Refill the relay's one-time prekeys when fewer than this are left…
pub const LOW_PREKEYS: u64 = 25;
/// …up to this many.
pub const PREKEY_STOCK: usize = 100;
/// The longest line sent, in bytes.
pub const MAX_TEXT: usize = 4000;
const PAGE: u64 = 1000;
const LONG_POLL: Duration = Duration::from_secs(20);
const PROGRESS_FROM: u64 = 100;

fn lock(client: &Mutex<Client>) -> MutexGuard<'_, Client> {
    client.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Chat {
    me: String,
    peer: String,
    client: Arc<Mutex<Client>>,
    db: ChatDb,
    relay: Arc<RelayClient>,
    outbox_blocked: bool,
    /// A changed identity a bundle had, refused by the engine, waiting for `/accept`.
    pending_bundles: HashMap<String, String>,
}

/// An SQLite file locked exclusively for as long as the connection lives: a second opener waits
/// 500 ms and gets `DatabaseBusy`. The lock goes with the process, however it ends.
fn instance_lock(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(Duration::from_millis(500))?;
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    // A write takes the exclusive lock, which exclusive locking mode keeps until the close.
    conn.execute_batch("BEGIN EXCLUSIVE; PRAGMA user_version = 1; COMMIT;")?;
    Ok(conn)
}

/// Runs the chat until `/quit`, end of input, Ctrl-C or SIGTERM.
pub async fn run(options: ChatOptions) -> Result<(), ChatError> {
    for name in [&options.me, &options.peer] {
        if !api::valid_name(name) {
            return Err(ChatError(format!(
                "invalid user name {name:?}: 1 to {} of a-z, 0-9, '.', '_', '-'",
                api::MAX_NAME_LEN
            )));
        }
    }
    if options.me == options.peer {
        return Err(ChatError("chatting with yourself is not supported".into()));
    }
    let mut quit = Quit::install()?;

    let dir = options.data.join(&options.me);
    std::fs::create_dir_all(&dir).map_err(|e| ChatError(format!("{}: {e}", dir.display())))?;
    // One chat per user: the Proteus store may be shared by processes (an app and its
    // extension), but not the chat's terminal, outbox and polling.
    let _instance =
        instance_lock(&dir.join("instance.lock")).map_err(|e| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                ChatError(format!(
                    "another proteus-chat is running as {} (data {})",
                    options.me,
                    dir.display()
                ))
            }
            _ => ChatError(format!("{}: {e}", dir.display())),
        })?;
    let store = dir.join("store.sqlite");
    let client = Client::open_with(
        &store,
        OpenMode::ExistingOrNew,
        &SqliteOptions {
            busy_timeout: Duration::from_millis(500),
        },
    )
    .map_err(|e| match e {
        ClientError::Store(StoreError::Busy) => ChatError(format!(
            "the store {} is busy: another process is using it",
            store.display()
        )),
        e => ChatError(format!("{}: {e}", store.display())),
    })?;
    let mut client = client;
    client.set_identity_pinning(true);
    let mut db = ChatDb::open(&dir.join("chat.sqlite"))?;
    identity::migrate_pins(&mut client, &mut db)?;
    let client = Arc::new(Mutex::new(client));
    let signer = {
        let client = client.clone();
        Arc::new(move |message: &[u8]| lock(&client).sign(message))
    };
    let relay = Arc::new(RelayClient::new(options.relay, &options.me, signer));
    let embedder = Arc::new(Embedder::new(
        (options.embed && options.relay.ip().is_loopback()).then(|| RelayConfig {
            web_dir: options.web_dir.clone(),
            web_pkg_dir: options.web_pkg_dir.clone(),
            ..RelayConfig::new(options.data.join("relay").join("relay.sqlite"))
        }),
        options.relay,
    ));

    let mut chat = Chat {
        me: options.me.clone(),
        peer: options.peer.clone(),
        client,
        db,
        relay,
        outbox_blocked: false,
        pending_bundles: HashMap::new(),
    };

    // Reach a relay, or become one.
    let mut waiting = false;
    loop {
        if chat.relay.ping().await.is_ok() || embedder.try_start().await {
            break;
        }
        if !waiting {
            say(format!(
                "* waiting for a relay at {} (Ctrl-C to quit)",
                options.relay
            ));
            waiting = true;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = quit.wait() => return Ok(()),
        }
    }
    chat.announce().await?;
    say(format!(
        "* {} ↔ {}, end-to-end encrypted, via the relay at {}. /help lists the commands.",
        chat.me, chat.peer, options.relay
    ));
    // Lines a crash kept from the screen last time (recorded, the batch committed, not shown).
    let unshown = chat.db.unshown()?;
    if !unshown.is_empty() {
        say(format!(
            "* {} message{} received just before the last stop, maybe not shown then:",
            unshown.len(),
            if unshown.len() == 1 { "" } else { "s" }
        ));
        for (from, text) in &unshown {
            say(format!("{from}: {}", printable(text)));
        }
    }
    chat.db.mark_shown()?;
    let cursor = chat.backlog().await?;
    chat.flush_outbox().await;

    let (events, mut event_rx) = mpsc::channel(16);
    let poller = tokio::spawn(poll(chat.relay.clone(), embedder.clone(), events, cursor));
    let mut lines = read_lines();
    let mut retry = tokio::time::interval(Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = quit.wait() => break,
            line = lines.recv() => match line {
                None => break,
                Some(line) => {
                    if !chat.command(line.trim_end_matches(['\r', '\n'])).await? {
                        break;
                    }
                }
            },
            event = event_rx.recv() => match event {
                None => break,
                Some(Event::Page(page, done)) => {
                    let up_to = chat.live(page).await?;
                    let _ = done.send(up_to);
                }
                Some(Event::Lost(e)) => say(format!(
                    "* lost the relay ({e}); reconnecting. What you type is kept and sent when it is back."
                )),
                Some(Event::Back) => {
                    say("* the relay is back");
                    chat.announce().await?;
                    chat.outbox_blocked = false;
                    chat.flush_outbox().await;
                }
                Some(Event::LowPreKeys(remaining, done)) => {
                    chat.top_up(remaining, false).await;
                    let _ = done.send(());
                }
                Some(Event::Unregistered(done)) => {
                    chat.announce().await?;
                    let _ = done.send(());
                }
            },
            _ = retry.tick() => {
                if chat.outbox_blocked {
                    chat.outbox_blocked = false;
                    chat.flush_outbox().await;
                }
            }
        }
    }
    poller.abort();
    embedder.stop().await;
    chat.db.mark_shown()?;
    drop(chat);
    say("* bye");
    Ok(())
}

impl Chat {
    fn client(&self) -> MutexGuard<'_, Client> {
        lock(&self.client)
    }
}
