//! The library's log for JavaScript. The client logs through Rust's `log` facade (its events,
//! levels and redaction: proteus_client's `logging.rs`); while the app has a logger set, the
//! records are kept here in order, and native.js hands them to it on the JS thread after each
//! call (`takeLog`). Off by default, and then nothing is kept or formatted.

use std::sync::Mutex;

use napi_derive::napi;

/// The most lines kept between two calls: past it the oldest go (a logger that is never drained
/// must not grow without bound), and the next `takeLog` says how many.
pub(crate) const MAX_KEPT_LINES: usize = 10_000;

struct Kept {
    lines: Vec<LogLine>,
    dropped: usize,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept {
    lines: Vec::new(),
    dropped: 0,
});

/// One line of the library's log.
#[napi(object)]
pub struct LogLine {
    /// 'error', 'warn', 'info', 'debug' or 'trace'.
    pub level: String,
    /// The line: no key, plaintext, session id or fingerprint in it.
    pub message: String,
}

struct Keep;

static KEEP: Keep = Keep;

impl log::Log for Keep {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = LogLine {
            level: record.level().as_str().to_ascii_lowercase(),
            message: record.args().to_string(),
        };
        if let Ok(mut kept) = KEPT.lock() {
            if kept.lines.len() >= MAX_KEPT_LINES {
                kept.lines.remove(0);
                kept.dropped += 1;
            }
            kept.lines.push(line);
        }
    }

    fn flush(&self) {}
}

/// Keeps the library's log lines up to `level` (0 off, 1 error … 5 trace) for `takeLog`.
#[napi]
pub fn set_log_level(level: u32) {
    let _ = log::set_logger(&KEEP);
    log::set_max_level(match level {
        0 => log::LevelFilter::Off,
        1 => log::LevelFilter::Error,
        2 => log::LevelFilter::Warn,
        3 => log::LevelFilter::Info,
        4 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    });
    if level == 0
        && let Ok(mut kept) = KEPT.lock()
    {
        kept.lines.clear();
        kept.dropped = 0;
    }
}

/// The lines kept since the last call, in order (a first line says how many were dropped, if
/// any were).
#[napi]
pub fn take_log() -> Vec<LogLine> {
    let Ok(mut kept) = KEPT.lock() else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if kept.dropped > 0 {
        lines.push(LogLine {
            level: "warn".into(),
            message: format!(
                "{} log lines were dropped (more than {MAX_KEPT_LINES} between two calls)",
                kept.dropped
            ),
        });
        kept.dropped = 0;
    }
    lines.append(&mut kept.lines);
    lines
}
