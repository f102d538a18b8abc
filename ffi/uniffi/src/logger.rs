//! The library's log, handed to the app's logger: the client logs through Rust's `log` facade
//! (which events, at which level, and how ids are kept out: proteus_client's `logging.rs`), and
//! one forwarder installed here passes each record on.

use std::sync::RwLock;

/// How much the library logs, from only errors to everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum LogLevel {
    /// Nothing is logged.
    Off,
    /// A store refused (rolled back).
    Error,
    /// Also the prekey stock running low, a checkpoint that failed.
    Warn,
    /// Also stores opened, migrations, each batch's summary, reloads, resets, imports.
    Info,
    /// Also what the library logs for debugging.
    Debug,
    /// Everything.
    Trace,
}

/// Receives the library's log lines. They hold no key material, no plaintext, and no session
/// id or fingerprint in clear (a session appears as a tag, `s:1a2b3c4d`, the same within one
/// client). Called on the library's thread, while a call is in progress: do not call the
/// client from here (it is busy).
#[uniffi::export(callback_interface)]
pub trait ProteusLogger: Send + Sync {
    /// One line at `level`.
    fn log(&self, level: LogLevel, message: String);
}

/// The app's logger, if one is set.
static LOGGER: RwLock<Option<Box<dyn ProteusLogger>>> = RwLock::new(None);

struct Forward;

static FORWARD: Forward = Forward;

impl log::Log for Forward {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        if let Ok(logger) = LOGGER.read()
            && let Some(logger) = logger.as_ref()
        {
            logger.log(level_of(record.level()), record.args().to_string());
        }
    }

    fn flush(&self) {}
}

fn level_of(level: log::Level) -> LogLevel {
    match level {
        log::Level::Error => LogLevel::Error,
        log::Level::Warn => LogLevel::Warn,
        log::Level::Info => LogLevel::Info,
        log::Level::Debug => LogLevel::Debug,
        log::Level::Trace => LogLevel::Trace,
    }
}

fn filter_of(level: LogLevel) -> log::LevelFilter {
    match level {
        LogLevel::Off => log::LevelFilter::Off,
        LogLevel::Error => log::LevelFilter::Error,
        LogLevel::Warn => log::LevelFilter::Warn,
        LogLevel::Info => log::LevelFilter::Info,
        LogLevel::Debug => log::LevelFilter::Debug,
        LogLevel::Trace => log::LevelFilter::Trace,
    }
}

/// Sends the library's log lines up to `level` to `logger`, for every client of the process;
/// `LogLevel.Off` (Swift `.off`) turns the log off again. Off by default, and then it costs
/// nothing.
#[uniffi::export]
pub fn set_logger(logger: Box<dyn ProteusLogger>, level: LogLevel) {
    // Set once per process; later calls only swap the app's logger.
    let _ = log::set_logger(&FORWARD);
    if let Ok(mut slot) = LOGGER.write() {
        *slot = (level != LogLevel::Off).then_some(logger);
    }
    log::set_max_level(filter_of(level));
}
