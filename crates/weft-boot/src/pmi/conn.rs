//! The connection to a PMI server: the descriptor the launcher passed in `PMI_FD`, or a TCP
//! connection to `PMI_PORT`. Every read and write waits at most until a deadline (`poll`),
//! so a silent or vanished server is an error naming what was awaited, never a hang.
//!
//! Requests are one at a time (the protocols are lock-step); [`Conn::send_only`] writes a
//! message that gets no answer (abort) even while another thread waits for a reply, since
//! the two only share the write lock.

use std::io::ErrorKind as IoKind;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// One connection to a PMI server.
pub(crate) struct Conn {
    fd: OwnedFd,
    /// What the connection is, for messages (`PMI_FD=5`, `PMI_PORT=host:1234`).
    pub(crate) what: String,
    /// Serialises writes, so an abort written from another thread never splits a request.
    write: Mutex<()>,
    /// Bytes read past the end of the last message (PMI-1 lines).
    pending: Mutex<Vec<u8>>,
}

impl Conn {
    /// Takes over descriptor `PMI_FD` (the text of the variable): it must be an open socket.
    /// The descriptor is made close-on-exec, so programs this rank starts do not inherit it.
    pub(crate) fn from_fd_var(text: &str) -> Result<Conn> {
        let fd: RawFd = text.trim().parse().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!("PMI_FD={text:?}: expected a file descriptor number"),
            )
        })?;
        // SAFETY: fstat only writes the stat buffer; an invalid fd makes it fail.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: st is a valid out-pointer.
        if fd < 0 || unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "PMI_FD={fd}: not an open descriptor in this process ({}); was the program started by a PMI launcher (srun --mpi=pmi2, mpiexec.hydra)?",
                    std::io::Error::last_os_error()
                ),
            ));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(Error::new(
                ErrorKind::Config,
                format!("PMI_FD={fd}: the descriptor is not a socket"),
            ));
        }
        // SAFETY: fd is open (fstat succeeded) and from now on owned by this connection only:
        // the launcher handed it to this process for its PMI client.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        Ok(Conn::new(owned, format!("PMI_FD={fd}")))
    }

    /// Connects to `PMI_PORT` (`host:port`), retrying refused connections until `deadline`
    /// (the server may still be starting).
    pub(crate) fn from_port_var(text: &str, deadline: Instant) -> Result<Conn> {
        let what = format!("PMI_PORT={text}");
        loop {
            match TcpStream::connect(text.trim()) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(Conn::new(OwnedFd::from(s), what));
                }
                Err(e) if Instant::now() < deadline && e.kind() == IoKind::ConnectionRefused => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(Error::new(
                        ErrorKind::Io,
                        format!("{what}: cannot connect to the PMI server: {e}"),
                    ))
                }
            }
        }
    }

    /// A connection over any connected socket (tests use a socket pair).
    pub(crate) fn new(fd: OwnedFd, what: String) -> Conn {
        Conn {
            fd,
            what,
            write: Mutex::new(()),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Writes all of `bytes`, waiting for the socket at most until `deadline`.
    pub(crate) fn write_all(&self, bytes: &[u8], deadline: Instant) -> Result<()> {
        let _w = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = 0;
        while done < bytes.len() {
            self.wait(libc::POLLOUT, deadline, "sending to")?;
            // SAFETY: the slice is valid for its length; MSG_NOSIGNAL keeps a closed peer
            // from raising SIGPIPE.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    bytes[done..].as_ptr() as *const libc::c_void,
                    bytes.len() - done,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    IoKind::Interrupted | IoKind::WouldBlock => continue,
                    _ => return Err(self.io_error("sending to", e)),
                }
            }
            done += n as usize;
        }
        Ok(())
    }

    /// Writes a message that gets no answer, without waiting for a request in flight.
    pub(crate) fn send_only(&self, bytes: &[u8], deadline: Instant) -> Result<()> {
        self.write_all(bytes, deadline)
    }

    /// Reads one newline-terminated line (without the newline), at most `max` bytes.
    pub(crate) fn read_line(
        &self,
        max: usize,
        deadline: Instant,
        awaiting: &str,
    ) -> Result<String> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(i) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=i).collect();
                let text = String::from_utf8_lossy(&line[..i]).into_owned();
                return Ok(text.trim_end_matches('\r').to_owned());
            }
            if pending.len() > max {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "{}: the PMI server sent a line longer than {max} bytes while we awaited {awaiting}",
                        self.what
                    ),
                ));
            }
            let mut buf = [0u8; 4096];
            let n = self.read_some(&mut buf, deadline, awaiting)?;
            pending.extend_from_slice(&buf[..n]);
        }
    }

    /// Reads exactly `buf.len()` bytes.
    pub(crate) fn read_exact(
        &self,
        buf: &mut [u8],
        deadline: Instant,
        awaiting: &str,
    ) -> Result<()> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut got = pending.len().min(buf.len());
        buf[..got].copy_from_slice(&pending[..got]);
        pending.drain(..got);
        drop(pending);
        while got < buf.len() {
            got += self.read_some(&mut buf[got..], deadline, awaiting)?;
        }
        Ok(())
    }

    fn read_some(&self, buf: &mut [u8], deadline: Instant, awaiting: &str) -> Result<usize> {
        loop {
            self.wait(libc::POLLIN, deadline, &format!("awaiting {awaiting}"))?;
            // SAFETY: buf is writable for its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    IoKind::Interrupted | IoKind::WouldBlock => continue,
                    IoKind::ConnectionReset | IoKind::ConnectionAborted => {}
                    _ => return Err(self.io_error(&format!("awaiting {awaiting} from"), e)),
                }
            }
            if n <= 0 {
                return Err(Error::new(
                    ErrorKind::PeerDead,
                    format!(
                        "{}: the PMI server closed the connection while we awaited {awaiting}",
                        self.what
                    ),
                ));
            }
            return Ok(n as usize);
        }
    }

    /// Waits until the socket is ready for `events` or the deadline passes.
    fn wait(&self, events: libc::c_short, deadline: Instant, doing: &str) -> Result<()> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "{}: no answer from the PMI server in time ({doing})",
                        self.what
                    ),
                ));
            }
            let ms = (deadline - now).as_millis().clamp(1, i32::MAX as u128) as i32;
            let mut p = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut p, 1, ms) };
            if rc < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == IoKind::Interrupted {
                    continue;
                }
                return Err(self.io_error(doing, e));
            }
            if rc > 0 {
                // Readable on hang-up too: the read then reports the close.
                return Ok(());
            }
        }
    }

    fn io_error(&self, doing: &str, e: std::io::Error) -> Error {
        match e.kind() {
            IoKind::ConnectionReset | IoKind::BrokenPipe | IoKind::ConnectionAborted => Error::new(
                ErrorKind::PeerDead,
                format!(
                    "{}: the PMI server closed the connection ({doing} it: {e})",
                    self.what
                ),
            ),
            _ => Error::new(
                ErrorKind::Io,
                format!("{}: {doing} the PMI server: {e}", self.what),
            ),
        }
    }
}
