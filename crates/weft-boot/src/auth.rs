//! The handshake that opens every bootstrap connection (and the launcher's host agents'):
//! `weft_core::handshake` under the bootstrap's [`BOOT`] protocol (greeting `WEFTBOOT`,
//! labels "weft-boot client" / "weft-boot server"), and the job secret's helpers of
//! `weft_core::auth` re-exported for the bootstrap's users. Depends only on weft-core.

use std::io::{Read, Write};
pub use weft_core::auth::{
    check_secret, decode_hex, encode_hex, new_secret, random_bytes, MIN_SECRET_BYTES, SECRET_BYTES,
};
use weft_core::handshake::{self, Protocol};
pub use weft_core::handshake::{is_busy, refuse_busy, Refusal, BUSY_PREFIX};
use weft_core::Result;

/// The bootstrap's protocol: the store's, and the launcher's host agents'.
pub const BOOT: Protocol = Protocol {
    magic: b"WEFTBOOT",
    version: 1,
    client_label: b"weft-boot client",
    server_label: b"weft-boot server",
    name: "bootstrap",
    server: "weft bootstrap store",
    client: "weft bootstrap client",
    secret: "job secret",
    secret_hint: " (is WEFT_JOB_SECRET the job's?)",
};

/// Server side of the handshake. On success the peer has proven the job secret.
pub fn server_handshake(
    stream: &mut (impl Read + Write),
    secret: &[u8],
) -> std::result::Result<(), Refusal> {
    handshake::server_handshake(&BOOT, stream, secret)
}

/// [`server_handshake`] for a server that may give up a connection while it waits for the
/// client's proof (`weft_core::handshake::server_handshake_gated`).
pub fn server_handshake_gated(
    stream: &mut (impl Read + Write),
    secret: &[u8],
    busy: &dyn Fn() -> Option<String>,
) -> std::result::Result<(), Refusal> {
    handshake::server_handshake_gated(&BOOT, stream, secret, busy)
}

/// Client side of the handshake; `addr` only names the server in errors.
pub fn client_handshake(stream: &mut (impl Read + Write), secret: &[u8], addr: &str) -> Result<()> {
    handshake::client_handshake(&BOOT, stream, secret, addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use weft_core::ErrorKind;

    /// A stream that reads from a fixed script and records what is written.
    struct Scripted {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn client_refuses_a_server_that_is_not_a_store() {
        let mut s = Scripted {
            input: Cursor::new(b"HTTP/1.1 400 Bad Request\r\n\r\n".repeat(3)),
            output: Vec::new(),
        };
        let e = client_handshake(&mut s, &new_secret().unwrap(), "x:1").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(
            e.message()
                .starts_with("bootstrap x:1: not a weft bootstrap store"),
            "{e}"
        );
    }

    #[test]
    fn a_busy_server_is_reported_as_such_before_and_during_the_handshake() {
        // Turned away before the greeting.
        let mut out = Vec::new();
        refuse_busy(&mut out, "too many pending connections from 10.0.0.7");
        let mut s = Scripted {
            input: Cursor::new(out),
            output: Vec::new(),
        };
        let e = client_handshake(&mut s, &new_secret().unwrap(), "x:1").unwrap_err();
        assert!(is_busy(&e), "{e}");
        assert_eq!(
            e.message(),
            "bootstrap x:1: refused: too many pending connections from 10.0.0.7"
        );
        // Given up while the proof was awaited: the server answers busy, not accepted.
        let secret = new_secret().unwrap();
        let mut srv = Scripted {
            input: Cursor::new(Vec::new()),
            output: Vec::new(),
        };
        let why = || Some("too many pending connections from 10.0.0.8".to_owned());
        let Refusal(r) = server_handshake_gated(&mut srv, &secret, &why).unwrap_err();
        assert_eq!(r, "too many pending connections from 10.0.0.8");
        let mut cli = Scripted {
            input: Cursor::new(srv.output),
            output: Vec::new(),
        };
        let e = client_handshake(&mut cli, &secret, "y:2").unwrap_err();
        assert!(is_busy(&e), "{e}");
        assert!(e
            .message()
            .ends_with("refused: too many pending connections from 10.0.0.8"));
    }

    #[test]
    fn handshake_succeeds_between_matching_sides_and_names_the_secret_on_refusal() {
        let secret = new_secret().unwrap();
        for (client_secret, ok) in [(secret.clone(), true), (new_secret().unwrap(), false)] {
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            let server_secret = secret.clone();
            let t = std::thread::spawn(move || {
                let mut a = a;
                server_handshake(&mut a, &server_secret).map_err(|r| r.0)
            });
            let mut b = b;
            let c = client_handshake(&mut b, &client_secret, "pair");
            let s = t.join().unwrap();
            if ok {
                c.unwrap();
                s.unwrap();
            } else {
                let e = c.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Auth);
                assert!(e.message().contains("WEFT_JOB_SECRET"), "{e}");
                assert_eq!(s.unwrap_err(), "wrong job secret");
            }
        }
    }
}
