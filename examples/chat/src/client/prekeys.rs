//! Our name and prekeys at the relay: registration, and one-time prekeys refilled in time.

use super::terminal::say;
use super::{Chat, ChatError, LOW_PREKEYS, PREKEY_STOCK};
use crate::api::ErrorCode;

impl Chat {
    /// Registers our name with our identity key and tops up our prekeys at the relay.
    pub(super) async fn announce(&mut self) -> Result<(), ChatError> {
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
            Err(e) if e.code() == Some(ErrorCode::IdentityConflict) => Err(ChatError(format!(
                "the relay has {} registered with another identity key: pick another name, or use the data directory that holds {}'s store",
                self.me, self.me
            ))),
            Err(e) => {
                say(format!("! could not register at the relay: {e}"));
                Ok(())
            }
        }
    }

    /// Publishes new one-time prekeys if the relay has fewer than [`LOW_PREKEYS`] left, so that
    /// it holds [`PREKEY_STOCK`] again: the engine's `top_up_prekeys`, with the prekeys claimed at
    /// the relay whose first messages have not arrived yet (still stored here) counted apart.
    pub(super) async fn top_up(&mut self, remaining: u64, with_last_resort: bool) {
        if remaining >= LOW_PREKEYS && !with_last_resort {
            return;
        }
        let bundles = if remaining < LOW_PREKEYS {
            let in_flight = self.client().prekeys_remaining().map(|stored| {
                stored.saturating_sub(usize::try_from(remaining).unwrap_or(usize::MAX))
            });
            match in_flight.and_then(|n| self.client().top_up_prekeys(n + PREKEY_STOCK)) {
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
}
