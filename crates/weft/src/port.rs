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

/// The variable a spawned job's ranks find their parents by ([`SpawnLink`]); the launcher
/// passes it on like the job's other variables, and [`crate::init`] takes it out of the
/// environment (it carries a secret).
pub const SPAWN_VAR: &str = "WEFT_SPAWN_PARENT";
/// The variable `weft run` gives its ranks: the path of the `weft` binary that started them
/// (where MPI_Comm_spawn finds the launcher for a child job).
pub const RUN_PROGRAM_VAR: &str = "WEFT_RUN_PROGRAM";

/// How the processes of a spawn meet (MPI_Comm_spawn, MPI-4.1 §11.8.2): the parents' root
/// serves a bootstrap store for a job of its own, the *universe* of the parents (ranks
/// `0..parents`, in the order of the spawning communicator) and the children (ranks
/// `parents..parents + children`, in the order of their MPI_COMM_WORLD). Every process of
/// both groups starts a second weft instance in that job ([`Weft::join_universe`]), whose
/// engine reaches all of them (shared memory on a node, the network between nodes); the
/// parent/child intercommunicator is made there ([`spawn_intercomm`]). Each child's own
/// world is its job's as usual.
#[derive(Clone, PartialEq, Eq)]
pub struct SpawnLink {
    /// The store's address (`IP:PORT`).
    pub addr: String,
    /// The store's secret (which also keys the universe's network handshakes).
    pub secret: Vec<u8>,
    /// The universe's job id (names its shared-memory segment).
    pub job_id: String,
    /// Processes of the spawning communicator.
    pub parents: u32,
    /// Processes spawned.
    pub children: u32,
}

impl std::fmt::Debug for SpawnLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnLink")
            .field("addr", &self.addr)
            .field("job_id", &self.job_id)
            .field("parents", &self.parents)
            .field("children", &self.children)
            .finish_non_exhaustive()
    }
}

impl SpawnLink {
    /// The link as the text of [`SPAWN_VAR`]: `ADDR;SECRET;JOB;PARENTS;CHILDREN`.
    pub fn encode(&self) -> String {
        format!(
            "{};{};{};{};{}",
            self.addr,
            auth::encode_hex(&self.secret),
            self.job_id,
            self.parents,
            self.children,
        )
    }

    /// Reads [`SpawnLink::encode`]'s text.
    pub fn parse(text: &str) -> Result<SpawnLink> {
        let bad = || {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{SPAWN_VAR}: not ADDR;SECRET;JOB;PARENTS;CHILDREN"),
            )
        };
        let f: Vec<&str> = text.split(';').collect();
        if f.len() != 5 || f[0].is_empty() || f[2].is_empty() {
            return Err(bad());
        }
        let num = |t: &str| t.parse::<u32>().map_err(|_| bad());
        let link = SpawnLink {
            addr: f[0].to_owned(),
            secret: auth::decode_hex(SPAWN_VAR, f[1])?,
            job_id: f[2].to_owned(),
            parents: num(f[3])?,
            children: num(f[4])?,
        };
        if link.parents == 0 || link.children == 0 {
            return Err(bad());
        }
        Ok(link)
    }

    fn up_key(child: u32) -> String {
        format!("spawn-up/{child}")
    }
}

/// One program the parents' root asks to start: `children` processes of `program` with
/// `args` (MPI_Comm_spawn starts one, MPI_Comm_spawn_multiple several in one job).
#[derive(Clone, Debug)]
pub struct SpawnCommand {
    /// The program: run as given when it names a path, else searched in `path` and then
    /// in `PATH`.
    pub program: String,
    pub args: Vec<String>,
    pub children: u32,
    /// Working directory of the children (info key `wdir`).
    pub wdir: Option<std::path::PathBuf>,
    /// Directories searched for the program first (info key `path`, `:`-separated).
    pub path: Vec<std::path::PathBuf>,
    /// Host to run the children on (info key `host`; `weft run --hosts`).
    pub host: Option<String>,
}

/// The parents' root's side of a spawn: the universe's store and the child job's launcher
/// (`weft run`, a child process that dies with this process's thread that started it and
/// ends the children with it). [`SpawnHost::finish`] reaps the launcher.
pub struct SpawnHost {
    server: weft_boot::TcpStoreServer,
    link: SpawnLink,
    launcher: Option<std::process::Child>,
}

impl std::fmt::Debug for SpawnHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnHost")
            .field("link", &self.link)
            .finish_non_exhaustive()
    }
}

/// The program `cmd` names, resolved in its `path` directories when it has no `/` (left
/// for `weft run` to find in `PATH` otherwise).
fn spawn_program(cmd: &SpawnCommand) -> String {
    if cmd.program.contains('/') {
        return cmd.program.clone();
    }
    cmd.path
        .iter()
        .map(|d| d.join(&cmd.program))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| cmd.program.clone())
}

/// A request to the keeper thread: a command to start and where its child goes.
type KeeperRequest = (
    std::process::Command,
    std::sync::mpsc::Sender<std::io::Result<std::process::Child>>,
);

/// Starts `c` from a thread of this process that lives as long as the process: the
/// launcher's `PR_SET_PDEATHSIG` fires when the thread that forked it ends, and the thread
/// calling MPI_Comm_spawn may end long before the child job should (mpi4py.futures spawns
/// from a thread of its own).
fn spawn_from_keeper(c: std::process::Command) -> std::io::Result<std::process::Child> {
    static KEEPER: Mutex<Option<std::sync::mpsc::Sender<KeeperRequest>>> = Mutex::new(None);
    let mut keeper = KEEPER.lock().unwrap_or_else(|p| p.into_inner());
    if keeper.is_none() {
        let (tx, rx) = std::sync::mpsc::channel::<KeeperRequest>();
        std::thread::Builder::new()
            .name("weft-spawn".into())
            .spawn(move || {
                for (mut c, back) in rx {
                    let _ = back.send(c.spawn());
                }
                // The channel's sender is static: this thread ends with the process.
            })?;
        *keeper = Some(tx);
    }
    let (back, answer) = std::sync::mpsc::channel();
    let gone = || std::io::Error::other("the spawning thread is gone");
    keeper
        .as_ref()
        .ok_or_else(gone)?
        .send((c, back))
        .map_err(|_| gone())?;
    drop(keeper);
    answer.recv().map_err(|_| gone())?
}

impl SpawnHost {
    /// Opens the universe's store and starts `cmds` as one new job with `launcher` (a
    /// `weft` binary: `weft run`, its programs separated by `:`), for a spawn by `parents`
    /// processes. All of them on one host: the first command's `host`, if any.
    pub fn start(
        weft: &Weft,
        launcher: &std::path::Path,
        parents: u32,
        cmds: &[SpawnCommand],
    ) -> Result<SpawnHost> {
        let Some(cmd) = cmds.first() else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "spawn of no command",
            ));
        };
        if cmds.iter().any(|c| c.children == 0) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "spawn of 0 processes",
            ));
        }
        let children: u32 = cmds.iter().map(|c| c.children).sum();
        let secret = auth::new_secret()?;
        let server = weft_boot::TcpStoreServer::bind("0.0.0.0:0", &secret)?;
        let port = server.local_addr().port();
        // Children on this host reach the store on loopback; elsewhere on an address of
        // this host's.
        let ip = match &cmd.host {
            Some(_) => weft_transport::tcp::local_addresses(&[])?
                .into_iter()
                .find(|ip| ip.is_ipv4() && !ip.is_loopback())
                .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        let mut tag = [0u8; 4];
        auth::random_bytes(&mut tag)?;
        let link = SpawnLink {
            addr: SocketAddr::new(ip, port).to_string(),
            secret,
            job_id: format!("{}-s{}", weft.job_id(), auth::encode_hex(&tag)),
            parents,
            children,
        };
        let mut c = std::process::Command::new(launcher);
        c.arg("run");
        if let Some(h) = &cmd.host {
            c.arg("--hosts").arg(h);
        }
        for (i, cmd) in cmds.iter().enumerate() {
            if i > 0 {
                c.arg(":");
            }
            c.arg("-n").arg(cmd.children.to_string());
            if let Some(d) = cmd.wdir.as_ref().filter(|_| cmds.len() > 1) {
                c.arg("--wdir").arg(d);
            }
            if i == 0 {
                c.arg("--");
            }
            c.arg(spawn_program(cmd)).args(&cmd.args);
        }
        // The parents' own job's identity must not reach the child job's launcher (which
        // sets its ranks' own); the link to the parents replaces theirs.
        for v in weft_boot::PER_RANK_VARS {
            c.env_remove(v);
        }
        c.env(SPAWN_VAR, link.encode())
            .stdin(std::process::Stdio::null());
        if let Some(d) = cmd.wdir.as_ref().filter(|_| cmds.len() == 1) {
            c.current_dir(d);
        }
        // SAFETY: getpid() before the fork; the closure runs in the forked child before
        // exec and makes only async-signal-safe system calls (prctl, getppid) on values
        // copied in before the fork.
        let me = unsafe { libc::getpid() };
        // SAFETY: as above.
        unsafe {
            use std::os::unix::process::CommandExt;
            c.pre_exec(move || {
                // The child job ends with this process (weft run ends its ranks on TERM).
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGTERM as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != me {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let launcher_child = spawn_from_keeper(c).map_err(|e| {
            Error::io(
                format!("MPI_Comm_spawn: starting {}", launcher.display()),
                e,
            )
        })?;
        Ok(SpawnHost {
            server,
            link,
            launcher: Some(launcher_child),
        })
    }

    /// The link the parents join the universe by.
    pub fn link(&self) -> &SpawnLink {
        &self.link
    }

    /// Waits until every child has reached its MPI_Init's link to the parents, or fails
    /// when the launcher ended first (a program that does not exist, cannot start, or ends
    /// without MPI_Init) or after `timeout`; on failure the launcher is ended and reaped.
    pub fn wait_children(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let local = weft_boot::TcpStoreClient::connect(
            &format!("127.0.0.1:{}", self.server.local_addr().port()),
            &self.link.secret,
        )?;
        let keys: Vec<String> = (0..self.link.children).map(SpawnLink::up_key).collect();
        use weft_boot::Store;
        loop {
            match local.get_many(&keys, Duration::from_millis(20)) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Timeout => {}
                Err(e) => {
                    self.end();
                    return Err(e);
                }
            }
            let ended = match self.launcher.as_mut().map(|l| l.try_wait()) {
                Some(Ok(Some(status))) => Some(format!("it ended with {status}")),
                Some(Err(e)) => Some(format!("waiting for it failed: {e}")),
                Some(Ok(None)) | None => None,
            };
            if let Some(why) = ended {
                self.launcher = None;
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "MPI_Comm_spawn: the child job did not start ({why} before its \
                         processes reached MPI_Init)"
                    ),
                ));
            }
            if Instant::now() >= deadline {
                self.end();
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "MPI_Comm_spawn: the children did not reach MPI_Init within {} s",
                        timeout.as_secs()
                    ),
                ));
            }
        }
    }

    /// Ends the launcher (and with it the children) and reaps it.
    fn end(&mut self) {
        if let Some(mut l) = self.launcher.take() {
            // SAFETY: kill(2) on the pid of a child not yet reaped.
            unsafe { libc::kill(l.id() as libc::pid_t, libc::SIGTERM) };
            let _ = l.wait();
        }
    }

    /// Waits for the child job to end and reaps its launcher (MPI_Finalize of the root:
    /// the children finalize on their own, and the launcher ends once they have exited).
    pub fn finish(mut self) -> Result<()> {
        if let Some(mut l) = self.launcher.take() {
            l.wait()
                .map_err(|e| Error::io("MPI_Finalize: reaping a spawned job's launcher", e))?;
        }
        Ok(())
    }
}

impl Drop for SpawnHost {
    fn drop(&mut self) {
        self.end();
    }
}

impl Weft {
    /// This process's link to the parents that spawned its job, when they did.
    pub fn spawn_link(&self) -> Result<Option<SpawnLink>> {
        match self.config.values.text(SPAWN_VAR) {
            Some(t) if !t.is_empty() => SpawnLink::parse(&t).map(Some),
            _ => Ok(None),
        }
    }

    /// This rank's program's index in a job of several (`WEFT_APPNUM`, MPI_APPNUM).
    pub fn appnum(&self) -> Option<u32> {
        self.config
            .values
            .text("WEFT_APPNUM")
            .and_then(|t| t.parse().ok())
    }

    /// The `weft` binary that started this job (`weft run` says so to its ranks).
    pub fn run_program(&self) -> Option<std::path::PathBuf> {
        self.config
            .values
            .text(RUN_PROGRAM_VAR)
            .filter(|t| !t.is_empty())
            .map(Into::into)
    }

    /// Starts this process's instance in the universe of `link` as rank `rank` (collective
    /// over the universe: every parent and child calls it). A child says first that it has
    /// arrived (what [`SpawnHost::wait_children`] waits for). From then on every progress
    /// call of one of this process's instances polls the others too (MPI's progress rule).
    pub fn join_universe(&self, link: &SpawnLink, rank: u32) -> Result<Weft> {
        let size = link.parents + link.children;
        let timeout = Duration::from_secs(self.config.boot_timeout_s);
        let store = weft_boot::TcpStoreClient::connect_retry(
            &link.addr,
            &link.secret,
            Instant::now() + timeout,
        )?
        .with_rank(rank);
        if rank >= link.parents {
            use weft_boot::Store;
            store.put(&SpawnLink::up_key(rank - link.parents), b"1")?;
        }
        let mut config = self.config.clone();
        config.job_secret = Some(link.secret.clone());
        let universe = crate::init_with(
            crate::Launch {
                rank,
                size,
                job_id: link.job_id.clone(),
                node_id: self.node_id.clone(),
                store: Some(std::sync::Arc::new(store)),
            },
            config,
        )
        .map_err(|e| e.context("joining the parents and children of a spawn"))?;
        crate::engine::instances::link(&self.engine, &universe.engine);
        Ok(universe)
    }

    /// Leaves a universe ([`Weft::join_universe`]) without waiting for its other processes
    /// (the spawned and the spawning finalize on their own): sends what is still queued,
    /// and the process's other instances stop polling it.
    pub fn leave_universe(self) {
        self.engine
            .borrow_mut()
            .drain(Duration::from_secs(self.config.boot_timeout_s));
        crate::engine::instances::unlink(&self.engine);
    }
}

/// The parent/child intercommunicator in `universe` ([`Weft::join_universe`]), whose first
/// `parents` ranks are the parents: collective over the universe.
pub fn spawn_intercomm(universe: &Weft, parents: u32) -> Result<crate::Comm> {
    let world = universe.world();
    let child = world.rank() >= parents;
    let local = world.split(i32::from(child), 0)?.ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "spawn: the split left this process out",
        )
    })?;
    let remote_leader = if child { 0 } else { parents };
    local.intercomm_create(0, &world, remote_leader, SPAWN_TAG)
}

/// Tag of the leaders' exchange in [`spawn_intercomm`] (a fresh universe carries no other
/// traffic yet).
const SPAWN_TAG: i32 = 0x5eed;

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
    fn spawn_links_round_trip_and_bad_ones_are_refused() {
        let link = SpawnLink {
            addr: "127.0.0.1:4000".into(),
            secret: vec![7; 32],
            job_id: "ab12-s0011".into(),
            parents: 3,
            children: 4,
        };
        assert_eq!(SpawnLink::parse(&link.encode()).unwrap(), link);
        for bad in [
            "",
            "a;00;j;1",
            "a;00;j;0;1",
            "a;00;j;1;0",
            ";00;j;1;1",
            "a;zz;j;1;1",
            "a;00;j;x;1",
        ] {
            assert!(SpawnLink::parse(bad).is_err(), "{bad}");
        }
    }

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
