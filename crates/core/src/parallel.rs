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
        // Owned by this closure, so that however it returns the workers
        // see the end of the jobs (and the waiting ones the close) and stop
        // before the scope waits for them.
        let job_tx = job_tx;
        let _closing = Closing(&closed, active);
        for w in 0..threads {
            let out_tx = out_tx.clone();
            let (job_rx, work, closed) = (&job_rx, &work, &closed);
            s.spawn(move || {
                loop {
                    if !active.wait_turn(w, closed) {
                        return;
                    }
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((i, item)) = job else { return };
                    let out = std::panic::catch_unwind(AssertUnwindSafe(|| work(item)));
                    let failed = out.is_err();
                    if out_tx.send((i, out)).is_err() || failed {
                        return;
                    }
                }
            });
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

    #[test]
    fn zero_means_every_core() {
        assert!(threads(0) >= 1);
        assert_eq!(threads(3), 3);
        assert_eq!(threads_for(MIN_BYTES - 1, 3), 1);
        assert_eq!(threads_for(MIN_BYTES, 3), 3);
    }
}
