//! The bootstrap store's TCP server: one accept thread, one thread per connection, so a
//! client blocked in `get` or `barrier` never holds up the others.
//!
//! Every connection first proves the job secret ([`crate::auth`]); one that does not is
//! closed and reported as [`ServerEvent::Refused`] without anything it sent being
//! interpreted. Depends only on weft-core (the launcher consumes the events).

use crate::auth::{check_secret, server_handshake, Refusal};
use crate::sock::NoSigPipe;
use crate::table::{AbortRecord, Table};
use crate::wire::{read_frame, write_frame, Request, Response};
use std::collections::HashMap;
use std::fmt;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use weft_core::handshake::RefusalLog;
use weft_core::{Error, ErrorKind, Result};

/// How long a new connection has to prove the secret before it is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once; more are refused so a flood cannot exhaust threads.
pub const MAX_CONNECTIONS: usize = 4096;
/// Refusals are reported one by one up to [`REFUSALS_REPORTED`], then only every
/// [`REFUSAL_REPORT_EVERY`]th (`weft_core::handshake::RefusalLog`), so a flood of strangers
/// cannot flood the job's output.
pub use weft_core::handshake::{REFUSALS_REPORTED, REFUSAL_REPORT_EVERY};

/// Something the launcher should know about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// A connection did not prove the job secret and was closed. Reported for the first
    /// [`REFUSALS_REPORTED`] refusals, then only every [`REFUSAL_REPORT_EVERY`]th.
    Refused { peer: SocketAddr, reason: String },
    /// An authenticated connection broke the protocol and was closed.
    Dropped { peer: SocketAddr, reason: String },
    /// A rank asked to end the job (MPI_Abort).
    Abort {
        peer: SocketAddr,
        rank: Option<u32>,
        code: i32,
        message: String,
    },
}

impl fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerEvent::Refused { peer, reason } => {
                write!(
                    f,
                    "weft: bootstrap: refused connection from {peer}: {reason}"
                )
            }
            ServerEvent::Dropped { peer, reason } => {
                write!(
                    f,
                    "weft: bootstrap: dropped connection from {peer}: {reason}"
                )
            }
            ServerEvent::Abort {
                peer,
                rank,
                code,
                message,
            } => match rank {
                Some(r) => write!(f, "weft: rank {r} called abort with code {code}: {message}"),
                None => write!(
                    f,
                    "weft: a rank at {peer} called abort with code {code}: {message}"
                ),
            },
        }
    }
}

/// Receives the server's events; called from connection threads.
pub type EventSink = Arc<dyn Fn(ServerEvent) + Send + Sync>;

struct Shared {
    table: Table,
    secret: Vec<u8>,
    events: EventSink,
    shutdown: AtomicBool,
    handshake_timeout_ms: AtomicU64,
    /// Live connections, so shutdown can unblock their reads.
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_id: AtomicU64,
    /// Connections refused so far (reported throttled: [`REFUSALS_REPORTED`]).
    refused: RefusalLog,
}

impl Shared {
    /// Counts a refusal and reports it when it is one of the first [`REFUSALS_REPORTED`] or
    /// a multiple of [`REFUSAL_REPORT_EVERY`].
    fn refuse(&self, peer: SocketAddr, reason: String) {
        let Some(reason) = self.refused.refuse(reason) else {
            return;
        };
        (self.events)(ServerEvent::Refused { peer, reason });
    }
}

/// The authenticated TCP store; it serves until dropped.
pub struct TcpStoreServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    accept_thread: Option<JoinHandle<()>>,
}

impl TcpStoreServer {
    /// Binds `addr` (e.g. `"127.0.0.1:0"`) and serves clients that prove `secret`. Events are
    /// logged as warnings (`weft_core::logging`).
    pub fn bind(addr: &str, secret: &[u8]) -> Result<TcpStoreServer> {
        Self::bind_with_events(addr, secret, Arc::new(|ev| log::warn!("{ev}")))
    }

    /// Like [`bind`](Self::bind), but hands every event to `events`.
    pub fn bind_with_events(
        addr: &str,
        secret: &[u8],
        events: EventSink,
    ) -> Result<TcpStoreServer> {
        check_secret(secret)?;
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::io(format!("bootstrap: binding {addr:?}"), e))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| Error::io("bootstrap: reading the bound address", e))?;
        let shared = Arc::new(Shared {
            table: Table::default(),
            secret: secret.to_vec(),
            events,
            shutdown: AtomicBool::new(false),
            handshake_timeout_ms: AtomicU64::new(HANDSHAKE_TIMEOUT.as_millis() as u64),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            refused: RefusalLog::new(),
        });
        let s = Arc::clone(&shared);
        let accept_thread = std::thread::Builder::new()
            .name("weft-boot-accept".into())
            .spawn(move || accept_loop(listener, s))
            .map_err(|e| Error::io("bootstrap: starting the accept thread", e))?;
        Ok(TcpStoreServer {
            local_addr,
            shared,
            accept_thread: Some(accept_thread),
        })
    }

    /// The address clients connect to (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Every abort requested so far, oldest first.
    pub fn aborts(&self) -> Vec<AbortRecord> {
        self.shared.table.aborts()
    }

    /// Sets how long a new connection may take to prove the secret (default
    /// [`HANDSHAKE_TIMEOUT`]); a silent peer is refused after that.
    pub fn set_handshake_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.shared
            .handshake_timeout_ms
            .store(ms, Ordering::Relaxed);
    }

    /// Connections refused so far (each counted, only some reported: [`REFUSALS_REPORTED`]).
    pub fn refused_count(&self) -> u64 {
        self.shared.refused.count()
    }

    /// Number of connections being served now (authenticated or still in the handshake).
    pub fn connection_count(&self) -> usize {
        lock(&self.shared.conns).len()
    }
}

impl Drop for TcpStoreServer {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.table.close();
        for s in lock(&self.shared.conns).values() {
            let _ = s.shutdown(Shutdown::Both);
        }
        // The accept thread sits in accept(); a connection of our own wakes it to see the flag.
        let mut wake = self.local_addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => [127, 0, 0, 1].into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
            if let Some(t) = self.accept_thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for conn in listener.incoming() {
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let stream = match conn {
            Ok(s) => s,
            // Transient accept failures (peer reset before accept, fd pressure): keep serving.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let peer = match stream.peer_addr() {
            Ok(p) => p,
            Err(_) => continue,
        };
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut conns = lock(&shared.conns);
            if conns.len() >= MAX_CONNECTIONS {
                drop(conns);
                // The client reports `refused: ...` and retries (connect_retry).
                crate::auth::refuse_busy(
                    &mut NoSigPipe(&stream),
                    &format!("already serving {MAX_CONNECTIONS} connections"),
                );
                shared.refuse(
                    peer,
                    format!("already serving {MAX_CONNECTIONS} connections"),
                );
                continue;
            }
            match stream.try_clone() {
                Ok(c) => {
                    conns.insert(id, c);
                }
                Err(_) => continue,
            }
        }
        let s = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("weft-boot-conn".into())
            // Requests are small table operations; the default 2 MiB stack is never needed.
            .stack_size(256 << 10)
            .spawn(move || {
                serve_connection(stream, peer, &s);
                lock(&s.conns).remove(&id);
            });
        if let Err(e) = spawned {
            lock(&shared.conns).remove(&id);
            shared.refuse(peer, format!("could not start a thread for it: {e}"));
        }
    }
}

fn serve_connection(mut stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let limit = Duration::from_millis(shared.handshake_timeout_ms.load(Ordering::Relaxed).max(1));
    let _ = stream.set_read_timeout(Some(limit));
    let _ = stream.set_write_timeout(Some(limit));
    if let Err(Refusal(reason)) = server_handshake(&mut NoSigPipe(&stream), &shared.secret) {
        if !shared.shutdown.load(Ordering::SeqCst) {
            shared.refuse(peer, reason);
        }
        return;
    }
    log::debug!("bootstrap store: client {peer} proved the job secret");
    // Authenticated ranks may stay idle for a long time between requests.
    let _ = stream.set_read_timeout(None);
    let _ = stream.set_write_timeout(None);
    loop {
        let body = match read_frame(&mut stream) {
            Ok(Some(b)) => b,
            Ok(None) => return,
            Err(e) => {
                if !shared.shutdown.load(Ordering::SeqCst) && e.kind() != ErrorKind::PeerDead {
                    let _ = write_frame(
                        &mut NoSigPipe(&stream),
                        &Response::Error(e.clone()).encode(),
                    );
                    (shared.events)(ServerEvent::Dropped {
                        peer,
                        reason: e.to_string(),
                    });
                }
                return;
            }
        };
        let request = match Request::decode(&body) {
            Ok(r) => r,
            Err(e) => {
                let _ = write_frame(
                    &mut NoSigPipe(&stream),
                    &Response::Error(e.clone()).encode(),
                );
                (shared.events)(ServerEvent::Dropped {
                    peer,
                    reason: e.to_string(),
                });
                return;
            }
        };
        let response = execute(request, peer, shared);
        if write_frame(&mut NoSigPipe(&stream), &response.encode()).is_err() {
            return;
        }
    }
}

fn execute(request: Request, peer: SocketAddr, shared: &Shared) -> Response {
    let result = match request {
        Request::Put { key, value } => shared.table.put(&key, &value).map(|_| Response::Ok),
        Request::Get { key, timeout_ms } => shared
            .table
            .get(&key, Duration::from_millis(timeout_ms))
            .map(Response::Value),
        Request::GetMany { keys, timeout_ms } => shared
            .table
            .get_many(&keys, Duration::from_millis(timeout_ms))
            .map(Response::Values),
        Request::Barrier {
            name,
            count,
            timeout_ms,
        } => shared
            .table
            .barrier(&name, count, Duration::from_millis(timeout_ms))
            .map(|_| Response::Ok),
        Request::Abort {
            code,
            rank,
            message,
        } => {
            // Recorded and reported before the reply, so the launcher learns of the abort
            // before the rank can exit and be seen as an ordinary failure.
            shared.table.record_abort(AbortRecord {
                rank,
                code,
                message: message.clone(),
            });
            (shared.events)(ServerEvent::Abort {
                peer,
                rank,
                code,
                message,
            });
            Ok(Response::Ok)
        }
    };
    result.unwrap_or_else(Response::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{client_handshake, new_secret};
    use std::io::Write;

    /// An authenticated raw connection, for sending malformed frames after the handshake.
    fn authed(srv: &TcpStoreServer, secret: &[u8]) -> TcpStream {
        let mut s = TcpStream::connect(srv.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        client_handshake(&mut s, secret, "test").unwrap();
        s
    }

    #[test]
    fn malformed_frames_after_auth_get_an_error_and_a_log_line() {
        let secret = new_secret().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        let srv = TcpStoreServer::bind_with_events(
            "127.0.0.1:0",
            &secret,
            Arc::new(move |e| sink.lock().unwrap().push(e)),
        )
        .unwrap();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (u32::MAX.to_be_bytes().to_vec(), "exceeds the limit"),
            (vec![0, 0, 0, 3, 0x7f, 1, 2], "unknown request opcode"),
            (
                vec![0, 0, 0, 5, 1, 0xff, 0xff, 0xff, 0xff],
                "exceeds the limit",
            ),
        ];
        for (bytes, want) in &cases {
            let mut s = authed(&srv, &secret);
            s.write_all(bytes).unwrap();
            let reply = read_frame(&mut s).unwrap().expect("an error frame");
            match Response::decode(&reply).unwrap() {
                Response::Error(e) => {
                    assert_eq!(e.kind(), ErrorKind::Protocol);
                    assert!(e.message().contains(want), "{e}");
                }
                other => panic!("{other:?}"),
            }
            // Then the server closes the connection.
            assert_eq!(read_frame(&mut s).unwrap(), None);
        }
        // A frame cut short by the client's close.
        {
            let mut s = authed(&srv, &secret);
            s.write_all(&[0, 0, 1, 0, 1, 2]).unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while events.lock().unwrap().len() < 4 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let ev = events.lock().unwrap().clone();
        assert_eq!(ev.len(), 4, "{ev:?}");
        assert!(ev.iter().all(|e| matches!(e, ServerEvent::Dropped { .. })));
        // Connection threads report in any order.
        assert!(
            ev.iter().any(|e| e.to_string().contains("truncated frame")),
            "{ev:?}"
        );
        assert!(ev.iter().all(|e| e
            .to_string()
            .starts_with("weft: bootstrap: dropped connection from 127.0.0.1:")));
        // Connections end cleanly: the server forgets them.
        while srv.connection_count() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(srv.connection_count(), 0);
    }
}
