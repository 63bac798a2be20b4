//! The TCP transport between nodes: one listening socket and one epoll set per process,
//! connections made lazily on the first send to a peer, each opened by a handshake proving
//! the job key ([`handshake`]), then framed messages ([`frame`]).
//!
//! Everything is nonblocking and driven from the caller's progress loop by [`Endpoint::poll`]
//! (epoll with timeout 0); there is no thread. Sockets have `TCP_NODELAY`; a frame goes out
//! with one vectored write of header and payload, and what the kernel does not take is copied
//! into the connection's small write buffer (at most one frame), so [`Endpoint::try_send`]
//! never holds on to the caller's buffer after it returns. The kernel takes at most about
//! one fragment beyond what is in flight ([`unsent_limit_bytes`], `TCP_NOTSENT_LOWAT`), so a
//! small frame written after a large message does not wait for the whole message.
//!
//! Rails: with `rails > 1`, the first fragment to a peer also opens `rails - 1` more
//! connections to it (to its published addresses in turn), and fragments (`FRAG`, which
//! carry their offset) go out round robin over every connection free to take one; all other
//! frames stay on the first connection, in order.
//!
//! Simultaneous connects: when two ranks connect to each other at once, both connections
//! survive. Each rank sends all its frames to a peer on the first of them that opened, and
//! reads frames from both, so the order of one sender's frames holds whichever way the race
//! went, and no connection is ever torn down under data.
//!
//! Liveness: a peer is declared dead only on evidence. A failed TCP connect (refused,
//! unreachable, or not finished within [`CONNECT_TIMEOUT`]) to every published address, a
//! challenge that does not prove the job key, or a proven connection that breaks. A
//! connection whose TCP connect succeeded but whose handshake stalls or is cut (the peer is
//! computing outside weft and has not accepted yet, or its listener evicted us under a burst)
//! is redialled to the same address with backoff, never taken as death. Every socket has
//! `SO_KEEPALIVE` ([`KEEPALIVE_IDLE_S`] idle, then [`KEEPALIVE_CNT`] probes
//! [`KEEPALIVE_INTVL_S`] apart) and `TCP_USER_TIMEOUT` ([`USER_TIMEOUT_MS`]), so a host that
//! powers off or is partitioned (no FIN, no RST) is noticed within about a minute.
//!
//! Strangers: an inbound connection is unproven until its `PROOF` checks out. Unproven
//! connections never touch per-peer state (a `HELLO` claiming rank B does not stop us from
//! connecting to B), do not make [`Endpoint::busy`] true, are dropped when no `HELLO` came
//! within the handshake timeout (one that got our challenge waits for its proof: its rank may
//! be computing outside weft), and at most `max(64, 2 * size)` are held: one more evicts the oldest. Outbound and
//! proven connections are never evicted. After the handshake the stream carries no MAC: the
//! key protects against off-path strangers, not an attacker on the path.
//!
//! Direct placement: a `FRAG` whose header arrived before the rest of its body is offered to
//! the caller's [`Sink::place`]; when the caller names the memory the body belongs in (the
//! receive buffer of a matched rendezvous), the rest of the body is read from the socket
//! straight into it, instead of through the connection's buffer and a copy out of it.
//!
//! This module knows nothing of matching or requests; it depends on `weft-core`, `libc` and
//! the hash crates only.

pub mod frame;
pub mod handshake;
pub mod lanes;
pub mod link;

use crate::buf::RawBufMut;
use crate::shm::Header;
use frame::{Decoded, Limits, FRAME_HEADER_BYTES};
use handshake::{CHALLENGE_BYTES, HELLO_BYTES, NONCE_BYTES, PROOF_BYTES};
use std::io::{ErrorKind as IoKind, IoSlice, IoSliceMut, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// How long an inbound connection may stay silent (no `HELLO`) before it is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long our TCP connect may stay unanswered before the next address is tried.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Unproven inbound connections held at once, at least; the cap is `max(this, 2 * size)` so
/// every other rank of a job can connect at the same moment without evicting each other.
const MIN_UNPROVEN: usize = 64;
/// First and largest wait before redialling an address whose handshake was cut.
const REDIAL_FIRST: Duration = Duration::from_millis(10);
const REDIAL_MAX: Duration = Duration::from_secs(1);
/// How often timers (handshake timeouts, redials) are looked at while any is pending.
const TIMER_EVERY: Duration = Duration::from_millis(20);
/// Keepalive: idle seconds before the first probe, seconds between probes, probes.
pub const KEEPALIVE_IDLE_S: i32 = 10;
pub const KEEPALIVE_INTVL_S: i32 = 5;
pub const KEEPALIVE_CNT: i32 = 6;
/// Unacknowledged data older than this breaks the connection (instead of ~15 min of
/// retransmissions); also bounds a dead host's silence with data queued.
pub const USER_TIMEOUT_MS: u32 = 60_000;
/// Refusals logged one by one; after that only every `REFUSAL_LOG_EVERY`th (a flood of
/// strangers must not flood the job's output).
const REFUSALS_LOGGED: u64 = 16;
const REFUSAL_LOG_EVERY: u64 = 1024;
/// Reads per readable connection per poll, so one busy peer cannot starve the others.
const READS_PER_EVENT: usize = 8;
/// Polls that find nothing after the last frame moved before [`Endpoint::active`] turns
/// false: traffic comes in bursts (a rendezvous answers an `RTS` with a `CTS`, then streams
/// fragments), and a caller that polls only every few calls while idle would otherwise add
/// that many calls (each a yield, for a yielding rank) to every step of an exchange.
pub const ACTIVE_POLLS: u32 = 64;
/// Smallest `FRAG` body offered to [`Sink::place`]: below this the copy out of the
/// connection's buffer costs less than the extra bookkeeping.
pub const PLACE_MIN_BYTES: usize = 16 * 1024;

/// Where [`Endpoint::poll_into`] delivers inbound frames.
///
/// # Safety
/// Memory returned by [`Sink::place`] is written by the endpoint, from later polls, until
/// [`Sink::placed`] is called for that frame or the connection to that peer breaks (the
/// peer is then reported by [`Endpoint::take_lost`]). An implementation must keep that memory
/// alive and touch it in no other way until then.
pub unsafe trait Sink {
    /// A whole frame from `peer`: its header and body.
    fn frame(&mut self, peer: u32, h: &Header, body: &[u8]);
    /// A `FRAG` from `peer` (body of at least [`PLACE_MIN_BYTES`]) whose body has not all
    /// arrived: memory of exactly `h.len` bytes to read the body into, or `None` to receive
    /// it as a whole frame through [`Sink::frame`].
    fn place(&mut self, _peer: u32, _h: &Header) -> Option<RawBufMut> {
        None
    }
    /// The body of a frame that [`Sink::place`] gave memory to has arrived whole.
    fn placed(&mut self, _peer: u32, _h: &Header) {}
}

/// A [`Sink`] that takes whole frames only.
struct Frames<F>(F);

// SAFETY: `place` is the default, which hands out no memory.
unsafe impl<F: FnMut(u32, &Header, &[u8])> Sink for Frames<F> {
    fn frame(&mut self, peer: u32, h: &Header, body: &[u8]) {
        (self.0)(peer, h, body)
    }
}

/// A `FRAG` body being read straight into the memory its sink named.
struct Placing {
    h: Header,
    dst: RawBufMut,
    /// Body bytes already in `dst`.
    got: usize,
}
const LISTENER_TOKEN: u64 = u64::MAX;

/// How an [`Endpoint`] is set up.
#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// This process's rank in the job.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// The job key both ends of a connection must prove (at least 16 bytes).
    pub key: Vec<u8>,
    /// Bounds on frame bodies; every rank of the job uses the same.
    pub limits: Limits,
    /// Address to listen on (unspecified = every interface).
    pub bind_ip: IpAddr,
    /// Interfaces (names) or addresses whose addresses are published; empty = all.
    pub interfaces: Vec<String>,
    /// Rendezvous fragment size asked of a peer in memory-saving mode (its connections'
    /// receive buffers are sized for this instead of `limits.fragment_bytes`).
    pub small_fragment_bytes: u32,
    /// Peers that may switch to high-speed mode (large receive buffers and fragments).
    pub max_fast_peers: u32,
    /// Bytes received from a peer after which it switches to high-speed mode.
    pub fast_after_bytes: u64,
    /// Connections per peer that fragments are striped over (1 = no striping).
    pub rails: u32,
    /// Local address of each rail's interface, in the lane choice's order (rail 0 is the
    /// main connection). Rail `r` dials the peer address on the same subnet as
    /// `rail_sources[r]` from that address, so the rails leave by different interfaces
    /// whatever order the peer published its addresses in. Empty: no preference.
    pub rail_sources: Vec<IpAddr>,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Our nonblocking connect is in flight to `peer_addrs[peer][addr]`.
    Connecting { addr: usize },
    /// We sent `HELLO`, waiting for `CHALLENGE`.
    AwaitChallenge {
        addr: usize,
        nonce_c: [u8; NONCE_BYTES],
    },
    /// Accepted; waiting for `HELLO`.
    AwaitHello,
    /// Accepted and answered; waiting for `PROOF` from the claimed peer.
    AwaitProof {
        nonce_c: [u8; NONCE_BYTES],
        nonce_a: [u8; NONCE_BYTES],
    },
    /// Both sides proven; frames flow.
    Open,
}

struct Conn {
    stream: TcpStream,
    /// The peer's rank: known when we connected, claimed by `HELLO`, proven once `Open`.
    peer: Option<u32>,
    phase: Phase,
    remote: Option<SocketAddr>,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Whether epoll watches this socket for writability.
    want_write: bool,
    since: Instant,
    /// True if we opened it (its peer is known, not claimed).
    outbound: bool,
    /// 0 for a peer's main connection; 1.. for an extra rail we opened for fragments.
    rail: u32,
    /// The frame whose body is being read into its sink's memory (the read buffer is empty
    /// meanwhile).
    placing: Option<Placing>,
}

impl Conn {
    fn pending_write(&self) -> bool {
        self.wpos < self.wbuf.len()
    }
}

/// Why a connection ends.
enum Close {
    /// The peer is gone or broke the protocol after proving itself: fail its operations.
    Lost(String),
    /// An inbound connection that never proved the key: drop it and log.
    Refused(String),
    /// Our connect or handshake to this address failed: try the next address.
    Retry(String),
    /// Our TCP connect succeeded but the handshake was cut before the challenge (the peer's
    /// listener evicted us, or dropped us while busy): dial the same address again later.
    Redial(String),
}

/// Receive buffer of a connection to a peer in memory-saving (`fast` false) or high-speed
/// mode: the largest frame the peer is asked to send plus room for the start of the next.
pub fn receive_buffer_bytes(
    limits: &frame::Limits,
    small_fragment_bytes: u32,
    fast: bool,
) -> usize {
    let frag = if fast {
        limits.fragment_bytes
    } else {
        small_fragment_bytes.min(limits.fragment_bytes)
    };
    FRAME_HEADER_BYTES + limits.eager_bytes.max(frag) as usize + if fast { 64 * 1024 } else { 4096 }
}

/// One process's TCP endpoint: listener, connections, epoll set.
pub struct Endpoint {
    rank: u32,
    size: u32,
    key: Vec<u8>,
    limits: Limits,
    listener: TcpListener,
    addresses: Vec<SocketAddr>,
    epoll: OwnedFd,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// Per peer: the connection our frames go out on (the first one that opened).
    send_conn: Vec<Option<usize>>,
    /// Per peer: our connection attempt in progress.
    connecting: Vec<Option<usize>>,
    peer_addrs: Vec<Vec<SocketAddr>>,
    connect_errors: Vec<Vec<String>>,
    dead: Vec<bool>,
    lost: Vec<(u32, String)>,
    live_conns: usize,
    /// Our own connections still in their handshake.
    outbound_handshakes: usize,
    /// Inbound connections that have not proven the key yet.
    inbound_unproven: usize,
    max_unproven: usize,
    handshake_timeout: Duration,
    connect_timeout: Duration,
    /// Per peer: when to dial which address again, and the wait after that.
    redial: Vec<Option<(Instant, usize)>>,
    redial_wait: Vec<Duration>,
    redials: usize,
    next_timers: Instant,
    pending_writes: usize,
    refused: u64,
    small_fragment_bytes: u32,
    max_fast_peers: u32,
    fast_after_bytes: u64,
    /// Per peer: bytes received, and whether it is in high-speed mode.
    received: Vec<u64>,
    fast: Vec<bool>,
    fast_count: u32,
    promoted: Vec<u32>,
    rails: u32,
    rail_sources: Vec<IpAddr>,
    /// Per peer: extra rails that are open, whether they were started, the next rail to use.
    rail_conns: Vec<Vec<usize>>,
    rails_started: Vec<bool>,
    next_rail: Vec<usize>,
    striped: u64,
    /// Polls left before [`Endpoint::active`] turns false (reset whenever a frame moves).
    active_polls: u32,
}

impl Endpoint {
    /// Opens the listening socket and the epoll set.
    pub fn bind(cfg: TcpConfig) -> Result<Endpoint> {
        if cfg.key.len() < handshake::MIN_KEY_BYTES {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "TCP job key of {} bytes is too short (at least {})",
                    cfg.key.len(),
                    handshake::MIN_KEY_BYTES
                ),
            ));
        }
        if cfg.limits.eager_bytes == 0 || cfg.limits.fragment_bytes == 0 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("TCP frame limits {:?} must be positive", cfg.limits),
            ));
        }
        let listener = TcpListener::bind((cfg.bind_ip, 0)).map_err(|e| {
            Error::io(
                format!("rank {}: listening for TCP on {}", cfg.rank, cfg.bind_ip),
                e,
            )
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("making the TCP listener nonblocking", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("reading the TCP listener's address", e))?
            .port();
        let addresses = if cfg.bind_ip.is_unspecified() {
            local_addresses(&cfg.interfaces)?
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect()
        } else {
            vec![SocketAddr::new(cfg.bind_ip, port)]
        };
        // SAFETY: epoll_create1 takes no pointers; the result is checked below.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io(
                "creating the epoll set",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        let n = cfg.size as usize;
        let ep = Endpoint {
            rank: cfg.rank,
            size: cfg.size,
            key: cfg.key,
            limits: cfg.limits,
            listener,
            addresses,
            epoll,
            conns: Vec::new(),
            free: Vec::new(),
            send_conn: vec![None; n],
            connecting: vec![None; n],
            peer_addrs: vec![Vec::new(); n],
            connect_errors: vec![Vec::new(); n],
            dead: vec![false; n],
            lost: Vec::new(),
            live_conns: 0,
            outbound_handshakes: 0,
            inbound_unproven: 0,
            max_unproven: MIN_UNPROVEN.max(2 * n),
            handshake_timeout: HANDSHAKE_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
            redial: vec![None; n],
            redial_wait: vec![REDIAL_FIRST; n],
            redials: 0,
            next_timers: Instant::now(),
            pending_writes: 0,
            refused: 0,
            small_fragment_bytes: cfg.small_fragment_bytes.clamp(1, cfg.limits.fragment_bytes),
            max_fast_peers: cfg.max_fast_peers,
            fast_after_bytes: cfg.fast_after_bytes,
            received: vec![0; n],
            fast: vec![false; n],
            fast_count: 0,
            promoted: Vec::new(),
            rails: cfg.rails.max(1),
            rail_sources: cfg.rail_sources,
            rail_conns: vec![Vec::new(); n],
            rails_started: vec![false; n],
            next_rail: vec![0; n],
            striped: 0,
            active_polls: 0,
        };
        ep.epoll_ctl(
            libc::EPOLL_CTL_ADD,
            ep.listener.as_raw_fd(),
            libc::EPOLLIN as u32,
            LISTENER_TOKEN,
        )
        .map_err(|e| Error::io("adding the TCP listener to epoll", e))?;
        Ok(ep)
    }

    /// The addresses peers may connect to, in order of preference.
    pub fn addresses(&self) -> &[SocketAddr] {
        &self.addresses
    }

    /// The addresses as one line for the bootstrap store (see [`parse_addresses`]).
    pub fn address_record(&self) -> String {
        let v: Vec<String> = self.addresses.iter().map(|a| a.to_string()).collect();
        v.join(",")
    }

    /// Where to reach `peer`, tried in order.
    pub fn set_peer_addresses(&mut self, peer: u32, addrs: Vec<SocketAddr>) {
        self.peer_addrs[peer as usize] = addrs;
    }

    /// Connections open or opening (the caller polls rarely while this is zero).
    pub fn connection_count(&self) -> usize {
        self.live_conns
    }

    /// True while some connection has bytes the kernel has not taken, or one of our own
    /// connections is being made (a stranger's unproven connection does not count: it must
    /// not cost every progress call a system call).
    pub fn busy(&self) -> bool {
        self.pending_writes > 0 || self.outbound_handshakes > 0 || self.redials > 0
    }

    /// True while a connection our frames to `peer` go out on (the main one or an extra
    /// rail) holds bytes the kernel has not taken (written on later polls, in order).
    pub fn holds_for(&self, peer: u32) -> bool {
        let p = peer as usize;
        self.send_conn[p]
            .into_iter()
            .chain(self.rail_conns[p].iter().copied())
            .any(|ci| self.conns[ci].as_ref().is_some_and(Conn::pending_write))
    }

    /// True while frames moved within the last [`ACTIVE_POLLS`] polls (or since the last
    /// send): more are likely soon, so the caller should poll on every progress call.
    pub fn active(&self) -> bool {
        self.active_polls > 0
    }

    /// Sets how long an inbound connection may take to prove the key (default 10 s) and
    /// how long our TCP connect may stay unanswered (default [`CONNECT_TIMEOUT`]).
    pub fn set_timeouts(&mut self, handshake: Duration, connect: Duration) {
        self.handshake_timeout = handshake;
        self.connect_timeout = connect;
    }

    /// Unproven inbound connections held at most; one more evicts the oldest.
    pub fn max_unproven(&self) -> usize {
        self.max_unproven
    }

    /// Unproven inbound connections held now.
    pub fn unproven_count(&self) -> usize {
        self.inbound_unproven
    }

    /// Handshakes at a step, for tests that order them instead of sleeping: (our
    /// connections that sent `HELLO` and wait for the `CHALLENGE`, accepted ones that sent
    /// the `CHALLENGE` and wait for the `PROOF`). Walks every connection.
    #[doc(hidden)]
    pub fn handshakes_waiting(&self) -> (usize, usize) {
        let mut waiting = (0, 0);
        for conn in self.conns.iter().flatten() {
            match conn.phase {
                Phase::AwaitChallenge { .. } => waiting.0 += 1,
                Phase::AwaitProof { .. } => waiting.1 += 1,
                _ => {}
            }
        }
        waiting
    }

    /// True while some connection holds bytes the kernel has not taken yet.
    pub fn unsent(&self) -> bool {
        self.pending_writes > 0
    }

    /// Whether `peer` was found dead (its connection broke or it cannot be reached).
    pub fn is_dead(&self, peer: u32) -> bool {
        self.dead[peer as usize]
    }

    /// Peers found dead since the last call, each with the reason.
    pub fn take_lost(&mut self) -> Vec<(u32, String)> {
        std::mem::take(&mut self.lost)
    }

    /// Inbound connections dropped because they did not prove the job key.
    pub fn refused_count(&self) -> u64 {
        self.refused
    }

    /// The rendezvous fragment size to ask of `peer`: small in memory-saving mode, the full
    /// fragment size once the peer is in high-speed mode.
    pub fn fragment_bytes_for(&self, peer: u32) -> u32 {
        if self.fast[peer as usize] {
            self.limits.fragment_bytes
        } else {
            self.small_fragment_bytes
        }
    }

    /// Peers that switched to high-speed mode since the last call.
    pub fn take_promoted(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.promoted)
    }

    /// Fragments sent on an extra rail rather than the main connection.
    pub fn striped_count(&self) -> u64 {
        self.striped
    }

    /// Local and remote address of each connection our frames to `peer` go out on: the main
    /// connection first, then the extra rails that are open.
    pub fn rail_addresses(&self, peer: u32) -> Vec<(SocketAddr, SocketAddr)> {
        let p = peer as usize;
        self.send_conn[p]
            .into_iter()
            .chain(self.rail_conns[p].iter().copied())
            .filter_map(|ci| {
                let c = self.conns[ci].as_ref()?;
                Some((c.stream.local_addr().ok()?, c.stream.peer_addr().ok()?))
            })
            .collect()
    }

    /// Peers in high-speed mode.
    pub fn fast_peer_count(&self) -> u32 {
        self.fast_count
    }

    /// Bytes of connection buffers this endpoint holds (receive and write buffers).
    pub fn buffer_bytes(&self) -> usize {
        self.conns
            .iter()
            .flatten()
            .map(|c| c.rbuf.len() + c.wbuf.capacity())
            .sum()
    }

    /// The largest receive buffer of this endpoint's connections (bytes): a frame read
    /// through a buffer too small for it grows that one past its mode's size.
    pub fn largest_receive_buffer(&self) -> usize {
        self.conns
            .iter()
            .flatten()
            .map(|c| c.rbuf.len())
            .max()
            .unwrap_or(0)
    }

    /// Receive buffer size for a connection to a peer in the given mode: the largest frame
    /// it is asked to send plus room for the start of the next.
    /// A new connection's receive buffer: sized for small fragments even when its peer is
    /// already in high-speed mode (a connection opened late, a second one when both sides
    /// dialled at once). Large fragments go straight into their receive memory; the buffer
    /// grows only when one cannot, so memory stays bounded however connections race.
    fn new_rbuf_bytes(&self) -> usize {
        receive_buffer_bytes(&self.limits, self.small_fragment_bytes, false)
    }

    /// Counts traffic from `peer`; switches it to high-speed mode past the threshold while
    /// fewer than `max_fast_peers` have switched (memory stays bounded however many peers).
    fn count_received(&mut self, peer: u32, bytes: usize) {
        let p = peer as usize;
        self.received[p] += bytes as u64;
        if self.fast[p]
            || self.received[p] < self.fast_after_bytes
            || self.fast_count >= self.max_fast_peers
        {
            return;
        }
        // From now on the peer is asked for large fragments; a connection's buffer grows
        // when one arrives on it (a second connection the peer does not send on stays small).
        self.fast[p] = true;
        self.fast_count += 1;
        self.promoted.push(peer);
    }

    /// Starts connecting to `peer` unless a proven connection exists or ours is being made
    /// (or waits to be redialled). An inbound connection merely claiming to be `peer` does
    /// not count: anyone can send that claim, and if it is the real peer, both connections
    /// survive (see the module comment).
    pub fn connect(&mut self, peer: u32) {
        let p = peer as usize;
        if self.dead[p]
            || self.send_conn[p].is_some()
            || self.connecting[p].is_some()
            || self.redial[p].is_some()
        {
            return;
        }
        self.connect_errors[p].clear();
        self.start_connect(peer, 0);
    }

    /// Sends one frame to `peer` if its connection is open and has nothing queued: the
    /// frame is then written, or its unwritten rest copied, and true returned. False means
    /// "not now" (connecting, or the kernel is still taking the previous frame); the caller
    /// keeps the frame and tries again after [`Endpoint::poll`].
    pub fn try_send(&mut self, peer: u32, h: &Header, parts: &[&[u8]]) -> bool {
        let p = peer as usize;
        let Some(main) = self.send_conn[p] else {
            self.connect(peer);
            return false;
        };
        if h.kind == frame::KIND_FRAG && self.rails > 1 {
            if !self.rails_started[p] {
                self.rails_started[p] = true;
                self.start_rails(peer);
            }
            let n = 1 + self.rail_conns[p].len();
            for k in 0..n {
                let r = (self.next_rail[p] + k) % n;
                let ci = if r == 0 {
                    main
                } else {
                    self.rail_conns[p][r - 1]
                };
                if self.free_to_write(ci) {
                    self.next_rail[p] = r + 1;
                    if r > 0 {
                        self.striped += 1;
                    }
                    return self.write_frame(ci, peer, h, parts);
                }
            }
            return false;
        }
        if !self.free_to_write(main) {
            return false;
        }
        self.write_frame(main, peer, h, parts)
    }

    /// Connections a peer's fragments can go on: the main one and the extra rails.
    pub fn rails(&self) -> u32 {
        self.rails
    }

    /// [`Endpoint::try_send`] of a `FRAG` on rail `rail` only (0 is the main connection):
    /// false while that rail is busy. A rail not open (still opening, or failed) leaves the
    /// frame to the usual round robin, so nothing waits on a rail that never comes.
    pub fn try_send_on_rail(&mut self, peer: u32, h: &Header, parts: &[&[u8]], rail: u32) -> bool {
        let p = peer as usize;
        let Some(main) = self.send_conn[p] else {
            self.connect(peer);
            return false;
        };
        if rail == 0 || self.rails <= 1 {
            return self.free_to_write(main) && self.write_frame(main, peer, h, parts);
        }
        if !self.rails_started[p] {
            self.rails_started[p] = true;
            self.start_rails(peer);
        }
        let on_rail = self.rail_conns[p]
            .iter()
            .copied()
            .find(|&ci| conn_rail(&self.conns[ci]) == rail);
        match on_rail {
            Some(ci) => {
                if !self.free_to_write(ci) {
                    return false;
                }
                self.striped += 1;
                self.write_frame(ci, peer, h, parts)
            }
            None => self.try_send(peer, h, parts),
        }
    }

    /// True when connection `ci` has nothing queued (after trying to write what it had).
    fn free_to_write(&mut self, ci: usize) -> bool {
        if self.conns[ci].as_ref().is_some_and(Conn::pending_write) {
            self.flush_conn(ci);
        }
        self.conns[ci].as_ref().is_some_and(|c| !c.pending_write())
    }

    /// Opens the extra rails to `peer`: rail `r` to the peer address on the subnet of
    /// `rail_sources[r]`, from that address (without sources: to its addresses in turn).
    fn start_rails(&mut self, peer: u32) {
        let p = peer as usize;
        let naddr = self.peer_addrs[p].len();
        for rail in 1..self.rails {
            if naddr == 0 {
                return;
            }
            let source = self.rail_sources.get(rail as usize).copied();
            let a = source
                .and_then(|src| best_address_for(&self.peer_addrs[p], src))
                .unwrap_or(rail as usize % naddr);
            let addr = self.peer_addrs[p][a];
            let Ok(stream) =
                nonblocking_connect(&addr, source.filter(|&s| same_link(s, addr.ip())))
            else {
                continue;
            };
            let mut conn = Self::new_conn(
                stream,
                Some(peer),
                Phase::Connecting { addr: a },
                self.new_rbuf_bytes(),
            );
            conn.outbound = true;
            conn.remote = Some(addr);
            conn.want_write = true;
            conn.rail = rail;
            let _ = self.insert(conn, (libc::EPOLLIN | libc::EPOLLOUT) as u32);
        }
    }

    /// Writes one frame on connection `ci` (which has nothing queued).
    fn write_frame(&mut self, ci: usize, peer: u32, h: &Header, parts: &[&[u8]]) -> bool {
        self.active_polls = ACTIVE_POLLS;
        let hb = frame::encode_header(h);
        let mut iov = [IoSlice::new(&[]); 4];
        iov[0] = IoSlice::new(&hb);
        let mut total = hb.len();
        let mut n_iov = 1;
        for part in parts.iter().filter(|p| !p.is_empty()) {
            debug_assert!(n_iov < iov.len(), "at most three payload parts");
            iov[n_iov] = IoSlice::new(part);
            n_iov += 1;
            total += part.len();
        }
        let conn = self.conns[ci].as_mut().expect("send connection exists");
        // sendmsg with MSG_NOSIGNAL, not writev: a peer that went away must be an error here,
        // not a SIGPIPE that kills this (healthy) rank in a C program.
        let written = match weft_boot::sock::send_vectored(conn.stream.as_raw_fd(), &iov[..n_iov]) {
            Ok(n) => n,
            Err(e) if e.kind() == IoKind::WouldBlock || e.kind() == IoKind::Interrupted => 0,
            Err(e) => {
                let why = format!("writing to rank {peer}: {e}");
                self.close(ci, Close::Lost(why));
                return false;
            }
        };
        if written < total {
            // Keep the unwritten rest ourselves so the caller's buffer is free on return.
            let mut skip = written;
            conn.wbuf.clear();
            conn.wpos = 0;
            for s in std::iter::once(&hb[..]).chain(parts.iter().copied()) {
                if skip >= s.len() {
                    skip -= s.len();
                    continue;
                }
                conn.wbuf.extend_from_slice(&s[skip..]);
                skip = 0;
            }
            self.pending_writes += 1;
            self.watch_writes(ci, true);
        }
        true
    }

    /// Accepts connections, runs handshakes, writes queued bytes and hands every complete
    /// inbound frame to `on_frame(peer, header, body)`. Never blocks. True if anything moved.
    pub fn poll(&mut self, on_frame: impl FnMut(u32, &Header, &[u8])) -> bool {
        self.poll_into(&mut Frames(on_frame))
    }

    /// [`Endpoint::poll`], delivering to `sink`, which may take large fragments straight
    /// into their destination ([`Sink::place`]).
    pub fn poll_into(&mut self, sink: &mut impl Sink) -> bool {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 32];
        // SAFETY: `events` is writable for its whole length; timeout 0 never blocks.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                0,
            )
        };
        let mut moved = false;
        for ev in events.iter().take(n.max(0) as usize) {
            let (flags, token) = (ev.events, ev.u64);
            moved = true;
            if token == LISTENER_TOKEN {
                self.accept_all();
                continue;
            }
            let ci = token as usize;
            let Some(conn) = self.conns.get(ci).and_then(Option::as_ref) else {
                continue;
            };
            if let Phase::Connecting { .. } = conn.phase {
                self.connect_ready(ci);
                continue;
            }
            if flags & libc::EPOLLOUT as u32 != 0 {
                self.flush_conn(ci);
            }
            if flags & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                self.read_conn(ci, sink);
            }
        }
        if moved {
            self.active_polls = ACTIVE_POLLS;
        } else {
            self.active_polls = self.active_polls.saturating_sub(1);
        }
        if self.outbound_handshakes + self.inbound_unproven + self.redials > 0 {
            let now = Instant::now();
            if now >= self.next_timers {
                self.next_timers = now + TIMER_EVERY;
                self.run_timers(now);
            }
        }
        moved
    }

    // ------------------------------------------------------------ connections

    fn epoll_ctl(&self, op: i32, fd: i32, events: u32, token: u64) -> std::io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` lives across the call; the kernel copies it.
        let rc = unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut ev) };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn insert(&mut self, conn: Conn, events: u32) -> std::io::Result<usize> {
        let ci = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        let fd = conn.stream.as_raw_fd();
        set_unsent_limit(fd, unsent_limit_bytes(&self.limits));
        let want_write = conn.want_write;
        let outbound = conn.outbound;
        self.conns[ci] = Some(conn);
        if let Err(e) = self.epoll_ctl(libc::EPOLL_CTL_ADD, fd, events, ci as u64) {
            self.conns[ci] = None;
            self.free.push(ci);
            return Err(e);
        }
        self.live_conns += 1;
        if outbound {
            self.outbound_handshakes += 1;
        } else {
            self.inbound_unproven += 1;
        }
        debug_assert!(!want_write || events & libc::EPOLLOUT as u32 != 0);
        Ok(ci)
    }

    fn watch_writes(&mut self, ci: usize, on: bool) {
        let conn = self.conns[ci].as_mut().expect("live connection");
        if conn.want_write == on {
            return;
        }
        conn.want_write = on;
        let fd = conn.stream.as_raw_fd();
        let events = libc::EPOLLIN as u32 | if on { libc::EPOLLOUT as u32 } else { 0 };
        if let Err(e) = self.epoll_ctl(libc::EPOLL_CTL_MOD, fd, events, ci as u64) {
            self.close(ci, Close::Lost(format!("watching a TCP socket: {e}")));
        }
    }

    fn new_conn(stream: TcpStream, peer: Option<u32>, phase: Phase, rbuf_bytes: usize) -> Conn {
        Conn {
            stream,
            peer,
            phase,
            remote: None,
            rbuf: vec![0u8; rbuf_bytes],
            rstart: 0,
            rend: 0,
            wbuf: Vec::new(),
            wpos: 0,
            want_write: false,
            since: Instant::now(),
            outbound: false,
            rail: 0,
            placing: None,
        }
    }

    fn start_connect(&mut self, peer: u32, first: usize) {
        let p = peer as usize;
        for a in first..self.peer_addrs[p].len() {
            let addr = self.peer_addrs[p][a];
            let source = self
                .rail_sources
                .first()
                .copied()
                .filter(|&s| same_link(s, addr.ip()));
            match nonblocking_connect(&addr, source) {
                Ok(stream) => {
                    let mut conn = Self::new_conn(
                        stream,
                        Some(peer),
                        Phase::Connecting { addr: a },
                        self.new_rbuf_bytes(),
                    );
                    conn.outbound = true;
                    conn.remote = Some(addr);
                    conn.want_write = true;
                    let events = (libc::EPOLLIN | libc::EPOLLOUT) as u32;
                    match self.insert(conn, events) {
                        Ok(ci) => {
                            self.connecting[p] = Some(ci);
                            return;
                        }
                        Err(e) => self.connect_errors[p].push(format!("{addr}: {e}")),
                    }
                }
                Err(e) => self.connect_errors[p].push(format!("{addr}: {e}")),
            }
        }
        let why = if self.peer_addrs[p].is_empty() {
            format!("rank {peer} published no TCP address")
        } else {
            format!(
                "could not reach rank {peer} over TCP ({})",
                self.connect_errors[p].join("; ")
            )
        };
        self.mark_dead(peer, why);
    }

    fn connect_ready(&mut self, ci: usize) {
        let conn = self.conns[ci].as_mut().expect("live connection");
        let Phase::Connecting { addr } = conn.phase else {
            return;
        };
        let peer = conn.peer.expect("outbound connections know their peer");
        match conn.stream.take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => {
                self.close(ci, Close::Retry(format!("connect: {e}")));
                return;
            }
        }
        // A spurious wake-up before the connect finished shows as "not connected".
        if conn.stream.peer_addr().is_err() {
            return;
        }
        let _ = conn.stream.set_nodelay(true);
        let nonce_c = match handshake::nonce() {
            Ok(n) => n,
            Err(e) => {
                self.close(ci, Close::Retry(e.to_string()));
                return;
            }
        };
        conn.phase = Phase::AwaitChallenge { addr, nonce_c };
        conn.wbuf.clear();
        conn.wbuf
            .extend_from_slice(&handshake::hello(self.rank, peer, &nonce_c));
        conn.wpos = 0;
        self.pending_writes += 1;
        self.flush_conn(ci);
    }

    fn accept_all(&mut self) {
        loop {
            let (stream, remote) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(_) => return,
            };
            if self.inbound_unproven >= self.max_unproven {
                // Room for the newcomer at the expense of the unproven connection that has
                // had the longest to prove itself; proven and outbound ones are never touched.
                self.evict_oldest_unproven();
            }
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = stream.set_nodelay(true);
            set_keepalive(stream.as_raw_fd());
            // Sized for the handshake; grown once the peer is known and proven.
            let mut conn = Self::new_conn(stream, None, Phase::AwaitHello, 4096);
            conn.remote = Some(remote);
            let _ = self.insert(conn, libc::EPOLLIN as u32);
        }
    }

    fn evict_oldest_unproven(&mut self) {
        let oldest = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(ci, c)| c.as_ref().map(|c| (ci, c)))
            .filter(|(_, c)| !c.outbound && !matches!(c.phase, Phase::Open))
            .min_by_key(|(_, c)| c.since)
            .map(|(ci, _)| ci);
        if let Some(ci) = oldest {
            let why = format!(
                "evicted: {} unproven connections already held",
                self.max_unproven
            );
            self.close(ci, Close::Refused(why));
        }
    }

    /// Writes what the connection has queued. Closes it on error.
    fn flush_conn(&mut self, ci: usize) {
        let Some(conn) = self.conns[ci].as_mut() else {
            return;
        };
        if !conn.pending_write() {
            self.watch_writes(ci, false);
            return;
        }
        while conn.pending_write() {
            match weft_boot::sock::send(conn.stream.as_raw_fd(), &conn.wbuf[conn.wpos..]) {
                Ok(0) => break,
                Ok(n) => conn.wpos += n,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(e) if e.kind() == IoKind::WouldBlock => break,
                Err(e) => {
                    let why = format!("writing: {e}");
                    let close = match conn.phase {
                        Phase::Open => Close::Lost(why),
                        Phase::AwaitChallenge { .. } => Close::Redial(why),
                        Phase::Connecting { .. } => Close::Retry(why),
                        _ => Close::Refused(why),
                    };
                    self.close(ci, close);
                    return;
                }
            }
        }
        let done = !conn.pending_write();
        if done {
            conn.wbuf.clear();
            conn.wpos = 0;
            self.pending_writes -= 1;
        }
        self.watch_writes(ci, !done);
    }

    fn queue_bytes(&mut self, ci: usize, bytes: &[u8]) {
        let conn = self.conns[ci].as_mut().expect("live connection");
        if !conn.pending_write() {
            conn.wbuf.clear();
            conn.wpos = 0;
            self.pending_writes += 1;
        }
        conn.wbuf.extend_from_slice(bytes);
        self.flush_conn(ci);
    }

    fn read_conn(&mut self, ci: usize, sink: &mut impl Sink) {
        for _ in 0..READS_PER_EVENT {
            let Some(conn) = self.conns[ci].as_mut() else {
                return;
            };
            if conn.placing.is_some() {
                match self.read_placing(ci, sink) {
                    Some(true) => continue,
                    Some(false) => return,
                    None => {}
                }
                let conn = self.conns[ci].as_ref().expect("live connection");
                if conn.rend > conn.rstart && !self.process(ci, sink) {
                    return;
                }
                continue;
            }
            if conn.rend == conn.rbuf.len() {
                // Move the partial frame to the front; the buffer holds any whole frame.
                conn.rbuf.copy_within(conn.rstart..conn.rend, 0);
                conn.rend -= conn.rstart;
                conn.rstart = 0;
            }
            let end = conn.rend;
            match conn.stream.read(&mut conn.rbuf[end..]) {
                Ok(0) => {
                    let why = match conn.peer {
                        Some(p) if matches!(conn.phase, Phase::Open) => {
                            format!("rank {p} closed its connection")
                        }
                        _ => "closed during the handshake".to_string(),
                    };
                    self.close_for_phase(ci, why);
                    return;
                }
                Ok(n) => {
                    conn.rend += n;
                    if !self.process(ci, sink) {
                        return;
                    }
                }
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) => {
                    self.close_for_phase(ci, format!("reading: {e}"));
                    return;
                }
            }
        }
    }

    /// One read for a connection placing a body: the rest of the body into its memory, what
    /// follows it into the (empty) read buffer. `Some(true)`: read again; `Some(false)`:
    /// nothing more to read now, or the connection closed; `None`: the body is complete and
    /// handed over, and the read buffer may hold more frames.
    fn read_placing(&mut self, ci: usize, sink: &mut impl Sink) -> Option<bool> {
        let conn = self.conns[ci].as_mut().expect("live connection");
        let pl = conn.placing.as_mut().expect("placing a body");
        debug_assert!(conn.rstart == 0 && conn.rend == 0);
        let want = pl.dst.len() - pl.got;
        // SAFETY: the sink keeps `dst` alive and untouched until `placed` or until this
        // connection breaks (the `Sink` contract); this is the only view of it in use.
        let rest = unsafe { pl.dst.slice_mut(pl.got, want) };
        let mut iov = [IoSliceMut::new(rest), IoSliceMut::new(&mut conn.rbuf[..])];
        match conn.stream.read_vectored(&mut iov) {
            Ok(0) => {
                let why = match conn.peer {
                    Some(p) => format!("rank {p} closed its connection"),
                    None => "closed".to_string(),
                };
                self.close_for_phase(ci, why);
                Some(false)
            }
            Ok(n) => {
                let body = n.min(want);
                pl.got += body;
                conn.rend = n - body;
                if pl.got < pl.dst.len() {
                    return Some(true);
                }
                let h = pl.h;
                conn.placing = None;
                let peer = conn.peer.expect("open connections know their peer");
                sink.placed(peer, &h);
                self.count_received(peer, FRAME_HEADER_BYTES + h.len as usize);
                None
            }
            Err(e) if e.kind() == IoKind::Interrupted => Some(true),
            Err(e) if e.kind() == IoKind::WouldBlock => Some(false),
            Err(e) => {
                self.close_for_phase(ci, format!("reading: {e}"));
                Some(false)
            }
        }
    }

    fn close_for_phase(&mut self, ci: usize, why: String) {
        let conn = self.conns[ci].as_ref().expect("live connection");
        let close = match conn.phase {
            Phase::Open => Close::Lost(why),
            Phase::Connecting { .. } => Close::Retry(why),
            Phase::AwaitChallenge { .. } => Close::Redial(why),
            Phase::AwaitHello | Phase::AwaitProof { .. } => Close::Refused(why),
        };
        self.close(ci, close);
    }

    /// Consumes what the connection has buffered. False when the connection was closed.
    fn process(&mut self, ci: usize, sink: &mut impl Sink) -> bool {
        loop {
            let conn = self.conns[ci].as_mut().expect("live connection");
            let avail = conn.rend - conn.rstart;
            match conn.phase {
                Phase::Connecting { .. } => return true,
                Phase::AwaitHello => {
                    if avail < HELLO_BYTES {
                        return true;
                    }
                    let b: [u8; HELLO_BYTES] = conn.rbuf[conn.rstart..conn.rstart + HELLO_BYTES]
                        .try_into()
                        .expect("hello bytes");
                    conn.rstart += HELLO_BYTES;
                    let (from, nonce_c) = match handshake::parse_hello(&b, self.rank, self.size) {
                        Ok(x) => x,
                        Err(e) => {
                            self.close(ci, Close::Refused(e.to_string()));
                            return false;
                        }
                    };
                    let nonce_a = match handshake::nonce() {
                        Ok(n) => n,
                        Err(e) => {
                            self.close(ci, Close::Refused(e.to_string()));
                            return false;
                        }
                    };
                    conn.peer = Some(from);
                    conn.phase = Phase::AwaitProof { nonce_c, nonce_a };
                    let c = handshake::challenge(&self.key, from, self.rank, &nonce_c, &nonce_a);
                    self.queue_bytes(ci, &c);
                    if self.conns[ci].is_none() {
                        return false;
                    }
                }
                Phase::AwaitProof { nonce_c, nonce_a } => {
                    if avail < PROOF_BYTES {
                        return true;
                    }
                    let b: [u8; PROOF_BYTES] = conn.rbuf[conn.rstart..conn.rstart + PROOF_BYTES]
                        .try_into()
                        .expect("proof bytes");
                    conn.rstart += PROOF_BYTES;
                    let from = conn.peer.expect("claimed in hello");
                    if let Err(e) =
                        handshake::check_proof(&self.key, from, self.rank, &nonce_c, &nonce_a, &b)
                    {
                        self.close(ci, Close::Refused(e.to_string()));
                        return false;
                    }
                    self.opened(ci, from);
                }
                Phase::AwaitChallenge { nonce_c, .. } => {
                    if avail < CHALLENGE_BYTES {
                        return true;
                    }
                    let b: [u8; CHALLENGE_BYTES] = conn.rbuf
                        [conn.rstart..conn.rstart + CHALLENGE_BYTES]
                        .try_into()
                        .expect("challenge bytes");
                    conn.rstart += CHALLENGE_BYTES;
                    let peer = conn.peer.expect("outbound connections know their peer");
                    let nonce_a = match handshake::check_challenge(
                        &self.key, self.rank, peer, &nonce_c, &b,
                    ) {
                        Ok(n) => n,
                        Err(e) => {
                            self.close(ci, Close::Retry(e.to_string()));
                            return false;
                        }
                    };
                    let p = handshake::proof(&self.key, self.rank, peer, &nonce_c, &nonce_a);
                    self.queue_bytes(ci, &p);
                    if self.conns[ci].is_none() {
                        return false;
                    }
                    if conn_rail(&self.conns[ci]) == 0 {
                        self.connecting[peer as usize] = None;
                        self.opened(ci, peer);
                    } else {
                        self.opened_rail(ci, peer);
                    }
                }
                Phase::Open => {
                    let peer = conn.peer.expect("open connections know their peer");
                    let input = &conn.rbuf[conn.rstart..conn.rend];
                    match frame::decode(input, &self.limits) {
                        Ok(Decoded::NeedMore) => {
                            if conn.rstart == conn.rend {
                                conn.rstart = 0;
                                conn.rend = 0;
                            } else if let Some(dst) = frame::peek_header(input)
                                .filter(|h| {
                                    h.kind == frame::KIND_FRAG && h.len as usize >= PLACE_MIN_BYTES
                                })
                                .and_then(|h| Some(h).zip(sink.place(peer, &h)))
                                .inspect(|(h, dst)| {
                                    // The sink counted the memory as in use: memory of
                                    // another size would leave its receive waiting forever.
                                    assert_eq!(
                                        dst.len(),
                                        h.len as usize,
                                        "Sink::place gave memory of the wrong size"
                                    )
                                })
                            {
                                // The rest of this body goes straight into its memory.
                                let (h, dst) = dst;
                                let have = &input[FRAME_HEADER_BYTES..];
                                // SAFETY: the sink's contract (see `Sink`); `have` is shorter
                                // than the body (the frame is incomplete).
                                unsafe { dst.slice_mut(0, have.len()) }.copy_from_slice(have);
                                conn.placing = Some(Placing {
                                    h,
                                    dst,
                                    got: have.len(),
                                });
                                conn.rstart = 0;
                                conn.rend = 0;
                            } else if input.len() >= FRAME_HEADER_BYTES {
                                // The header passed the codec's bounds: make sure the whole
                                // frame fits, whatever fragment size the peer was asked for.
                                let len =
                                    u32::from_le_bytes(input[16..20].try_into().expect("4 bytes"))
                                        as usize;
                                let need = FRAME_HEADER_BYTES + len;
                                if conn.rbuf.len() - conn.rstart < need {
                                    conn.rbuf.copy_within(conn.rstart..conn.rend, 0);
                                    conn.rend -= conn.rstart;
                                    conn.rstart = 0;
                                    if conn.rbuf.len() < need {
                                        conn.rbuf.resize(need, 0);
                                    }
                                }
                            }
                            return true;
                        }
                        Ok(Decoded::Frame(h)) => {
                            let n = FRAME_HEADER_BYTES + h.len as usize;
                            sink.frame(peer, &h, &input[FRAME_HEADER_BYTES..n]);
                            conn.rstart += n;
                            self.count_received(peer, n);
                        }
                        Err(e) => {
                            let why = format!("rank {peer} sent a malformed frame: {e}");
                            self.close(ci, Close::Lost(why));
                            return false;
                        }
                    }
                }
            }
        }
    }

    fn opened_rail(&mut self, ci: usize, peer: u32) {
        let want = self.new_rbuf_bytes();
        let conn = self.conns[ci].as_mut().expect("live connection");
        conn.phase = Phase::Open;
        log::debug!(
            "TCP rail {} to rank {peer} at {} open (handshake proven)",
            conn.rail,
            conn.remote
                .map_or_else(|| "?".to_string(), |a| a.to_string())
        );
        if conn.rbuf.len() < want {
            conn.rbuf.resize(want, 0);
        }
        self.outbound_handshakes -= 1;
        self.rail_conns[peer as usize].push(ci);
    }

    fn opened(&mut self, ci: usize, peer: u32) {
        let want = self.new_rbuf_bytes();
        let conn = self.conns[ci].as_mut().expect("live connection");
        conn.phase = Phase::Open;
        log::debug!(
            "TCP connection {} rank {peer} at {} open (handshake proven)",
            if conn.outbound { "to" } else { "from" },
            conn.remote
                .map_or_else(|| "?".to_string(), |a| a.to_string())
        );
        if conn.rbuf.len() < want {
            conn.rbuf.resize(want, 0);
        }
        if conn.outbound {
            self.outbound_handshakes -= 1;
        } else {
            self.inbound_unproven -= 1;
        }
        let p = peer as usize;
        self.redial_wait[p] = REDIAL_FIRST;
        if self.send_conn[p].is_none() {
            self.send_conn[p] = Some(ci);
        }
    }

    fn close(&mut self, ci: usize, close: Close) {
        let Some(conn) = self.conns[ci].take() else {
            return;
        };
        self.free.push(ci);
        let fd = conn.stream.as_raw_fd();
        let _ = self.epoll_ctl(libc::EPOLL_CTL_DEL, fd, 0, 0);
        self.live_conns -= 1;
        if !matches!(conn.phase, Phase::Open) {
            if conn.outbound {
                self.outbound_handshakes -= 1;
            } else {
                self.inbound_unproven -= 1;
            }
        }
        if conn.pending_write() {
            self.pending_writes -= 1;
        }
        let remote = conn
            .remote
            .map(|a| a.to_string())
            .unwrap_or_else(|| "?".into());
        drop(conn.stream);
        if let Some(peer) = conn.peer {
            self.rail_conns[peer as usize].retain(|&c| c != ci);
            if conn.rail > 0 {
                if let Close::Retry(why) | Close::Redial(why) = &close {
                    // A rail that cannot be opened leaves the main connection to carry all.
                    log::warn!(
                        "extra TCP rail {} to rank {peer} at {remote} not opened: {why}",
                        conn.rail
                    );
                    return;
                }
            }
        }
        match close {
            Close::Lost(why) => {
                let Some(peer) = conn.peer else {
                    log::warn!("dropped TCP connection from {remote}: {why}");
                    return;
                };
                let p = peer as usize;
                if self.send_conn[p] == Some(ci) {
                    self.send_conn[p] = None;
                }
                if self.connecting[p] == Some(ci) {
                    self.connecting[p] = None;
                }
                self.mark_dead(peer, why);
            }
            Close::Refused(why) => {
                self.refused += 1;
                if self.refused <= REFUSALS_LOGGED || self.refused.is_multiple_of(REFUSAL_LOG_EVERY)
                {
                    log::warn!(
                        "dropped TCP connection from {remote}: {why} ({} dropped so far)",
                        self.refused
                    );
                }
            }
            Close::Redial(why) => {
                let peer = conn.peer.expect("outbound connections know their peer");
                let p = peer as usize;
                self.connecting[p] = None;
                let addr = match conn.phase {
                    Phase::Connecting { addr } | Phase::AwaitChallenge { addr, .. } => addr,
                    _ => 0,
                };
                if self.send_conn[p].is_none() && !self.dead[p] && self.redial[p].is_none() {
                    let wait = self.redial_wait[p];
                    self.redial_wait[p] = (wait * 2).min(REDIAL_MAX);
                    self.redial[p] = Some((Instant::now() + wait, addr));
                    self.redials += 1;
                    if wait == REDIAL_FIRST {
                        log::warn!(
                            "TCP handshake with rank {peer} at {remote} cut ({why}); dialling again"
                        );
                    }
                }
            }
            Close::Retry(why) => {
                let peer = conn.peer.expect("outbound connections know their peer");
                let p = peer as usize;
                self.connecting[p] = None;
                self.connect_errors[p].push(format!("{remote}: {why}"));
                let next = match conn.phase {
                    Phase::Connecting { addr } | Phase::AwaitChallenge { addr, .. } => addr + 1,
                    _ => self.peer_addrs[p].len(),
                };
                if self.send_conn[p].is_none() && !self.dead[p] {
                    self.start_connect(peer, next);
                }
            }
        }
    }

    fn mark_dead(&mut self, peer: u32, why: String) {
        let p = peer as usize;
        if self.dead[p] {
            return;
        }
        self.dead[p] = true;
        self.lost.push((peer, why));
        // Its other connections carry nothing more we could use.
        for ci in 0..self.conns.len() {
            if self.conns[ci]
                .as_ref()
                .is_some_and(|c| c.peer == Some(peer))
            {
                let conn = self.conns[ci].as_ref().expect("checked");
                let close = if matches!(conn.phase, Phase::Open) {
                    Close::Lost(String::new())
                } else {
                    Close::Refused(format!("rank {peer} is dead"))
                };
                self.close(ci, close);
            }
        }
        self.send_conn[p] = None;
        self.connecting[p] = None;
        if self.redial[p].take().is_some() {
            self.redials -= 1;
        }
    }

    /// Drops inbound connections that did not prove the key in time, gives up on TCP
    /// connects left unanswered, and redials what is due. Our own connection waiting for a
    /// challenge has no deadline: the peer may be computing outside weft for minutes, and
    /// keepalive notices if its host is gone.
    fn run_timers(&mut self, now: Instant) {
        for ci in 0..self.conns.len() {
            let Some(conn) = self.conns[ci].as_ref() else {
                continue;
            };
            let age = now - conn.since;
            let why = match conn.phase {
                // Only a silent connection is timed out. One that sent a HELLO and got our
                // challenge waits for its PROOF as long as the cap allows: its rank may be
                // computing outside weft, and dropping it would break a connection that rank
                // already counts as open (it would take that for our death).
                Phase::AwaitHello if age >= self.handshake_timeout => {
                    format!(
                        "handshake not finished after {} ms",
                        self.handshake_timeout.as_millis()
                    )
                }
                Phase::Connecting { .. } if age >= self.connect_timeout => format!(
                    "TCP connect not answered within {} ms",
                    self.connect_timeout.as_millis()
                ),
                _ => continue,
            };
            self.close_for_phase(ci, why);
        }
        if self.redials == 0 {
            return;
        }
        for p in 0..self.redial.len() {
            let Some((due, addr)) = self.redial[p] else {
                continue;
            };
            if now < due {
                continue;
            }
            self.redial[p] = None;
            self.redials -= 1;
            if self.send_conn[p].is_none() && self.connecting[p].is_none() && !self.dead[p] {
                self.start_connect(p as u32, addr);
            }
        }
    }
}

fn conn_rail(conn: &Option<Conn>) -> u32 {
    conn.as_ref().map_or(0, |c| c.rail)
}

/// Parses a record written by [`Endpoint::address_record`]; `rank` names it in errors.
pub fn parse_addresses(rank: u32, record: &str) -> Result<Vec<SocketAddr>> {
    record
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim().parse::<SocketAddr>().map_err(|_| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("rank {rank} published TCP address {s:?}, which is not ip:port"),
                )
            })
        })
        .collect()
}

/// The IPv4 addresses of this machine's interfaces that are up, with the interface names.
pub fn interface_names() -> Vec<(String, IpAddr)> {
    let mut found: Vec<(String, IpAddr)> = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `ifap`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return found;
    }
    let mut cur = ifap;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_flags & libc::IFF_UP as u32 == 0 {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: ifa_addr points to a sockaddr whose family says which struct it is.
        let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
        if family == libc::AF_INET {
            // SAFETY: AF_INET addresses are sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            found.push((name, IpAddr::V4(ip)));
        }
    }
    // SAFETY: `ifap` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(ifap) };
    found
}

/// The IP addresses a rank publishes: those of [`interface_names`], optionally only those
/// named in `only` (interface names or addresses); loopback last, as the fallback.
pub fn local_addresses(only: &[String]) -> Result<Vec<IpAddr>> {
    let mut ips: Vec<IpAddr> = interface_names()
        .into_iter()
        .filter(|(name, ip)| {
            only.is_empty() || only.iter().any(|o| o == name || o == &ip.to_string())
        })
        .map(|(_, ip)| ip)
        .collect();
    if ips.is_empty() {
        if !only.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "WEFT_TCP_IFACES={}: no interface that is up has that name or address",
                    only.join(",")
                ),
            ));
        }
        ips.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    ips.sort_by_key(|ip| ip.is_loopback());
    ips.dedup();
    Ok(ips)
}

/// Starts a nonblocking connect; completion shows as writability in epoll.
/// Index of the address in `addrs` on the same subnet as the local address `source` (the
/// longest common prefix, at least a /24 for IPv4 or a /64 for IPv6), if any.
pub fn best_address_for(addrs: &[SocketAddr], source: IpAddr) -> Option<usize> {
    addrs
        .iter()
        .enumerate()
        .filter(|(_, a)| same_link(source, a.ip()))
        .max_by_key(|(i, a)| (common_prefix_bits(source, a.ip()), std::cmp::Reverse(*i)))
        .map(|(i, _)| i)
}

/// Puts first the addresses of `addrs` on the same subnet as `source` (the interface the
/// lane choice prefers), the others after in their published order.
pub fn order_for_source(addrs: &mut [SocketAddr], source: IpAddr) {
    addrs.sort_by_key(|a| std::cmp::Reverse(same_link(source, a.ip())));
}

/// Leading bits two addresses of the same family share (0 across families).
fn common_prefix_bits(a: IpAddr, b: IpAddr) -> u32 {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) ^ u32::from(b)).leading_zeros(),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a) ^ u128::from(b)).leading_zeros(),
        _ => 0,
    }
}

/// True when `local` and `remote` look like one link (a /24 or /64 in common, neither a
/// loopback address unless both are): a connection to `remote` may be bound to `local`.
fn same_link(local: IpAddr, remote: IpAddr) -> bool {
    if local.is_loopback() != remote.is_loopback() {
        return false;
    }
    let need = if local.is_ipv4() { 24 } else { 64 };
    common_prefix_bits(local, remote) >= need
}

/// The C form of a socket address.
fn sockaddr_of(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data for which all zeroes is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let sin = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Starts a nonblocking connect to `addr`, from the local address `source` when given (so
/// the connection leaves by that address's interface).
fn nonblocking_connect(addr: &SocketAddr, source: Option<IpAddr>) -> std::io::Result<TcpStream> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: socket takes no pointers; the result is checked below.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket nobody else owns; the stream closes it.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    set_keepalive(fd);
    if let Some(src) = source {
        let (local, local_len) = sockaddr_of(&SocketAddr::new(src, 0));
        // SAFETY: `local` holds a valid address of `local_len` bytes for the call's duration.
        if unsafe { libc::bind(fd, &local as *const _ as *const libc::sockaddr, local_len) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let (storage, len) = sockaddr_of(addr);
    // SAFETY: `storage` holds a valid address of `len` bytes for the call's duration.
    let rc = unsafe { libc::connect(fd, &storage as *const _ as *const libc::sockaddr, len) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(stream)
}

/// Bytes a connection's socket may hold not yet sent (`TCP_NOTSENT_LOWAT`) beyond what is
/// in flight: one rendezvous fragment, at least [`MIN_UNSENT_LIMIT_BYTES`]. Without a
/// limit the kernel takes a whole large message at once (its send buffer grows to
/// megabytes), and a frame written after it, a `CTS` above all, waits until that message
/// has crossed the link: when two ranks exchange large messages, the second one's `CTS`
/// went out behind its own data, so the two directions ran one after the other (measured
/// between two hosts on a 200 Mbit/s link: 8 MiB allreduce 610 ms against 355 ms for the
/// bytes alone). With the limit a frame waits at most for the rest of the fragment being
/// written and this many bytes.
pub fn unsent_limit_bytes(limits: &Limits) -> u32 {
    limits.fragment_bytes.max(MIN_UNSENT_LIMIT_BYTES)
}

/// Smallest unsent limit: below it a fast link needs a write every few microseconds.
pub const MIN_UNSENT_LIMIT_BYTES: u32 = 64 * 1024;

/// Sets `TCP_NOTSENT_LOWAT` to `bytes` (see [`unsent_limit_bytes`]). A failure is ignored:
/// the socket still works, only with the kernel's own (unlimited) default.
pub fn set_unsent_limit(fd: i32, bytes: u32) {
    let value = bytes.min(i32::MAX as u32) as i32;
    // SAFETY: `value` lives across the call and its size is passed.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            &value as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
    }
}

/// Turns on keepalive probes and the user timeout (see the module comment). Failures are
/// ignored: a socket without them still works, it only learns of a dead host later.
pub fn set_keepalive(fd: i32) {
    let set = |level: i32, name: i32, value: i32| {
        // SAFETY: `value` lives across the call and its size is passed.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                &value as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as libc::socklen_t,
            )
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, KEEPALIVE_IDLE_S);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, KEEPALIVE_INTVL_S);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, KEEPALIVE_CNT);
    set(
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        USER_TIMEOUT_MS as i32,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_opt(fd: i32, level: i32, name: i32) -> i32 {
        let mut v: i32 = 0;
        let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
        // SAFETY: `v` and `len` are writable and sized for an int option.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                &mut v as *mut i32 as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v
    }

    /// Records what the endpoint delivers; places fragments with `aux` 7 into `dst`.
    struct Placer {
        dst: Vec<u8>,
        offered: u32,
        placed: u32,
        frames: Vec<(Header, Vec<u8>)>,
    }

    // SAFETY: `dst` lives in the sink and nothing touches it while the test polls.
    unsafe impl Sink for Placer {
        fn frame(&mut self, _peer: u32, h: &Header, body: &[u8]) {
            self.frames.push((*h, body.to_vec()));
        }
        fn place(&mut self, _peer: u32, h: &Header) -> Option<RawBufMut> {
            self.offered += 1;
            (h.aux == 7).then(|| RawBufMut::new(&mut self.dst))
        }
        fn placed(&mut self, _peer: u32, h: &Header) {
            assert_eq!(h.aux, 7);
            self.placed += 1;
        }
    }

    #[test]
    fn a_large_fragment_is_read_into_the_memory_its_sink_names() {
        let frag = 512 * 1024;
        let mut eps = pair(4096, frag as u32);
        let payload: Vec<u8> = (0..frag).map(|i| (i * 7 + i / 4096) as u8).collect();
        let other: Vec<u8> = payload.iter().map(|b| b ^ 0x5a).collect();
        let frag_header = |aux: u32| Header {
            kind: frame::KIND_FRAG,
            len: frag as u32,
            aux,
            ..Header::default()
        };
        let eager = Header {
            kind: frame::KIND_EAGER,
            len: 3,
            tag: 9,
            ..Header::default()
        };
        let mut sink = Placer {
            dst: vec![0; frag],
            offered: 0,
            placed: 0,
            frames: Vec::new(),
        };
        // Placed, refused (delivered whole), then a small frame behind them.
        let mut queue: Vec<(Header, &[u8])> = vec![
            (frag_header(7), &payload),
            (frag_header(8), &other),
            (eager, b"abc"),
        ];
        let start = Instant::now();
        // A hang catcher: on loopback this takes milliseconds.
        while sink.frames.len() < 2 && start.elapsed() < Duration::from_secs(300) {
            if let Some(&(h, body)) = queue.first() {
                if eps[0].try_send(1, &h, &[body]) {
                    queue.remove(0);
                }
            }
            eps[0].poll(|_, _, _| {});
            eps[1].poll_into(&mut sink);
        }
        assert_eq!(sink.placed, 1, "the first fragment was placed");
        assert!(sink.dst == payload, "placed bytes differ from those sent");
        assert!(sink.offered >= 2, "both fragments were offered");
        assert_eq!(sink.frames.len(), 2);
        assert_eq!(sink.frames[0].0.aux, 8);
        assert!(sink.frames[0].1 == other, "the refused fragment came whole");
        assert_eq!(
            (sink.frames[1].0.tag, &sink.frames[1].1[..]),
            (9, &b"abc"[..])
        );
    }

    /// Two endpoints on loopback, connected (rank 0 dialled rank 1).
    fn pair(eager_bytes: u32, fragment_bytes: u32) -> Vec<Endpoint> {
        let mut eps: Vec<Endpoint> = (0..2)
            .map(|rank| {
                Endpoint::bind(TcpConfig {
                    rank,
                    size: 2,
                    key: vec![5u8; 32],
                    limits: Limits {
                        eager_bytes,
                        fragment_bytes,
                    },
                    bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                    interfaces: Vec::new(),
                    small_fragment_bytes: 4096,
                    max_fast_peers: 0,
                    fast_after_bytes: u64::MAX,
                    rails: 1,
                    rail_sources: Vec::new(),
                })
                .unwrap()
            })
            .collect();
        for me in 0..2 {
            let other = eps[1 - me].addresses().to_vec();
            eps[me].set_peer_addresses(1 - me as u32, other);
        }
        eps[0].connect(1);
        let start = Instant::now();
        while (eps[0].send_conn[1].is_none() || eps[1].send_conn[0].is_none())
            && start.elapsed() < Duration::from_secs(60)
        {
            for ep in &mut eps {
                ep.poll(|_, _, _| {});
            }
        }
        eps
    }

    #[test]
    fn every_connection_has_keepalive_a_user_timeout_and_an_unsent_limit() {
        let eps = pair(4096, 8192);
        // Both ends: the connection we dialled and the one we accepted.
        for (ep, peer) in [(&eps[0], 1), (&eps[1], 0)] {
            let ci = ep.send_conn[peer].expect("connection opened");
            let fd = ep.conns[ci].as_ref().unwrap().stream.as_raw_fd();
            assert_ne!(int_opt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 0);
            assert_eq!(
                int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE),
                KEEPALIVE_IDLE_S
            );
            assert_eq!(
                int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL),
                KEEPALIVE_INTVL_S
            );
            assert_eq!(
                int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT),
                KEEPALIVE_CNT
            );
            assert_eq!(
                int_opt(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT),
                USER_TIMEOUT_MS as i32
            );
            // The unsent limit: one fragment, raised to the floor (8 KiB fragments here).
            assert_eq!(
                int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT),
                MIN_UNSENT_LIMIT_BYTES as i32
            );
        }
    }
}
