//! The aggregation manager's wire protocol and its client (`weft aggd`, docs/aggd.md).
//!
//! A connection opens with a mutual challenge-response on the shared secret
//! (`weft_core::handshake` under [`AGGD`]: labels `weft-aggd client` / `weft-aggd server`); the secret never
//! crosses the socket and nothing the peer sends before its proof is parsed beyond fixed
//! sizes. Then the client sends requests and reads one reply each, every message a frame of
//! a 4-byte little-endian length and that many bytes of JSON ([`Request`], [`Reply`]); a
//! frame longer than [`MAX_FRAME_BYTES`] or that is not a request is answered with an error
//! and the connection is closed. Trees a connection allocated are its lease: they are
//! released by `release` or when the connection ends (the job exited or died).

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use weft_core::handshake::{self, Protocol};
pub use weft_core::handshake::{Refusal, RefusalLog};
use weft_core::{Error, ErrorKind, Result};
pub use weft_model::plan::{Grant, PoolStatus, TreeSwitch, Type2Tree};

/// The manager's handshake protocol.
pub const AGGD: Protocol = Protocol {
    magic: b"WEFTAGGD",
    version: 1,
    client_label: b"weft-aggd client",
    server_label: b"weft-aggd server",
    name: "aggd",
    server: "weft aggregation manager",
    client: "weft aggd client",
    secret: "secret",
    secret_hint: " (WEFT_AGGD_KEY_FILE's key, or the job's secret without one)",
};
/// Longest frame either side accepts (a request naming about 50 000 hosts).
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// A request to the manager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Request {
    /// A tree for communicator `comm` (a name unique within the connection) whose ranks run
    /// on the hosts `hosts` (one per rank, in rank order; fabric endpoint names).
    Allocate {
        /// The communicator's name.
        comm: String,
        /// Host of each rank.
        hosts: Vec<String>,
    },
    /// Gives back the entries of `comm`'s tree.
    Release {
        /// The communicator's name.
        comm: String,
    },
    /// Entries in use.
    Status,
}

/// The manager's reply to one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reply")]
pub enum Reply {
    /// The answer to `allocate`.
    Tree {
        /// The tree.
        grant: Grant,
    },
    /// The answer to `release`: whether the communicator held a tree.
    Released {
        /// Whether entries were given back.
        held: bool,
    },
    /// The answer to `status`.
    Status {
        /// Entries in use.
        status: PoolStatus,
    },
    /// The request was refused; why.
    Error {
        /// Why.
        message: String,
    },
}

fn protocol(message: String) -> Error {
    Error::new(ErrorKind::Protocol, message)
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    if matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ) {
        Error::new(ErrorKind::Timeout, format!("{what}: timed out"))
    } else {
        Error::io(what.to_string(), e)
    }
}

/// Writes one frame.
pub fn write_frame(stream: &mut impl Write, body: &[u8]) -> Result<()> {
    if body.len() > MAX_FRAME_BYTES {
        return Err(protocol(format!(
            "message of {} bytes exceeds the limit of {MAX_FRAME_BYTES}",
            body.len()
        )));
    }
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(body);
    stream
        .write_all(&buf)
        .map_err(|e| io_err("aggd: sending", e))
}

/// Reads one frame; `Ok(None)` when the peer closed cleanly before a frame began.
pub fn read_frame(stream: &mut impl Read) -> Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match stream.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(protocol("aggd: connection closed inside a frame".into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("aggd: reading", e)),
        }
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_FRAME_BYTES {
        return Err(protocol(format!(
            "aggd: a frame of {n} bytes exceeds the limit of {MAX_FRAME_BYTES}"
        )));
    }
    let mut body = vec![0u8; n];
    stream
        .read_exact(&mut body)
        .map_err(|e| io_err("aggd: reading a frame", e))?;
    Ok(Some(body))
}

/// Server side of the handshake (`weft_core::handshake` under [`AGGD`]).
pub fn server_handshake(
    stream: &mut (impl Read + Write),
    secret: &[u8],
) -> std::result::Result<(), Refusal> {
    handshake::server_handshake(&AGGD, stream, secret)
}

/// Client side of the handshake; `addr` names the manager in errors.
pub fn client_handshake(stream: &mut (impl Read + Write), secret: &[u8], addr: &str) -> Result<()> {
    handshake::client_handshake(&AGGD, stream, secret, addr)
}

/// An authenticated connection to a manager: the lease of the trees it allocates.
pub struct Client {
    stream: TcpStream,
    addr: String,
}

impl Client {
    /// Connects to `addr` and proves `secret`; every step (and every later request) gives up
    /// after `timeout`.
    pub fn connect(addr: &str, secret: &[u8], timeout: Duration) -> Result<Client> {
        use std::net::ToSocketAddrs;
        let mut last = None;
        let targets = addr
            .to_socket_addrs()
            .map_err(|e| Error::io(format!("aggd {addr}: resolving"), e))?;
        for target in targets {
            match TcpStream::connect_timeout(&target, timeout) {
                Ok(mut stream) => {
                    let set = |s: &TcpStream| {
                        s.set_read_timeout(Some(timeout))?;
                        s.set_write_timeout(Some(timeout))?;
                        s.set_nodelay(true)
                    };
                    set(&stream).map_err(|e| Error::io(format!("aggd {addr}"), e))?;
                    client_handshake(&mut stream, secret, addr)?;
                    return Ok(Client {
                        stream,
                        addr: addr.to_string(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => Error::io(format!("aggd {addr}: connecting"), e),
            None => Error::new(
                ErrorKind::InvalidArgument,
                format!("aggd {addr}: no address"),
            ),
        })
    }

    /// Sends `request` and reads its reply.
    pub fn ask(&mut self, request: &Request) -> Result<Reply> {
        let body = serde_json::to_vec(request)
            .map_err(|e| protocol(format!("aggd {}: encoding: {e}", self.addr)))?;
        write_frame(&mut self.stream, &body)
            .map_err(|e| e.context(format!("aggd {}", self.addr)))?;
        let reply = read_frame(&mut self.stream)
            .map_err(|e| e.context(format!("aggd {}", self.addr)))?
            .ok_or_else(|| {
                protocol(format!(
                    "aggd {}: the manager closed the connection",
                    self.addr
                ))
            })?;
        serde_json::from_slice(&reply)
            .map_err(|e| protocol(format!("aggd {}: a reply that is not one: {e}", self.addr)))
    }

    /// A tree for `comm` whose ranks run on `hosts`.
    pub fn allocate(&mut self, comm: &str, hosts: &[String]) -> Result<Grant> {
        match self.ask(&Request::Allocate {
            comm: comm.to_string(),
            hosts: hosts.to_vec(),
        })? {
            Reply::Tree { grant } => Ok(grant),
            other => Err(self.unexpected(other)),
        }
    }

    /// Gives back `comm`'s entries; whether it held a tree.
    pub fn release(&mut self, comm: &str) -> Result<bool> {
        match self.ask(&Request::Release {
            comm: comm.to_string(),
        })? {
            Reply::Released { held } => Ok(held),
            other => Err(self.unexpected(other)),
        }
    }

    /// Entries in use.
    pub fn status(&mut self) -> Result<PoolStatus> {
        match self.ask(&Request::Status)? {
            Reply::Status { status } => Ok(status),
            other => Err(self.unexpected(other)),
        }
    }

    fn unexpected(&self, reply: Reply) -> Error {
        match reply {
            Reply::Error { message } => Error::new(
                ErrorKind::InvalidArgument,
                format!("aggd {}: {message}", self.addr),
            ),
            other => protocol(format!("aggd {}: unexpected reply {other:?}", self.addr)),
        }
    }
}

/// Reads a secret from a key file that only its owner may read or write (hex, at least
/// `weft_core::auth::MIN_SECRET_BYTES` bytes).
pub fn read_key_file(path: &std::path::Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| Error::io(format!("key file {shown}"), e))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::new(
            ErrorKind::Config,
            format!("key file {shown}: mode {mode:o} lets others read or write it (chmod 600)"),
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io(format!("key file {shown}"), e))?;
    let key = weft_core::auth::decode_hex(&format!("key file {shown}"), text.trim())?;
    weft_core::auth::check_secret(&key)?;
    Ok(key)
}

/// The aggregation tree a communicator got, as every rank of it holds it.
pub(crate) struct CommTree {
    /// The type II tree's grouping of the ranks, innermost first: level `j` gives each rank
    /// the `j`-th switch above its host (the root once the chain ends). Empty for type I.
    pub(crate) levels: Vec<Vec<u32>>,
    /// Which tree and why, for `Comm::aggregation_tree`.
    pub(crate) explain: String,
    /// Rank 0's connection to the manager: the lease of the tree, which the manager
    /// releases when the connection closes (the process ended).
    pub(crate) _lease: Option<Client>,
}

impl CommTree {
    /// A communicator the manager was not asked about.
    pub(crate) fn not_asked() -> CommTree {
        CommTree {
            levels: Vec::new(),
            explain: "type I (host trees): no aggregation manager was asked for this \
                      communicator (WEFT_AGGD unset, or not the world communicator; \
                      docs/aggd.md)"
                .into(),
            _lease: None,
        }
    }

    /// The levels of a granted tree for ranks `0..tree.member_switch.len()`.
    fn levels_of(tree: &Type2Tree) -> Vec<Vec<u32>> {
        let chains: Vec<Vec<u32>> = (0..tree.member_switch.len())
            .map(|r| tree.chain(r))
            .collect();
        let depth = chains.iter().map(Vec::len).max().unwrap_or(0);
        (0..depth)
            .map(|j| chains.iter().map(|c| c[j.min(c.len() - 1)]).collect())
            .collect()
    }
}

/// Whether the world communicator asks a manager (`WEFT_AGGD` set): then the ranks' host
/// names are exchanged at start-up.
pub(crate) fn configured(config: &crate::Config) -> bool {
    config
        .values
        .text("WEFT_AGGD")
        .is_some_and(|a| !a.trim().is_empty())
}

/// Rank 0 asks the manager for a tree for the world (ranks on `hosts`) and broadcasts the
/// answer, so every rank holds the same one; a manager that cannot be reached or refuses
/// gives type I with the reason. Collective over the world.
pub(crate) fn attach_world(
    world: &crate::Comm,
    config: &crate::Config,
    hosts: &[String],
) -> Result<()> {
    let Some(addr) = config
        .values
        .text("WEFT_AGGD")
        .filter(|a| !a.trim().is_empty())
    else {
        return Ok(());
    };
    let addr = addr.trim().to_string();
    let comm_name = "world".to_string();
    let mut lease = None;
    let mut answer = Vec::new();
    if world.rank() == 0 {
        let grant = match ask(config, &addr, &comm_name, hosts) {
            Ok((grant, client)) => {
                if matches!(grant, Grant::Type2(_)) {
                    lease = Some(client);
                }
                grant
            }
            Err(e) => Grant::Type1 {
                reason: format!("the manager gave no answer: {e}"),
            },
        };
        answer = serde_json::to_vec(&grant)
            .map_err(|e| Error::new(ErrorKind::Protocol, format!("aggd answer: {e}")))?;
    }
    let mut len = [answer.len() as u64];
    world.bcast(&mut len, 0)?;
    answer.resize(len[0] as usize, 0);
    world.bcast(&mut answer, 0)?;
    let grant: Grant = serde_json::from_slice(&answer)
        .map_err(|e| Error::new(ErrorKind::Protocol, format!("aggd answer: {e}")))?;
    let explain = describe(&grant, &addr, world.size());
    let tree = match grant {
        Grant::Type2(t) if t.member_switch.len() == world.size() as usize => CommTree {
            levels: CommTree::levels_of(&t),
            explain,
            _lease: lease,
        },
        _ => CommTree {
            levels: Vec::new(),
            explain,
            _lease: None,
        },
    };
    log::info!(
        "rank {}: communicator world: {}",
        world.rank(),
        tree.explain
    );
    *world.data.agg.borrow_mut() = tree;
    Ok(())
}

/// Connects to the manager at `addr` with the secret `WEFT_AGGD_KEY_FILE` names (else the
/// job's) and asks for a tree for `comm` over `hosts`.
fn ask(
    config: &crate::Config,
    addr: &str,
    comm: &str,
    hosts: &[String],
) -> Result<(Grant, Client)> {
    let timeout = Duration::from_millis(
        config
            .values
            .uint("WEFT_AGGD_TIMEOUT_MS")
            .unwrap_or(2000)
            .max(1),
    );
    let key = match config
        .values
        .text("WEFT_AGGD_KEY_FILE")
        .filter(|k| !k.is_empty())
    {
        Some(path) => read_key_file(std::path::Path::new(&path))?,
        None => config.job_secret.clone().ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                "no secret for the manager: set WEFT_AGGD_KEY_FILE (no launcher gave the \
                 job a secret)",
            )
        })?,
    };
    let mut client = Client::connect(addr, &key, timeout)?;
    let grant = client.allocate(comm, hosts)?;
    Ok((grant, client))
}

/// Which tree `grant` is and why, for a communicator of `ranks` ranks.
fn describe(grant: &Grant, addr: &str, ranks: u32) -> String {
    match grant {
        Grant::Type2(t) if t.member_switch.len() == ranks as usize => format!(
            "type II from aggd {addr}: {} switches kept ({}), height {}; the hierarchical \
             collectives group the hosts by the switches above them",
            t.cost,
            t.switches
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            t.height
        ),
        Grant::Type2(t) => format!(
            "type I (host trees): aggd {addr} answered for {} ranks, not {ranks}",
            t.member_switch.len()
        ),
        Grant::Type1 { reason } => format!("type I (host trees): aggd {addr}: {reason}"),
    }
}

/// What a communicator of ranks on `hosts` would get from the manager `WEFT_AGGD` names,
/// now (for `weft info --explain`): asks for a tree under a name of this process, describes
/// it, and releases it at once.
pub fn explain_hosts(config: &crate::Config, hosts: &[String]) -> String {
    let Some(addr) = config
        .values
        .text("WEFT_AGGD")
        .filter(|a| !a.trim().is_empty())
    else {
        return "type I (host trees): WEFT_AGGD is not set".into();
    };
    let addr = addr.trim();
    let name = format!("explain-{}", std::process::id());
    match ask(config, addr, &name, hosts) {
        Ok((grant, mut client)) => {
            let _ = client.release(&name);
            describe(&grant, addr, hosts.len() as u32)
        }
        Err(e) => format!("type I (host trees): aggd {addr}: the manager gave no answer: {e}"),
    }
}
