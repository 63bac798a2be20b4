//! Ports, published names and joins of MPI's dynamic process model (MPI-4.1 §11.4,
//! §11.8.4) between groups of processes of one job: an intercommunicator built from two
//! groups that did not share a communicator to build it with.
//!
//! A [`Port`] is a TCP listener of the process that opened it; its name carries the
//! listener's addresses and a random token (`weft-port:TOKEN@ADDR:PORT,...`). The leaders of
//! the two groups meet on it: the connecting side sends a nonce, the listener answers with
//! its own and an HMAC proof of the job key bound to the token, the connecting side proves
//! the key in turn, and only then do they trade their words (the caller's: the MPI layer
//! sends a proposal for the tag of the groups' context agreement and its members' world
//! ranks). A connection that does not prove the key (a stranger, garbage, silence for
//! [`HANDSHAKE_TIMEOUT`]) is dropped and the accept goes on waiting for the real peer.
//! [`PortTrader::join`] runs the same proofs both ways over a socket the program made.
//!
//! Both groups must be processes of this job (the world ranks they trade name the same
//! processes on both sides): a process of another job cannot prove this job's key. A
//! [`PortTrader`] holds what a trade needs and touches nothing of weft's state, so the
//! caller may wait in it without holding any lock of its own; it calls the caller's
//! progress between polls of its sockets. Published names live in the job's store
//! ([`weft_boot::Boot::shared_store`]), or in this process alone for a job of one process
//! started without a launcher.
//! Depends on the communicators, weft-boot's store and the job key's proofs.

use crate::Weft;
use std::collections::HashMap;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_core::auth;
use weft_core::{Error, ErrorKind, Result};

/// What a port's name starts with.
const PORT_PREFIX: &str = "weft-port:";
/// Random bytes of a port's token.
const TOKEN_BYTES: usize = 16;
/// First bytes of every port and join handshake (protocol version 1).
const MAGIC: &[u8; 8] = b"weftprt1";
/// How long a connection to a port may take to prove the job key before it is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connect waits for the TCP connection to a port's address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Addresses a port's name lists at most (a name must fit MPI_MAX_PORT_NAME).
const MAX_PORT_ADDRS: usize = 16;
/// Labels of the proofs (each role proves with its own, so a proof cannot be replayed).
const ACCEPT_LABEL: &[u8] = b"weft port accept";
const CONNECT_LABEL: &[u8] = b"weft port connect";
const JOIN_LABEL: &[u8] = b"weft join";
/// Key of a published name in the job's store.
const NAME_KEY: &str = "mpi-name/";

/// Names published in a job of one process started without a launcher (no store).
static LOCAL_NAMES: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// An open port (MPI_Open_port): a listener the leader of a group accepts on.
pub struct Port {
    listener: TcpListener,
    token: Vec<u8>,
    name: String,
}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port").field("name", &self.name).finish()
    }
}

impl Port {
    /// Opens a port: a listener on every IPv4 address, named by this host's addresses
    /// (other hosts' first, loopback last) and a fresh token.
    pub fn open() -> Result<Port> {
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
            .map_err(|e| Error::io("opening a port's listener", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("opening a port's listener", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("opening a port's listener", e))?
            .port();
        let mut ips: Vec<IpAddr> = weft_transport::tcp::local_addresses(&[])?
            .into_iter()
            .filter(|ip| ip.is_ipv4())
            .take(MAX_PORT_ADDRS - 1)
            .collect();
        if !ips.iter().any(|ip| ip.is_loopback()) {
            ips.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        let mut token = vec![0u8; TOKEN_BYTES];
        auth::random_bytes(&mut token)?;
        let addrs: Vec<String> = ips
            .iter()
            .map(|ip| SocketAddr::new(*ip, port).to_string())
            .collect();
        let name = format!(
            "{PORT_PREFIX}{}@{}",
            auth::encode_hex(&token),
            addrs.join(",")
        );
        Ok(Port {
            listener,
            token,
            name,
        })
    }

    /// The port's name, for MPI_Open_port's caller to hand to the connecting side.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The token and addresses of a port's name.
fn parse_port_name(name: &str) -> Result<(Vec<u8>, Vec<SocketAddr>)> {
    let bad = |why: &str| {
        Error::new(
            ErrorKind::Port,
            format!("port name {name:?}: {why} (expected {PORT_PREFIX}TOKEN@ADDR:PORT,...)"),
        )
    };
    let rest = name
        .trim()
        .strip_prefix(PORT_PREFIX)
        .ok_or_else(|| bad("not a weft port"))?;
    let (token, addrs) = rest.split_once('@').ok_or_else(|| bad("no '@'"))?;
    let token = auth::decode_hex("port token", token).map_err(|_| bad("bad token"))?;
    if token.len() != TOKEN_BYTES {
        return Err(bad("bad token length"));
    }
    let addrs = addrs
        .split(',')
        .map(|a| a.parse::<SocketAddr>().map_err(|_| bad("bad address")))
        .collect::<Result<Vec<_>>>()?;
    if addrs.is_empty() || addrs.len() > MAX_PORT_ADDRS {
        return Err(bad("no address or too many"));
    }
    Ok((token, addrs))
}

/// Waits between polls of a socket that had nothing: polls progress (`progress` says
/// whether it moved anything), yields, and after a while sleeps a millisecond at a time.
struct Idle<'a> {
    progress: &'a mut dyn FnMut() -> bool,
    looks: u32,
}

impl Idle<'_> {
    fn pause(&mut self) {
        if !(self.progress)() {
            self.looks = self.looks.saturating_add(1);
            if self.looks < 256 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        } else {
            self.looks = 0;
        }
    }
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        IoKind::WouldBlock | IoKind::Interrupted | IoKind::TimedOut
    )
}

fn timed_out(what: &str) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("{what}: no answer within {} s", HANDSHAKE_TIMEOUT.as_secs()),
    )
}

/// Moves `len` bytes with `step` (a read or a write of the bytes from the offset on),
/// polling the engine while the socket would block; fails when the peer closed the
/// connection or after `deadline`.
fn move_full(
    len: usize,
    mut step: impl FnMut(usize) -> std::io::Result<usize>,
    deadline: Option<Instant>,
    idle: &mut Idle<'_>,
    what: &str,
) -> Result<()> {
    let mut off = 0;
    while off < len {
        match step(off) {
            Ok(0) => {
                return Err(Error::new(
                    ErrorKind::Port,
                    format!("{what}: the peer closed the connection"),
                ))
            }
            Ok(n) => off += n,
            Err(e) if would_block(&e) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(timed_out(what));
                }
                idle.pause();
            }
            Err(e) => return Err(Error::io(what, e)),
        }
    }
    Ok(())
}

/// Reads all of `buf` from `s` ([`move_full`]).
fn read_full(
    mut s: &TcpStream,
    buf: &mut [u8],
    deadline: Option<Instant>,
    idle: &mut Idle<'_>,
    what: &str,
) -> Result<()> {
    let len = buf.len();
    move_full(len, |off| s.read(&mut buf[off..]), deadline, idle, what)
}

/// Writes all of `buf` to `s` ([`move_full`]).
fn write_full(
    mut s: &TcpStream,
    buf: &[u8],
    deadline: Option<Instant>,
    idle: &mut Idle<'_>,
    what: &str,
) -> Result<()> {
    move_full(buf.len(), |off| s.write(&buf[off..]), deadline, idle, what)
}

/// Sends `mine` (a count, then the words) and returns the peer's words: at most
/// `max_words` of them.
fn trade_words(
    s: &TcpStream,
    mine: &[u32],
    max_words: usize,
    idle: &mut Idle<'_>,
    what: &str,
) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(4 * (mine.len() + 1));
    out.extend_from_slice(&(mine.len() as u32).to_le_bytes());
    for w in mine {
        out.extend_from_slice(&w.to_le_bytes());
    }
    write_full(s, &out, None, idle, what)?;
    let mut n = [0u8; 4];
    read_full(s, &mut n, None, idle, what)?;
    let n = u32::from_le_bytes(n) as usize;
    if n > max_words {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("{what}: the peer announced {n} words (at most {max_words})"),
        ));
    }
    let mut bytes = vec![0u8; 4 * n];
    read_full(s, &mut bytes, None, idle, what)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// What a leader needs for its trade over a port or a joined socket ([`Weft::port_trader`]):
/// the trade itself touches nothing of weft's state, so a caller may run it on a thread
/// that gives every other lock back while it waits (the MPI layer's lock under
/// MPI_THREAD_MULTIPLE). Each trade sends this side's words (at most the world's size plus
/// one) and returns the other side's.
#[derive(Clone)]
pub struct PortTrader {
    key: Vec<u8>,
    max_words: usize,
}

impl std::fmt::Debug for PortTrader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortTrader")
            .field("max_words", &self.max_words)
            .finish_non_exhaustive()
    }
}

impl Weft {
    /// The key processes of this job prove to each other: the launcher's job secret, else
    /// the one rank 0 shared at start-up, else (a job of one process without a launcher)
    /// one of this process's own, as nobody else is in its job.
    fn job_key(&self) -> Result<Vec<u8>> {
        if let Some(k) = &self.config.job_secret {
            return Ok(k.clone());
        }
        static OWN: Mutex<Option<Vec<u8>>> = Mutex::new(None);
        match &self.boot {
            Some(b) if b.job().size > 1 => {
                let hex = b.get(
                    0,
                    "tcp-key",
                    Duration::from_secs(self.config.boot_timeout_s),
                )?;
                auth::decode_hex("tcp-key", &String::from_utf8_lossy(&hex))
            }
            _ => {
                let mut own = OWN.lock().unwrap_or_else(|p| p.into_inner());
                if own.is_none() {
                    *own = Some(auth::new_secret()?);
                }
                Ok(own.clone().unwrap_or_default())
            }
        }
    }

    /// The job key and the bounds of a trade, for [`PortTrader`]'s trades.
    pub fn port_trader(&self) -> Result<PortTrader> {
        Ok(PortTrader {
            key: self.job_key()?,
            max_words: self.world.size() as usize + 1,
        })
    }
}

impl PortTrader {
    /// The accepting leader's trade (MPI_Comm_accept): waits on `port` for a connection
    /// that proves the job key (dropping the others), then trades `mine` for the
    /// connecting leader's words. `progress` runs between polls of the sockets.
    pub fn accept(
        &self,
        port: &Port,
        mine: &[u32],
        progress: &mut dyn FnMut() -> bool,
    ) -> Result<Vec<u32>> {
        let mut idle = Idle { progress, looks: 0 };
        loop {
            match port.listener.accept() {
                Ok((stream, from)) => match self.accepted(&stream, port, &mut idle) {
                    Ok(()) => {
                        return trade_words(
                            &stream,
                            mine,
                            self.max_words,
                            &mut idle,
                            "MPI_Comm_accept: trading groups",
                        )
                    }
                    Err(e) => {
                        log::warn!("port {}: dropped a connection from {from}: {e}", port.name)
                    }
                },
                Err(e) if would_block(&e) => idle.pause(),
                Err(e) => return Err(Error::io("MPI_Comm_accept", e)),
            }
        }
    }

    /// The listener's side of a port's handshake on `s`; an error drops the connection.
    fn accepted(&self, s: &TcpStream, port: &Port, idle: &mut Idle<'_>) -> Result<()> {
        let key = &self.key;
        s.set_nonblocking(true)
            .map_err(|e| Error::io("port connection", e))?;
        let _ = s.set_nodelay(true);
        let deadline = Some(Instant::now() + HANDSHAKE_TIMEOUT);
        let what = "port handshake";
        let mut hello = [0u8; MAGIC.len() + auth::NONCE_BYTES];
        read_full(s, &mut hello, deadline, idle, what)?;
        if &hello[..MAGIC.len()] != MAGIC {
            return Err(Error::new(ErrorKind::Protocol, "not a weft port handshake"));
        }
        let theirs = &hello[MAGIC.len()..];
        let mine = auth::nonce()?;
        let proof = auth::prove(key, ACCEPT_LABEL, &port.token, theirs, &mine);
        let mut answer = Vec::with_capacity(MAGIC.len() + 2 * auth::NONCE_BYTES);
        answer.extend_from_slice(MAGIC);
        answer.extend_from_slice(&mine);
        answer.extend_from_slice(&proof);
        write_full(s, &answer, deadline, idle, what)?;
        let mut their_proof = [0u8; auth::PROOF_BYTES];
        read_full(s, &mut their_proof, deadline, idle, what)?;
        if !auth::verify(key, CONNECT_LABEL, &port.token, &mine, theirs, &their_proof) {
            return Err(Error::new(
                ErrorKind::Auth,
                "the connecting side did not prove the job key and the port's token",
            ));
        }
        Ok(())
    }

    /// The connecting leader's trade (MPI_Comm_connect): connects to the port named
    /// `port_name`, proves the job key and checks the listener's proof, then trades `mine`
    /// for the accepting leader's words. `progress` runs between polls of the socket.
    pub fn connect(
        &self,
        port_name: &str,
        mine: &[u32],
        progress: &mut dyn FnMut() -> bool,
    ) -> Result<Vec<u32>> {
        let (token, addrs) = parse_port_name(port_name)?;
        let key = &self.key;
        let mut idle = Idle { progress, looks: 0 };
        let what = "MPI_Comm_connect";
        let mut last = None;
        let stream =
            addrs
                .iter()
                .find_map(|a| match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        last = Some(format!("{a}: {e}"));
                        None
                    }
                });
        let s = stream.ok_or_else(|| {
            Error::new(
                ErrorKind::Port,
                format!(
                    "{what}: no listener at port {port_name:?} ({}); was it closed?",
                    last.unwrap_or_default()
                ),
            )
        })?;
        s.set_nonblocking(true).map_err(|e| Error::io(what, e))?;
        let _ = s.set_nodelay(true);
        let mine_nonce = auth::nonce()?;
        let mut hello = Vec::with_capacity(MAGIC.len() + auth::NONCE_BYTES);
        hello.extend_from_slice(MAGIC);
        hello.extend_from_slice(&mine_nonce);
        write_full(&s, &hello, None, &mut idle, what)?;
        // The listener answers once its leader accepts: no deadline.
        let mut answer = [0u8; MAGIC.len() + auth::NONCE_BYTES + auth::PROOF_BYTES];
        read_full(&s, &mut answer, None, &mut idle, what)?;
        let (magic, rest) = answer.split_at(MAGIC.len());
        let (theirs, proof) = rest.split_at(auth::NONCE_BYTES);
        if magic != MAGIC || !auth::verify(key, ACCEPT_LABEL, &token, &mine_nonce, theirs, proof) {
            return Err(Error::new(
                ErrorKind::Port,
                format!(
                    "{what}: the listener of {port_name:?} did not prove this job's key \
                         (ports connect processes of one job)"
                ),
            ));
        }
        let own_proof = auth::prove(key, CONNECT_LABEL, &token, theirs, &mine_nonce);
        write_full(&s, &own_proof, None, &mut idle, what)?;
        trade_words(&s, mine, self.max_words, &mut idle, what)
    }

    /// The trade of MPI_Comm_join over `stream`, a connected socket whose other end joins
    /// too: both prove the job key, then trade their words. The socket's mode (blocking or
    /// not) is left as the program set it. `progress` runs between polls of the socket.
    pub fn join(
        &self,
        stream: &TcpStream,
        mine: &[u32],
        progress: &mut dyn FnMut() -> bool,
    ) -> Result<Vec<u32>> {
        let key = &self.key;
        let mut idle = Idle { progress, looks: 0 };
        let what = "MPI_Comm_join";
        let mine_nonce = auth::nonce()?;
        let mut hello = Vec::with_capacity(MAGIC.len() + auth::NONCE_BYTES);
        hello.extend_from_slice(MAGIC);
        hello.extend_from_slice(&mine_nonce);
        write_full(stream, &hello, None, &mut idle, what)?;
        let mut theirs = [0u8; MAGIC.len() + auth::NONCE_BYTES];
        read_full(stream, &mut theirs, None, &mut idle, what)?;
        if &theirs[..MAGIC.len()] != MAGIC {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("{what}: the other end is not joining"),
            ));
        }
        let their_nonce = &theirs[MAGIC.len()..];
        let proof = auth::prove(key, JOIN_LABEL, &[], their_nonce, &mine_nonce);
        write_full(stream, &proof, None, &mut idle, what)?;
        let mut their_proof = [0u8; auth::PROOF_BYTES];
        read_full(stream, &mut their_proof, None, &mut idle, what)?;
        if !auth::verify(key, JOIN_LABEL, &[], &mine_nonce, their_nonce, &their_proof) {
            return Err(Error::new(
                ErrorKind::Auth,
                format!("{what}: the other end did not prove this job's key"),
            ));
        }
        trade_words(stream, mine, self.max_words, &mut idle, what)
    }
}

impl Weft {
    /// MPI_Publish_name: makes `port_name` known as `service` to the job.
    pub fn publish_name(&self, service: &str, port_name: &str) -> Result<()> {
        check_service(service)?;
        if port_name.is_empty() {
            return Err(Error::new(
                ErrorKind::Port,
                "MPI_Publish_name: empty port name",
            ));
        }
        match self.boot.as_ref().map(|b| b.shared_store()) {
            Some(Some(store)) => {
                let key = format!("{NAME_KEY}{service}");
                if store.get(&key, Duration::ZERO).is_ok_and(|v| !v.is_empty()) {
                    return Err(Error::new(
                        ErrorKind::Service,
                        format!("MPI_Publish_name: {service:?} is already published"),
                    ));
                }
                store.put(&key, port_name.as_bytes())
            }
            Some(None) => Err(no_store()),
            None => {
                let mut names = LOCAL_NAMES.lock().unwrap_or_else(|p| p.into_inner());
                let names = names.get_or_insert_with(HashMap::new);
                if names.contains_key(service) {
                    return Err(Error::new(
                        ErrorKind::Service,
                        format!("MPI_Publish_name: {service:?} is already published"),
                    ));
                }
                names.insert(service.to_owned(), port_name.to_owned());
                Ok(())
            }
        }
    }

    /// MPI_Lookup_name: the port published as `service`; `ErrorKind::Name` if none is.
    pub fn lookup_name(&self, service: &str) -> Result<String> {
        check_service(service)?;
        let unknown = || {
            Error::new(
                ErrorKind::Name,
                format!("MPI_Lookup_name: nobody published {service:?}"),
            )
        };
        match self.boot.as_ref().map(|b| b.shared_store()) {
            Some(Some(store)) => match store.get(&format!("{NAME_KEY}{service}"), Duration::ZERO) {
                Ok(v) if !v.is_empty() => Ok(String::from_utf8_lossy(&v).into_owned()),
                Ok(_) => Err(unknown()),
                Err(e) if e.kind() == ErrorKind::Timeout => Err(unknown()),
                Err(e) => Err(e),
            },
            Some(None) => Err(no_store()),
            None => LOCAL_NAMES
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .and_then(|n| n.get(service).cloned())
                .ok_or_else(unknown),
        }
    }

    /// MPI_Unpublish_name: withdraws `service`, which must be published as `port_name`.
    pub fn unpublish_name(&self, service: &str, port_name: &str) -> Result<()> {
        check_service(service)?;
        let current = self.lookup_name(service).map_err(|e| {
            if e.kind() == ErrorKind::Name {
                Error::new(
                    ErrorKind::Service,
                    format!("MPI_Unpublish_name: {service:?} is not published"),
                )
            } else {
                e
            }
        })?;
        if current != port_name {
            return Err(Error::new(
                ErrorKind::Service,
                format!("MPI_Unpublish_name: {service:?} is published with another port"),
            ));
        }
        match self.boot.as_ref().and_then(|b| b.shared_store()) {
            // An empty value is a withdrawn name (the store keeps keys).
            Some(store) => store.put(&format!("{NAME_KEY}{service}"), b""),
            None => {
                if let Some(n) = LOCAL_NAMES
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_mut()
                {
                    n.remove(service);
                }
                Ok(())
            }
        }
    }
}

fn check_service(service: &str) -> Result<()> {
    if service.is_empty() {
        return Err(Error::new(ErrorKind::Service, "empty service name"));
    }
    Ok(())
}

fn no_store() -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "published names need weft run's key-value store; this job was started by another \
         launcher (PMIx/PMI), whose name service weft does not use yet",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_round_trip_and_bad_ones_are_port_errors() {
        let p = Port::open().unwrap();
        let (token, addrs) = parse_port_name(p.name()).unwrap();
        assert_eq!(token, p.token);
        assert!(addrs.iter().any(|a| a.ip().is_loopback()));
        assert!(p.name().len() < 1024);
        for bad in [
            "",
            "tcp://1.2.3.4:5",
            "weft-port:zz@127.0.0.1:1",
            "weft-port:00@127.0.0.1:1",
            "weft-port:00112233445566778899aabbccddeeff@",
            "weft-port:00112233445566778899aabbccddeeff@nohost",
        ] {
            assert_eq!(
                parse_port_name(bad).unwrap_err().kind(),
                ErrorKind::Port,
                "{bad}"
            );
        }
    }
}
