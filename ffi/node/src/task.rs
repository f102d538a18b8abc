//! One call of a [`RawClient`](crate::RawClient) as a Node-API async work item ([`Call`]): the
//! client's method runs on libuv's thread pool and the Promise resolves on the JS thread. That
//! is two thread crossings per call, where an `async fn` on napi-rs's tokio runtime with
//! `spawn_blocking` made three (JS → runtime → blocking pool → runtime → JS) and a threadsafe
//! function per call to resolve its Promise.
//!
//! A batch whose results go to a JS callback does not run here: it waits for JS while it runs,
//! and on libuv's small pool (4 threads by default) a few such batches whose callbacks wait for
//! `fs` (the same pool) could block each other for good. Those run on tokio's blocking pool
//! ([`on_blocking_pool`]).

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{AsyncTask, ToNapiValue, TypeName, spawn_blocking};
use napi::{Env, Task};
use proteus_client::Client;

use crate::error::{Failure, Outcome, internal, outcome};

/// The client a [`RawClient`](crate::RawClient) holds; `None` once closed (the keys are wiped
/// when it drops).
pub(crate) type Shared = Arc<Mutex<Option<Client>>>;

type Work<T> = Box<dyn FnOnce(&mut Client) -> Result<T, Failure> + Send>;

/// `work` on the client, as an async work item whose Promise resolves to its result.
pub struct Call<T> {
    shared: Shared,
    work: Option<Work<T>>,
}

/// Runs `f` on the client off the JS thread; the Promise resolves to what it returns, or to
/// the library's failure (see [`crate::error`]). The JS layer runs one call of a client at a
/// time; the lock is for the pool's threads.
pub(crate) fn run<T, F>(shared: &Shared, f: F) -> AsyncTask<Call<T>>
where
    T: ToNapiValue + TypeName + Send + 'static,
    F: FnOnce(&mut Client) -> Result<T, Failure> + Send + 'static,
{
    AsyncTask::new(Call {
        shared: shared.clone(),
        work: Some(Box::new(f)),
    })
}

fn with_client<T>(shared: &Shared, work: Work<T>) -> Result<T, Failure> {
    let mut guard = shared
        .lock()
        .map_err(|_| internal("a call failed midway"))?;
    let client = guard
        .as_mut()
        .ok_or_else(|| internal("a call of a closed client"))?;
    work(client)
}

impl<T> Task for Call<T>
where
    T: ToNapiValue + TypeName + Send + 'static,
{
    type Output = Outcome<T>;
    type JsValue = Outcome<T>;

    fn compute(&mut self) -> napi::Result<Outcome<T>> {
        let work = self.work.take();
        outcome(work.map_or_else(
            || Err(internal("a call ran twice")),
            |work| with_client(&self.shared, work),
        ))
    }

    fn resolve(&mut self, _env: Env, output: Outcome<T>) -> napi::Result<Outcome<T>> {
        Ok(output)
    }
}

/// As [`run`], on tokio's blocking pool, for work that waits for JS while it runs.
pub(crate) async fn on_blocking_pool<T, F>(shared: &Shared, f: F) -> napi::Result<Outcome<T>>
where
    T: Send + 'static,
    F: FnOnce(&mut Client) -> Result<T, Failure> + Send + 'static,
{
    let shared = shared.clone();
    outcome(
        spawn_blocking(move || with_client(&shared, Box::new(f)))
            .await
            .unwrap_or_else(|e| Err(internal(&e.to_string()))),
    )
}
