//! The launcher's agent port: where the host agents of a multi-host job connect back, prove
//! the job secret, say hello, and then send their ranks' output and exits.
//!
//! Anyone who can reach the port can open connections, and until a connection has proven
//! the secret nothing tells a stranger from an agent. So unproven connections are bounded,
//! by source and by time, without ever shutting the door on the agents:
//! - each source address keeps at most [`Gate::per_source`] connections pending and the port
//!   at most [`Gate::total`]; a new connection over either bound takes the place of the
//!   *oldest* pending one (of its source, else of all), which is told `refused: too many
//!   pending connections from ADDR` — so strangers holding silent connections are pushed
//!   out by newcomers, and an agent (which proves the secret within a round trip) gets in;
//! - a connection that has not proven the secret within [`HANDSHAKE_DEADLINE`] is told so
//!   and closed, however slowly it dribbles bytes;
//! - an agent turned away retries with backoff ([`crate::agent`]).
//!
//! Each pending connection holds one small thread; the accept loop wakes at least every
//! [`ACCEPT_TICK`] to enforce the deadline. Refusals reach the job's output throttled.
//!
//! Depends on weft-boot (handshake, frames) and the crate's agent wire; never on the
//! runtime.

use crate::agent_wire::FromAgent;
use crate::hosts::Event;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use weft_boot::auth::{server_handshake_gated, Refusal};
use weft_boot::sock::NoSigPipe;
use weft_boot::wire::read_frame;
use weft_core::handshake::RefusalLog;
use weft_core::{Error, ErrorKind, Result};

/// How long a connection may take to prove the secret and say hello, from its accept.
pub(crate) const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// Longest the accept loop sleeps (it enforces the deadline and sees shutdown this often).
const ACCEPT_TICK: Duration = Duration::from_millis(50);
/// Pending connections per source address, at least (legitimate ones: one per host there).
const MIN_PER_SOURCE: usize = 4;
/// Pending connections on the port, at least.
const MIN_TOTAL: usize = 32;

/// The port; it serves until dropped.
pub(crate) struct AgentPort {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    gate: Arc<Gate>,
}

/// One connection that has not proven the secret yet.
struct Pending {
    id: u64,
    source: IpAddr,
    since: Instant,
    /// A handle on the same socket, to wake its thread by shutting the read side.
    stream: TcpStream,
    /// Set (under the gate's lock) when the connection is given up: the reason it is told.
    why: Arc<Mutex<Option<String>>>,
}

/// Bounds the unproven connections (see the module doc) and counts refusals.
pub(crate) struct Gate {
    /// Pending connections one source address may hold.
    pub(crate) per_source: usize,
    /// Pending connections the port may hold.
    pub(crate) total: usize,
    pending: Mutex<Vec<Pending>>,
    next_id: AtomicU64,
    /// Refusals, reported throttled.
    refusals: RefusalLog,
    tx: Sender<Event>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gate {
    fn refuse(&self, peer: &str, reason: &str) {
        if let Some(reason) = self.refusals.refuse(reason.to_string()) {
            let _ = self.tx.send(Event::Refused(format!(
                "weft: agent port: refused connection from {peer}: {reason}"
            )));
        }
    }

    /// Gives up `pending[i]`: it will be told `why` and closed by its thread.
    fn evict(pending: &mut Vec<Pending>, i: usize, why: String) {
        let p = pending.remove(i);
        *lock(&p.why) = Some(why);
        // Wakes the thread blocked reading the proof (it then sees `why`).
        let _ = p.stream.shutdown(Shutdown::Read);
    }

    /// Registers a new connection from `source`, making room first; returns its id and the
    /// slot its reason goes into if it is given up.
    fn admit(
        &self,
        stream: &TcpStream,
        source: IpAddr,
    ) -> Option<(u64, Arc<Mutex<Option<String>>>)> {
        let handle = stream.try_clone().ok()?;
        let mut pending = lock(&self.pending);
        let same = pending.iter().filter(|p| p.source == source).count();
        if same >= self.per_source {
            // The oldest of this source (the list is in arrival order).
            if let Some(i) = pending.iter().position(|p| p.source == source) {
                Self::evict(
                    &mut pending,
                    i,
                    format!("too many pending connections from {source}"),
                );
            }
        }
        if pending.len() >= self.total {
            // The oldest of the source holding the most.
            let busiest = pending
                .iter()
                .map(|p| p.source)
                .max_by_key(|s| pending.iter().filter(|p| p.source == *s).count());
            if let Some(i) = busiest.and_then(|s| pending.iter().position(|p| p.source == s)) {
                let s = pending[i].source;
                Self::evict(
                    &mut pending,
                    i,
                    format!("too many pending connections from {s}"),
                );
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let why = Arc::new(Mutex::new(None));
        pending.push(Pending {
            id,
            source,
            since: Instant::now(),
            stream: handle,
            why: Arc::clone(&why),
        });
        Some((id, why))
    }

    /// Gives up every connection pending for longer than the deadline.
    fn expire(&self) {
        let mut pending = lock(&self.pending);
        while let Some(i) = pending
            .iter()
            .position(|p| p.since.elapsed() >= HANDSHAKE_DEADLINE)
        {
            Self::evict(
                &mut pending,
                i,
                format!(
                    "did not prove the job secret within {} s",
                    HANDSHAKE_DEADLINE.as_secs()
                ),
            );
        }
    }

    /// Asked by connection `id` once its proof arrived (or its wait ended): its reason if it
    /// was given up; otherwise it leaves the pending list, so it can no longer be.
    fn settle(&self, id: u64, why: &Mutex<Option<String>>) -> Option<String> {
        let mut pending = lock(&self.pending);
        if let Some(w) = lock(why).clone() {
            return Some(w);
        }
        pending.retain(|p| p.id != id);
        None
    }

    /// Forgets connection `id` (its thread ends).
    fn forget(&self, id: u64) {
        lock(&self.pending).retain(|p| p.id != id);
    }

    /// Connections pending now.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        lock(&self.pending).len()
    }
}

impl AgentPort {
    /// Binds `ip` (any free port) and serves the agents of `hosts` for job `job_id`.
    pub(crate) fn start(
        ip: IpAddr,
        secret: Vec<u8>,
        hosts: Vec<String>,
        job_id: String,
        tx: Sender<Event>,
    ) -> Result<AgentPort> {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))
            .map_err(|e| Error::io(format!("agent port: binding {ip}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("agent port: reading the bound address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("agent port: making the listener non-blocking", e))?;
        let gate = Arc::new(Gate {
            per_source: MIN_PER_SOURCE.max(2 * hosts.len()),
            total: MIN_TOTAL.max(4 * hosts.len()),
            pending: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            refusals: RefusalLog::new(),
            tx,
        });
        let shutdown = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&shutdown);
        let ctx = Arc::new(Context {
            secret,
            hosts,
            job_id,
            gate: Arc::clone(&gate),
        });
        let thread = std::thread::Builder::new()
            .name("weft-agent-accept".into())
            .spawn(move || accept_loop(&listener, &flag, &ctx))
            .map_err(|e| Error::io("agent port: starting the accept thread", e))?;
        Ok(AgentPort {
            addr,
            shutdown,
            thread: Some(thread),
            gate,
        })
    }

    /// The port's gate (its bounds and pending connections).
    #[cfg(test)]
    pub(crate) fn gate(&self) -> &Gate {
        &self.gate
    }
}

impl Drop for AgentPort {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Strangers still pending are closed; proven agents' threads end with their links.
        let mut pending = lock(&self.gate.pending);
        while !pending.is_empty() {
            Gate::evict(&mut pending, 0, "the job is over".into());
        }
    }
}

struct Context {
    secret: Vec<u8>,
    hosts: Vec<String>,
    job_id: String,
    gate: Arc<Gate>,
}

fn accept_loop(listener: &TcpListener, shutdown: &AtomicBool, ctx: &Arc<Context>) {
    let mut pfd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    while !shutdown.load(Ordering::SeqCst) {
        // SAFETY: poll on one pollfd we own.
        unsafe { libc::poll(&mut pfd, 1, ACCEPT_TICK.as_millis() as libc::c_int) };
        loop {
            let (stream, peer) = match listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // WouldBlock, or a transient failure (peer reset before accept, fd pressure).
                Err(_) => break,
            };
            let _ = stream.set_nonblocking(false);
            let Some((id, why)) = ctx.gate.admit(&stream, peer.ip()) else {
                continue;
            };
            let c = Arc::clone(ctx);
            let spawned = std::thread::Builder::new()
                .name("weft-agent-conn".into())
                .stack_size(256 << 10)
                .spawn(move || serve_agent(stream, peer, id, &why, &c));
            if spawned.is_err() {
                ctx.gate.forget(id);
            }
        }
        ctx.gate.expire();
    }
}

fn serve_agent(
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    why: &Mutex<Option<String>>,
    ctx: &Context,
) {
    let gate = &ctx.gate;
    let refuse = |reason: &str| gate.refuse(&peer.to_string(), reason);
    let _ = stream.set_nodelay(true);
    // A host that vanishes (no FIN) must break this link, not leave it silent forever.
    crate::keepalive::set_keepalive(&stream);
    let _ = stream.set_read_timeout(Some(HANDSHAKE_DEADLINE));
    let _ = stream.set_write_timeout(Some(HANDSHAKE_DEADLINE));
    let busy = || gate.settle(id, why);
    let proven = server_handshake_gated(&mut NoSigPipe(&stream), &ctx.secret, &busy);
    gate.forget(id);
    if let Err(Refusal(reason)) = proven {
        refuse(&reason);
        return;
    }
    let mut reader = &stream;
    let hello = read_frame(&mut reader).and_then(|b| match b {
        Some(body) => FromAgent::decode(&body),
        None => Err(Error::new(
            ErrorKind::Protocol,
            "closed before saying hello",
        )),
    });
    let host = match hello {
        Ok(FromAgent::Hello { host, job_id: j }) if j == ctx.job_id => {
            match ctx.hosts.iter().position(|h| *h == host) {
                Some(i) => i,
                None => return refuse(&format!("host {host:?} is not in the host list")),
            }
        }
        Ok(FromAgent::Hello { job_id: j, .. }) => {
            return refuse(&format!("agent of job {j:?}, not of this job"))
        }
        Ok(_) => return refuse("first message is not a hello"),
        Err(e) => return refuse(&e.to_string()),
    };
    let local_ip = match stream.local_addr() {
        Ok(a) => a.ip(),
        Err(e) => return refuse(&format!("reading the local address: {e}")),
    };
    let _ = stream.set_read_timeout(None);
    let _ = stream.set_write_timeout(None);
    let Ok(mut reader) = stream.try_clone() else {
        return refuse("cannot clone the socket");
    };
    if gate
        .tx
        .send(Event::Connected {
            host,
            stream,
            local_ip,
        })
        .is_err()
    {
        return;
    }
    loop {
        let ev = match read_frame(&mut reader)
            .and_then(|b| b.map(|x| FromAgent::decode(&x)).transpose())
        {
            Ok(Some(msg)) => Event::Agent { host, msg },
            Ok(None) => Event::Lost {
                host,
                reason: "connection closed".into(),
            },
            Err(e) => Event::Lost {
                host,
                reason: e.to_string(),
            },
        };
        let end = matches!(ev, Event::Lost { .. });
        if gate.tx.send(ev).is_err() || end {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::sync::mpsc::channel;
    use weft_boot::auth::{client_handshake, is_busy};

    fn port(hosts: usize) -> (AgentPort, std::sync::mpsc::Receiver<Event>, Vec<u8>) {
        let (tx, rx) = channel();
        let secret = vec![1u8; 32];
        let p = AgentPort::start(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            secret.clone(),
            (0..hosts).map(|i| format!("h{i}")).collect(),
            "job".into(),
            tx,
        )
        .unwrap();
        (p, rx, secret)
    }

    /// Waits until `cond`; the 300 s only catch a hang (a loaded machine takes seconds).
    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(300);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn strangers_holding_connections_cannot_keep_an_agent_out() {
        let (port, rx, secret) = port(1);
        let per_source = port.gate().per_source;
        // Twice as many silent strangers as one source may keep pending.
        let idle: Vec<TcpStream> = (0..2 * per_source)
            .map(|_| TcpStream::connect(port.addr).unwrap())
            .collect();
        wait_for("the strangers to be admitted", || {
            port.gate().pending() == per_source && port.gate().refusals.count() >= per_source as u64
        });
        // The older half was pushed out and told why (a busy answer, which a client
        // reports as retryable).
        let e = client_handshake(&mut NoSigPipe(&idle[0]), &secret, "port").unwrap_err();
        assert!(is_busy(&e), "{e}");
        assert!(
            e.message()
                .ends_with("refused: too many pending connections from 127.0.0.1"),
            "{e}"
        );
        // An agent from the same address still proves the secret while they hold on.
        let s = TcpStream::connect(port.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        client_handshake(&mut NoSigPipe(&s), &secret, "port").unwrap();
        let lines: Vec<String> = rx
            .try_iter()
            .filter_map(|e| match e {
                Event::Refused(l) => Some(l),
                _ => None,
            })
            .collect();
        assert!(
            lines
                .iter()
                .any(|l| l.contains("refused connection from 127.0.0.1:")
                    && l.contains(": too many pending connections from 127.0.0.1")),
            "{lines:#?}"
        );
        drop(idle);
    }

    #[test]
    fn a_newcomer_over_the_bound_pushes_out_the_oldest_and_is_told_nothing_bad() {
        let (port, _rx, secret) = port(1);
        let per_source = port.gate().per_source;
        let idle: Vec<TcpStream> = (0..per_source)
            .map(|_| TcpStream::connect(port.addr).unwrap())
            .collect();
        wait_for("the strangers to be admitted", || {
            port.gate().pending() == per_source
        });
        // A client that finds the port full but is itself admitted proves the secret.
        let s = TcpStream::connect(port.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        client_handshake(&mut NoSigPipe(&s), &secret, "port").unwrap();
        // The one pushed out reads a busy answer, which a client reports as retryable.
        let e = client_handshake(&mut NoSigPipe(&idle[0]), &secret, "port").unwrap_err();
        assert!(is_busy(&e), "{e}");
    }
}
