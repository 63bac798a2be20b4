//! Socket writes that never raise SIGPIPE.
//!
//! A C program (an MPI rank, an OpenSHMEM PE) keeps SIGPIPE at its default action, which
//! kills the process when it writes to a connection the peer has closed. Every socket write
//! of weft — bootstrap client and server, the launcher's agent wire, the TCP transport, the
//! one-sided service — goes through `send`/`sendmsg` with `MSG_NOSIGNAL` here, so a peer
//! that went away is an `EPIPE` error the caller reports, never a signal that kills a healthy
//! rank. Depends on libc only.

use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

/// Sends what the kernel takes of `bytes` on socket `fd` (`send` with `MSG_NOSIGNAL`);
/// returns the bytes taken.
pub fn send(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: sending from a live slice of `bytes.len()` bytes on a descriptor the caller
    // owns; the kernel only reads the slice.
    let n = unsafe {
        libc::send(
            fd,
            bytes.as_ptr() as *const libc::c_void,
            bytes.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Sends what the kernel takes of `parts`, in order, with one `sendmsg` (`MSG_NOSIGNAL`);
/// returns the bytes taken.
pub fn send_vectored(fd: RawFd, parts: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: a zeroed msghdr is valid (no name, no control data). `IoSlice` is
    // ABI-compatible with `iovec` on Unix, and `parts` lives across the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = parts.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = parts.len() as _;
    // SAFETY: the message points at live slices the kernel only reads.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A connected socket whose writes never raise SIGPIPE ([`send`], [`send_vectored`]);
/// reads are the stream's own. Blocking or not as the socket is; timeouts set on the socket
/// apply.
pub struct NoSigPipe<'a>(pub &'a TcpStream);

impl Read for NoSigPipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self.0).read(buf)
    }
}

impl Write for NoSigPipe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        send(self.0.as_raw_fd(), buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        send_vectored(self.0.as_raw_fd(), bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn writes_reach_the_peer_and_a_closed_peer_is_an_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        NoSigPipe(&c).write_all(b"one").unwrap();
        let parts = [
            IoSlice::new(b"two"),
            IoSlice::new(b""),
            IoSlice::new(b"three"),
        ];
        assert_eq!(send_vectored(c.as_raw_fd(), &parts).unwrap(), 8);
        let mut got = [0u8; 11];
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"onetwothree");
        drop(s);
        // The first write after the close may still be taken; the ones after the reset fail.
        // Up to 60 s (the reset usually comes with the first write): a hang catcher.
        let mut failed = None;
        for _ in 0..12_000 {
            if let Err(e) = send(c.as_raw_fd(), b"x") {
                failed = Some(e);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let e = failed.expect("writes to a closed peer fail");
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ),
            "{e}"
        );
    }
}
