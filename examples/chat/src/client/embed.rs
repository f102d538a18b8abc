//! Relay takeover: when no relay answers at a loopback address, the chat runs one itself.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use super::terminal::say;
use crate::relay::{self, RelayConfig, RelayHandle};

/// Runs a relay in this process when none answers at its (loopback) address.
pub(super) struct Embedder {
    config: Option<RelayConfig>,
    addr: SocketAddr,
    running: tokio::sync::Mutex<Option<RelayHandle>>,
}

impl Embedder {
    /// Runs a relay with `config` at `addr` when none answers there; `None`: never.
    pub(super) fn new(config: Option<RelayConfig>, addr: SocketAddr) -> Self {
        Self {
            config,
            addr,
            running: tokio::sync::Mutex::new(None),
        }
    }

    /// Starts the relay here if the address is free; false if it is taken or embedding is off.
    pub(super) async fn try_start(&self) -> bool {
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

    pub(super) async fn stop(&self) {
        if let Some(handle) = self.running.lock().await.take() {
            handle.shutdown().await;
        }
    }
}
