//! Sending a finished local file to object storage.

use std::io::Read;
use std::path::Path;

use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};

use crate::{Error, runtime};

/// Parts of a multipart upload, in bytes (S3's smallest part is 5 MiB).
const PART: usize = 8 << 20;
/// Parts in flight at once.
const IN_FLIGHT: usize = 4;

/// Uploads the local file `from` to `url` and returns its size. A file of
/// up to one part (8 MiB) goes in one request; a larger one as a
/// multipart upload, read part by part (memory stays at a few parts
/// whatever the size). Either way the object appears only when the whole
/// file has arrived; a failed multipart upload is aborted. A `file://` URL
/// is a local copy.
pub fn upload(from: &Path, url: &str) -> Result<u64, Error> {
    let parsed = crate::parse(url)?;
    let io = |source: std::io::Error| Error::Io {
        url: url.to_string(),
        source,
    };
    if parsed.scheme() == "file" {
        let to = parsed.to_file_path().map_err(|()| Error::Url {
            url: url.to_string(),
            reason: "not a local file path".into(),
        })?;
        return std::fs::copy(from, to).map_err(io);
    }
    let (store, path) = crate::object::store_for(&parsed, url)?;
    let mut file = std::fs::File::open(from).map_err(|source| Error::Io {
        url: from.display().to_string(),
        source,
    })?;
    let size = file.metadata().map_err(io)?.len();
    let store_err = |source| Error::Store {
        url: url.to_string(),
        source,
    };
    if size <= PART as u64 {
        let mut all = Vec::with_capacity(PART.min(size as usize));
        file.read_to_end(&mut all).map_err(io)?;
        if all.len() as u64 != size {
            return Err(io(std::io::Error::other(
                "the file changed while it was read",
            )));
        }
        let payload = PutPayload::from(all);
        runtime::block_on(async move { store.put(&path, payload).await })
            .map_err(io)?
            .map_err(store_err)?;
        return Ok(size);
    }
    let sent = runtime::block_on(async move {
        let upload = store.put_multipart(&path).await?;
        let mut w = WriteMultipart::new_with_chunk_size(upload, PART);
        let mut buf = vec![0u8; PART];
        let mut sent = 0u64;
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = w.abort().await;
                    return Ok(Err(e));
                }
            };
            if let Err(e) = w.wait_for_capacity(IN_FLIGHT).await {
                let _ = w.abort().await;
                return Err(e);
            }
            w.write(buf.get(..n).unwrap_or_default());
            sent += n as u64;
        }
        w.finish().await?;
        Ok(Ok(sent))
    })
    .map_err(io)?
    .map_err(store_err)?
    .map_err(io)?;
    Ok(sent)
}
