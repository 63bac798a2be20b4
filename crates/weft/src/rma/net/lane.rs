//! One initiator's connection to one remote PE's service: a send buffer where puts wait
//! (contiguous ones coalesced into one frame) until it fills or a call needs the target's
//! answer, and blocking replies. Owned by one thread or one context; never shared by
//! initiators that should scale. Depends on the wire format and the handshake; no runtime.

use super::wire::{self, Amo};
use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::tcp::handshake;

/// Settings every lane of a heap shares.
#[derive(Clone, Debug)]
pub(crate) struct LaneConfig {
    pub(crate) coalesce: bool,
    pub(crate) flush_bytes: usize,
    pub(crate) timeout: Duration,
}

pub(crate) struct Lane {
    me: u32,
    pe: u32,
    /// None once [`Lane::close`] closed the connection.
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// The put frame at the end of `buf` that a contiguous put may extend: (position of its
    /// head, space, offset right after its data, its length).
    last_put: Option<(usize, u8, u64, usize)>,
    /// Puts or quiet atomics sent since the last sync.
    unsynced: bool,
    config: LaneConfig,
    /// Set once the connection failed: every later call fails the same way at once.
    dead: Option<Error>,
}

impl Lane {
    /// Connects to `pe` at the first of `addrs` that answers and proves the key.
    pub(crate) fn connect(
        me: u32,
        pe: u32,
        addrs: &[SocketAddr],
        key: &[u8],
        config: LaneConfig,
    ) -> Result<Lane> {
        let mut last = Error::new(
            ErrorKind::Config,
            format!("PE {me}: PE {pe} published no one-sided service address"),
        );
        for a in addrs {
            match Self::connect_one(me, pe, a, key, &config) {
                Ok(stream) => {
                    return Ok(Lane {
                        me,
                        pe,
                        stream: Some(stream),
                        buf: Vec::with_capacity(config.flush_bytes + wire::HEAD_BYTES),
                        last_put: None,
                        unsynced: false,
                        config,
                        dead: None,
                    })
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn connect_one(
        me: u32,
        pe: u32,
        a: &SocketAddr,
        key: &[u8],
        config: &LaneConfig,
    ) -> Result<TcpStream> {
        let at = |e: std::io::Error| {
            Error::io(
                format!("PE {me}: connecting to PE {pe}'s one-sided service at {a}"),
                e,
            )
        };
        let s = TcpStream::connect_timeout(a, config.timeout.min(Duration::from_secs(10)))
            .map_err(at)?;
        s.set_nodelay(true).map_err(at)?;
        weft_transport::tcp::set_keepalive(s.as_raw_fd());
        s.set_read_timeout(Some(config.timeout)).map_err(at)?;
        s.set_write_timeout(Some(config.timeout)).map_err(at)?;
        let nonce_c = handshake::nonce()?;
        send_all(&s, &handshake::hello(me, pe, &nonce_c), me, pe)?;
        let mut ch = [0u8; handshake::CHALLENGE_BYTES];
        read_exact(&s, &mut ch, me, pe)?;
        let nonce_a = handshake::check_challenge(key, me, pe, &nonce_c, &ch)?;
        send_all(
            &s,
            &handshake::proof(key, me, pe, &nonce_c, &nonce_a),
            me,
            pe,
        )?;
        Ok(s)
    }

    /// Closes the connection for good (its context was destroyed): the socket is closed at
    /// once, whichever threads still hold the lane, and every later call fails with `why`.
    pub(crate) fn close(&mut self, why: Error) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.buf = Vec::new();
        self.last_put = None;
        self.unsynced = false;
        self.dead = Some(why);
    }

    fn sock(&self) -> Result<&TcpStream> {
        self.stream.as_ref().ok_or_else(|| {
            self.dead.clone().unwrap_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    format!("PE {}: the lane to PE {} is closed", self.me, self.pe),
                )
            })
        })
    }

    fn alive(&self) -> Result<()> {
        match &self.dead {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn fail<T>(&mut self, e: Error) -> Result<T> {
        if matches!(
            e.kind(),
            ErrorKind::PeerDead | ErrorKind::Timeout | ErrorKind::Io | ErrorKind::Protocol
        ) {
            self.dead = Some(e.clone());
        }
        Err(e)
    }

    /// Sends what is buffered.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.alive()?;
        self.last_put = None;
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self
            .sock()
            .and_then(|s| send_all(s, &self.buf, self.me, self.pe));
        self.buf.clear();
        match r {
            Ok(()) => Ok(()),
            Err(e) => self.fail(e),
        }
    }

    /// Queues a put of `data` at `offset` of `space` (complete locally on return: the bytes
    /// are copied or sent).
    #[inline]
    pub(crate) fn put(&mut self, space: u8, offset: u64, data: &[u8]) -> Result<()> {
        if self.extend_last(space, offset, data) {
            return Ok(());
        }
        self.put_any(space, offset, data)
    }

    /// The common case of [`Self::put`], kept small enough to inline into the caller: a put
    /// that continues the buffered frame and leaves the buffer short of a flush. Returns
    /// false (having done nothing) otherwise.
    #[inline(always)]
    fn extend_last(&mut self, space: u8, offset: u64, data: &[u8]) -> bool {
        match self.last_put {
            Some((at, s, end, len))
                if self.config.coalesce
                    && s == space
                    && end == offset
                    && len + data.len() <= wire::MAX_PAYLOAD_BYTES
                    && self.buf.len() + data.len() < self.config.flush_bytes
                    && self.dead.is_none() =>
            {
                wire::grow_put(&mut self.buf, at, data.len() as u32);
                self.last_put = Some((at, s, end + data.len() as u64, len + data.len()));
                self.buf.extend_from_slice(data);
                self.unsynced = true;
                true
            }
            _ => false,
        }
    }

    /// [`Self::put`] in every case.
    #[inline(never)]
    fn put_any(&mut self, space: u8, offset: u64, data: &[u8]) -> Result<()> {
        self.alive()?;
        self.unsynced = true;
        if data.len() >= self.config.flush_bytes {
            // Large: no copy into the buffer; frames of at most MAX_PAYLOAD_BYTES, each sent
            // with what is buffered before it and its head in one vectored system call.
            self.last_put = None;
            for (i, chunk) in data.chunks(wire::MAX_PAYLOAD_BYTES).enumerate() {
                let off = offset + (i * wire::MAX_PAYLOAD_BYTES) as u64;
                wire::put_head(&mut self.buf, space, off, chunk.len() as u32);
                let r = self
                    .sock()
                    .and_then(|s| send_two(s, &self.buf, chunk, self.me, self.pe));
                self.buf.clear();
                if let Err(e) = r {
                    return self.fail(e);
                }
            }
            return Ok(());
        }
        match self.last_put {
            Some((at, s, end, len))
                if self.config.coalesce
                    && s == space
                    && end == offset
                    && len + data.len() <= wire::MAX_PAYLOAD_BYTES =>
            {
                wire::grow_put(&mut self.buf, at, data.len() as u32);
                self.last_put = Some((at, s, end + data.len() as u64, len + data.len()));
            }
            _ => {
                let at = self.buf.len();
                wire::put_head(&mut self.buf, space, offset, data.len() as u32);
                self.last_put = Some((at, space, offset + data.len() as u64, data.len()));
            }
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= self.config.flush_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// An atomic on the `width`-byte word at `offset`; with `reply`, waits for and returns
    /// the old value (otherwise returns 0 at once: the atomic is queued like a put).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn amo(
        &mut self,
        space: u8,
        offset: u64,
        width: u8,
        amo: Amo,
        a: u64,
        b: u64,
        reply: bool,
    ) -> Result<u64> {
        self.alive()?;
        self.last_put = None;
        wire::amo(&mut self.buf, space, offset, width, amo, a, b, reply);
        if !reply {
            self.unsynced = true;
            if self.buf.len() >= self.config.flush_bytes {
                self.flush()?;
            }
            return Ok(0);
        }
        self.flush()?;
        self.reply(None).map(|(v, _)| v)
    }

    /// Accumulates `data` (elements of kind `kind`, at most [`wire::MAX_PAYLOAD_BYTES`])
    /// into the elements at `offset` of `space` with operation `op`. With `old` (as long as
    /// `data`), waits for the target's answer and stores the elements as they were; without,
    /// the request is queued like a put.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn acc(
        &mut self,
        space: u8,
        offset: u64,
        kind: u8,
        op: u8,
        data: &[u8],
        old: Option<&mut [u8]>,
    ) -> Result<()> {
        self.alive()?;
        self.last_put = None;
        let len = data.len() as u32;
        wire::acc_head(&mut self.buf, space, offset, kind, op, len, old.is_some());
        self.buf.extend_from_slice(data);
        match old {
            None => {
                self.unsynced = true;
                if self.buf.len() >= self.config.flush_bytes {
                    self.flush()?;
                }
                Ok(())
            }
            Some(old) => {
                self.flush()?;
                self.reply(Some(old)).map(|_| ())
            }
        }
    }

    /// Compare-and-swap of the element at `offset` of `space` (`compare` and `new` of equal
    /// length, at most [`wire::MAX_CAS_BYTES`]); waits and stores the old element in `old`.
    pub(crate) fn cas(
        &mut self,
        space: u8,
        offset: u64,
        compare: &[u8],
        new: &[u8],
        old: &mut [u8],
    ) -> Result<()> {
        self.alive()?;
        self.last_put = None;
        wire::cas(&mut self.buf, space, offset, compare, new);
        self.flush()?;
        self.reply(Some(old)).map(|_| ())
    }

    /// Reads `dst.len()` bytes from `offset` of `space` (earlier puts of this lane land
    /// first: one stream, applied in order).
    pub(crate) fn get(&mut self, space: u8, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.alive()?;
        // Ask for every chunk at once, then take the answers in order.
        for (i, chunk) in dst.chunks(wire::MAX_PAYLOAD_BYTES).enumerate() {
            wire::get(
                &mut self.buf,
                space,
                offset + (i * wire::MAX_PAYLOAD_BYTES) as u64,
                chunk.len() as u32,
            );
        }
        self.flush()?;
        let mut first_err = None;
        for chunk in dst.chunks_mut(wire::MAX_PAYLOAD_BYTES) {
            if let Err(e) = self.reply(Some(chunk)) {
                if self.dead.is_some() {
                    return Err(e);
                }
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Waits until every earlier put and atomic of this lane is applied at the target.
    pub(crate) fn quiet(&mut self) -> Result<()> {
        self.alive()?;
        if !self.unsynced {
            return Ok(());
        }
        wire::sync(&mut self.buf);
        self.flush()?;
        self.unsynced = false;
        self.reply(None).map(|_| ())
    }

    /// Reads one reply; its data goes to `dst`.
    fn reply(&mut self, dst: Option<&mut [u8]>) -> Result<(u64, usize)> {
        let mut h = [0u8; wire::REPLY_HEAD_BYTES];
        if let Err(e) = self
            .sock()
            .and_then(|s| read_exact(s, &mut h, self.me, self.pe))
        {
            return self.fail(e);
        }
        let want = dst.as_ref().map_or(0, |d| d.len());
        let (failed, len, value) = match wire::decode_reply_head(&h, want) {
            Ok(x) => x,
            Err(e) => {
                return self.fail(e.context(format!("PE {}: reply from PE {}", self.me, self.pe)))
            }
        };
        if failed {
            let mut text = vec![0u8; len];
            if let Err(e) = self
                .sock()
                .and_then(|s| read_exact(s, &mut text, self.me, self.pe))
            {
                return self.fail(e);
            }
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "PE {}: PE {} refused a one-sided operation: {}",
                    self.me,
                    self.pe,
                    String::from_utf8_lossy(&text)
                ),
            ));
        }
        match dst {
            Some(d) if d.len() == len => {
                if let Err(e) = self.sock().and_then(|s| read_exact(s, d, self.me, self.pe)) {
                    return self.fail(e);
                }
            }
            _ if len == 0 => {}
            _ => {
                let e = Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "PE {}: PE {} answered {len} bytes where {want} were asked",
                        self.me, self.pe
                    ),
                );
                return self.fail(e);
            }
        }
        Ok((value, len))
    }
}

fn send_all(s: &TcpStream, bytes: &[u8], me: u32, pe: u32) -> Result<()> {
    send_two(s, bytes, &[], me, pe)
}

/// Sends `a` then `b` with `sendmsg` (one system call when the socket takes both).
fn send_two(s: &TcpStream, mut a: &[u8], mut b: &[u8], me: u32, pe: u32) -> Result<()> {
    while !a.is_empty() || !b.is_empty() {
        let iov = [
            libc::iovec {
                iov_base: a.as_ptr() as *mut libc::c_void,
                iov_len: a.len(),
            },
            libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            },
        ];
        // SAFETY: a zeroed msghdr is valid (no name, no control data); it points at `iov`,
        // which lives across the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = iov.len() as _;
        // SAFETY: sending from live slices on our socket; MSG_NOSIGNAL keeps a dead peer
        // from raising SIGPIPE in C programs that do not ignore it.
        let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!("PE {me}: PE {pe} took no data for the whole one-sided timeout (WEFT_RMA_TIMEOUT_S): is it alive?"),
                    ))
                }
                _ => {
                    return Err(Error::new(
                        ErrorKind::PeerDead,
                        format!("PE {me}: sending to PE {pe} failed ({e}): the PE died or left the job"),
                    ))
                }
            }
        }
        let n = n as usize;
        let from_a = n.min(a.len());
        a = &a[from_a..];
        b = &b[n - from_a..];
    }
    Ok(())
}

fn read_exact(mut s: &TcpStream, buf: &mut [u8], me: u32, pe: u32) -> Result<()> {
    s.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Error::new(
            ErrorKind::Timeout,
            format!("PE {me}: PE {pe} did not answer within the one-sided timeout (WEFT_RMA_TIMEOUT_S): is it alive?"),
        ),
        _ => Error::new(
            ErrorKind::PeerDead,
            format!("PE {me}: PE {pe} closed its one-sided connection ({e}): the PE died or left the job"),
        ),
    })
}
