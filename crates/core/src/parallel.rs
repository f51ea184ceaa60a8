//! Work spread over threads with the results taken in order.
//!
//! A reader produces items one by one (blocks of text, chunks of a file),
//! worker threads turn each into a result, and the results are consumed on
//! the calling thread in the order the items came, so that output written
//! from them is the same whatever the number of threads. At most twice as
//! many items as threads are in flight, so memory does not grow with the
//! input. Work whose results go straight to their own place (positioned
//! writes, parts of one buffer) needs no consumer: [`each_index`].

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, mpsc};

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
    std::thread::scope(|s| {
        // Owned by this closure, so that however it returns the workers
        // see the end of the jobs and stop before the scope waits for them.
        let job_tx = job_tx;
        for _ in 0..threads {
            let out_tx = out_tx.clone();
            let (job_rx, work) = (&job_rx, &work);
            s.spawn(move || {
                loop {
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

/// Runs `work` on every index in `0..n`, on `threads` threads, each with a
/// state of its own made by `init` (a reusable buffer, say), in no set
/// order: for work whose results go straight to their place (positioned
/// writes into a file, parts of one buffer) rather than through one
/// consumer.
///
/// Indices are handed out in increasing order. The first error stops the
/// handing out, and the error returned is that of the lowest index that
/// failed; every index below it has run, so the error is the one a run on
/// one thread would have met first. With `threads` ≤ 1 everything runs on
/// this thread. A panic in `work` is resumed on this thread.
///
/// ```
/// use dataformats_core::parallel::each_index;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let sum = AtomicU64::new(0);
/// each_index(4, 1000, || (), |_, i| {
///     sum.fetch_add(i as u64, Ordering::Relaxed);
///     Ok::<_, String>(())
/// })
/// .unwrap();
/// assert_eq!(sum.into_inner(), 999 * 1000 / 2);
/// ```
pub fn each_index<S, E>(
    threads: usize,
    n: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> Result<(), E> + Sync,
) -> Result<(), E>
where
    E: Send,
{
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    if threads <= 1 || n <= 1 {
        let mut state = init();
        return (0..n).try_for_each(|i| work(&mut state, i));
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let run = || {
        let out = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut state = init();
            while !stop.load(Ordering::Acquire) {
                let i = next.fetch_add(1, Ordering::AcqRel);
                if i >= n {
                    break;
                }
                if let Err(e) = work(&mut state, i) {
                    stop.store(true, Ordering::Release);
                    let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                    if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                        *slot = Some((i, e));
                    }
                    break;
                }
            }
        }));
        if out.is_err() {
            // The other threads stop at their next index.
            stop.store(true, Ordering::Release);
        }
        out
    };
    let panicked = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(n)).map(|_| s.spawn(run)).collect();
        let mut panicked = run().err();
        for h in helpers {
            if let Err(p) = h.join().unwrap_or_else(Err) {
                panicked.get_or_insert(p);
            }
        }
        panicked
    });
    if let Some(p) = panicked {
        std::panic::resume_unwind(p);
    }
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
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

    /// Runs `each_index` over `n` indices; `fail` says which fail. Returns
    /// the indices that ran and the result.
    fn run_each(threads: usize, n: usize, fail: &[usize]) -> (Vec<usize>, Result<(), String>) {
        let ran = Mutex::new(Vec::new());
        let r = each_index(
            threads,
            n,
            || 0u32,
            |calls, i| {
                *calls += 1;
                // Later indices finish first now and then.
                if i % 5 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
                ran.lock().unwrap().push(i);
                if fail.contains(&i) {
                    return Err(format!("index {i}"));
                }
                Ok(())
            },
        );
        let mut ran = ran.into_inner().unwrap();
        ran.sort_unstable();
        (ran, r)
    }

    #[test]
    fn each_index_runs_every_index_once() {
        for t in [1, 2, 3, 8] {
            for n in [0, 1, 2, 7, 200] {
                let (ran, r) = run_each(t, n, &[]);
                assert_eq!(r, Ok(()));
                assert_eq!(ran, (0..n).collect::<Vec<_>>(), "{t} threads, {n} indices");
            }
        }
    }

    #[test]
    fn each_index_returns_the_lowest_failure_after_every_index_below_it() {
        for t in [1, 2, 4] {
            let (ran, r) = run_each(t, 300, &[41, 40, 250]);
            assert_eq!(r, Err("index 40".to_string()), "{t} threads");
            // Everything below the failure ran; the handing out stopped
            // soon after it (at most one index per other thread).
            assert!(
                ran.starts_with(&(0..=40).collect::<Vec<_>>()),
                "{t} threads"
            );
            assert!(ran.len() <= 41 + t, "{t} threads: {} ran", ran.len());
            assert!(!ran.contains(&250));
        }
    }

    #[test]
    fn each_index_gives_each_thread_its_own_state() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let made = AtomicUsize::new(0);
        let total = AtomicUsize::new(0);
        let r = each_index(
            3,
            100,
            || {
                made.fetch_add(1, Ordering::SeqCst);
                Vec::new()
            },
            |seen: &mut Vec<usize>, i| {
                // A state shared between threads would see indices out of
                // order here.
                assert!(seen.last().is_none_or(|&j| j < i));
                seen.push(i);
                total.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ()>(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(total.into_inner(), 100);
        assert_eq!(made.into_inner(), 3);
    }

    #[test]
    #[should_panic(expected = "boom")]
    fn a_panic_in_each_index_reaches_the_caller() {
        let _ = each_index(
            2,
            100,
            || (),
            |_, i| {
                if i == 30 {
                    panic!("boom");
                }
                Ok::<_, ()>(())
            },
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
