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
