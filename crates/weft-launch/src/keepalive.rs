//! TCP keepalive for the launcher <-> agent connections, so a host that powers off or is cut
//! off (no FIN, no RST) is noticed within about a minute on both ends: the launcher loses the
//! host and ends the job, the agent loses the launcher and ends its ranks. Depends on `libc`
//! only; knows nothing of the messages on the connection.

use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// Idle seconds before the first probe.
pub(crate) const KEEPALIVE_IDLE_S: i32 = 10;
/// Seconds between probes.
pub(crate) const KEEPALIVE_INTVL_S: i32 = 5;
/// Unanswered probes after which the connection breaks: 10 + 6 * 5 = 40 s of silence.
pub(crate) const KEEPALIVE_CNT: i32 = 6;
/// Unacknowledged data older than this breaks the connection (instead of ~15 min).
pub(crate) const USER_TIMEOUT_MS: i32 = 60_000;

/// Turns on keepalive and the user timeout. Failures are ignored: the connection still
/// works, it only learns of a dead peer later.
pub(crate) fn set_keepalive(stream: &TcpStream) {
    let fd = stream.as_raw_fd();
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
    set(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, USER_TIMEOUT_MS);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn opt(stream: &TcpStream, level: i32, name: i32) -> i32 {
        let mut v: i32 = 0;
        let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
        // SAFETY: `v` and `len` are writable and sized for an int option.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                level,
                name,
                &mut v as *mut i32 as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v
    }

    #[test]
    fn keepalive_options_are_set() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(opt(&s, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 0);
        set_keepalive(&s);
        assert_ne!(opt(&s, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 0);
        assert_eq!(
            opt(&s, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE),
            KEEPALIVE_IDLE_S
        );
        assert_eq!(
            opt(&s, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL),
            KEEPALIVE_INTVL_S
        );
        assert_eq!(opt(&s, libc::IPPROTO_TCP, libc::TCP_KEEPCNT), KEEPALIVE_CNT);
        assert_eq!(
            opt(&s, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT),
            USER_TIMEOUT_MS
        );
    }
}
