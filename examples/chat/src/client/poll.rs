//! The poller: long-polls the relay and hands each page to the chat; notices a lost relay,
//! and takes its place when it can.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::embed::Embedder;
use super::{LONG_POLL, LOW_PREKEYS, PAGE};
use crate::api::ErrorCode;
use crate::api::QueuePage;
use crate::net::{NetError, RelayClient};

/// What the poller tells the chat.
pub(super) enum Event {
    Page(QueuePage, oneshot::Sender<u64>),
    Lost(String),
    Back,
    Unregistered(oneshot::Sender<()>),
    LowPreKeys(u64, oneshot::Sender<()>),
}

/// Fetches new messages (long-poll) and hands them to the chat one page at a time; notices a
/// lost relay, and takes its place when it can.
pub(super) async fn poll(
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
            Err(e) if e.code() == Some(ErrorCode::UnknownUser) => {
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
