//! A small object server on loopback, for tests and benches (feature
//! `testing`).
//!
//! [`ObjectServer`] answers `HEAD` and `GET` (whole, or one byte range
//! `bytes=A-B` / `bytes=A-`) by path, over HTTP/1.1 with keep-alive, on
//! `127.0.0.1` and a port the system picks. Objects are either held in
//! memory ([`ObjectServer::objects`]) or are the files under a directory
//! ([`ObjectServer::directory`], read with positioned reads, so an object
//! may be larger than memory). Path style makes it an S3 endpoint too: with
//! `AWS_ENDPOINT_URL` set to [`ObjectServer::endpoint`] and
//! `AWS_ALLOW_HTTP=true`, `s3://bucket/key` is the object at `bucket/key`.
//! It checks no signatures and keeps no state beyond a log of the requests
//! it answered ([`ObjectServer::requests`]), so each request costs little.
//!
//! Every answer carries `Content-Length`, `ETag`, `Last-Modified` and, for
//! a range, `Content-Range: bytes A-B/SIZE`; a missing object is a `404`
//! and a range that starts past the end a `416`. Other methods are
//! answered `405` (a request body is read and dropped first). Dropping the
//! server stops it from accepting connections.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The path without the leading `/` and without the query.
    pub path: String,
    /// The range asked for: first byte, and last byte when given.
    pub range: Option<(u64, Option<u64>)>,
}

/// Where the served objects come from.
enum Objects {
    Directory(PathBuf),
    Memory(HashMap<String, Arc<[u8]>>),
}

/// An HTTP object server on loopback; see the [module](self) docs.
pub struct ObjectServer {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl ObjectServer {
    /// Serves the files under `root`: the object at path `a/b` is the file
    /// `root/a/b`, read when asked for (a file may change between requests).
    /// A path with a `..` component is not found.
    pub fn directory(root: impl Into<PathBuf>) -> io::Result<Self> {
        Self::start(Objects::Directory(root.into()))
    }

    /// Serves `objects`, each a path (without a leading `/`) and its bytes.
    pub fn objects<K, V>(objects: impl IntoIterator<Item = (K, V)>) -> io::Result<Self>
    where
        K: Into<String>,
        V: Into<Vec<u8>>,
    {
        let map = objects
            .into_iter()
            .map(|(k, v)| (k.into(), Arc::from(v.into())))
            .collect();
        Self::start(Objects::Memory(map))
    }

    fn start(objects: Objects) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let objects = Arc::new(objects);
        let (log, stopped) = (requests.clone(), stop.clone());
        std::thread::Builder::new()
            .name("object-server".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stopped.load(Ordering::Acquire) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let (objects, log) = (objects.clone(), log.clone());
                    // A connection that fails ends; the server goes on.
                    let _ = std::thread::Builder::new()
                        .name("object-server-conn".into())
                        .spawn(move || {
                            let _ = serve(conn, &objects, &log);
                        });
                }
            })?;
        Ok(Self {
            port,
            requests,
            stop,
        })
    }

    /// The port it listens on (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, the endpoint for an S3 client.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `http://` URL of the object at `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.endpoint(), path.trim_start_matches('/'))
    }

    /// The requests answered so far, in the order they were read.
    pub fn requests(&self) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for ObjectServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The parsed head of one request.
struct Head {
    method: String,
    path: String,
    range: Option<Option<(u64, Option<u64>)>>,
    body: u64,
}

/// Reads one request head; `None` when the client closed the connection.
fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default();
    let path = target.split('?').next().unwrap_or_default();
    let path = path.trim_start_matches('/').to_string();
    let mut head = Head {
        method,
        path,
        range: None,
        body: 0,
    };
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            return Ok(Some(head));
        }
        let Some((name, value)) = h.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("range") {
            // An unreadable range is kept as `Some(None)` and refused.
            head.range = Some(value.strip_prefix("bytes=").and_then(|r| {
                let (a, b) = r.split_once('-')?;
                let b = if b.is_empty() {
                    None
                } else {
                    Some(b.parse().ok()?)
                };
                Some((a.parse().ok()?, b))
            }));
        } else if name.eq_ignore_ascii_case("content-length") {
            head.body = value.parse().unwrap_or(0);
        }
    }
}

/// An object opened for one request.
enum Body {
    File(std::fs::File),
    Bytes(Arc<[u8]>),
}

/// Answers the requests of one connection until the client closes it.
fn serve(conn: TcpStream, objects: &Objects, log: &Mutex<Vec<Request>>) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    let mut buf = vec![0u8; 1 << 20];
    while let Some(head) = read_head(&mut reader)? {
        io::copy(&mut (&mut reader).take(head.body), &mut io::sink())?;
        log.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Request {
                method: head.method.clone(),
                path: head.path.clone(),
                range: head.range.flatten(),
            });
        if head.method != "GET" && head.method != "HEAD" {
            out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        }
        let body = match objects {
            // Nothing outside the directory: no `..`, no absolute path.
            Objects::Directory(_) if head.path.split('/').any(|c| c == "..") => None,
            Objects::Directory(root) => std::fs::File::open(root.join(&head.path))
                .ok()
                .filter(|f| f.metadata().is_ok_and(|m| m.is_file()))
                .map(Body::File),
            Objects::Memory(map) => map.get(&head.path).cloned().map(Body::Bytes),
        };
        let Some(body) = body else {
            out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        let size = match &body {
            Body::File(f) => f.metadata()?.len(),
            Body::Bytes(b) => b.len() as u64,
        };
        let (start, end) = match head.range {
            None => (0, size),
            Some(Some((a, b))) if a < size && b.is_none_or(|b| b >= a) => {
                (a, b.map_or(size, |b| b.saturating_add(1).min(size)))
            }
            Some(_) => {
                let refusal = format!(
                    "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{size}\r\n\
                     Content-Length: 0\r\n\r\n"
                );
                out.write_all(refusal.as_bytes())?;
                continue;
            }
        };
        let status = if head.range.is_some() {
            "206 Partial Content"
        } else {
            "200 OK"
        };
        let mut reply = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nETag: \"{size}\"\r\n\
             Last-Modified: Thu, 26 Nov 2026 00:00:00 GMT\r\nAccept-Ranges: bytes\r\n",
            end - start
        );
        if head.range.is_some() {
            reply += &format!("Content-Range: bytes {start}-{}/{size}\r\n", end - 1);
        }
        reply += "\r\n";
        out.write_all(reply.as_bytes())?;
        if head.method == "HEAD" {
            continue;
        }
        match body {
            Body::Bytes(b) => {
                let part = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(s, e)| b.get(s..e))
                    .ok_or_else(|| io::Error::other("range outside the object"))?;
                out.write_all(part)?;
            }
            Body::File(f) => {
                let mut at = start;
                while at < end {
                    let n = usize::try_from(end - at).map_or(buf.len(), |n| n.min(buf.len()));
                    let chunk = buf.get_mut(..n).ok_or_else(|| io::Error::other("buffer"))?;
                    f.read_exact_at(chunk, at)?;
                    out.write_all(chunk)?;
                    at += n as u64;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends one request on `conn` and reads the answer: status line,
    /// headers (lowercased names) and body.
    fn ask(
        conn: &mut BufReader<TcpStream>,
        request: &str,
    ) -> (String, HashMap<String, String>, Vec<u8>) {
        conn.get_mut().write_all(request.as_bytes()).expect("send");
        let mut status = String::new();
        conn.read_line(&mut status).expect("status");
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            conn.read_line(&mut h).expect("header");
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').expect("name: value");
            headers.insert(n.to_ascii_lowercase(), v.trim().to_string());
        }
        let n: usize = headers["content-length"].parse().expect("length");
        let mut body = vec![0u8; n];
        if !request.starts_with("HEAD") {
            conn.read_exact(&mut body).expect("body");
        } else {
            body.clear();
        }
        (status.trim_end().to_string(), headers, body)
    }

    fn check(server: &ObjectServer, object: &[u8]) {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        let mut conn = BufReader::new(stream);
        let size = object.len();

        let (s, h, b) = ask(&mut conn, "GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(s, "HTTP/1.1 200 OK");
        assert_eq!(b, object);
        assert!(!h.contains_key("content-range"));

        let (s, h, b) = ask(&mut conn, "HEAD /b/k HTTP/1.1\r\n\r\n");
        assert_eq!(s, "HTTP/1.1 200 OK");
        assert_eq!(h["content-length"], size.to_string());
        assert!(b.is_empty());

        let (s, h, b) = ask(
            &mut conn,
            "GET /b/k?x=1 HTTP/1.1\r\nRange: bytes=10-19\r\n\r\n",
        );
        assert_eq!(s, "HTTP/1.1 206 Partial Content");
        assert_eq!(h["content-range"], format!("bytes 10-19/{size}"));
        assert_eq!(b, &object[10..20]);

        // Open-ended, and past the end: cut at the end.
        for range in [
            format!("{}-", size - 5),
            format!("{}-{}", size - 5, size + 50),
        ] {
            let req = format!("GET /b/k HTTP/1.1\r\nRange: bytes={range}\r\n\r\n");
            let (s, h, b) = ask(&mut conn, &req);
            assert_eq!(s, "HTTP/1.1 206 Partial Content", "{range}");
            assert_eq!(
                h["content-range"],
                format!("bytes {}-{}/{size}", size - 5, size - 1)
            );
            assert_eq!(b, &object[size - 5..]);
        }

        // A body is drained and the method refused; the connection goes on.
        let (s, _, b) = ask(
            &mut conn,
            "PUT /b/k HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b/k HTTP/1.1\r\nRange: bytes=0-0\r\n\r\n",
        );
        assert_eq!(s, "HTTP/1.1 405 Method Not Allowed");
        assert!(b.is_empty());
        let mut status = String::new();
        conn.read_line(&mut status).expect("second answer");
        assert_eq!(status.trim_end(), "HTTP/1.1 206 Partial Content");
        drop(conn);

        let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        let mut conn = BufReader::new(stream);
        for range in [format!("{size}-"), "5-2".to_string(), "x-3".to_string()] {
            let req = format!("GET /b/k HTTP/1.1\r\nRange: bytes={range}\r\n\r\n");
            let (s, h, b) = ask(&mut conn, &req);
            assert_eq!(s, "HTTP/1.1 416 Range Not Satisfiable", "{range}");
            assert_eq!(h["content-range"], format!("bytes */{size}"));
            assert!(b.is_empty());
        }
        let (s, _, _) = ask(&mut conn, "GET /b/missing HTTP/1.1\r\n\r\n");
        assert_eq!(s, "HTTP/1.1 404 Not Found");
        let (s, _, _) = ask(&mut conn, "GET /b HTTP/1.1\r\n\r\n");
        assert_eq!(s, "HTTP/1.1 404 Not Found", "a directory is not an object");

        let log = server.requests();
        assert_eq!(log.len(), 12);
        assert_eq!(
            log[2],
            Request {
                method: "GET".into(),
                path: "b/k".into(),
                range: Some((10, Some(19))),
            }
        );
        assert_eq!(log[3].range, Some((size as u64 - 5, None)));
        assert_eq!(log[5].method, "PUT");
        assert_eq!(log[8].range, Some((5, Some(2))));
        assert_eq!(log[9].range, None, "an unreadable range is logged as none");
    }

    #[test]
    fn serves_objects_from_memory_and_from_a_directory() {
        let object: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 256) as u8).collect();
        let server =
            ObjectServer::objects([("b/k", object.clone()), ("c", vec![1])]).expect("start");
        assert_eq!(
            server.url("/b/k"),
            format!("http://127.0.0.1:{}/b/k", server.port())
        );
        check(&server, &object);

        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::create_dir(dir.path().join("b")).expect("mkdir");
        std::fs::write(dir.path().join("b/k"), &object).expect("write");
        let server = ObjectServer::directory(dir.path()).expect("start");
        check(&server, &object);
        // Nothing above the directory is served.
        std::fs::write(dir.path().join("b/secret"), b"x").expect("write");
        let inner = ObjectServer::directory(dir.path().join("b/sub")).expect("start");
        std::fs::create_dir(dir.path().join("b/sub")).expect("mkdir");
        let stream = TcpStream::connect(("127.0.0.1", inner.port())).expect("connect");
        let mut conn = BufReader::new(stream);
        for path in ["/../secret", "/x/../../secret", "//../secret"] {
            let (s, _, _) = ask(&mut conn, &format!("GET {path} HTTP/1.1\r\n\r\n"));
            assert_eq!(s, "HTTP/1.1 404 Not Found", "{path}");
        }
        let port = server.port();
        drop(server);
        // Stopped: a connection may still be accepted by the system, but no
        // answer comes.
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /b/k HTTP/1.1\r\n\r\n");
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut buf = [0u8; 1];
            assert!(!matches!(s.read(&mut buf), Ok(1)), "no answer after drop");
        }
    }
}
