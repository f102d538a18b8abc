//! Running `proteus-chat` processes: type into their standard input, read their output.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_proteus-chat");

/// A running `proteus-chat`, its output read line by line.
pub struct Proc {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far.
    pub transcript: Vec<String>,
}

impl Proc {
    pub fn spawn(name: &str, args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn proteus-chat");
        let (tx, lines) = channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Self {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
            transcript: Vec::new(),
        }
    }

    /// A relay on a free port of 127.0.0.1; returns it and its address.
    pub fn relay(data: &Path, extra: &[&str]) -> (Self, String) {
        let mut args = vec![
            "relay",
            "--listen",
            "127.0.0.1:0",
            "--data",
            data.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let mut relay = Self::spawn("relay", &args);
        let line = relay.wait_for(|l| l.contains("listening on"), Duration::from_secs(60));
        let addr = line
            .split_whitespace()
            .find(|w| w.starts_with("127.0.0.1:"))
            .unwrap()
            .to_owned();
        (relay, addr)
    }

    /// `proteus-chat me peer` at the relay `addr`, ready to chat.
    pub fn chat(me: &str, peer: &str, addr: &str, data: &Path) -> Self {
        let mut chat = Self::spawn(
            me,
            &[
                me,
                peer,
                "--relay",
                addr,
                "--data",
                data.to_str().unwrap(),
                "--no-embed",
            ],
        );
        chat.wait_for(
            |l| l.contains("end-to-end encrypted"),
            Duration::from_secs(60),
        );
        chat
    }

    pub fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Types many lines at once.
    pub fn type_lines(&mut self, lines: &[String]) {
        let stdin = self.stdin.as_mut().unwrap();
        let mut all = lines.join("\n");
        all.push('\n');
        stdin.write_all(all.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// The next line, if one comes within `timeout`.
    pub fn next_line(&mut self, timeout: Duration) -> Option<String> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => {
                self.transcript.push(line.clone());
                Some(line)
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Reads lines until one matches; fails with the transcript if none comes in time.
    pub fn wait_for(&mut self, matches: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left) {
                Some(line) if matches(&line) => return line,
                Some(_) => {}
                None => panic!(
                    "{}: no matching line within {timeout:?}; transcript:\n{}",
                    self.name,
                    self.transcript.join("\n")
                ),
            }
        }
    }

    /// Reads every line the process wrote, up to the end of its output (both pipes closed: it
    /// has exited, or was killed); fails with the transcript if the end does not come within
    /// `timeout`.
    pub fn read_to_end(&mut self, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.transcript.push(line.clone());
                    lines.push(line);
                }
                Err(RecvTimeoutError::Disconnected) => return lines,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "{}: its output did not end within {timeout:?}; transcript:\n{}",
                    self.name,
                    self.transcript.join("\n")
                ),
            }
        }
    }

    /// `/quit`, and the exit status.
    pub fn quit(mut self) -> ExitStatus {
        self.type_line("/quit");
        self.wait_exit()
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "{} did not exit", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}
