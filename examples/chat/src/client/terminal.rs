//! The terminal: lines printed at once and made safe, standard input read on a thread of its
//! own, Ctrl-C and SIGTERM caught.

use std::io::{BufRead, Write as _};

use super::ChatError;
use tokio::sync::mpsc;

/// Prints a line at once (stdout may be a pipe).
pub(super) fn say(line: impl AsRef<str>) {
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

/// Waits for Ctrl-C (SIGINT) or SIGTERM. Installed at start, so neither kills the process
/// midway: the chat stops between two operations and closes its stores (whose commits are
/// atomic anyway).
pub(super) struct Quit {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Quit {
    pub(super) fn install() -> Result<Self, ChatError> {
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

    pub(super) async fn wait(&mut self) {
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
pub(super) fn read_lines() -> mpsc::Receiver<String> {
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
