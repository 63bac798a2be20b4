//! The target side of one-sided communication across nodes: one service thread per PE that
//! listens on its own port, proves the job key with every connector (the HMAC handshake of
//! `weft_transport::tcp::handshake`), then applies the connector's requests to this PE's
//! symmetric heap (or its executable's globals) in arrival order and answers gets, fetching
//! atomics and syncs. It sleeps in `epoll_wait` whenever no connection has bytes.
//!
//! Nothing a connection sends is interpreted before its proof checks out (a stranger is
//! dropped, counted in [`Service::refused`]); after it, every offset and length is checked
//! against the memory it names ([`Memory::locate`]): a bad one is answered with an error (at
//! the next reply of that connection when the request itself has none), never applied.
//! Depends on the wire format, the handshake and `libc`'s epoll; not on the runtime.

use super::wire::{self, Amo, Decoded, Request};
use super::{apply_amo32, apply_amo64};
use crate::rma::statics::Image;
use std::io::{ErrorKind as IoKind, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_core::{Error, Result};
use weft_transport::tcp::handshake;

/// How long a connector may take to prove the key before it is dropped, in milliseconds:
/// 10 s (a test lengthens it with [`set_handshake_timeout`], so that only the refusal it
/// checks can close a stranger's connection).
static HANDSHAKE_TIMEOUT_MS: AtomicU64 = AtomicU64::new(10_000);

/// Sets the handshake timeout of the process's one-sided services (a test hook).
pub fn set_handshake_timeout(timeout: Duration) {
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    HANDSHAKE_TIMEOUT_MS.store(ms, Ordering::Relaxed);
}
/// Output a connection may have queued before its input is left unread (back-pressure).
const MAX_QUEUED_OUT_BYTES: usize = 4 << 20;
/// Connections that have not proved the key yet, at most: one more evicts the oldest, so
/// strangers cannot take every descriptor of the process (the transport's rule too).
const MAX_UNPROVEN: usize = 64;
/// Bytes read from a socket per call, into one buffer the service keeps.
const READ_CHUNK_BYTES: usize = 64 * 1024;
const TOKEN_LISTENER: u64 = 0;
const TOKEN_STOP: u64 = 1;

/// The memory a service applies requests to: this PE's heap and its executable's globals,
/// or the MPI windows of the process.
pub(crate) struct Memory {
    pub(crate) heap: *mut u8,
    pub(crate) heap_bytes: usize,
    pub(crate) image: Image,
    /// The process's MPI windows (window requests are refused without).
    pub(crate) windows: Option<std::sync::Arc<crate::rma::win::registry::Registry>>,
}

// SAFETY: the heap pointer stays valid while the service runs (SymmetricHeap stops the
// service before unmapping), and every access through it is a bounds-checked copy or atomic.
unsafe impl Send for Memory {}

impl Memory {
    /// The address of `[offset, offset + len)` of `space`, or why it is not ours.
    pub(crate) fn locate(
        &self,
        space: u8,
        offset: u64,
        len: u64,
    ) -> std::result::Result<*mut u8, String> {
        let end = offset.checked_add(len);
        if matches!(space, wire::SPACE_WINDOW | wire::SPACE_WINDOW_CONTROL) {
            return match &self.windows {
                Some(w) => w.locate(space, offset, len),
                None => Err("this service exposes no MPI windows".into()),
            };
        }
        match space {
            wire::SPACE_HEAP => match end {
                Some(end) if end <= self.heap_bytes as u64 => {
                    Ok(self.heap.wrapping_add(offset as usize))
                }
                _ => Err(format!(
                    "{len} bytes at heap offset {offset:#x} run past the {} bytes of the symmetric heap",
                    self.heap_bytes
                )),
            },
            _ => {
                let addr = self.image.base.checked_add(offset);
                match addr {
                    Some(a) if self.image.contains(a, len) => Ok(a as *mut u8),
                    _ => Err(format!(
                        "{len} bytes at offset {offset:#x} of the executable are not a global of the program"
                    )),
                }
            }
        }
    }

    /// Applies one request; appends its reply (if it has one) to `out`. `deferred` keeps the
    /// first error of a request without a reply, reported at the next reply.
    pub(crate) fn apply(
        &self,
        req: &Request<'_>,
        out: &mut Vec<u8>,
        deferred: &mut Option<String>,
    ) {
        match *req {
            Request::Put {
                space,
                offset,
                data,
            } => match self.locate(space, offset, data.len() as u64) {
                // SAFETY: locate checked that the destination range lies in our memory;
                // the source is the connection's buffer, which cannot overlap it.
                Ok(p) => unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) },
                Err(e) => {
                    deferred.get_or_insert(format!("put rejected: {e}"));
                }
            },
            Request::Get { space, offset, len } => {
                if let Some(e) = deferred.take() {
                    return wire::reply_err(out, &e);
                }
                match self.locate(space, offset, len as u64) {
                    Ok(p) => {
                        wire::reply_ok(out, 0, &[]);
                        let at = out.len();
                        let head = at - wire::REPLY_HEAD_BYTES;
                        out[head + 4..head + 8].copy_from_slice(&len.to_le_bytes());
                        out.reserve(len as usize);
                        // SAFETY: p..p+len lies in our memory (locate); the spare capacity
                        // of `out` holds at least len bytes (reserve) and is then declared
                        // initialised.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                p,
                                out.as_mut_ptr().add(at),
                                len as usize,
                            );
                            out.set_len(at + len as usize);
                        }
                    }
                    Err(e) => wire::reply_err(out, &format!("get rejected: {e}")),
                }
            }
            Request::Amo {
                space,
                offset,
                width,
                amo,
                a,
                b,
                reply,
            } => {
                let r = self.amo(space, offset, width, amo, a, b);
                match (r, reply) {
                    (Ok(v), true) => match deferred.take() {
                        Some(e) => wire::reply_err(out, &e),
                        None => wire::reply_ok(out, v, &[]),
                    },
                    (Ok(_), false) => {}
                    (Err(e), true) => wire::reply_err(out, &deferred.take().unwrap_or(e)),
                    (Err(e), false) => {
                        deferred.get_or_insert(e);
                    }
                }
            }
            Request::Sync => match deferred.take() {
                Some(e) => wire::reply_err(out, &e),
                None => wire::reply_ok(out, 0, &[]),
            },
            Request::Acc {
                space,
                offset,
                kind,
                op,
                data,
                reply,
            } => {
                let Some(w) = self
                    .windows
                    .as_ref()
                    .filter(|_| space == wire::SPACE_WINDOW)
                else {
                    let e = "accumulate rejected: only MPI windows take accumulates".to_string();
                    return match reply {
                        true => wire::reply_err(out, &deferred.take().unwrap_or(e)),
                        false => {
                            deferred.get_or_insert(e);
                        }
                    };
                };
                if !reply {
                    if let Err(e) = w.accumulate(offset, kind, op, data, None) {
                        deferred.get_or_insert(format!("accumulate rejected: {e}"));
                    }
                    return;
                }
                if let Some(e) = deferred.take() {
                    return wire::reply_err(out, &e);
                }
                wire::reply_ok(out, 0, &[]);
                let at = out.len();
                match w.accumulate(offset, kind, op, data, Some(out)) {
                    Ok(()) => {
                        let head = at - wire::REPLY_HEAD_BYTES;
                        let n = (out.len() - at) as u32;
                        out[head + 4..head + 8].copy_from_slice(&n.to_le_bytes());
                    }
                    Err(e) => {
                        out.truncate(at - wire::REPLY_HEAD_BYTES);
                        wire::reply_err(out, &format!("accumulate rejected: {e}"));
                    }
                }
            }
            Request::Cas {
                space,
                offset,
                data,
            } => {
                if let Some(e) = deferred.take() {
                    return wire::reply_err(out, &e);
                }
                let Some(w) = self
                    .windows
                    .as_ref()
                    .filter(|_| space == wire::SPACE_WINDOW)
                else {
                    return wire::reply_err(
                        out,
                        "compare-and-swap rejected: only MPI windows take it",
                    );
                };
                wire::reply_ok(out, 0, &[]);
                let at = out.len();
                match w.compare_swap(offset, data, out) {
                    Ok(()) => {
                        let head = at - wire::REPLY_HEAD_BYTES;
                        let n = (out.len() - at) as u32;
                        out[head + 4..head + 8].copy_from_slice(&n.to_le_bytes());
                    }
                    Err(e) => {
                        out.truncate(at - wire::REPLY_HEAD_BYTES);
                        wire::reply_err(out, &format!("compare-and-swap rejected: {e}"));
                    }
                }
            }
        }
    }

    fn amo(
        &self,
        space: u8,
        offset: u64,
        width: u8,
        amo: Amo,
        a: u64,
        b: u64,
    ) -> std::result::Result<u64, String> {
        let p = self
            .locate(space, offset, width as u64)
            .map_err(|e| format!("atomic rejected: {e}"))?;
        if !(p as usize).is_multiple_of(width as usize) {
            return Err(format!(
                "atomic rejected: offset {offset:#x} is not {width}-byte aligned"
            ));
        }
        // SAFETY: p is in our memory, aligned for the width, and every other access to the
        // word is atomic too (the documented rule of weft::rma).
        Ok(unsafe {
            if width == 4 {
                apply_amo32(AtomicU32::from_ptr(p as *mut u32), amo, a as u32, b as u32) as u64
            } else {
                apply_amo64(AtomicU64::from_ptr(p as *mut u64), amo, a, b)
            }
        })
    }
}

enum State {
    Hello,
    Proof {
        from: u32,
        nonce_c: [u8; handshake::NONCE_BYTES],
        nonce_a: [u8; handshake::NONCE_BYTES],
    },
    Ready,
}

struct Conn {
    stream: TcpStream,
    state: State,
    input: Vec<u8>,
    output: Vec<u8>,
    written: usize,
    opened: Instant,
    deferred: Option<String>,
    /// The epoll events the connection is registered for.
    interest: u32,
}

/// A running service; stops (and joins its thread) when dropped.
pub(crate) struct Service {
    stop: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
    port: u16,
    refused: Arc<AtomicU64>,
    served: Arc<AtomicU64>,
}

struct Ctx {
    me: u32,
    npes: u32,
    key: Vec<u8>,
    mem: Memory,
    refused: Arc<AtomicU64>,
    /// Requests decoded and applied (a coalesced run of puts is one).
    served: Arc<AtomicU64>,
}

fn os(what: &str) -> Error {
    Error::io(what.to_string(), std::io::Error::last_os_error())
}

fn epoll_set(ep: i32, op: i32, fd: i32, events: u32, token: u64) -> Result<()> {
    let mut ev = libc::epoll_event { events, u64: token };
    // SAFETY: ep and fd are open descriptors; ev lives across the call.
    if unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) } != 0 {
        return Err(os("one-sided service: epoll_ctl"));
    }
    Ok(())
}

impl Service {
    /// Starts serving `mem` to connectors proving `key` on `listener`.
    pub(crate) fn start(
        listener: TcpListener,
        me: u32,
        npes: u32,
        key: Vec<u8>,
        mem: Memory,
    ) -> Result<Service> {
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("one-sided service: local address", e))?
            .port();
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("one-sided service: nonblocking listener", e))?;
        // SAFETY: eventfd returns a new descriptor or -1.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop < 0 {
            return Err(os("one-sided service: eventfd"));
        }
        // SAFETY: a fresh descriptor we own.
        let stop = unsafe { OwnedFd::from_raw_fd(stop) };
        // SAFETY: epoll_create1 returns a new descriptor or -1.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(os("one-sided service: epoll_create1"));
        }
        // SAFETY: a fresh descriptor we own (moved into the thread).
        let ep = unsafe { OwnedFd::from_raw_fd(ep) };
        epoll_set(
            ep.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            listener.as_raw_fd(),
            libc::EPOLLIN as u32,
            TOKEN_LISTENER,
        )?;
        epoll_set(
            ep.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            stop.as_raw_fd(),
            libc::EPOLLIN as u32,
            TOKEN_STOP,
        )?;
        let refused = Arc::new(AtomicU64::new(0));
        let served = Arc::new(AtomicU64::new(0));
        let ctx = Ctx {
            me,
            npes,
            key,
            mem,
            refused: refused.clone(),
            served: served.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("weft-rma-pe{me}"))
            .spawn(move || {
                crate::bind::unpin_this_thread();
                run(ep, listener, ctx)
            })
            .map_err(|e| Error::io("one-sided service: spawning its thread", e))?;
        Ok(Service {
            stop,
            thread: Some(thread),
            port,
            refused,
            served,
        })
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Connections dropped because they did not prove the job key.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Requests applied so far (a coalesced run of puts counts once).
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe {
            libc::write(
                self.stop.as_raw_fd(),
                one.as_ptr() as *const libc::c_void,
                8,
            )
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(ep: OwnedFd, listener: TcpListener, ctx: Ctx) {
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
    // Allocated (and zeroed) once, not per wake-up.
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    let mut last_sweep = Instant::now();
    loop {
        // SAFETY: events has room for its length; ep is our epoll descriptor.
        let n = unsafe {
            libc::epoll_wait(
                ep.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                1000,
            )
        };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == IoKind::Interrupted {
                continue;
            }
            log::error!(
                "PE {}: one-sided service stopped: epoll_wait: {}",
                ctx.me,
                std::io::Error::last_os_error()
            );
            return;
        }
        for ev in &events[..n as usize] {
            let (token, flags) = (ev.u64, ev.events);
            match token {
                TOKEN_STOP => return,
                TOKEN_LISTENER => accept_all(&ep, &listener, &mut conns, &ctx),
                t => {
                    let i = (t - 2) as usize;
                    let keep = match conns.get_mut(i).and_then(|c| c.as_mut()) {
                        Some(c) => serve(&ep, c, i, flags, &ctx, &mut chunk),
                        None => continue,
                    };
                    if !keep {
                        conns[i] = None;
                    }
                }
            }
        }
        // Strangers that never finish the handshake do not keep a slot (looked at once a
        // second, not on every wake-up: the timeout is seconds long).
        if last_sweep.elapsed() < Duration::from_secs(1) {
            continue;
        }
        last_sweep = Instant::now();
        let handshake_timeout = Duration::from_millis(HANDSHAKE_TIMEOUT_MS.load(Ordering::Relaxed));
        for slot in conns.iter_mut() {
            if let Some(c) = slot {
                if !matches!(c.state, State::Ready) && c.opened.elapsed() > handshake_timeout {
                    ctx.refused.fetch_add(1, Ordering::Relaxed);
                    *slot = None;
                }
            }
        }
    }
}

fn accept_all(ep: &OwnedFd, listener: &TcpListener, conns: &mut Vec<Option<Conn>>, ctx: &Ctx) {
    while let Ok((stream, _)) = listener.accept() {
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let unproven = || {
            conns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
                .filter(|(_, c)| !matches!(c.state, State::Ready))
        };
        if unproven().count() >= MAX_UNPROVEN {
            if let Some((oldest, _)) = unproven().min_by_key(|(_, c)| c.opened) {
                ctx.refused.fetch_add(1, Ordering::Relaxed);
                conns[oldest] = None;
            }
        }
        weft_transport::tcp::set_keepalive(stream.as_raw_fd());
        let _ = stream.set_nodelay(true);
        let i = conns.iter().position(|c| c.is_none()).unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        let ok = epoll_set(
            ep.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            stream.as_raw_fd(),
            (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            i as u64 + 2,
        );
        if ok.is_ok() {
            conns[i] = Some(Conn {
                stream,
                state: State::Hello,
                input: Vec::new(),
                output: Vec::new(),
                written: 0,
                opened: Instant::now(),
                deferred: None,
                interest: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            });
        }
    }
}

fn queued_out(c: &Conn) -> usize {
    c.output.len() - c.written
}

/// Writes what the kernel takes of the connection's output; false when the connection
/// broke. `send` with MSG_NOSIGNAL: a connector that vanished must not raise SIGPIPE in a C
/// program that does not ignore it.
fn write_out(c: &mut Conn) -> bool {
    while c.written < c.output.len() {
        let rest = &c.output[c.written..];
        // SAFETY: sending from a live slice on our socket.
        let n = unsafe {
            libc::send(
                c.stream.as_raw_fd(),
                rest.as_ptr() as *const libc::c_void,
                rest.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            match std::io::Error::last_os_error().kind() {
                IoKind::WouldBlock => break,
                IoKind::Interrupted => continue,
                _ => return false,
            }
        }
        c.written += n as usize;
    }
    if c.written == c.output.len() {
        c.output.clear();
        c.written = 0;
    }
    true
}

/// Reads, interprets and writes what it can for one connection; false to drop it (the
/// stream closes with it, which also removes it from the epoll set). While more than
/// [`MAX_QUEUED_OUT_BYTES`] of answers wait for the connector to read them, its requests
/// are left unread (it only waits for writability then).
fn serve(ep: &OwnedFd, c: &mut Conn, i: usize, flags: u32, ctx: &Ctx, chunk: &mut [u8]) -> bool {
    let mut eof = flags & (libc::EPOLLERR as u32) != 0;
    loop {
        if !write_out(c) {
            return false;
        }
        if !interpret(c, ctx) {
            if !matches!(c.state, State::Ready) {
                ctx.refused.fetch_add(1, Ordering::Relaxed);
            }
            return false;
        }
        if !write_out(c) {
            return false;
        }
        if queued_out(c) > MAX_QUEUED_OUT_BYTES || eof {
            break;
        }
        match c.stream.read(chunk) {
            Ok(0) => eof = true,
            Ok(k) => c.input.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == IoKind::WouldBlock => break,
            Err(e) if e.kind() == IoKind::Interrupted => continue,
            Err(_) => eof = true,
        }
    }
    let blocked = queued_out(c) > MAX_QUEUED_OUT_BYTES;
    let interest = if blocked {
        libc::EPOLLOUT as u32
    } else if queued_out(c) > 0 {
        (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLOUT) as u32
    } else {
        (libc::EPOLLIN | libc::EPOLLRDHUP) as u32
    };
    if interest != c.interest {
        if epoll_set(
            ep.as_raw_fd(),
            libc::EPOLL_CTL_MOD,
            c.stream.as_raw_fd(),
            interest,
            i as u64 + 2,
        )
        .is_err()
        {
            return false;
        }
        c.interest = interest;
    }
    if eof && !matches!(c.state, State::Ready) {
        ctx.refused.fetch_add(1, Ordering::Relaxed);
    }
    // At end of input, what the connector asked for can no longer be worth delivering.
    !eof
}

/// Interprets the buffered input; false when the connection must be dropped.
fn interpret(c: &mut Conn, ctx: &Ctx) -> bool {
    let mut pos = 0;
    loop {
        if queued_out(c) > MAX_QUEUED_OUT_BYTES {
            break;
        }
        match c.state {
            State::Hello => {
                if c.input.len() < handshake::HELLO_BYTES {
                    break;
                }
                let hello: [u8; handshake::HELLO_BYTES] = c.input[..handshake::HELLO_BYTES]
                    .try_into()
                    .expect("hello bytes");
                let Ok((from, nonce_c)) = handshake::parse_hello(&hello, ctx.me, ctx.npes) else {
                    return false;
                };
                let Ok(nonce_a) = handshake::nonce() else {
                    return false;
                };
                c.output.extend_from_slice(&handshake::challenge(
                    &ctx.key, from, ctx.me, &nonce_c, &nonce_a,
                ));
                c.state = State::Proof {
                    from,
                    nonce_c,
                    nonce_a,
                };
                pos = handshake::HELLO_BYTES;
            }
            State::Proof {
                from,
                nonce_c,
                nonce_a,
            } => {
                if c.input.len() - pos < handshake::PROOF_BYTES {
                    break;
                }
                let proof: [u8; handshake::PROOF_BYTES] = c.input
                    [pos..pos + handshake::PROOF_BYTES]
                    .try_into()
                    .expect("proof bytes");
                if handshake::check_proof(&ctx.key, from, ctx.me, &nonce_c, &nonce_a, &proof)
                    .is_err()
                {
                    return false;
                }
                pos += handshake::PROOF_BYTES;
                c.state = State::Ready;
            }
            State::Ready => match wire::decode_request(&c.input[pos..]) {
                Ok(Decoded::Request(req, n)) => {
                    ctx.mem.apply(&req, &mut c.output, &mut c.deferred);
                    ctx.served.fetch_add(1, Ordering::Relaxed);
                    pos += n;
                }
                Ok(Decoded::NeedBytes(_)) => break,
                Err(e) => {
                    log::warn!(
                        "PE {}: one-sided service: dropping a connection: {e}",
                        ctx.me
                    );
                    return false;
                }
            },
        }
    }
    c.input.drain(..pos);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Requests with arbitrary offsets and lengths touch only the heap they name: the
        /// guard bytes around it never change, and a rejected request is reported.
        #[test]
        fn requests_stay_inside_the_heap(reqs in proptest::collection::vec(
            (0u8..4, any::<u64>(), 0u32..300, any::<u64>()), 1..40)) {
            const GUARD: usize = 64;
            const HEAP: usize = 512;
            let mut mem = vec![0xa5u8; GUARD + HEAP + GUARD];
            let m = Memory { heap: mem.as_mut_ptr().wrapping_add(GUARD), heap_bytes: HEAP, image: Image::default(), windows: None };
            let data = vec![0x11u8; 300];
            let mut out = Vec::new();
            let mut deferred = None;
            for (kind, raw_offset, len, a) in reqs {
                // Half the offsets near the heap so some requests are legal.
                let offset = if raw_offset % 2 == 0 { raw_offset % (HEAP as u64 + 64) } else { raw_offset };
                let req = match kind {
                    0 => Request::Put { space: wire::SPACE_HEAP, offset, data: &data[..len as usize] },
                    1 => Request::Get { space: wire::SPACE_HEAP, offset, len },
                    2 => Request::Amo { space: wire::SPACE_HEAP, offset, width: if a % 2 == 0 { 4 } else { 8 }, amo: Amo::Add, a, b: 0, reply: a % 3 == 0 },
                    _ => Request::Put { space: wire::SPACE_IMAGE, offset, data: &data[..len as usize] },
                };
                let legal = kind != 3 && offset.checked_add(len as u64).is_some_and(|e| e <= HEAP as u64);
                let before = out.len();
                m.apply(&req, &mut out, &mut deferred);
                if kind == 0 || kind == 3 {
                    prop_assert_eq!(deferred.is_some(), !legal);
                }
                if kind == 1 && deferred.is_none() {
                    prop_assert!(out.len() > before);
                }
                deferred = None;
            }
            prop_assert!(mem[..GUARD].iter().all(|&b| b == 0xa5));
            prop_assert!(mem[GUARD + HEAP..].iter().all(|&b| b == 0xa5));
        }
    }
}
