//! The chat client: one user talking to one peer through a relay.
//!
//! State lives in the data directory: the engine's store (`store.sqlite`: identity, prekeys,
//! sessions) and the chat's own records (`chat.sqlite`, see [`crate::chatdb`]). Session ids are
//! peer user names (one device per user).
//!
//! Delivery is exactly-once and in order per sender: the relay numbers each recipient's
//! messages; a page of them is decrypted with [`Client::decrypt_batch`], whose last `deliver`
//! call writes the plaintexts to `chat.sqlite` by message id before the engine commits; only
//! then are the lines shown and the page acknowledged (deleted at the relay). A page delivered
//! again after a crash is dropped by message id (or comes back from the engine as duplicates).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write as _};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use proteus_core::{Envelope, Message, PreKeyBundle};
use proteus_store::{Client, ClientError, OpenMode, QueuedMessage, SqliteOptions, StoreError};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use crate::api::{self, QueuePage};
use crate::chatdb::{ChatDb, Held, MAX_HELD_PER_PEER, Received};
use crate::net::{NetError, RelayClient};
use crate::relay::{self, RelayConfig, RelayHandle};

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
/// …with this many.
pub const PREKEY_BATCH: usize = 100;
/// The longest line sent, in bytes.
pub const MAX_TEXT: usize = 4000;
const PAGE: u64 = 1000;
const LONG_POLL: Duration = Duration::from_secs(20);
const PROGRESS_FROM: u64 = 100;

fn lock(client: &Mutex<Client>) -> MutexGuard<'_, Client> {
    client.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Prints a line at once (stdout may be a pipe).
fn say(line: impl AsRef<str>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line.as_ref());
    let _ = out.flush();
}

/// Makes received text safe to print: control characters (terminal escapes) are escaped.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// A fingerprint in groups of eight for reading aloud.
pub fn grouped(fingerprint: &str) -> String {
    fingerprint
        .as_bytes()
        .chunks(8)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a relay in this process when none answers at its (loopback) address.
struct Embedder {
    config: Option<RelayConfig>,
    addr: SocketAddr,
    running: tokio::sync::Mutex<Option<RelayHandle>>,
}

impl Embedder {
    /// Starts the relay here if the address is free; false if it is taken or embedding is off.
    async fn try_start(&self) -> bool {
        let Some(config) = &self.config else {
            return false;
        };
        let mut running = self.running.lock().await;
        if running.is_some() {
            return false;
        }
        let Ok(listener) = TcpListener::bind(self.addr).await else {
            return false;
        };
        match relay::start(listener, config.clone()) {
            Ok(handle) => {
                say(format!(
                    "* no relay answered at {}: this process runs it now (its state: {})",
                    self.addr,
                    config.db.display()
                ));
                if config.web_dir.is_some() && config.web_pkg_dir.is_some() {
                    say(format!("* the web client: http://{}/", self.addr));
                }
                *running = Some(handle);
                true
            }
            Err(e) => {
                say(format!("! could not start a relay here: {e}"));
                false
            }
        }
    }

    async fn stop(&self) {
        if let Some(handle) = self.running.lock().await.take() {
            handle.shutdown().await;
        }
    }
}

enum Event {
    Page(QueuePage, oneshot::Sender<u64>),
    Lost(String),
    Back,
    Unregistered(oneshot::Sender<()>),
    LowPreKeys(u64, oneshot::Sender<()>),
}

struct Chat {
    me: String,
    peer: String,
    client: Arc<Mutex<Client>>,
    db: ChatDb,
    relay: Arc<RelayClient>,
    outbox_blocked: bool,
}

/// What a page of messages gave.
struct Outcome {
    lines: Vec<String>,
    notes: Vec<String>,
    count: usize,
    /// Time spent writing the plaintexts to the chat's records.
    recording: Duration,
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
    let db = ChatDb::open(&dir.join("chat.sqlite"))?;
    let client = Arc::new(Mutex::new(client));
    let signer = {
        let client = client.clone();
        Arc::new(move |message: &[u8]| lock(&client).sign(message))
    };
    let relay = Arc::new(RelayClient::new(options.relay, &options.me, signer));
    let embedder = Arc::new(Embedder {
        config: (options.embed && options.relay.ip().is_loopback()).then(|| RelayConfig {
            web_dir: options.web_dir.clone(),
            web_pkg_dir: options.web_pkg_dir.clone(),
            ..RelayConfig::new(options.data.join("relay").join("relay.sqlite"))
        }),
        addr: options.relay,
        running: tokio::sync::Mutex::new(None),
    });

    let mut chat = Chat {
        me: options.me.clone(),
        peer: options.peer.clone(),
        client,
        db,
        relay,
        outbox_blocked: false,
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

/// Waits for Ctrl-C (SIGINT) or SIGTERM. Installed at start, so neither kills the process
/// midway: the chat stops between two operations and closes its stores (whose commits are
/// atomic anyway).
struct Quit {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Quit {
    fn install() -> Result<Self, ChatError> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let fail = |e: std::io::Error| ChatError(format!("signal handler: {e}"));
            Ok(Self {
                int: signal(SignalKind::interrupt()).map_err(fail)?,
                term: signal(SignalKind::terminate()).map_err(fail)?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    async fn wait(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Standard input, line by line, from a thread of its own (a blocking read must not hold up
/// the runtime, nor its shutdown).
fn read_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match input.read_until(b'\n', &mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx
                        .blocking_send(String::from_utf8_lossy(&buffer).into_owned())
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// Fetches new messages (long-poll) and hands them to the chat one page at a time; notices a
/// lost relay, and takes its place when it can.
async fn poll(
    relay: Arc<RelayClient>,
    embedder: Arc<Embedder>,
    events: mpsc::Sender<Event>,
    mut cursor: u64,
) {
    let mut failures = 0u32;
    loop {
        match relay.fetch(cursor, PAGE, LONG_POLL).await {
            Ok(page) => {
                if failures > 0 {
                    failures = 0;
                    // Maybe another relay, with its own numbering: start over (seen ids are
                    // dropped).
                    cursor = 0;
                    if events.send(Event::Back).await.is_err() {
                        return;
                    }
                    continue;
                }
                if page.messages.is_empty() {
                    if page.prekeys_remaining < LOW_PREKEYS {
                        let (done, refilled) = oneshot::channel();
                        if events
                            .send(Event::LowPreKeys(page.prekeys_remaining, done))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        let _ = refilled.await;
                    }
                    continue;
                }
                let (done, up_to) = oneshot::channel();
                if events.send(Event::Page(page, done)).await.is_err() {
                    return;
                }
                match up_to.await {
                    Ok(up_to) => cursor = up_to,
                    Err(_) => return,
                }
            }
            Err(e) if e.code() == Some("unknown_user") => {
                let (done, registered) = oneshot::channel();
                if events.send(Event::Unregistered(done)).await.is_err() {
                    return;
                }
                let _ = registered.await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                failures += 1;
                if failures == 1 && events.send(Event::Lost(e.to_string())).await.is_err() {
                    return;
                }
                if matches!(e, NetError::Unreachable(_)) && embedder.try_start().await {
                    continue;
                }
                let pause = if failures < 5 { 200 } else { 1000 };
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
        }
    }
}

impl Chat {
    fn client(&self) -> MutexGuard<'_, Client> {
        lock(&self.client)
    }

    /// Registers our name with our identity key and tops up our prekeys at the relay.
    async fn announce(&mut self) -> Result<(), ChatError> {
        let identity = *self.client().identity();
        match self.relay.register(&identity).await {
            Ok(registered) => {
                if registered.created {
                    say(format!(
                        "* registered {} at the relay with your identity key",
                        self.me
                    ));
                }
                self.top_up(registered.prekeys_remaining, true).await;
                Ok(())
            }
            Err(e) if e.code() == Some("identity_conflict") => Err(ChatError(format!(
                "the relay has {} registered with another identity key: pick another name, or use the data directory that holds {}'s store",
                self.me, self.me
            ))),
            Err(e) => {
                say(format!("! could not register at the relay: {e}"));
                Ok(())
            }
        }
    }

    /// Publishes new one-time prekeys if the relay has fewer than [`LOW_PREKEYS`] left.
    async fn top_up(&mut self, remaining: u64, with_last_resort: bool) {
        if remaining >= LOW_PREKEYS && !with_last_resort {
            return;
        }
        let bundles = if remaining < LOW_PREKEYS {
            match self.client().generate_prekeys(PREKEY_BATCH) {
                Ok(b) => b,
                Err(e) => {
                    say(format!("! could not make prekeys: {e}"));
                    return;
                }
            }
        } else {
            Vec::new()
        };
        let last_resort = self.client().last_resort_bundle().ok();
        match self
            .relay
            .upload_prekeys(&bundles, last_resort.as_ref())
            .await
        {
            Ok(_) if !bundles.is_empty() => say(format!(
                "* published {} new one-time prekeys at the relay ({remaining} were left)",
                bundles.len()
            )),
            Ok(_) => {}
            Err(e) => say(format!("! could not publish prekeys: {e}")),
        }
    }

    /// Fetches and decrypts everything queued while we were away, with a progress bar for a
    /// large backlog and the time it took. Returns the last sequence number seen.
    async fn backlog(&mut self) -> Result<u64, ChatError> {
        let mut cursor = 0;
        let mut bar: Option<ProgressBar> = None;
        let (mut fetching, mut decrypting, mut recording) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let mut total = 0usize;
        let mut senders = HashSet::new();
        loop {
            let started = Instant::now();
            let page = match self.relay.fetch(cursor, PAGE, Duration::ZERO).await {
                Ok(page) => page,
                Err(e) => {
                    say(format!("! could not fetch queued messages: {e}"));
                    break;
                }
            };
            fetching += started.elapsed();
            let Some(last) = page.messages.last().map(|m| m.seq) else {
                self.top_up(page.prekeys_remaining, false).await;
                break;
            };
            let queued = page.messages.len() as u64 + page.remaining;
            if bar.is_none() && total == 0 && queued >= PROGRESS_FROM {
                let b = ProgressBar::new(queued);
                b.set_style(
                    ProgressStyle::with_template(
                        "{spinner} decrypting the backlog {bar:40} {pos}/{len} messages",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar = Some(b);
            }
            senders.extend(page.messages.iter().map(|m| m.from.clone()));
            let started = Instant::now();
            let outcome = self.process(&page, bar.as_ref(), total as u64)?;
            decrypting += started.elapsed();
            recording += outcome.recording;
            total += outcome.count;
            if let Some(b) = &bar {
                b.suspend(|| show(&outcome));
            } else {
                show(&outcome);
            }
            self.db.mark_shown()?;
            self.acknowledge(last).await;
            cursor = last;
            self.top_up(page.prekeys_remaining, false).await;
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        if total > 0 {
            say(format!(
                "* {total} queued message{} from {} sender{} decrypted in {:.1} ms with the batch API ({:.1} ms of it saving them to the chat's records; fetched in {:.1} ms)",
                if total == 1 { "" } else { "s" },
                senders.len(),
                if senders.len() == 1 { "" } else { "s" },
                decrypting.as_secs_f64() * 1e3,
                recording.as_secs_f64() * 1e3,
                fetching.as_secs_f64() * 1e3,
            ));
        }
        Ok(cursor)
    }

    /// A page that arrived while we are online.
    async fn live(&mut self, page: QueuePage) -> Result<u64, ChatError> {
        let Some(last) = page.messages.last().map(|m| m.seq) else {
            return Ok(0);
        };
        let outcome = self.process(&page, None, 0)?;
        show(&outcome);
        self.db.mark_shown()?;
        self.acknowledge(last).await;
        self.top_up(page.prekeys_remaining, false).await;
        Ok(last)
    }

    async fn acknowledge(&self, up_to: u64) {
        // A failed ack only means the same envelopes come again: they are dropped by id.
        if let Err(e) = self.relay.ack(up_to).await {
            say(format!(
                "! could not acknowledge messages at the relay: {e}"
            ));
        }
    }

    /// Decrypts a page with the batch API. The plaintexts are recorded in the chat's records
    /// by message id in the batch's last `deliver` call, i.e. before the engine commits; lines
    /// already recorded (a re-delivery) are dropped.
    fn process(
        &mut self,
        page: &QueuePage,
        bar: Option<&ProgressBar>,
        offset: u64,
    ) -> Result<Outcome, ChatError> {
        let mut notes = Vec::new();
        let mut envelopes = Vec::with_capacity(page.messages.len());
        for m in &page.messages {
            match api::unb64(&m.envelope) {
                Some(e) if api::valid_name(&m.from) => envelopes.push((m.from.clone(), e)),
                _ => notes.push(format!(
                    "! the relay sent a malformed message (#{}); dropped",
                    m.seq
                )),
            }
        }
        self.decrypt(&envelopes, bar, offset, notes)
    }

    fn decrypt(
        &mut self,
        envelopes: &[(String, Vec<u8>)],
        bar: Option<&ProgressBar>,
        offset: u64,
        mut notes: Vec<String>,
    ) -> Result<Outcome, ChatError> {
        let (queue, held) = self.screen(envelopes)?;
        notes.extend(self.hold(&held)?);
        let mut received = Vec::new();
        let mut fresh = Vec::new();
        let mut failure = None;
        let mut recording = Duration::ZERO;
        let client = self.client.clone();
        let mut client = lock(&client);
        let db = &mut self.db;
        let result = client.decrypt_batch(&queue, |d, progress| {
            match &d.outcome {
                Ok(plaintext) => received.push(Received {
                    id: d.message_id,
                    from: d.session_id.clone(),
                    text: String::from_utf8_lossy(plaintext).into_owned(),
                }),
                Err(_) if d.is_already_seen() => {}
                Err(e) => notes.push(format!(
                    "! a message from {} could not be decrypted: {e} ({} {}){}",
                    d.session_id,
                    e.kind(),
                    e.code(),
                    if e.code() == 104 {
                        format!("; {} may have to /reset the session", d.session_id)
                    } else {
                        String::new()
                    }
                )),
            }
            if let Some(bar) = bar {
                bar.set_position(offset + progress.done as u64);
            }
            if progress.done == progress.total {
                // Before the engine commits: the plaintexts must be safe first.
                let started = Instant::now();
                let recorded = db.record_batch(&received);
                recording = started.elapsed();
                match recorded {
                    Ok(f) => fresh = f,
                    Err(e) => {
                        failure = Some(e);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        });
        if let Some(e) = failure {
            return Err(e.into());
        }
        result?;

        // Pin first-seen identities; a changed one waits for /accept.
        let mut seen = HashSet::new();
        for m in &received {
            if !seen.insert(m.from.clone()) {
                continue;
            }
            if let Ok(fingerprint) = client.remote_fingerprint(&m.from) {
                notes.extend(self.db_check_identity(&m.from, &fingerprint)?);
            }
        }
        drop(client);
        let lines = received
            .iter()
            .zip(fresh.iter().chain(std::iter::repeat(&false)))
            .filter(|(_, fresh)| **fresh)
            .map(|(m, _)| format!("{}: {}", m.from, printable(&m.text)))
            .collect();
        Ok(Outcome {
            lines,
            notes,
            count: envelopes.len(),
            recording,
        })
    }

    /// Splits a page before anything is decrypted: a prekey message that claims an identity
    /// other than its sender's pinned one is held, unread (after a `/reset` too, when there is
    /// no session that would make the engine refuse it); the rest goes to the engine.
    fn screen<'e>(
        &self,
        envelopes: &'e [(String, Vec<u8>)],
    ) -> Result<(Vec<QueuedMessage<'e>>, Vec<Held>), ChatError> {
        let mut pinned: HashMap<&str, Option<String>> = HashMap::new();
        let mut queue = Vec::with_capacity(envelopes.len());
        let mut held = Vec::new();
        for (from, envelope) in envelopes {
            let claimed = Envelope::from_bytes(envelope)
                .ok()
                .and_then(|e| match e.message() {
                    Message::PreKey(pkm) => Some(pkm.identity_key.fingerprint()),
                    Message::Cipher(_) => None,
                });
            if let Some(claimed) = claimed {
                let known = match pinned.get(from.as_str()) {
                    Some(known) => known.clone(),
                    None => {
                        let known = self.db.peer(from)?.map(|p| p.fingerprint);
                        pinned.insert(from, known.clone());
                        known
                    }
                };
                if known.is_some_and(|known| known != claimed) {
                    held.push(Held {
                        from: from.clone(),
                        fingerprint: claimed,
                        envelope: envelope.clone(),
                    });
                    continue;
                }
            }
            queue.push(QueuedMessage {
                session_id: from,
                envelope,
            });
        }
        Ok((queue, held))
    }

    /// Keeps held envelopes, marks their identity as changed, and says so.
    fn hold(&mut self, held: &[Held]) -> Result<Vec<String>, ChatError> {
        let mut notes = Vec::new();
        if held.is_empty() {
            return Ok(notes);
        }
        let dropped = self.db.hold(held)?;
        let mut seen = HashSet::new();
        for h in held {
            if seen.insert((&h.from, &h.fingerprint)) {
                notes.extend(self.db_check_identity(&h.from, &h.fingerprint)?);
            }
        }
        let mut peers = HashSet::new();
        for h in held {
            if peers.insert(&h.from) {
                notes.push(format!(
                    "! messages from {} are held until you /accept {}'s new identity",
                    h.from, h.from
                ));
            }
        }
        if dropped > 0 {
            notes.push(format!(
                "! {dropped} more held message(s) dropped: at most {MAX_HELD_PER_PEER} are held per peer"
            ));
        }
        Ok(notes)
    }

    /// Compares a peer's identity with the pinned one; pins it on first sight.
    fn db_check_identity(&self, peer: &str, fingerprint: &str) -> Result<Vec<String>, ChatError> {
        match self.db.peer(peer)? {
            None => {
                self.db.pin(peer, fingerprint)?;
                Ok(vec![format!(
                    "* {peer}'s fingerprint: {} (first seen; compare it with {peer}'s /fingerprint)",
                    grouped(fingerprint)
                )])
            }
            Some(p)
                if p.fingerprint != fingerprint && p.pending.as_deref() != Some(fingerprint) =>
            {
                self.db.set_pending(peer, fingerprint)?;
                Ok(changed_warning(peer, &p.fingerprint, fingerprint))
            }
            Some(_) => Ok(Vec::new()),
        }
    }

    /// Handles one line of input; false to quit.
    async fn command(&mut self, line: &str) -> Result<bool, ChatError> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "" => {}
            "/quit" | "/exit" => return Ok(false),
            "/help" => {
                for l in [
                    "* type a line and Enter to send it to the peer",
                    "* /fingerprint   both identity fingerprints, to compare over another channel",
                    "* /accept        trust the peer's changed identity key",
                    "* /reset         delete the session with the peer; the next line starts a new one",
                    "* /status        outbox and prekeys",
                    "* /quit          leave (Ctrl-C and Ctrl-D too)",
                ] {
                    say(l);
                }
            }
            "/fingerprint" | "/fp" => self.fingerprints()?,
            "/accept" => self.accept()?,
            "/reset" => {
                let peer = self.peer.clone();
                self.client().delete_session(&peer)?;
                say(format!(
                    "* the session with {peer} is deleted: the next line starts a new one"
                ));
            }
            "/status" => {
                let waiting = self.db.outbox()?.len();
                let (received, sent) = self.db.counts(&self.peer)?;
                let prekeys = self.client().prekeys_remaining()?;
                say(format!(
                    "* outbox: {waiting} waiting; with {}: {received} received, {sent} sent; {prekeys} one-time prekeys on this device",
                    self.peer
                ));
            }
            w if w.starts_with("//") => self.send(&line[1..]).await?,
            w if w.starts_with('/') => {
                let _ = rest;
                say(format!("! unknown command {w}; /help lists them"));
            }
            _ => self.send(line).await?,
        }
        Ok(true)
    }

    fn fingerprints(&mut self) -> Result<(), ChatError> {
        let mine = self.client().fingerprint();
        say(format!("* you ({}):  {}", self.me, grouped(&mine)));
        let peer = self.peer.clone();
        match self.db.peer(&peer)? {
            None => say(format!(
                "* {peer}: no identity seen yet (it is pinned with the first message either way)"
            )),
            Some(p) => {
                say(format!("* {peer}:  {}", grouped(&p.fingerprint)));
                if let Some(pending) = p.pending {
                    say(format!(
                        "! {peer}'s identity CHANGED to {}: not accepted (/accept)",
                        grouped(&pending)
                    ));
                }
            }
        }
        Ok(())
    }

    fn accept(&mut self) -> Result<(), ChatError> {
        let peer = self.peer.clone();
        let Some(pending) = self.db.peer(&peer)?.and_then(|p| p.pending) else {
            say(format!(
                "* nothing to accept: {peer}'s identity has not changed"
            ));
            return Ok(());
        };
        let stale = {
            let mut client = self.client();
            client.has_session(&peer)? && client.remote_fingerprint(&peer)? != pending
        };
        if stale {
            self.client().delete_session(&peer)?;
        }
        self.db.accept(&peer)?;
        say(format!(
            "* {peer}'s new identity {} is accepted",
            grouped(&pending)
        ));
        let held = self.db.held(&peer)?;
        if let Some((last, _)) = held.last() {
            let last = *last;
            // Only what claimed the accepted identity (or was held before the claim was
            // recorded); a forgery among them fails to decrypt, the genuine one does not.
            let (envelopes, other): (Vec<_>, Vec<_>) = held
                .into_iter()
                .map(|(_, h)| h)
                .partition(|h| h.fingerprint == pending || h.fingerprint.is_empty());
            let envelopes: Vec<(String, Vec<u8>)> = envelopes
                .into_iter()
                .map(|h| (peer.clone(), h.envelope))
                .collect();
            let mut notes = Vec::new();
            if !other.is_empty() {
                notes.push(format!(
                    "! {} held message(s) claimed another identity of {peer}; dropped",
                    other.len()
                ));
            }
            let outcome = self.decrypt(&envelopes, None, 0, notes)?;
            self.db.drop_held(&peer, last)?;
            show(&outcome);
            self.db.mark_shown()?;
        }
        Ok(())
    }

    /// Encrypts and sends a line (through the outbox, so nothing typed is lost while the
    /// relay is away).
    async fn send(&mut self, text: &str) -> Result<(), ChatError> {
        let peer = self.peer.clone();
        if text.len() > MAX_TEXT {
            say(format!("! not sent: a line is at most {MAX_TEXT} bytes"));
            return Ok(());
        }
        if let Some(p) = self.db.peer(&peer)?
            && let Some(pending) = p.pending
        {
            for l in changed_warning(&peer, &p.fingerprint, &pending) {
                say(l);
            }
            say("! not sent");
            return Ok(());
        }
        let has_session = self.client().has_session(&peer)?;
        if !has_session {
            let (bundle, _) = match self.relay.claim(&peer).await {
                Ok(b) => b,
                Err(e) if matches!(e.code(), Some("unknown_user" | "no_prekeys")) => {
                    say(format!(
                        "! not sent: {peer} has not joined the relay yet (run `proteus-chat {peer} {}`)",
                        self.me
                    ));
                    return Ok(());
                }
                Err(e) => {
                    say(format!("! not sent: {e}"));
                    return Ok(());
                }
            };
            let fingerprint = match PreKeyBundle::from_bytes(&bundle) {
                Ok(b) => b.identity_key().fingerprint(),
                Err(e) => {
                    say(format!(
                        "! not sent: the relay gave a bad bundle for {peer}: {e}"
                    ));
                    return Ok(());
                }
            };
            let notes = self.db_check_identity(&peer, &fingerprint)?;
            let blocked = self.db.peer(&peer)?.is_some_and(|p| p.pending.is_some());
            for l in notes {
                say(l);
            }
            if blocked {
                say("! not sent");
                return Ok(());
            }
            self.client().create_session(&peer, &bundle)?;
        }
        let envelope = self.client().encrypt(&peer, text.as_bytes())?;
        self.db.record_sent(&peer, text, &envelope)?;
        self.flush_outbox().await;
        Ok(())
    }

    /// Sends what waits in the outbox, in order; stops at the first failure to retry later.
    async fn flush_outbox(&mut self) {
        let Ok(outbox) = self.db.outbox() else {
            return;
        };
        for (n, peer, envelope) in outbox {
            match self.relay.send(&peer, &envelope).await {
                Ok(_) => {
                    let _ = self.db.outbox_done(n);
                }
                Err(NetError::Api {
                    status,
                    code,
                    message,
                }) if status != 429 && status < 500 => {
                    say(format!(
                        "! the relay refused a message to {peer} ({code}: {message}); dropped"
                    ));
                    let _ = self.db.outbox_done(n);
                }
                Err(e) => {
                    if !self.outbox_blocked {
                        say(format!(
                            "* kept in the outbox, sent when the relay is back ({e})"
                        ));
                    }
                    self.outbox_blocked = true;
                    return;
                }
            }
        }
    }
}

fn changed_warning(peer: &str, known: &str, now: &str) -> Vec<String> {
    vec![
        format!("! WARNING: {peer}'s identity key has CHANGED"),
        format!("!   known: {}", grouped(known)),
        format!("!   now:   {}", grouped(now)),
        format!(
            "! {peer} may have reinstalled, or someone may be impersonating {peer}. Compare fingerprints"
        ),
        format!(
            "! with {peer} over another channel; /accept trusts the new key. Nothing is sent to {peer} until then."
        ),
    ]
}

fn show(outcome: &Outcome) {
    for l in outcome.notes.iter().chain(&outcome.lines) {
        say(l);
    }
}
