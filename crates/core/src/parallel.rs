//! Work spread over threads with the results taken in order.
//!
//! A reader produces items one by one (blocks of text, chunks of a file),
//! worker threads turn each into a result, and the results are consumed on
//! the calling thread in the order the items came, so that output written
//! from them is the same whatever the number of threads. At most twice as
//! many items as threads are in flight, so memory does not grow with the
//! input.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};

/// `requested` threads, or every core the process may use when it is 0.
pub fn threads(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// Data below which work stays on the calling thread: starting threads
/// costs more than they save on a few megabytes, and small files are what
/// corruption sweeps and tests open by the thousand.
pub const MIN_BYTES: u64 = 4 << 20;

/// [`threads`]`(requested)` for work over `bytes` of data; 1 below
/// [`MIN_BYTES`].
pub fn threads_for(bytes: u64, requested: usize) -> usize {
    if bytes < MIN_BYTES {
        1
    } else {
        threads(requested)
    }
}

/// Takes items from `next` until it gives `Ok(None)`, runs `work` on each on
/// one of `threads` worker threads, and hands the results to `done` on this
/// thread, in the items' order.
///
/// With `threads` ≤ 1 everything runs on this thread, one item after the
/// other. The first error stops the run: an error of `done` at once (items
/// still queued are dropped), an error of `next` once every item before it
/// went through `done` (so an earlier item's error comes first, as it would
/// one item at a time). A panic in `work` is resumed on this thread.
///
/// ```
/// use dataformats_core::parallel::ordered;
///
/// let mut items = (1..=100u64).map(Ok::<_, String>);
/// let mut squares = Vec::new();
/// ordered(4, || items.next().transpose(), |x| x * x, |y| {
///     squares.push(y);
///     Ok(())
/// })
/// .unwrap();
/// assert_eq!(squares, (1..=100u64).map(|x| x * x).collect::<Vec<_>>());
/// ```
pub fn ordered<I, O, E>(
    threads: usize,
    next: impl FnMut() -> Result<Option<I>, E>,
    work: impl Fn(I) -> O + Sync,
    done: impl FnMut(O) -> Result<(), E>,
) -> Result<(), E>
where
    I: Send,
    O: Send,
{
    ordered_ahead(threads, 2 * threads, next, work, done)
}

/// [`ordered`] with at most `ahead` items in flight (at least `threads`):
/// taken from `next` but not yet through `done`. More than [`ordered`]'s
/// two per thread keeps the workers busy while `done` takes long now and
/// then (writing out a large buffer), at the cost of that many items' memory.
pub fn ordered_ahead<I, O, E>(
    threads: usize,
    ahead: usize,
    next: impl FnMut() -> Result<Option<I>, E>,
    work: impl Fn(I) -> O + Sync,
    done: impl FnMut(O) -> Result<(), E>,
) -> Result<(), E>
where
    I: Send,
    O: Send,
{
    ordered_active(threads, ahead, &Active::new(threads), next, work, done)
}

/// How many of a pool's worker threads take work: the pool starts all of
/// its threads, and those numbered from `active` on wait until the number
/// is raised. One side of a pipeline can so lend a core to the other
/// while it finds itself waiting (see [`ordered_active`]). Clones share
/// the number.
#[derive(Debug, Clone)]
pub struct Active(Arc<(Mutex<usize>, Condvar)>);

impl Active {
    /// `n` workers take work.
    pub fn new(n: usize) -> Self {
        Active(Arc::new((Mutex::new(n), Condvar::new())))
    }

    /// How many workers take work.
    pub fn get(&self) -> usize {
        self.0.0.lock().map_or(1, |n| *n)
    }

    /// Lets `n` workers take work (at least one always does): those beyond
    /// finish the item they hold, then wait.
    pub fn set(&self, n: usize) {
        if let Ok(mut g) = self.0.0.lock() {
            *g = n;
        }
        self.0.1.notify_all();
    }

    /// Waits until worker `w` may take work (true) or `closed` is set
    /// (false).
    fn wait_turn(&self, w: usize, closed: &AtomicBool) -> bool {
        let Ok(mut g) = self.0.0.lock() else {
            return false;
        };
        loop {
            if closed.load(Ordering::Acquire) {
                return false;
            }
            if w == 0 || w < *g {
                return true;
            }
            // The timeout only guards against a wake-up that was missed.
            g = match self
                .0
                .1
                .wait_timeout(g, std::time::Duration::from_millis(50))
            {
                Ok((g, _)) => g,
                Err(_) => return false,
            };
        }
    }
}

/// Scoped threads joined when dropped. A scope returns once its threads'
/// closures have returned, possibly before the threads have exited (their
/// thread-local values still being dropped); joining waits for the exit,
/// so nothing of theirs outlives the call that started them (a leak
/// checker looking right after it finds nothing left over).
pub struct Joined<'scope, T>(pub Vec<std::thread::ScopedJoinHandle<'scope, T>>);

impl<T> Drop for Joined<'_, T> {
    fn drop(&mut self) {
        for h in self.0.drain(..) {
            // A thread's panic goes on here, as the scope would pass it on
            // (unless this thread is already unwinding).
            if let Err(panic) = h.join()
                && !std::thread::panicking()
            {
                std::panic::resume_unwind(panic);
            }
        }
    }
}

/// Sets `closed` and wakes the waiting workers when dropped, however the
/// run ends.
struct Closing<'a>(&'a AtomicBool, &'a Active);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
        if let Ok(_g) = self.1.0.0.lock() {
            self.1.0.1.notify_all();
        }
    }
}

/// [`ordered_ahead`] on `threads` workers of which only the first
/// `active` (see [`Active`]) take items; the count may change while the
/// run goes on, from another thread. The results are the same whatever
/// the count does.
pub fn ordered_active<I, O, E>(
    threads: usize,
    ahead: usize,
    active: &Active,
    mut next: impl FnMut() -> Result<Option<I>, E>,
    work: impl Fn(I) -> O + Sync,
    mut done: impl FnMut(O) -> Result<(), E>,
) -> Result<(), E>
where
    I: Send,
    O: Send,
{
    if threads <= 1 {
        while let Some(item) = next()? {
            done(work(item))?;
        }
        return Ok(());
    }
    let ahead = ahead.max(threads);
    // Room for every item in flight, so that this thread never waits to hand
    // one over and the workers find work queued while `done` runs.
    let (job_tx, job_rx) = mpsc::sync_channel::<(u64, I)>(ahead);
    let job_rx = Mutex::new(job_rx);
    let (out_tx, out_rx) = mpsc::channel::<(u64, std::thread::Result<O>)>();
    let closed = AtomicBool::new(false);
    std::thread::scope(|s| {
        // Dropped last: the workers joined once they have stopped.
        let mut workers = Joined(Vec::with_capacity(threads));
        // Owned by this closure, so that however it returns the workers
        // see the end of the jobs (and the waiting ones the close) and stop
        // before they are joined.
        let job_tx = job_tx;
        let _closing = Closing(&closed, active);
        for w in 0..threads {
            let out_tx = out_tx.clone();
            let (job_rx, work, closed) = (&job_rx, &work, &closed);
            workers.0.push(s.spawn(move || {
                while active.wait_turn(w, closed) && serve_one(job_rx, &out_tx, work, || false) {}
            }));
        }
        drop(out_tx);
        let limit = ahead as u64;
        let (mut sent, mut taken) = (0u64, 0u64);
        let mut waiting = BTreeMap::new();
        let mut end: Option<Result<(), E>> = None;
        loop {
            while end.is_none() && sent - taken < limit {
                match next() {
                    Ok(Some(item)) => {
                        if job_tx.send((sent, item)).is_err() {
                            // No worker is left (cannot happen while this
                            // thread holds the results' receiver).
                            end = Some(Ok(()));
                            break;
                        }
                        sent += 1;
                    }
                    Ok(None) => end = Some(Ok(())),
                    Err(e) => end = Some(Err(e)),
                }
            }
            if taken == sent {
                break;
            }
            let Ok((i, out)) = out_rx.recv() else { break };
            match out {
                Ok(out) => waiting.insert(i, out),
                Err(panic) => std::panic::resume_unwind(panic),
            };
            while let Some(out) = waiting.remove(&taken) {
                taken += 1;
                done(out)?;
            }
        }
        end.unwrap_or(Ok(()))
    })
}

/// One step of a worker thread: takes the next numbered item from `jobs`
/// (unless `skip` says the run was closed meanwhile), runs `work` on it
/// and sends the result, or the panic that ended it, to `results`. False
/// when the worker is to stop: no more items, the run closed, nobody to
/// take the result, or `work` panicked (the panic is the last thing the
/// worker sends).
fn serve_one<I, O>(
    jobs: &Mutex<mpsc::Receiver<(u64, I)>>,
    results: &mpsc::Sender<(u64, std::thread::Result<O>)>,
    work: &(impl Fn(I) -> O + ?Sized),
    skip: impl Fn() -> bool,
) -> bool {
    let job = match jobs.lock() {
        Ok(rx) => rx.recv(),
        Err(_) => return false,
    };
    let Ok((i, item)) = job else { return false };
    if skip() {
        return false;
    }
    let out = std::panic::catch_unwind(AssertUnwindSafe(|| work(item)));
    let failed = out.is_err();
    results.send((i, out)).is_ok() && !failed
}

/// Work handed over one item at a time (pushed, where [`ordered`] pulls),
/// done on worker threads of the pool's own, the results taken back on
/// the pushing thread in the order the items were pushed. For a writer
/// whose caller gives it data piece by piece: each piece is pushed as it
/// is ready and the results are written out as they come back, in order,
/// while later pieces are still being worked on.
///
/// At most `max_items` items, of at most `max_bytes` bytes together (as
/// the pusher counts them; one item always fits), are in flight: pushing
/// past either first hands the oldest results to `done`, so memory stays
/// bounded whatever the input. A panic in `work` is resumed on the
/// pushing thread when its result is taken. Dropping the pool drops what
/// is still queued and waits for the workers to finish the item each
/// holds.
///
/// ```
/// use dataformats_core::parallel::OrderedPool;
///
/// let mut pool = OrderedPool::new(3, 8, 1 << 20, |x: u64| x * x).unwrap();
/// let mut squares = Vec::new();
/// for x in 1..=100u64 {
///     pool.push(x, 8, |y| {
///         squares.push(y);
///         Ok::<_, ()>(())
///     })
///     .unwrap();
/// }
/// pool.finish(|y| {
///     squares.push(y);
///     Ok::<_, ()>(())
/// })
/// .unwrap();
/// assert_eq!(squares, (1..=100u64).map(|x| x * x).collect::<Vec<_>>());
/// ```
pub struct OrderedPool<I, O> {
    jobs: Option<mpsc::Sender<(u64, I)>>,
    results: mpsc::Receiver<(u64, std::thread::Result<O>)>,
    workers: Vec<std::thread::JoinHandle<()>>,
    /// Set when the pool is dropped: queued items are skipped.
    closed: Arc<AtomicBool>,
    /// The bytes of each item in flight, oldest first.
    in_flight: std::collections::VecDeque<usize>,
    bytes: usize,
    pushed: u64,
    taken: u64,
    /// Results that came back before an older one.
    waiting: BTreeMap<u64, O>,
    max_items: usize,
    max_bytes: usize,
}

impl<I, O> std::fmt::Debug for OrderedPool<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderedPool")
            .field("workers", &self.workers.len())
            .field("in_flight", &self.in_flight.len())
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl<I: Send + 'static, O: Send + 'static> OrderedPool<I, O> {
    /// A pool of `threads` workers (at least one) running `work`, with at
    /// most `max_items` items (at least `threads`) and `max_bytes` bytes in
    /// flight. Fails only when a thread cannot be started.
    pub fn new(
        threads: usize,
        max_items: usize,
        max_bytes: usize,
        work: impl Fn(I) -> O + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let threads = threads.max(1);
        let (job_tx, job_rx) = mpsc::channel::<(u64, I)>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (out_tx, out_rx) = mpsc::channel();
        let work = Arc::new(work);
        let closed = Arc::new(AtomicBool::new(false));
        let mut pool = OrderedPool {
            jobs: Some(job_tx),
            results: out_rx,
            workers: Vec::with_capacity(threads),
            closed: closed.clone(),
            in_flight: std::collections::VecDeque::new(),
            bytes: 0,
            pushed: 0,
            taken: 0,
            waiting: BTreeMap::new(),
            max_items: max_items.max(threads),
            max_bytes,
        };
        for w in 0..threads {
            let (job_rx, out_tx, work, closed) =
                (job_rx.clone(), out_tx.clone(), work.clone(), closed.clone());
            // On failure the pool is dropped: the workers started so far
            // see the end of the jobs and are waited for.
            let worker = std::thread::Builder::new()
                .name(format!("pool-{w}"))
                .spawn(move || {
                    while serve_one(&job_rx, &out_tx, &*work, || closed.load(Ordering::Acquire)) {}
                })?;
            pool.workers.push(worker);
        }
        Ok(pool)
    }

    /// Hands `item` (counted as `bytes`) to the workers, after handing the
    /// oldest results to `done` until it fits; an error of `done` is
    /// returned at once (the item is then not pushed).
    pub fn push<E>(
        &mut self,
        item: I,
        bytes: usize,
        mut done: impl FnMut(O) -> Result<(), E>,
    ) -> Result<(), E> {
        while !self.in_flight.is_empty()
            && (self.in_flight.len() >= self.max_items
                || self.bytes.saturating_add(bytes) > self.max_bytes)
        {
            done(self.take_oldest())?;
        }
        // The workers hold the receiver until the pool is dropped (the
        // sender lives as long as the pool), and one that panicked has its
        // panic waiting in `results`, taken (and resumed) before any later
        // result.
        if let Some(jobs) = &self.jobs
            && jobs.send((self.pushed, item)).is_ok()
        {
            self.pushed += 1;
            self.in_flight.push_back(bytes);
            self.bytes += bytes;
        }
        Ok(())
    }

    /// Hands every result still to come to `done`, in order.
    pub fn finish<E>(&mut self, mut done: impl FnMut(O) -> Result<(), E>) -> Result<(), E> {
        while !self.in_flight.is_empty() {
            done(self.take_oldest())?;
        }
        Ok(())
    }

    /// Items pushed whose results have not been taken.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Waits for the oldest result in flight (there is one).
    fn take_oldest(&mut self) -> O {
        loop {
            if let Some(out) = self.waiting.remove(&self.taken) {
                self.taken += 1;
                if let Some(b) = self.in_flight.pop_front() {
                    self.bytes -= b;
                }
                return out;
            }
            match self.results.recv() {
                Ok((i, Ok(out))) => {
                    self.waiting.insert(i, out);
                }
                Ok((_, Err(panic))) => std::panic::resume_unwind(panic),
                // Every worker gone with no panic to pass on: cannot
                // happen while the pool holds the jobs' sender (a worker
                // ends early only by a panic, which comes first).
                Err(_) => std::panic::resume_unwind(Box::new("the pool's workers ended")),
            }
        }
    }
}

impl<I, O> Drop for OrderedPool<I, O> {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        threads: usize,
        n: u64,
        fail_next_at: Option<u64>,
        fail_done_at: Option<u64>,
    ) -> (Vec<u64>, Result<(), String>) {
        let mut i = 0u64;
        let mut seen = Vec::new();
        let r = ordered(
            threads,
            || {
                if Some(i) == fail_next_at {
                    return Err(format!("next {i}"));
                }
                i += 1;
                Ok((i <= n).then_some(i - 1))
            },
            |x: u64| {
                // Later items finish first now and then.
                if x.is_multiple_of(3) {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                x * 10
            },
            |o| {
                if Some(o / 10) == fail_done_at {
                    return Err(format!("done {}", o / 10));
                }
                seen.push(o);
                Ok(())
            },
        );
        (seen, r)
    }

    #[test]
    fn results_come_in_order_whatever_the_threads() {
        let want: Vec<u64> = (0..100).map(|x| x * 10).collect();
        for t in [1, 2, 3, 8] {
            let (seen, r) = run(t, 100, None, None);
            assert_eq!(r, Ok(()));
            assert_eq!(seen, want, "{t} threads");
        }
    }

    #[test]
    fn a_read_error_comes_after_every_earlier_item() {
        for t in [1, 2, 4] {
            let (seen, r) = run(t, 100, Some(37), None);
            assert_eq!(r, Err("next 37".to_string()), "{t} threads");
            assert_eq!(seen, (0..37).map(|x| x * 10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn an_error_of_done_stops_at_that_item() {
        for t in [1, 2, 4] {
            let (seen, r) = run(t, 100, None, Some(12));
            assert_eq!(r, Err("done 12".to_string()), "{t} threads");
            assert_eq!(seen, (0..12).map(|x| x * 10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn no_more_than_twice_the_threads_are_in_flight() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let read = AtomicU64::new(0);
        let mut most = 0;
        let mut done_count = 0u64;
        let r: Result<(), ()> = ordered(
            3,
            || {
                let n = read.fetch_add(1, Ordering::SeqCst);
                Ok((n < 200).then_some(n))
            },
            |x| x,
            |_| {
                done_count += 1;
                most = most.max(read.load(Ordering::SeqCst) - done_count);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(done_count, 200);
        assert!(most <= 6, "{most} items in flight");
    }

    #[test]
    fn ahead_bounds_the_items_in_flight_and_keeps_the_order() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let read = AtomicU64::new(0);
        let mut most = 0;
        let mut seen = Vec::new();
        let r: Result<(), ()> = ordered_ahead(
            2,
            16,
            || {
                let n = read.fetch_add(1, Ordering::SeqCst);
                Ok((n < 300).then_some(n))
            },
            |x| x * 2,
            |y| {
                seen.push(y);
                most = most.max(read.load(Ordering::SeqCst) - seen.len() as u64);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(seen, (0..300).map(|x| x * 2).collect::<Vec<_>>());
        assert!(most <= 16, "{most} items in flight");
        // More than `ordered`'s two per thread were taken ahead.
        assert!(most > 4, "only {most} items in flight");
    }

    /// Runs 200 items on 4 workers, `active` of them taking work (changed
    /// by `change` after each result), returning the results and the most
    /// items that were being worked on at once.
    fn run_active(active: &Active, mut change: impl FnMut(u64)) -> (Vec<u64>, usize) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let mut n = 0;
        let mut seen = Vec::new();
        let r: Result<(), ()> = ordered_active(
            4,
            8,
            active,
            || {
                n += 1;
                Ok((n <= 200).then_some(n))
            },
            |x| {
                let at_once = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(at_once, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_micros(300));
                now.fetch_sub(1, Ordering::SeqCst);
                x * 3
            },
            |y| {
                seen.push(y);
                change(y / 3);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        (seen, most.load(Ordering::SeqCst))
    }

    #[test]
    fn only_the_active_workers_take_items() {
        let want: Vec<u64> = (1..=200).map(|x| x * 3).collect();
        for n in [1, 2] {
            let (seen, most) = run_active(&Active::new(n), |_| {});
            assert_eq!(seen, want);
            assert!(most <= n, "{most} items at once with {n} active");
        }
        // No worker at all is taken as one: the run still ends.
        let (seen, most) = run_active(&Active::new(0), |_| {});
        assert_eq!((seen, most), (want.clone(), 1));
    }

    #[test]
    fn the_active_count_can_change_while_the_run_goes_on() {
        // Raised from 1 to 4 after item 50 and lowered to 1 after item
        // 150: the results stay in order, and the run ends with the
        // waiting workers.
        let active = Active::new(1);
        let a = active.clone();
        let (seen, most) = run_active(&active, |i| match i {
            50 => a.set(4),
            150 => a.set(1),
            _ => {}
        });
        assert_eq!(seen, (1..=200).map(|x| x * 3).collect::<Vec<_>>());
        assert!(most <= 4);
        assert_eq!(active.get(), 1);
    }

    #[test]
    #[should_panic(expected = "boom")]
    fn a_panic_in_work_reaches_the_caller() {
        let mut n = 0;
        let _ = ordered(
            2,
            || {
                n += 1;
                Ok::<_, ()>((n < 50).then_some(n))
            },
            |x| {
                if x == 20 {
                    panic!("boom");
                }
                x
            },
            |_| Ok(()),
        );
    }

    /// A worker's thread-local values are dropped (the thread has exited)
    /// by the time the run returns: nothing of a run outlives it.
    #[test]
    fn workers_have_exited_when_a_run_returns() {
        let exits = crate::testing::ThreadExits::new();
        let caller = std::thread::current().id();
        for round in 0..5 {
            let mut n = 0;
            ordered(
                2,
                || {
                    n += 1;
                    Ok::<_, ()>((n <= 40).then_some(n))
                },
                |x: u32| {
                    if std::thread::current().id() != caller {
                        exits.touch();
                    }
                    x
                },
                |_| Ok(()),
            )
            .unwrap();
            assert!(exits.made() > 0, "round {round}: no worker ran");
            assert_eq!(exits.exited(), exits.made(), "round {round}");
        }
    }

    /// Pushes 0..n (item x counted as `bytes(x)` bytes) to a pool of
    /// `threads` whose work sleeps now and then, so that later items finish
    /// first; what `done` got, the most items and bytes in flight at once,
    /// and the result.
    fn run_pool(
        threads: usize,
        n: u64,
        max_items: usize,
        max_bytes: usize,
        bytes: impl Fn(u64) -> usize,
        fail_done_at: Option<u64>,
    ) -> (Vec<u64>, usize, usize, Result<(), String>) {
        use std::sync::atomic::AtomicUsize;
        let running = Arc::new(AtomicUsize::new(0));
        let r = running.clone();
        let mut pool = OrderedPool::new(threads, max_items, max_bytes, move |x: u64| {
            r.fetch_add(1, Ordering::SeqCst);
            if x.is_multiple_of(3) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            r.fetch_sub(1, Ordering::SeqCst);
            x * 10
        })
        .unwrap();
        let mut seen = Vec::new();
        let (mut most_items, mut most_bytes) = (0, 0);
        let mut done = |o: u64| {
            if Some(o / 10) == fail_done_at {
                return Err(format!("done {}", o / 10));
            }
            seen.push(o);
            Ok(())
        };
        let mut result = Ok(());
        for x in 0..n {
            if let Err(e) = pool.push(x, bytes(x), &mut done) {
                result = Err(e);
                break;
            }
            most_items = most_items.max(pool.in_flight());
            most_bytes = most_bytes.max(pool.bytes);
        }
        if result.is_ok() {
            result = pool.finish(&mut done);
        }
        assert!(running.load(Ordering::SeqCst) <= threads);
        (seen, most_items, most_bytes, result)
    }

    #[test]
    fn a_pool_gives_the_results_in_the_order_pushed() {
        let want: Vec<u64> = (0..300).map(|x| x * 10).collect();
        for t in [1, 2, 3, 8] {
            let (seen, most, _, r) = run_pool(t, 300, 6, usize::MAX, |_| 1, None);
            assert_eq!(r, Ok(()));
            assert_eq!(seen, want, "{t} threads");
            assert!(most <= 6.max(t), "{most} items in flight, {t} threads");
        }
    }

    #[test]
    fn a_pool_keeps_its_bytes_in_flight_bounded() {
        // Items of 1 to 100 bytes, at most 250 in flight; an item larger
        // than the bound still goes through, alone.
        let size = |x: u64| {
            if x == 77 {
                1000
            } else {
                (x % 100 + 1) as usize
            }
        };
        let (seen, _, most, r) = run_pool(2, 200, 64, 250, size, None);
        assert_eq!(r, Ok(()));
        assert_eq!(seen, (0..200).map(|x| x * 10).collect::<Vec<_>>());
        assert_eq!(most, 1000, "the large item alone");
        let (_, _, most, _) = run_pool(2, 200, 64, 250, |x| (x % 100 + 1) as usize, None);
        assert!(most <= 250, "{most} bytes in flight");
    }

    #[test]
    fn an_error_of_done_in_a_pool_stops_at_that_item() {
        for t in [1, 3] {
            let (seen, _, _, r) = run_pool(t, 100, 4, usize::MAX, |_| 1, Some(41));
            assert_eq!(r, Err("done 41".to_string()), "{t} threads");
            assert_eq!(seen, (0..41).map(|x| x * 10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_pool_dropped_with_work_queued_ends() {
        use std::sync::atomic::AtomicUsize;
        let worked = Arc::new(AtomicUsize::new(0));
        let w = worked.clone();
        let mut pool = OrderedPool::new(2, 1000, usize::MAX, move |x: u64| {
            w.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            x
        })
        .unwrap();
        for x in 0..500 {
            pool.push(x, 1, |_| Ok::<_, ()>(())).unwrap();
        }
        drop(pool);
        // The workers finished the items they held and skipped the rest
        // (pushing took far less than one item's 5 ms).
        let n = worked.load(Ordering::SeqCst);
        assert!(
            n < 250,
            "{n} of 500 queued items were worked on after the drop"
        );
    }

    #[test]
    #[should_panic(expected = "bang")]
    fn a_panic_in_a_pool_reaches_the_pusher() {
        let mut pool = OrderedPool::new(2, 4, usize::MAX, |x: u64| {
            if x == 9 {
                panic!("bang");
            }
            x
        })
        .unwrap();
        for x in 0..50 {
            pool.push(x, 1, |_| Ok::<_, ()>(())).unwrap();
        }
        let _ = pool.finish(|_| Ok::<_, ()>(()));
    }

    #[test]
    fn zero_means_every_core() {
        assert!(threads(0) >= 1);
        assert_eq!(threads(3), 3);
        assert_eq!(threads_for(MIN_BYTES - 1, 3), 1);
        assert_eq!(threads_for(MIN_BYTES, 3), 3);
    }
}
