//! One adapter per format: the format crate's reader behind the
//! [`Dataset`](crate::Dataset) trait, with its Arrow schema and batches.

#[cfg(feature = "bloscpack")]
pub(crate) mod bloscpack;
#[cfg(feature = "bloscpack")]
pub(crate) mod blz;
#[cfg(feature = "cntk")]
pub(crate) mod cntk;
#[cfg(feature = "ffcv")]
pub(crate) mod ffcv;
#[cfg(feature = "idv")]
pub(crate) mod idv;
#[cfg(feature = "mldf")]
pub(crate) mod mldf;
#[cfg(feature = "bloscpack")]
pub(crate) mod numpy;
#[cfg(feature = "tbl2")]
pub(crate) mod tbl2;

/// The last item an adapter made that a later batch may need again (a
/// checked chunk, a decoded chunk, an inflated block), under its key: a
/// reader of a few records at a time makes each item once, not once per
/// batch, and threads reading batches of the same item side by side make
/// it once between them. `V` is cheap to clone (an `Arc` or a shared
/// buffer).
#[cfg(any(feature = "bloscpack", feature = "cntk", feature = "idv"))]
pub(crate) struct Last<K, V> {
    state: std::sync::Mutex<Slot<K, V>>,
    made: std::sync::Condvar,
}

#[cfg(any(feature = "bloscpack", feature = "cntk", feature = "idv"))]
struct Slot<K, V> {
    kept: Option<(K, V)>,
    /// The keys being made now, by other threads.
    making: Vec<K>,
}

#[cfg(any(feature = "bloscpack", feature = "cntk", feature = "idv"))]
impl<K: PartialEq + Clone, V: Clone> Last<K, V> {
    /// Nothing kept yet.
    pub(crate) fn new() -> Self {
        Last {
            state: std::sync::Mutex::new(Slot {
                kept: None,
                making: Vec::new(),
            }),
            made: std::sync::Condvar::new(),
        }
    }

    /// The item kept under `key`, if that is the one kept.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let slot = self.state.lock().ok()?;
        slot.kept
            .as_ref()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// The item kept under `key`, or the one `make` makes (then kept).
    /// While another thread makes the item of the same key, this one
    /// waits for it instead of making it again; when that fails, this one
    /// makes it (and meets the same error).
    #[cfg_attr(not(any(feature = "bloscpack", feature = "cntk")), allow(dead_code))]
    pub(crate) fn get_or_make<E>(
        &self,
        key: K,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        /// Takes `key` off the list of keys being made, however `make`
        /// ends, and wakes the threads waiting for it.
        struct Making<'a, K: PartialEq, V> {
            last: &'a Last<K, V>,
            key: Option<K>,
        }
        impl<K: PartialEq, V> Drop for Making<'_, K, V> {
            fn drop(&mut self) {
                if let (Some(key), Ok(mut slot)) = (self.key.take(), self.last.state.lock()) {
                    slot.making.retain(|k| *k != key);
                    self.last.made.notify_all();
                }
            }
        }
        let mut marker = Making {
            last: self,
            key: None,
        };
        if let Ok(mut slot) = self.state.lock() {
            loop {
                if let Some((_, v)) = slot.kept.as_ref().filter(|(k, _)| *k == key) {
                    return Ok(v.clone());
                }
                // Not kept, and no other thread is making it (or the one
                // that was failed): this one makes it.
                if !slot.making.contains(&key) {
                    break;
                }
                slot = match self.made.wait(slot) {
                    Ok(s) => s,
                    Err(_) => return make(),
                };
            }
            slot.making.push(key.clone());
            marker.key = Some(key.clone());
        }
        let v = make()?;
        self.put(key, v.clone());
        drop(marker);
        Ok(v)
    }

    /// Keeps `value` under `key`, in place of what was kept.
    pub(crate) fn put(&self, key: K, value: V) {
        if let Ok(mut slot) = self.state.lock() {
            slot.kept = Some((key, value));
        }
    }
}

#[cfg(all(test, feature = "cntk"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Last;

    /// Four threads ask at once for the item of one key: it is made once,
    /// or by each in turn when making it fails.
    fn ask_at_once(fail: bool) -> (usize, Vec<Result<u32, String>>) {
        let last: Last<u8, u32> = Last::new();
        let made = AtomicUsize::new(0);
        let got = std::thread::scope(|s| {
            let hands: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        last.get_or_make(7, || {
                            made.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(30));
                            if fail {
                                Err("broken".to_string())
                            } else {
                                Ok(42)
                            }
                        })
                    })
                })
                .collect();
            hands.into_iter().map(|h| h.join().unwrap()).collect()
        });
        (made.load(Ordering::SeqCst), got)
    }

    #[test]
    fn threads_asking_for_one_item_make_it_once() {
        let (made, got) = ask_at_once(false);
        assert_eq!(made, 1);
        assert_eq!(got, vec![Ok(42); 4]);
        let (made, got) = ask_at_once(true);
        assert_eq!(made, 4, "each meets the error itself");
        assert_eq!(got, vec![Err("broken".to_string()); 4]);
    }

    #[test]
    fn another_key_takes_the_place_of_the_kept_one() {
        let last: Last<u8, u32> = Last::new();
        assert_eq!(last.get(&1), None);
        assert_eq!(last.get_or_make(1, || Ok::<_, ()>(10)), Ok(10));
        assert_eq!(last.get_or_make(1, || Err(())), Ok(10));
        last.put(2, 20);
        assert_eq!((last.get(&1), last.get(&2)), (None, Some(20)));
    }
}
