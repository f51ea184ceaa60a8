//! Output written on a thread of its own, so that the thread producing the
//! bytes does not stop while the kernel takes them.
//!
//! A conversion that parses on several threads has one thread putting the
//! output together. Each write it makes (copying into the page cache,
//! allocating the file's pages) is time in which it hands no new work to the
//! parsing threads; a large write leaves them idle. [`WriteBehind`] moves
//! those writes to a thread of their own: small writes are gathered into
//! buffers of a fixed size, whole buffers are handed over (a large one by
//! ownership, without a copy), and the bytes waiting to be written are
//! bounded, so memory stays bounded and a slow disk slows the producer down
//! instead of piling up data.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Bytes handed over and not yet written, and whether the thread stopped.
#[derive(Debug, Default)]
struct Waiting {
    bytes: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Waiting {
    fn update(&self, f: impl FnOnce(&mut (usize, bool))) {
        let mut g = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut g);
        self.changed.notify_all();
    }
}

/// Marks the thread stopped however it ends (an error, a panic), so that a
/// producer waiting for room wakes up.
struct Stopped<'a>(&'a Waiting);

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        self.0.update(|w| w.1 = true);
    }
}

/// A [`Write`] whose bytes reach `W` on another thread, in order.
///
/// A write error on that thread is returned by the next write, flush or
/// [`WriteBehind::into_inner`] (the thread's own `io::Error`), and nothing
/// after it is written. Dropping it without `into_inner` sends nothing more
/// (bytes still gathered are lost), waits for the thread to finish what it
/// was given, then drops `W` (an unfinished [`crate::AtomicFile`] then
/// removes its temporary file).
///
/// ```
/// use std::io::Write;
/// use dataformats_core::write_behind::WriteBehind;
/// let mut w = WriteBehind::new(Vec::new(), 4, 2).unwrap();
/// w.write_all(b"head").unwrap();
/// w.write_vec(b" and a large part".to_vec()).unwrap();
/// w.write_all(b", tail").unwrap();
/// assert_eq!(w.into_inner().unwrap(), b"head and a large part, tail");
/// ```
#[derive(Debug)]
pub struct WriteBehind<W: Write + Send + 'static> {
    /// Small writes gathered until `capacity` bytes.
    buf: Vec<u8>,
    capacity: usize,
    /// Buffers to write, each marked whether it is one of the gathering
    /// buffers; `None` once closed.
    tx: Option<Sender<(Vec<u8>, bool)>>,
    waiting: Arc<Waiting>,
    max_waiting: usize,
    /// Written buffers, emptied, for reuse: the gathering ones, and those
    /// handed over by [`WriteBehind::write_vec`] (kept apart, so that a
    /// large one is never spent on gathering small writes).
    gathering: Receiver<Vec<u8>>,
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<W>>>,
}

/// Written buffers kept for reuse at most: gathering ones, and handed-over
/// ones (a large one is memory in use until it is taken again).
const GATHERING: usize = 2;
const SPARE: usize = 1;

/// Error for a writing thread that is gone without an error of its own.
fn gone() -> io::Error {
    io::Error::other("the writing thread stopped")
}

impl<W: Write + Send + 'static> WriteBehind<W> {
    /// Starts the thread that writes to `inner`. Small writes are gathered
    /// into buffers of `capacity` bytes. A buffer is handed over at once
    /// while fewer than `max_waiting` bytes wait to be written (or none
    /// wait); otherwise the write blocks until that is so. So at most
    /// `max_waiting` bytes plus one buffer wait at any time.
    pub fn new(inner: W, capacity: usize, max_waiting: usize) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<(Vec<u8>, bool)>();
        let (gathering_tx, gathering) = mpsc::sync_channel::<Vec<u8>>(GATHERING);
        let (spare_tx, spare) = mpsc::sync_channel::<Vec<u8>>(SPARE);
        let waiting = Arc::new(Waiting::default());
        let shared = waiting.clone();
        let thread = std::thread::Builder::new()
            .name("write-behind".into())
            .spawn(move || {
                let _stopped = Stopped(&shared);
                let mut inner = inner;
                for (mut v, gathered) in rx {
                    inner.write_all(&v)?;
                    let len = v.len();
                    shared.update(|w| w.0 = w.0.saturating_sub(len));
                    v.clear();
                    // Kept for reuse only while there is room; otherwise freed.
                    let back = if gathered { &gathering_tx } else { &spare_tx };
                    match back.try_send(v) {
                        Ok(())
                        | Err(TrySendError::Full(_))
                        | Err(TrySendError::Disconnected(_)) => {}
                    }
                }
                inner.flush()?;
                Ok(inner)
            })?;
        Ok(WriteBehind {
            buf: Vec::with_capacity(capacity),
            capacity: capacity.max(1),
            tx: Some(tx),
            waiting,
            max_waiting,
            gathering,
            spare,
            thread: Some(thread),
        })
    }

    /// An empty buffer to fill and pass to [`WriteBehind::write_vec`]: one
    /// the thread has written and given back when there is one (its memory
    /// already in place), else a new one.
    pub fn spare(&mut self) -> Vec<u8> {
        self.spare.try_recv().unwrap_or_default()
    }

    /// Writes the bytes gathered so far, then `v`, handing `v` over as it
    /// is (no copy). Blocks while `max_waiting` bytes or more wait.
    pub fn write_vec(&mut self, v: Vec<u8>) -> io::Result<()> {
        self.send_buf()?;
        if !v.is_empty() {
            self.send(v, false)?;
        }
        Ok(())
    }

    /// Waits for every byte to be written to `W`, then returns it; or
    /// returns the error the thread met.
    pub fn into_inner(mut self) -> io::Result<W> {
        let sent = self.send_buf();
        self.tx = None;
        let joined = self.join();
        match (sent, joined) {
            // The thread's own error says more than "the thread stopped".
            (_, Err(e)) => Err(e),
            (Err(e), Ok(_)) => Err(e),
            (Ok(()), Ok(inner)) => Ok(inner),
        }
    }

    /// Sends the gathered bytes, if any, keeping a buffer of the same size.
    fn send_buf(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = match self.gathering.try_recv() {
            Ok(v) => v,
            Err(_) => Vec::with_capacity(self.capacity),
        };
        let full = std::mem::replace(&mut self.buf, next);
        self.send(full, true)
    }

    fn send(&mut self, v: Vec<u8>, gathered: bool) -> io::Result<()> {
        let Some(tx) = &self.tx else {
            return Err(gone());
        };
        {
            let w = &self.waiting;
            let mut g = w.bytes.lock().unwrap_or_else(PoisonError::into_inner);
            while g.0 > 0 && g.0 >= self.max_waiting && !g.1 {
                g = w.changed.wait(g).unwrap_or_else(PoisonError::into_inner);
            }
            g.0 = g.0.saturating_add(v.len());
        }
        if tx.send((v, gathered)).is_err() {
            // The thread stopped on an error: return it.
            self.tx = None;
            return Err(match self.join() {
                Err(e) => e,
                Ok(_) => gone(),
            });
        }
        Ok(())
    }

    /// Waits for the thread (once), returning its result.
    fn join(&mut self) -> io::Result<W> {
        match self.thread.take() {
            Some(t) => match t.join() {
                Ok(r) => r,
                Err(_) => Err(io::Error::other("the writing thread panicked")),
            },
            None => Err(gone()),
        }
    }
}

impl<W: Write + Send + 'static> Write for WriteBehind<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.tx.is_none() {
            return Err(gone());
        }
        let room = self.capacity.saturating_sub(self.buf.len());
        let n = data.len().min(room);
        self.buf
            .extend_from_slice(data.get(..n).unwrap_or_default());
        if self.buf.len() >= self.capacity {
            self.send_buf()?;
        }
        Ok(n)
    }

    /// Hands the gathered bytes to the thread (without waiting for them to
    /// be written: [`WriteBehind::into_inner`] does).
    fn flush(&mut self) -> io::Result<()> {
        self.send_buf()
    }
}

impl<W: Write + Send + 'static> Drop for WriteBehind<W> {
    fn drop(&mut self) {
        // Nothing gathered is sent: an unfinished output is being dropped.
        // Waiting for the thread means `W` is dropped (and its cleanup done)
        // before this returns.
        self.tx = None;
        let _ = self.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer that records what it gets and can fail after `fail_after` bytes.
    #[derive(Clone, Default)]
    struct Sink {
        got: Arc<Mutex<Vec<u8>>>,
        fail_after: Option<usize>,
    }

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut got = self.got.lock().unwrap();
            if self
                .fail_after
                .is_some_and(|limit| got.len() + b.len() > limit)
            {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            got.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bytes_arrive_in_order_whatever_the_mix_of_writes() {
        let mut rng = crate::rng::SplitMix64::new(7);
        for capacity in [1, 3, 64, 4096] {
            for max_waiting in [0, 1, 100, 5000] {
                let sink = Sink::default();
                let mut w = WriteBehind::new(sink.clone(), capacity, max_waiting).unwrap();
                let mut want = Vec::new();
                for i in 0..300u32 {
                    let len = (rng.next_u64() % 200) as usize;
                    let part: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j) as u8).collect();
                    want.extend_from_slice(&part);
                    match rng.next_u64() % 4 {
                        0 => w.write_vec(part).unwrap(),
                        1 => {
                            let mut v = w.spare();
                            assert!(v.is_empty());
                            v.extend_from_slice(&part);
                            w.write_vec(v).unwrap();
                        }
                        2 => {
                            w.write_all(&part).unwrap();
                            w.flush().unwrap();
                        }
                        _ => w.write_all(&part).unwrap(),
                    }
                }
                let back = w.into_inner().unwrap();
                assert_eq!(
                    *back.got.lock().unwrap(),
                    want,
                    "capacity {capacity}, {max_waiting} bytes waiting"
                );
            }
        }
    }

    /// A writer that takes nothing until its gate opens.
    struct Gated {
        gate: Arc<(Mutex<bool>, Condvar)>,
        got: Vec<u8>,
    }

    impl Write for Gated {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let (open, cv) = &*self.gate;
            let mut g = open.lock().unwrap();
            while !*g {
                g = cv.wait(g).unwrap();
            }
            self.got.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_producer_waits_while_max_waiting_bytes_wait() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let sink = Gated {
            gate: gate.clone(),
            got: Vec::new(),
        };
        let mut w = WriteBehind::new(sink, 4, 10).unwrap();
        // Under the bound: handed over at once, however large.
        w.write_vec(vec![1; 6]).unwrap();
        w.write_vec(vec![2; 30]).unwrap();
        // 36 bytes wait, over the bound of 10: the next hand-over waits.
        let done = Arc::new(AtomicBool::new(false));
        let producer = std::thread::spawn({
            let done = done.clone();
            move || {
                w.write_vec(vec![3; 3]).unwrap();
                done.store(true, Ordering::SeqCst);
                w
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!done.load(Ordering::SeqCst), "handed over past the bound");
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        let w = producer.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
        let mut want = vec![1; 6];
        want.extend_from_slice(&[2; 30]);
        want.extend_from_slice(&[3; 3]);
        assert_eq!(w.into_inner().unwrap().got, want);
    }

    #[test]
    fn a_write_error_on_the_thread_comes_back_with_its_cause() {
        let sink = Sink {
            fail_after: Some(1000),
            ..Sink::default()
        };
        let mut w = WriteBehind::new(sink.clone(), 100, 0).unwrap();
        let mut err = None;
        for _ in 0..100 {
            if let Err(e) = w.write_all(&[1; 50]) {
                err = Some(e);
                break;
            }
        }
        // Either a later write met the thread's error, or the end does.
        let e = match err {
            Some(e) => e,
            None => w.into_inner().err().expect("the sink refused bytes"),
        };
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
        assert_eq!(e.to_string(), "disk full");
        // Nothing past the failing write reached the sink.
        assert!(sink.got.lock().unwrap().len() <= 1000);

        // A large owned buffer that fails is reported by into_inner.
        let sink = Sink {
            fail_after: Some(10),
            ..Sink::default()
        };
        let mut w = WriteBehind::new(sink, 100, 4).unwrap();
        let sent = w.write_vec(vec![0; 11]);
        let end = w.into_inner();
        assert!(
            sent.is_err() || end.is_err(),
            "a failed write must not go unreported"
        );
        if let Err(e) = end {
            assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        }
    }

    #[test]
    fn dropping_it_unfinished_writes_nothing_gathered_and_drops_the_writer() {
        let sink = Sink::default();
        let mut w = WriteBehind::new(sink.clone(), 1 << 20, 2).unwrap();
        w.write_all(b"gathered, never sent").unwrap();
        assert_eq!(Arc::strong_count(&sink.got), 2);
        drop(w);
        assert!(sink.got.lock().unwrap().is_empty());
        // The thread's copy of the sink is dropped by the time drop returns.
        assert_eq!(Arc::strong_count(&sink.got), 1);
    }

    #[test]
    fn written_buffers_come_back_for_reuse() {
        let mut w = WriteBehind::new(Vec::new(), 16, 1 << 20).unwrap();
        // Gathered small writes: several gathering buffers go through.
        w.write_all(&[5; 100]).unwrap();
        let v = Vec::with_capacity(1 << 16);
        let ptr = v.as_ptr();
        let mut v = v;
        v.extend_from_slice(&[9; 100]);
        w.write_vec(v).unwrap();
        // The buffer returns once written; wait for it (bounded).
        let mut back = None;
        for _ in 0..1000 {
            let s = w.spare();
            if s.capacity() == 1 << 16 {
                back = Some(s);
                break;
            }
            // Never one of the gathering buffers.
            assert_eq!(s.capacity(), 0);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let back = back.expect("the written buffer came back");
        assert!(back.is_empty());
        assert_eq!(back.as_ptr(), ptr);
        let mut want = vec![5; 100];
        want.extend_from_slice(&[9; 100]);
        assert_eq!(w.into_inner().unwrap(), want);
    }
}
