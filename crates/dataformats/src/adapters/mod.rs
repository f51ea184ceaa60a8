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
/// batch. `V` is cheap to clone (an `Arc` or a shared buffer).
#[cfg(any(feature = "bloscpack", feature = "cntk", feature = "idv"))]
pub(crate) struct Last<K, V>(std::sync::Mutex<Option<(K, V)>>);

#[cfg(any(feature = "bloscpack", feature = "cntk", feature = "idv"))]
impl<K: PartialEq, V: Clone> Last<K, V> {
    /// Nothing kept yet.
    pub(crate) fn new() -> Self {
        Last(std::sync::Mutex::new(None))
    }

    /// The item kept under `key`, if that is the one kept.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let last = self.0.lock().ok()?;
        last.as_ref()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// The item kept under `key`, or the one `make` makes (then kept).
    #[cfg_attr(not(any(feature = "bloscpack", feature = "cntk")), allow(dead_code))]
    pub(crate) fn get_or_make<E>(
        &self,
        key: K,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        if let Some(v) = self.get(&key) {
            return Ok(v);
        }
        let v = make()?;
        self.put(key, v.clone());
        Ok(v)
    }

    /// Keeps `value` under `key`, in place of what was kept.
    pub(crate) fn put(&self, key: K, value: V) {
        if let Ok(mut last) = self.0.lock() {
            *last = Some((key, value));
        }
    }
}
