//! The one async runtime behind every object read and upload.
//!
//! Readers are synchronous; the store's client is async. Each request runs
//! as a task on a private multi-threaded runtime and the calling thread
//! waits on a channel for its answer. This works from any thread,
//! including a thread of another runtime (an async application, a query
//! engine), where blocking on a runtime directly would panic.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::mpsc;

use tokio::runtime::{Builder, Runtime};

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

fn runtime() -> std::io::Result<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
            Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("dataformats-remote")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| std::io::Error::other(format!("starting the object-storage runtime: {e}")))
}

/// Starts `fut` on the runtime without waiting; its answer arrives on the
/// returned channel.
pub(crate) fn spawn<F>(fut: F) -> std::io::Result<mpsc::Receiver<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        // The receiver may be gone (its reader was dropped): nothing to do.
        let _ = tx.send(fut.await);
    });
    Ok(rx)
}

/// Runs `fut` on the runtime and waits for its answer.
pub(crate) fn block_on<F>(fut: F) -> std::io::Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    wait(spawn(fut)?)
}

/// The answer on `rx`; an error if its task died without answering.
pub(crate) fn wait<T>(rx: mpsc::Receiver<T>) -> std::io::Result<T> {
    rx.recv()
        .map_err(|_| std::io::Error::other("an object-storage task ended without an answer"))
}
