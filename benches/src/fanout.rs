//! `fanout4000`: one plaintext sent to every device of a large conversation — 4000 sessions,
//! as a Wire group of 500 members with several devices each.
//!
//! The sender's sessions are established (its peers replied), so every envelope is a
//! CipherMessage. The timed part is one [`Client::encrypt_for`] on a client that has already
//! sent to the group since it started (its sessions are cached: an untimed send comes first);
//! `sqlite-per-message` times the way without fan-out, one `encrypt` (one commit) per session.
//! A sample of the recipients decrypts its envelope afterwards (not timed).

use proteus_client::Client;

use crate::BoxError;
use crate::scenarios::{ALICE, ClientSeed, SetupParty, establish};
use crate::stores::StoreKind;

/// How many sessions the message goes to.
pub const RECIPIENTS: usize = 4000;

/// The plaintext's length, a typical chat message with its Wire framing.
pub const PLAINTEXT_LEN: usize = 150;

/// Every this many recipients, one keeps its state to check its envelope.
const SAMPLE_EVERY: usize = 499;

/// A recipient whose envelope is checked after each run.
pub struct Sample {
    /// Its position in the recipient list.
    pub index: usize,
    /// Its state before the run; it knows the sender as [`ALICE`].
    pub receiver: ClientSeed,
}

/// The recipients and the checked sample.
pub struct FanOut {
    /// The sender's session ids, in sending order.
    pub recipients: Vec<String>,
    /// What the timed call sends.
    pub plaintext: Vec<u8>,
    /// Recipients that decrypt their envelope after each run.
    pub samples: Vec<Sample>,
}

/// The sender's id of recipient `i`'s device.
pub fn recipient_id(i: usize) -> String {
    format!("member-{:03}:device-{}", i / 8, i % 8)
}

impl FanOut {
    /// Builds the sender (returned first) with `recipients` established sessions (setup;
    /// seconds).
    pub fn build(recipients: usize) -> Result<(ClientSeed, Self), BoxError> {
        let mut sender = SetupParty::new()?;
        let mut samples = Vec::new();
        let ids: Vec<String> = (0..recipients).map(recipient_id).collect();
        for (index, id) in ids.iter().enumerate() {
            let mut receiver = SetupParty::new()?;
            establish(&mut sender, ALICE, &mut receiver, id)?;
            if index % SAMPLE_EVERY == 0 {
                samples.push(Sample {
                    index,
                    receiver: receiver.seed()?,
                });
            }
        }
        let fan_out = Self {
            recipients: ids,
            plaintext: vec![b'x'; PLAINTEXT_LEN],
            samples,
        };
        Ok((sender.seed()?, fan_out))
    }
}

/// The envelopes of one send, in recipient order.
pub type Envelopes = Vec<Vec<u8>>;

/// Sends `plaintext` to every recipient as `store` says: one `encrypt_for` (batched stores) or
/// one `encrypt` per session.
pub fn send(
    client: &mut Client,
    recipients: &[&str],
    plaintext: &[u8],
    store: StoreKind,
) -> Result<Envelopes, BoxError> {
    if store.batched() {
        client
            .encrypt_for(recipients, plaintext)?
            .into_iter()
            .map(|r| r.map_err(BoxError::from))
            .collect()
    } else {
        recipients
            .iter()
            .map(|id| client.encrypt(id, plaintext).map_err(BoxError::from))
            .collect()
    }
}

/// Checks that the sampled recipients decrypt their envelope to `plaintext`.
pub fn check(fan_out: &FanOut, envelopes: &Envelopes) -> Result<(), BoxError> {
    if envelopes.len() != fan_out.recipients.len() {
        return Err(format!(
            "{} envelopes for {} recipients",
            envelopes.len(),
            fan_out.recipients.len()
        )
        .into());
    }
    for sample in &fan_out.samples {
        let mut receiver = sample.receiver.in_memory()?;
        let envelope = envelopes.get(sample.index).ok_or("no envelope")?;
        if receiver.decrypt(ALICE, envelope)? != fan_out.plaintext {
            return Err(format!("recipient {} read something else", sample.index).into());
        }
    }
    Ok(())
}
