//! One object in a store, read by byte ranges with read-ahead and retries.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use dataformats_core::RangeRead;
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, ObjectStoreScheme, RetryConfig};

use crate::{Error, runtime};

/// How an [`ObjectSource`] reads.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteOptions {
    /// How many times a failed or short answer is asked again (with
    /// exponential backoff from 50 ms) before the read fails. The store's
    /// client also retries transient HTTP failures on its own.
    pub retries: u32,
    /// The largest read-ahead window, in bytes.
    pub max_window: u64,
    /// The most requests one read keeps in flight at once.
    pub concurrency: usize,
    /// The size of each request a large read is split into, in bytes.
    pub part_size: u64,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            retries: 3,
            max_window: 16 << 20,
            concurrency: 8,
            part_size: 4 << 20,
        }
    }
}

impl RemoteOptions {
    /// These options with `retries` retries of a failed or short answer.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }
}

/// Requests made and bytes received by one [`ObjectSource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Range requests sent (retries included).
    pub requests: u64,
    /// Bytes received in answers taken as data.
    pub bytes: u64,
}

/// The first read-ahead window, in bytes.
const FIRST_WINDOW: u64 = 256 << 10;
/// A read that starts at most this far past the end of the previous one
/// still counts as continuing it.
const SEQUENTIAL_GAP: u64 = 64 << 10;
/// Objects up to this size are fetched whole by their first read: one
/// request costs about as much as a few kilobytes, and reading a small
/// file's header and tables takes many small reads.
const SMALL: u64 = 1 << 20;
/// Announced ranges closer than this are fetched as one request.
const MERGE_GAP: u64 = 64 << 10;
/// Bytes of announced ranges kept per object (fetched or in flight); the
/// oldest are dropped first.
const PLAN_BUDGET: u64 = 256 << 20;
/// Read-ahead windows kept per object.
const WINDOWS: usize = 4;

/// One object in a store: its length (asked once) and ranged reads of it.
/// A [`RangeRead`], so [`Source::from_ranges`](dataformats_core::Source::from_ranges)
/// makes it a source every reader takes.
#[derive(Debug)]
pub struct ObjectSource {
    shared: Arc<Shared>,
    opts: RemoteOptions,
    ahead: Mutex<Ahead>,
    /// A small object's bytes, fetched whole by its first read.
    whole: Mutex<Option<Arc<Pieces>>>,
}

/// What the tasks that fetch need: the store, the object and the counters.
#[derive(Debug)]
struct Shared {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    /// The object's length when opened: every answer must be of an object
    /// of this length (one that changed since is an error, never a value).
    size: u64,
    requests: AtomicU64,
    bytes: AtomicU64,
    /// Requests in flight at once for this object, at most.
    permits: tokio::sync::Semaphore,
}

/// The read-ahead state: recent windows, where the last read ended, and
/// the size of the next window.
#[derive(Debug, Default)]
struct Ahead {
    windows: VecDeque<Window>,
    /// Where the last read ended.
    last_end: u64,
    /// Where the current run of consecutive reads started.
    run_start: u64,
    /// Ranges a reader said it is about to read ([`RangeRead::prefetch`]),
    /// oldest first, and their total size (kept under [`PLAN_BUDGET`]).
    planned: VecDeque<Window>,
    planned_bytes: u64,
}

/// A range of the object being fetched or fetched.
#[derive(Debug, Clone)]
struct Window {
    range: Range<u64>,
    slot: Arc<Slot>,
}

/// The answer for a window, once it has come.
#[derive(Debug, Default)]
struct Slot {
    answer: Mutex<Option<Result<Arc<Pieces>, String>>>,
    ready: Condvar,
}

impl Slot {
    fn fill(&self, answer: Result<Pieces, String>) {
        *lock(&self.answer) = Some(answer.map(Arc::new));
        self.ready.notify_all();
    }

    fn wait(&self) -> Result<Arc<Pieces>, String> {
        let mut guard = lock(&self.answer);
        loop {
            if let Some(a) = guard.as_ref() {
                return a.clone();
            }
            guard = self
                .ready
                .wait(guard)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// The bytes of a range as the answers' bodies brought them, in order: the
/// client's buffers, kept as they are (a read copies out of them once,
/// into the caller's buffer).
#[derive(Debug, Default)]
struct Pieces {
    parts: Vec<Bytes>,
    /// Where each part starts, from the start of the range.
    starts: Vec<usize>,
    len: usize,
}

impl Pieces {
    fn push(&mut self, b: Bytes) {
        if b.is_empty() {
            return;
        }
        self.starts.push(self.len);
        self.len += b.len();
        self.parts.push(b);
    }

    fn append(&mut self, other: Pieces) {
        for b in other.parts {
            self.push(b);
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Copies bytes `from ..` into `dst`, as many as `dst` holds or there
    /// are; returns how many.
    fn copy_to(&self, from: usize, dst: &mut [u8]) -> usize {
        // The part holding `from`: the last one starting at or before it.
        let mut k = self
            .starts
            .partition_point(|&s| s <= from)
            .saturating_sub(1);
        let mut at = from;
        let mut done = 0;
        while done < dst.len() {
            let (Some(part), Some(&start)) = (self.parts.get(k), self.starts.get(k)) else {
                break;
            };
            let src = part.get(at - start..).unwrap_or_default();
            let n = src.len().min(dst.len() - done);
            if let (Some(d), Some(s)) = (dst.get_mut(done..done + n), src.get(..n)) {
                d.copy_from_slice(s);
            }
            done += n;
            at += n;
            k += 1;
        }
        done
    }
}

/// Locks `m`, taking over a lock whose holder panicked (the data is plain
/// bookkeeping, valid at every step).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes rustls on ring the process's TLS provider, once, unless the program
/// installed one of its own first (which is then used as it is). The stores'
/// HTTP client asks for the process's provider when it is built, and has none
/// of its own.
fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // An error means another thread installed one just now: it serves.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The store for `url` (configured from the environment) and the object's
/// path in it.
pub(crate) fn store_for(
    url: &url::Url,
    original: &str,
) -> Result<(Arc<dyn ObjectStore>, ObjectPath), Error> {
    use object_store::aws::AmazonS3Builder;
    use object_store::azure::MicrosoftAzureBuilder;
    use object_store::gcp::GoogleCloudStorageBuilder;
    use object_store::http::HttpBuilder;
    let store_err = |source| Error::Store {
        url: original.to_string(),
        source,
    };
    let (scheme, path) = ObjectStoreScheme::parse(url).map_err(|e| Error::Url {
        url: original.to_string(),
        reason: e.to_string(),
    })?;
    // The client retries transient HTTP failures itself, briefly; reads
    // retry again on top (short answers, dropped bodies).
    let retry = RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(60),
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
    };
    // One client per store (scheme, host or bucket, endpoint): opening many
    // objects of one bucket shares its connection pool.
    let key = format!(
        "{}|{}|{}",
        &url[..url::Position::BeforePath],
        std::env::var("AWS_ENDPOINT_URL").unwrap_or_default(),
        std::env::var("AWS_ALLOW_HTTP").unwrap_or_default()
    );
    static STORES: std::sync::OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> =
        std::sync::OnceLock::new();
    let stores = STORES.get_or_init(Default::default);
    if let Some(store) = lock(stores).get(&key) {
        return Ok((store.clone(), path));
    }
    install_tls_provider();
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => Arc::new(
            AmazonS3Builder::from_env()
                .with_url(url.as_str())
                .with_retry(retry)
                .build()
                .map_err(store_err)?,
        ),
        ObjectStoreScheme::GoogleCloudStorage => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry)
                .build()
                .map_err(store_err)?,
        ),
        ObjectStoreScheme::MicrosoftAzure => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry)
                .build()
                .map_err(store_err)?,
        ),
        ObjectStoreScheme::Http => Arc::new(
            HttpBuilder::new()
                .with_url(&url[..url::Position::BeforePath])
                // The URL says http or https: take it as given.
                .with_client_options(
                    object_store::ClientOptions::new().with_allow_http(url.scheme() == "http"),
                )
                .with_retry(retry)
                .build()
                .map_err(store_err)?,
        ),
        other => {
            return Err(Error::Url {
                url: original.to_string(),
                reason: format!("{other:?} is not an object store"),
            });
        }
    };
    lock(stores).insert(key, store.clone());
    Ok((store, path))
}

impl ObjectSource {
    /// Opens the object at `url`, asking the store for its length.
    pub fn open(url: &str, opts: &RemoteOptions) -> Result<Self, Error> {
        let parsed = crate::parse(url)?;
        let (store, path) = store_for(&parsed, url)?;
        let head = {
            let (store, path) = (store.clone(), path.clone());
            runtime::block_on(async move { store.head(&path).await })
        }
        .map_err(|source| Error::Io {
            url: url.to_string(),
            source,
        })?
        .map_err(|source| Error::Store {
            url: url.to_string(),
            source,
        })?;
        Ok(Self::with_size(url, store, path, head.size, opts))
    }

    /// Opens the object at `url` whose length a listing gave as `len`
    /// ([`list`](crate::list)), without asking the store again: one request
    /// fewer for each object of a directory read from a prefix. An object
    /// that is no longer `len` bytes long fails the first read.
    pub fn open_listed(url: &str, len: u64, opts: &RemoteOptions) -> Result<Self, Error> {
        let parsed = crate::parse(url)?;
        let (store, path) = store_for(&parsed, url)?;
        Ok(Self::with_size(url, store, path, len, opts))
    }

    fn with_size(
        url: &str,
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        size: u64,
        opts: &RemoteOptions,
    ) -> Self {
        let shared = Arc::new(Shared {
            url: url.to_string(),
            store,
            path,
            size,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            permits: tokio::sync::Semaphore::new(opts.concurrency.max(1)),
        });
        ObjectSource {
            shared,
            opts: RemoteOptions {
                concurrency: opts.concurrency.max(1),
                part_size: opts.part_size.max(64 << 10),
                max_window: opts.max_window.max(FIRST_WINDOW),
                ..opts.clone()
            },
            ahead: Mutex::new(Ahead::default()),
            whole: Mutex::new(None),
        }
    }

    /// The whole object (at most [`SMALL`] bytes), fetched by the first
    /// call; a failed fetch is tried again by the next call.
    fn whole(&self) -> io::Result<Arc<Pieces>> {
        let mut slot = lock(&self.whole);
        if let Some(w) = slot.as_ref() {
            return Ok(w.clone());
        }
        let parts = split(0..self.shared.size, self.opts.part_size);
        let shared = self.shared.clone();
        let retries = self.opts.retries;
        let got = runtime::block_on(async move { fetch_parts(&shared, parts, retries).await })?
            .map_err(|e| {
                io::Error::other(format!(
                    "fetching the whole object (bytes 0..{}): {e}",
                    self.shared.size
                ))
            })?;
        if got.len() as u64 != self.shared.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("received {} of {} bytes", got.len(), self.shared.size),
            ));
        }
        let got = Arc::new(got);
        *slot = Some(got.clone());
        Ok(got)
    }

    /// The URL this object was opened from.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// Requests made and bytes received so far.
    pub fn stats(&self) -> Stats {
        Stats {
            requests: self.shared.requests.load(Ordering::Relaxed),
            bytes: self.shared.bytes.load(Ordering::Relaxed),
        }
    }

    /// Starts fetching `range` in parts of at most `part_size`, all at once
    /// (the caller bounds how many ranges it starts).
    fn start(&self, range: Range<u64>) -> Arc<Slot> {
        let slot = Arc::new(Slot::default());
        let parts = split(range, self.opts.part_size);
        let shared = self.shared.clone();
        let retries = self.opts.retries;
        let done = slot.clone();
        let started = runtime::spawn(async move {
            let answer = fetch_parts(&shared, parts, retries).await;
            done.fill(answer);
        });
        if let Err(e) = started {
            slot.fill(Err(e.to_string()));
        }
        slot
    }

    /// Fetches `range` now, into `buf`, in at most `concurrency` parts at once.
    fn fetch_into(&self, range: Range<u64>, buf: &mut [u8]) -> io::Result<()> {
        let mut at = 0usize;
        let parts = split(range, self.opts.part_size);
        for group in parts.chunks(self.opts.concurrency) {
            let shared = self.shared.clone();
            let retries = self.opts.retries;
            let group = group.to_vec();
            let got = runtime::block_on(async move { fetch_parts(&shared, group, retries).await })?
                .map_err(io::Error::other)?;
            let dst = buf
                .get_mut(at..at + got.len())
                .ok_or_else(|| io::Error::other("answer longer than the buffer"))?;
            at += got.copy_to(0, dst);
        }
        if at != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("received {at} of {} bytes", buf.len()),
            ));
        }
        Ok(())
    }

    /// Copies what the windows hold of `offset .. offset + buf.len()` into
    /// `buf`, starting more read-ahead as the reader nears the end of the
    /// newest window; returns how many leading bytes were filled.
    fn copy_from_windows(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let end = offset + buf.len() as u64;
        let mut filled = 0usize;
        while filled < buf.len() {
            let pos = offset + filled as u64;
            let window = {
                let mut ahead = lock(&self.ahead);
                if let Some(w) = ahead.planned.iter().find(|w| w.range.contains(&pos)) {
                    w.clone()
                } else {
                    let Some(w) = ahead
                        .windows
                        .iter()
                        .find(|w| w.range.contains(&pos))
                        .cloned()
                    else {
                        break;
                    };
                    self.extend(&mut ahead, &w, pos);
                    w
                }
            };
            let data = match window.slot.wait() {
                Ok(d) => d,
                Err(_) => {
                    // Forget the failed window; the read fetches directly.
                    let mut ahead = lock(&self.ahead);
                    ahead
                        .windows
                        .retain(|w| !Arc::ptr_eq(&w.slot, &window.slot));
                    let before = ahead.planned.len();
                    ahead
                        .planned
                        .retain(|w| !Arc::ptr_eq(&w.slot, &window.slot));
                    if ahead.planned.len() != before {
                        ahead.planned_bytes -= window.range.end - window.range.start;
                    }
                    break;
                }
            };
            let from = usize::try_from(pos - window.range.start).map_err(io::Error::other)?;
            let upto = usize::try_from(end.min(window.range.end) - window.range.start)
                .map_err(io::Error::other)?;
            if upto > data.len() || from >= upto {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "read-ahead window too short",
                ));
            }
            let dst = buf
                .get_mut(filled..filled + (upto - from))
                .ok_or_else(|| io::Error::other("window piece longer than the buffer"))?;
            filled += data.copy_to(from, dst);
        }
        Ok(filled)
    }

    /// The size of the next read-ahead window of a run at `pos`: as large
    /// as the run read so far (from [`FIRST_WINDOW`] up to the maximum),
    /// so what is fetched ahead and never read stays below what was read.
    fn window_size(&self, ahead: &Ahead, pos: u64) -> u64 {
        pos.saturating_sub(ahead.run_start)
            .clamp(FIRST_WINDOW, self.opts.max_window)
    }

    /// Reading `w` at `pos`: once the reader is past the middle of the
    /// newest window, starts the next one so that it arrives while the
    /// rest of `w` is used.
    fn extend(&self, ahead: &mut Ahead, w: &Window, pos: u64) {
        let newest = ahead.windows.back().map(|b| b.range.end);
        if newest != Some(w.range.end) || w.range.end >= self.shared.size {
            return;
        }
        if pos < w.range.start + (w.range.end - w.range.start) / 2 {
            return;
        }
        let size = self.window_size(ahead, pos);
        self.push_window(ahead, w.range.end, size);
    }

    fn push_window(&self, ahead: &mut Ahead, start: u64, size: u64) {
        let end = start.saturating_add(size).min(self.shared.size);
        if start >= end {
            return;
        }
        let slot = self.start(start..end);
        ahead.windows.push_back(Window {
            range: start..end,
            slot,
        });
        while ahead.windows.len() > WINDOWS {
            ahead.windows.pop_front();
        }
    }
}

impl RangeRead for ObjectSource {
    fn len(&self) -> u64 {
        self.shared.size
    }

    /// Starts fetching `ranges` now: sorted, neighbours closer than
    /// 64 KiB merged, parts already held or in flight left out, at most
    /// 256 MiB in all; reads of them then wait for these fetches instead of
    /// asking again. Small objects are fetched whole anyway.
    fn prefetch(&self, ranges: &[Range<u64>]) {
        if self.shared.size <= SMALL || ranges.is_empty() {
            return;
        }
        let merged = merge(ranges, MERGE_GAP);
        let mut ahead = lock(&self.ahead);
        let mut budget = PLAN_BUDGET;
        for r in merged {
            let held = ahead
                .planned
                .iter()
                .chain(ahead.windows.iter())
                .any(|w| w.range.start <= r.start && r.end <= w.range.end);
            let size = r.end - r.start;
            if held || r.end > self.shared.size {
                continue;
            }
            if size > budget {
                break;
            }
            budget -= size;
            let slot = self.start(r.clone());
            ahead.planned.push_back(Window { range: r, slot });
            ahead.planned_bytes += size;
            while ahead.planned_bytes > PLAN_BUDGET {
                let Some(old) = ahead.planned.pop_front() else {
                    break;
                };
                ahead.planned_bytes -= old.range.end - old.range.start;
            }
        }
    }

    fn read_range(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.shared.size)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        if self.shared.size <= SMALL {
            let whole = self.whole()?;
            let from = usize::try_from(offset).map_err(io::Error::other)?;
            if whole.copy_to(from, buf) != buf.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "object shorter than its length",
                ));
            }
            return Ok(());
        }
        let filled = self.copy_from_windows(offset, buf)?;
        let rest = buf.get_mut(filled..).unwrap_or_default();
        if rest.is_empty() {
            lock(&self.ahead).last_end = end;
            return Ok(());
        }
        let pos = offset + filled as u64;
        let sequential = {
            let mut ahead = lock(&self.ahead);
            let seq = filled > 0
                || (ahead.last_end > 0
                    && pos >= ahead.last_end
                    && pos - ahead.last_end <= SEQUENTIAL_GAP);
            if !seq {
                // A new run starts here; this read fetches exactly its range.
                ahead.run_start = offset;
                false
            } else if (rest.len() as u64) < self.opts.max_window {
                // A run goes on past what was fetched: fetch on from here,
                // as much as the run has read so far.
                let size = self.window_size(&ahead, pos).max(rest.len() as u64);
                ahead.windows.clear();
                self.push_window(&mut ahead, pos, size);
                true
            } else {
                false
            }
        };
        if sequential {
            let more = self.copy_from_windows(pos, rest)?;
            if more == rest.len() {
                lock(&self.ahead).last_end = end;
                return Ok(());
            }
            // A failed window: fetch the rest directly below.
            let rest = rest.get_mut(more..).unwrap_or_default();
            let pos = pos + more as u64;
            self.fetch_into(pos..end, rest)?;
        } else {
            self.fetch_into(pos..end, rest)?;
        }
        lock(&self.ahead).last_end = end;
        Ok(())
    }
}

/// `ranges` sorted, with overlapping ones and ones less than `gap` apart
/// merged.
fn merge(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

/// `range` in consecutive parts of at most `part` bytes.
fn split(range: Range<u64>, part: u64) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut at = range.start;
    while at < range.end {
        let end = at.saturating_add(part).min(range.end);
        out.push(at..end);
        at = end;
    }
    out
}

/// Fetches every range of `parts` concurrently and joins the answers in
/// order (without copying them), each one checked for its exact length and
/// retried on failure.
async fn fetch_parts(
    shared: &Arc<Shared>,
    parts: Vec<Range<u64>>,
    retries: u32,
) -> Result<Pieces, String> {
    let mut tasks = Vec::with_capacity(parts.len());
    for r in parts {
        let s = shared.clone();
        tasks.push(tokio::spawn(async move { fetch_one(&s, r, retries).await }));
    }
    let mut out = Pieces::default();
    for t in tasks {
        out.append(t.await.map_err(|e| format!("fetch task failed: {e}"))??);
    }
    Ok(out)
}

/// One ranged GET: the body's buffers as they arrive, at most the `want`
/// bytes asked for (an answer that goes on past them is an error).
async fn get_once(shared: &Shared, r: Range<u64>) -> Result<Pieces, object_store::Error> {
    let want = r.end - r.start;
    let answer = shared
        .store
        .get_opts(&shared.path, GetOptions::new().with_range(Some(r.clone())))
        .await?;
    if answer.meta.size != shared.size {
        return Err(object_store::Error::Generic {
            store: "range",
            source: format!(
                "the object is now {} bytes long, not {} as when it was opened",
                answer.meta.size, shared.size
            )
            .into(),
        });
    }
    if answer.range != r {
        return Err(object_store::Error::Generic {
            store: "range",
            source: format!(
                "asked for bytes {}..{}, the store answered bytes {}..{}",
                r.start, r.end, answer.range.start, answer.range.end
            )
            .into(),
        });
    }
    let mut body = answer.into_stream();
    let mut out = Pieces::default();
    while let Some(b) = body.next().await {
        out.push(b?);
        if out.len() as u64 > want {
            break;
        }
    }
    Ok(out)
}

/// One range, asked again after a failure or a short answer (50 ms, then
/// twice as long each time), up to `retries` times.
async fn fetch_one(shared: &Shared, r: Range<u64>, retries: u32) -> Result<Pieces, String> {
    let want = r.end - r.start;
    let mut delay = Duration::from_millis(50);
    let mut attempt = 0u32;
    loop {
        let permit = shared
            .permits
            .acquire()
            .await
            .map_err(|e| format!("the request limit closed: {e}"))?;
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let failure = match get_once(shared, r.clone()).await {
            Ok(pieces) if pieces.len() as u64 == want => {
                shared.bytes.fetch_add(want, Ordering::Relaxed);
                return Ok(pieces);
            }
            Ok(pieces) if pieces.len() as u64 > want => {
                format!("the store answered more than the {want} bytes asked for")
            }
            Ok(pieces) => format!(
                "the store answered {} of the {want} bytes asked for",
                pieces.len()
            ),
            Err(e) if permanent(&e) => return Err(e.to_string()),
            Err(e) => e.to_string(),
        };
        drop(permit);
        if attempt >= retries {
            return Err(if retries == 0 {
                failure
            } else {
                format!("{failure} (after {retries} retries)")
            });
        }
        attempt += 1;
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// Errors that asking again cannot fix.
fn permanent(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    matches!(
        e,
        E::NotFound { .. }
            | E::InvalidPath { .. }
            | E::NotSupported { .. }
            | E::PermissionDenied { .. }
            | E::Unauthenticated { .. }
            | E::UnknownConfigurationKey { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object opened at the length a listing gave is read without a
    /// `HEAD`; one whose length is no longer that fails its first read,
    /// naming both lengths, and gives no bytes.
    #[test]
    fn a_listed_object_is_read_without_head_and_a_changed_one_is_an_error() {
        let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let server = crate::testing::ObjectServer::objects([("dir/chunk.blp", body.clone())])
            .expect("server");
        let url = server.url("dir/chunk.blp");
        let opts = RemoteOptions::default().retries(0);

        let src = ObjectSource::open_listed(&url, body.len() as u64, &opts).expect("open");
        let mut got = vec![0u8; body.len()];
        src.read_range(0, &mut got).expect("read");
        assert_eq!(got, body);
        let seen = server.requests();
        assert!(!seen.is_empty(), "the object was fetched");
        assert!(seen.iter().all(|r| r.method == "GET"), "{seen:?}");

        // Listed as longer, and as shorter, than it is now.
        for listed in [body.len() as u64 + 100, body.len() as u64 - 100] {
            let src = ObjectSource::open_listed(&url, listed, &opts).expect("open");
            let mut buf = vec![0u8; 64];
            let err = src.read_range(0, &mut buf).expect_err("changed length");
            let text = err.to_string();
            assert!(
                text.contains(&format!("now {} bytes long, not {listed}", body.len())),
                "{text}"
            );
        }

        // Opened by HEAD, the same object reads the same.
        let src = ObjectSource::open(&url, &opts).expect("open");
        assert_eq!(src.len(), body.len() as u64);
        assert!(server.requests().iter().any(|r| r.method == "HEAD"));
    }

    /// An `https` URL speaks TLS through the provider installed here (the
    /// HTTP client has none of its own and would panic without one): the
    /// server, which answers in plain text, receives a TLS handshake, and the
    /// open is an error naming the URL, not a panic.
    #[test]
    fn https_urls_speak_tls_and_a_failed_handshake_is_an_error() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let (first_bytes, seen) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || {
            // The client may retry; every connection gets the same answer.
            for stream in listener.incoming().take(8) {
                let Ok(mut stream) = stream else { break };
                let mut first = [0u8; 3];
                let got = stream.read_exact(&mut first).map(|()| first);
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
                if first_bytes.send(got.ok()).is_err() {
                    break;
                }
            }
        });
        let url = format!("https://127.0.0.1:{port}/data/train.tbl");
        let opts = RemoteOptions::default().retries(0);
        let err = ObjectSource::open(&url, &opts).expect_err("no TLS server there");
        assert!(err.to_string().contains(&url), "{err}");
        // A TLS record of type handshake (22), version 3.x: a ClientHello.
        let first = seen.recv().expect("the server saw a connection");
        assert_eq!(first.map(|b| (b[0], b[1])), Some((0x16, 0x03)));
        drop(seen);
        // Unblock the accept loop if it waits for another connection.
        let _ = std::net::TcpStream::connect(("127.0.0.1", port));
        server.join().expect("server thread");
    }

    #[test]
    fn split_covers_the_range_in_order() {
        assert_eq!(split(10..25, 10), vec![10..20, 20..25]);
        assert_eq!(split(0..0, 10), Vec::<Range<u64>>::new());
        assert_eq!(split(5..6, 10), vec![5..6]);
    }

    #[test]
    fn merge_joins_near_and_overlapping_ranges_in_order() {
        assert_eq!(merge(&[30..40, 0..10, 12..20], 2), vec![0..20, 30..40]);
        assert_eq!(merge(&[0..10, 5..8, 9..12], 0), vec![0..12]);
        assert_eq!(merge(&[0..10, 11..12], 0), vec![0..10, 11..12]);
        assert_eq!(merge(&[4..4, 1..2], 0), vec![1..2]);
    }

    #[test]
    fn pieces_copy_any_span_across_part_boundaries() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let mut p = Pieces::default();
        for cut in [(0, 7), (7, 7), (7, 300), (300, 301), (301, 1000)] {
            p.push(Bytes::copy_from_slice(&bytes[cut.0..cut.1]));
        }
        assert_eq!(p.len(), 1000);
        assert_eq!(p.parts.len(), 4, "empty parts are not kept");
        for from in [0, 1, 6, 7, 299, 300, 301, 999] {
            for n in [0, 1, 2, 293, 700, 1000] {
                let mut dst = vec![0xAAu8; n];
                let got = p.copy_to(from, &mut dst);
                let want = n.min(1000 - from);
                assert_eq!(got, want, "from {from}, {n} bytes");
                assert_eq!(&dst[..got], &bytes[from..from + got]);
                assert!(
                    dst[got..].iter().all(|&b| b == 0xAA),
                    "nothing past the end written"
                );
            }
        }
        let mut dst = [0u8; 4];
        assert_eq!(p.copy_to(1000, &mut dst), 0);
        assert_eq!(p.copy_to(5000, &mut dst), 0);
    }
}
