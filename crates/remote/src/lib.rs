//! Files in object storage as dataformats byte sources.
//!
//! [`open`] turns a URL into a [`Source`] that the format crates and the
//! `dataformats` facade read like a local file: every read asks the store
//! for exactly the byte range it needs (an HTTP `Range` request), so
//! reading one column of a few records of a large file fetches a few
//! ranges, not the file. [`upload`] sends a finished local file to a URL
//! so that the object appears only once it is complete.
//!
//! | URL | store |
//! |---|---|
//! | `s3://bucket/key` (also `s3a://`) | Amazon S3 and S3-compatible servers |
//! | `gs://bucket/key` | Google Cloud Storage |
//! | `az://container/key`, `abfs[s]://container@account.dfs.core.windows.net/key` | Azure Blob Storage |
//! | `http://host/path`, `https://host/path` | any server that answers `HEAD` and ranged `GET` |
//! | `file:///path` | a local file, read with positioned reads |
//!
//! Credentials, regions and endpoints come from the usual environment
//! variables of each store (`AWS_ACCESS_KEY_ID`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP=true` for a plain-HTTP S3-compatible
//! server, `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...).
//!
//! # How reads are planned
//!
//! * A read that continues where the previous one ended starts a
//!   *read-ahead*: the next window of the object is fetched while the
//!   current one is decoded, and each window is twice the last (from
//!   256 KiB up to [`RemoteOptions::max_window`]), so a scan streams at
//!   the store's speed while a short run of records costs little more than
//!   its own bytes.
//! * Any other read fetches exactly its range; a large one is split into
//!   parts fetched concurrently (at most [`RemoteOptions::concurrency`]).
//! * A failed or short answer is retried with exponential backoff
//!   ([`RemoteOptions::retries`]); after that the read fails with an error
//!   naming the byte range and keeping the store's error as its cause.
//!   A short answer is never taken as data.
//!
//! Memory stays bounded: at most four read-ahead windows per open object.
//!
//! ```no_run
//! let src = dataformats_remote::open("s3://datasets/train.tbl")?;
//! println!("{} bytes", src.len());
//! # Ok::<(), dataformats_remote::Error>(())
//! ```

mod object;
mod runtime;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod upload;

use std::sync::Arc;

pub use dataformats_core::Source;
pub use object::{ObjectSource, RemoteOptions, Stats};
pub use upload::upload;

/// What went wrong reaching an object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a URL this crate reads.
    #[error("{url}: {reason}")]
    Url {
        /// The text given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The store refused or failed a request (the cause is the store's error).
    #[error("{url}: {source}")]
    Store {
        /// The object.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A local read or write failed.
    #[error("{url}: {source}")]
    Io {
        /// The object or file.
        url: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The cause as an I/O error, without the URL (for callers that name
    /// the URL themselves); a store's error stays its source.
    pub fn into_io(self) -> std::io::Error {
        match self {
            Error::Url { reason, .. } => {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, reason)
            }
            Error::Store { source, .. } => {
                let kind = match source {
                    object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
                    object_store::Error::PermissionDenied { .. }
                    | object_store::Error::Unauthenticated { .. } => {
                        std::io::ErrorKind::PermissionDenied
                    }
                    _ => std::io::ErrorKind::Other,
                };
                std::io::Error::new(kind, source)
            }
            Error::Io { source, .. } => source,
        }
    }
}

/// The URL schemes [`open`] reads (besides local paths).
pub const SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https", "file",
];

/// True when `text` is a URL of one of the [`SCHEMES`] (`s3://...`), as
/// opposed to a local path.
///
/// ```
/// assert!(dataformats_remote::is_url("s3://bucket/train.tbl"));
/// assert!(dataformats_remote::is_url("HTTPS://example.org/a.idv"));
/// assert!(!dataformats_remote::is_url("data/train.tbl"));
/// assert!(!dataformats_remote::is_url("C:\\data\\train.tbl"));
/// ```
pub fn is_url(text: &str) -> bool {
    text.split_once("://")
        .is_some_and(|(scheme, _)| SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme)))
}

/// Opens the object at `url` with default [`RemoteOptions`]: its length is
/// asked once (`HEAD`), then every read is a ranged request.
pub fn open(url: &str) -> Result<Source, Error> {
    open_with(url, &RemoteOptions::default())
}

/// [`open`] with the caller's options.
pub fn open_with(url: &str, opts: &RemoteOptions) -> Result<Source, Error> {
    let parsed = parse(url)?;
    if parsed.scheme() == "file" {
        let path = parsed.to_file_path().map_err(|()| Error::Url {
            url: url.to_string(),
            reason: "not a local file path".into(),
        })?;
        return Source::open(&path).map_err(|e| Error::Io {
            url: url.to_string(),
            source: std::io::Error::other(e),
        });
    }
    let object = ObjectSource::open(url, opts)?;
    Ok(Source::from_ranges(Arc::new(object)))
}

/// Opens the object at `url` whose length a [`list`] gave as `len`, with
/// default [`RemoteOptions`] and without asking its length again; an object
/// that is no longer `len` bytes long fails the first read.
pub fn open_listed(url: &str, len: u64) -> Result<Source, Error> {
    let object = ObjectSource::open_listed(url, len, &RemoteOptions::default())?;
    Ok(Source::from_ranges(Arc::new(object)))
}

/// The objects whose names start with the prefix `url` names, taken as a
/// directory (`s3://bucket/data/table.bcolz`: everything under
/// `data/table.bcolz/`): each one's name relative to the prefix (parts
/// joined with `/`) and size, in the store's order. More than `max`
/// objects is an error (a prefix is listed whole before use).
pub fn list(url: &str, max: usize) -> Result<Vec<(String, u64)>, Error> {
    let parsed = parse(url)?;
    if parsed.scheme() == "file" {
        return Err(Error::Url {
            url: url.to_string(),
            reason: "a file:// URL names a local directory: give its path".into(),
        });
    }
    let (store, prefix) = object::store_for(&parsed, url)?;
    let listed = runtime::block_on(async move {
        use futures::StreamExt;
        let mut stream = store.list(Some(&prefix));
        let mut out = Vec::new();
        while let Some(meta) = stream.next().await {
            let meta = meta?;
            let Some(parts) = meta.location.prefix_match(&prefix) else {
                continue;
            };
            let name: Vec<String> = parts.map(|p| p.as_ref().to_string()).collect();
            if out.len() >= max {
                return Ok(None);
            }
            out.push((name.join("/"), meta.size));
        }
        Ok(Some(out))
    })
    .map_err(|source| Error::Io {
        url: url.to_string(),
        source,
    })?
    .map_err(|source| Error::Store {
        url: url.to_string(),
        source,
    })?;
    listed.ok_or_else(|| Error::Io {
        url: url.to_string(),
        source: std::io::Error::other(format!("more than {max} objects under this prefix")),
    })
}

/// `url` parsed, its scheme one of [`SCHEMES`].
fn parse(url: &str) -> Result<url::Url, Error> {
    let bad = |reason: String| Error::Url {
        url: url.to_string(),
        reason,
    };
    let parsed = url::Url::parse(url).map_err(|e| bad(format!("not a URL: {e}")))?;
    if !SCHEMES.contains(&parsed.scheme()) {
        return Err(bad(format!(
            "unknown scheme `{}` (known: {})",
            parsed.scheme(),
            SCHEMES.join(", ")
        )));
    }
    Ok(parsed)
}
