//! The bootstrap store's TCP client: one connection, proven with the job secret, used for
//! one request at a time behind a mutex so `&self` methods work from any thread.
//!
//! Depends only on weft-core.

use crate::auth::{check_secret, client_handshake};
use crate::sock::NoSigPipe;
use crate::wire::{io_error, read_frame, write_frame, Request, Response};
use crate::Store;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// How long one TCP connect attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server may take to answer the handshake or a non-blocking request.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to a job's [`TcpStoreServer`](crate::TcpStoreServer).
pub struct TcpStoreClient {
    addr: String,
    rank: Option<u32>,
    /// `None` once the connection broke: a half-read answer would desynchronise the stream.
    stream: Mutex<Option<TcpStream>>,
}

impl std::fmt::Debug for TcpStoreClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpStoreClient")
            .field("addr", &self.addr)
            .field("rank", &self.rank)
            .finish()
    }
}

impl TcpStoreClient {
    /// Connects to `addr` (`host:port`) and proves `secret`; also checks that the server knows
    /// the secret, so ranks never talk to an impostor.
    pub fn connect(addr: &str, secret: &[u8]) -> Result<TcpStoreClient> {
        check_secret(secret)?;
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("bootstrap address {addr:?}: {e} (expected host:port)"),
                )
            })?
            .collect();
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    s.set_read_timeout(Some(ANSWER_TIMEOUT))
                        .and_then(|_| s.set_write_timeout(Some(ANSWER_TIMEOUT)))
                        .map_err(|e| Error::io(format!("bootstrap {addr}: socket setup"), e))?;
                    client_handshake(&mut NoSigPipe(&s), secret, addr)?;
                    return Ok(TcpStoreClient {
                        addr: addr.to_owned(),
                        rank: None,
                        stream: Mutex::new(Some(s)),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => Error::io(format!("bootstrap: connecting to {addr}"), e),
            None => Error::new(
                ErrorKind::InvalidArgument,
                format!("bootstrap address {addr:?} resolves to no address"),
            ),
        })
    }

    /// Connects like [`connect`](Self::connect), retrying refused connections until
    /// `deadline` (the launcher's store may still be starting). Authentication failures are
    /// not retried.
    pub fn connect_retry(addr: &str, secret: &[u8], deadline: Instant) -> Result<TcpStoreClient> {
        loop {
            match Self::connect(addr, secret) {
                Ok(c) => return Ok(c),
                Err(e) if e.kind() == ErrorKind::Io && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Names this client's rank in abort requests.
    pub fn with_rank(mut self, rank: u32) -> TcpStoreClient {
        self.rank = Some(rank);
        self
    }

    /// The address this client is connected to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn call(&self, request: &Request, wait: Duration) -> Result<Response> {
        let body = request.encode()?;
        let mut guard = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        let stream = guard.as_mut().ok_or_else(|| {
            Error::new(
                ErrorKind::PeerDead,
                format!(
                    "bootstrap {}: the connection broke earlier; no further requests",
                    self.addr
                ),
            )
        })?;
        // The server answers a blocking request only when it completes, so the socket may
        // stay silent for `wait`; allow that plus the usual answer time.
        let read_timeout = ANSWER_TIMEOUT.saturating_add(wait);
        let result = stream
            .set_read_timeout(Some(read_timeout))
            .map_err(|e| io_error("setting read timeout", e))
            .and_then(|_| write_frame(&mut NoSigPipe(stream), &body))
            .and_then(|_| read_frame(stream))
            .and_then(|f| {
                f.ok_or_else(|| {
                    Error::new(
                        ErrorKind::PeerDead,
                        "the store closed the connection (launcher gone?)",
                    )
                })
            })
            .and_then(|f| Response::decode(&f));
        match result {
            Ok(r) => Ok(r),
            Err(e) => {
                *guard = None;
                Err(e.context(format!("bootstrap {}", self.addr)))
            }
        }
    }
}

/// Turns a server-side failure into an error naming the store; `Ok` answers where a value was
/// expected (or the reverse) are protocol errors.
fn expect_ok(addr: &str, r: Response) -> Result<()> {
    match r {
        Response::Ok => Ok(()),
        Response::Error(e) => Err(e.context(format!("bootstrap {addr}"))),
        Response::Value(_) | Response::Values(_) => Err(Error::new(
            ErrorKind::Protocol,
            format!("bootstrap {addr}: answered a value where none was asked for"),
        )),
    }
}

fn timeout_ms(t: Duration) -> u64 {
    u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
}

impl Store for TcpStoreClient {
    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        let r = self.call(
            &Request::Put {
                key: key.to_owned(),
                value: value.to_vec(),
            },
            Duration::ZERO,
        )?;
        expect_ok(&self.addr, r)
    }

    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        let r = self.call(
            &Request::Get {
                key: key.to_owned(),
                timeout_ms: timeout_ms(timeout),
            },
            timeout,
        )?;
        match r {
            Response::Value(v) => Ok(v),
            Response::Error(e) => Err(e.context(format!("bootstrap {}", self.addr))),
            Response::Ok | Response::Values(_) => Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "bootstrap {}: get {key:?} answered without a value",
                    self.addr
                ),
            )),
        }
    }

    fn get_many(&self, keys: &[String], timeout: Duration) -> Result<Vec<Vec<u8>>> {
        let r = self.call(
            &Request::GetMany {
                keys: keys.to_vec(),
                timeout_ms: timeout_ms(timeout),
            },
            timeout,
        )?;
        match r {
            Response::Values(v) if v.len() == keys.len() => Ok(v),
            Response::Error(e) => Err(e.context(format!("bootstrap {}", self.addr))),
            _ => Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "bootstrap {}: get of {} keys answered with something else",
                    self.addr,
                    keys.len()
                ),
            )),
        }
    }

    fn barrier(&self, name: &str, count: u32, timeout: Duration) -> Result<()> {
        let r = self.call(
            &Request::Barrier {
                name: name.to_owned(),
                count,
                timeout_ms: timeout_ms(timeout),
            },
            timeout,
        )?;
        expect_ok(&self.addr, r)
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        let r = self.call(
            &Request::Abort {
                code,
                rank: self.rank,
                message: message.to_owned(),
            },
            Duration::ZERO,
        )?;
        expect_ok(&self.addr, r)
    }
}
