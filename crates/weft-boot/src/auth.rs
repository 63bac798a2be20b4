//! The mutual challenge-response handshake that opens every bootstrap connection, on the
//! job secret's proofs of `weft_core::auth` (re-exported here for the bootstrap's users).
//!
//! The secret never crosses the socket. The server sends a random nonce; the client answers
//! with its own nonce and its proof (label "weft-boot client", challenge the server's
//! nonce); the server checks it and answers with its own proof (label "weft-boot server",
//! challenge the client's nonce), so the client knows it reached the job's own store. The
//! two labels differ so that one side's proof can never be replayed as the other's.
//! All messages are fixed-size, so nothing a peer sends before it has proven the secret is
//! parsed beyond a length. Depends only on weft-core.

use crate::wire::read_full;
use std::io::{Read, Write};
pub use weft_core::auth::{
    check_secret, decode_hex, encode_hex, new_secret, random_bytes, MIN_SECRET_BYTES, SECRET_BYTES,
};
use weft_core::auth::{nonce, prove, verify, Nonce, NONCE_BYTES, PROOF_BYTES as MAC_BYTES};
use weft_core::{Error, ErrorKind, Result};

const MAGIC: &[u8; 8] = b"WEFTBOOT";
const VERSION: u8 = 1;
/// Server hello: magic, version, server nonce.
const HELLO_BYTES: usize = 8 + 1 + NONCE_BYTES;
/// Client proof: magic, version, client nonce, client MAC.
const PROOF_BYTES: usize = 8 + 1 + NONCE_BYTES + MAC_BYTES;
const ACCEPTED: u8 = 1;
const REFUSED: u8 = 0;
/// Answer status (and greeting magic) of a server too busy to finish this handshake: the
/// text that follows says why, and the client may try again later.
const BUSY: u8 = 2;
const BUSY_MAGIC: &[u8; 8] = b"WEFTBUSY";
/// Longest busy text read by a client.
const MAX_BUSY_TEXT: u64 = 256;
/// Start of the message of every busy answer a client reports ([`is_busy`]).
pub const BUSY_PREFIX: &str = "refused: ";
const CLIENT_LABEL: &[u8] = b"weft-boot client";
const SERVER_LABEL: &[u8] = b"weft-boot server";

/// Why the server turned a connection away; the text goes into the launcher's log line.
#[derive(Debug)]
pub struct Refusal(pub String);

/// Turns a new connection away before the handshake, telling the client `why` (it reports
/// `refused: <why>` and may retry): for a server that has too many connections pending.
pub fn refuse_busy(stream: &mut impl Write, why: &str) {
    let mut msg = Vec::with_capacity(8 + why.len());
    msg.extend_from_slice(BUSY_MAGIC);
    msg.extend_from_slice(why.as_bytes());
    let _ = stream.write_all(&msg);
}

/// True for a client-side handshake error saying the server was too busy (see
/// [`refuse_busy`], [`server_handshake_gated`]): worth retrying later.
pub fn is_busy(e: &Error) -> bool {
    e.kind() == ErrorKind::Io && e.message().contains(BUSY_PREFIX)
}

/// Server side of the handshake. On success the peer has proven the secret. Public so other
/// authenticated channels of a job (the launcher's host agents) prove the same secret.
pub fn server_handshake(
    stream: &mut (impl Read + Write),
    secret: &[u8],
) -> std::result::Result<(), Refusal> {
    server_handshake_gated(stream, secret, &|| None)
}

/// [`server_handshake`] for a server that may give up a connection while it waits for the
/// client's proof: once the wait ends (proof, close, timeout, or the socket's read side shut
/// down by the server), `busy` is asked; when it gives a reason, the client is told
/// `refused: <reason>` (it may retry) instead of being judged.
pub fn server_handshake_gated(
    stream: &mut (impl Read + Write),
    secret: &[u8],
    busy: &dyn Fn() -> Option<String>,
) -> std::result::Result<(), Refusal> {
    let server_nonce: Nonce = nonce().map_err(|e| Refusal(e.to_string()))?;
    let mut hello = Vec::with_capacity(HELLO_BYTES);
    hello.extend_from_slice(MAGIC);
    hello.push(VERSION);
    hello.extend_from_slice(&server_nonce);
    stream
        .write_all(&hello)
        .map_err(|e| Refusal(format!("could not send the greeting: {e}")))?;

    let mut proof = [0u8; PROOF_BYTES];
    let got = read_full(stream, &mut proof);
    if let Some(why) = busy() {
        let mut msg = vec![BUSY];
        msg.extend_from_slice(why.as_bytes());
        let _ = stream.write_all(&msg);
        return Err(Refusal(why));
    }
    let got = got.map_err(|e| match e.kind() {
        ErrorKind::Timeout => Refusal("sent no proof of the job secret in time".into()),
        _ => Refusal(format!("failed during the handshake: {}", e.message())),
    })?;
    if got == 0 {
        return Err(Refusal(
            "closed without proving the job secret (no secret)".into(),
        ));
    }
    if got < PROOF_BYTES {
        return Err(Refusal(format!(
            "sent {got} bytes then closed during the handshake (expected {PROOF_BYTES})"
        )));
    }
    if &proof[..8] != MAGIC {
        let _ = stream.write_all(&[REFUSED]);
        return Err(Refusal(
            "not a weft bootstrap client (bad greeting bytes)".into(),
        ));
    }
    if proof[8] != VERSION {
        let _ = stream.write_all(&[REFUSED]);
        return Err(Refusal(format!(
            "speaks bootstrap protocol version {} (this store speaks {VERSION})",
            proof[8]
        )));
    }
    let client_nonce = &proof[9..9 + NONCE_BYTES];
    let client_mac = &proof[9 + NONCE_BYTES..];
    if !verify(
        secret,
        CLIENT_LABEL,
        &[],
        &server_nonce,
        client_nonce,
        client_mac,
    ) {
        let _ = stream.write_all(&[REFUSED]);
        return Err(Refusal("wrong job secret".into()));
    }
    let mut reply = Vec::with_capacity(1 + MAC_BYTES);
    reply.push(ACCEPTED);
    reply.extend_from_slice(&prove(
        secret,
        SERVER_LABEL,
        &[],
        client_nonce,
        &server_nonce,
    ));
    stream
        .write_all(&reply)
        .map_err(|e| Refusal(format!("could not send the acceptance: {e}")))?;
    Ok(())
}

/// Client side of the handshake; `addr` only names the server in errors.
pub fn client_handshake(stream: &mut (impl Read + Write), secret: &[u8], addr: &str) -> Result<()> {
    let mut hello = [0u8; HELLO_BYTES];
    let got = read_full(stream, &mut hello).map_err(|e| e.context(format!("bootstrap {addr}")))?;
    if got >= 8 && &hello[..8] == BUSY_MAGIC {
        return Err(busy_error(stream, addr, &hello[8..got]));
    }
    if got < HELLO_BYTES || &hello[..8] != MAGIC {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "bootstrap {addr}: not a weft bootstrap store (greeting of {got} bytes does not start with {:?})",
                String::from_utf8_lossy(MAGIC)
            ),
        ));
    }
    if hello[8] != VERSION {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "bootstrap {addr}: store speaks protocol version {} (this client speaks {VERSION})",
                hello[8]
            ),
        ));
    }
    let server_nonce = &hello[9..];
    let client_nonce = nonce()?;
    let mut proof = Vec::with_capacity(PROOF_BYTES);
    proof.extend_from_slice(MAGIC);
    proof.push(VERSION);
    proof.extend_from_slice(&client_nonce);
    proof.extend_from_slice(&prove(
        secret,
        CLIENT_LABEL,
        &[],
        server_nonce,
        &client_nonce,
    ));
    stream
        .write_all(&proof)
        .map_err(|e| Error::io(format!("bootstrap {addr}: sending proof"), e))?;

    let mut reply = [0u8; 1 + MAC_BYTES];
    let got = read_full(stream, &mut reply).map_err(|e| e.context(format!("bootstrap {addr}")))?;
    if got > 0 && reply[0] == BUSY {
        return Err(busy_error(stream, addr, &reply[1..got]));
    }
    if got == 0 || reply[0] == REFUSED {
        return Err(Error::new(
            ErrorKind::Auth,
            format!("bootstrap {addr}: the store refused this client's proof of the job secret (is WEFT_JOB_SECRET the job's?)"),
        ));
    }
    if got < reply.len() || reply[0] != ACCEPTED {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("bootstrap {addr}: malformed handshake answer ({got} bytes)"),
        ));
    }
    if !verify(
        secret,
        SERVER_LABEL,
        &[],
        &client_nonce,
        server_nonce,
        &reply[1..],
    ) {
        return Err(Error::new(
            ErrorKind::Auth,
            format!(
                "bootstrap {addr}: the store did not prove the job secret; refusing to talk to it"
            ),
        ));
    }
    Ok(())
}

/// The error of a busy answer whose text starts with `head` (the rest is read to the end).
fn busy_error(stream: &mut impl Read, addr: &str, head: &[u8]) -> Error {
    let mut text = head.to_vec();
    let _ = stream.take(MAX_BUSY_TEXT).read_to_end(&mut text);
    Error::new(
        ErrorKind::Io,
        format!(
            "bootstrap {addr}: {BUSY_PREFIX}{}",
            String::from_utf8_lossy(&text).trim()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

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
    fn server_refuses_garbage_and_silence() {
        let secret = new_secret().unwrap();
        for (input, want) in [
            (Vec::new(), "no secret"),
            (b"hello".to_vec(), "sent 5 bytes"),
            (vec![b'x'; PROOF_BYTES], "bad greeting"),
        ] {
            let mut s = Scripted {
                input: Cursor::new(input),
                output: Vec::new(),
            };
            let Refusal(reason) = server_handshake(&mut s, &secret).unwrap_err();
            assert!(reason.contains(want), "{reason}");
            assert!(s.output.starts_with(MAGIC));
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
        assert!(e.message().contains("not a weft bootstrap store"), "{e}");
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
        let mut reply = srv.output[..HELLO_BYTES].to_vec();
        reply.extend_from_slice(&srv.output[HELLO_BYTES..]);
        let mut cli = Scripted {
            input: Cursor::new(reply),
            output: Vec::new(),
        };
        let e = client_handshake(&mut cli, &secret, "y:2").unwrap_err();
        assert!(is_busy(&e), "{e}");
        assert!(e
            .message()
            .ends_with("refused: too many pending connections from 10.0.0.8"));
    }

    #[test]
    fn client_refuses_a_server_that_does_not_know_the_secret() {
        // An impostor that greets correctly and claims to accept, with a made-up proof.
        let mut input = MAGIC.to_vec();
        input.push(VERSION);
        input.extend_from_slice(&[5u8; NONCE_BYTES]);
        input.push(ACCEPTED);
        input.extend_from_slice(&[9u8; MAC_BYTES]);
        let mut s = Scripted {
            input: Cursor::new(input),
            output: Vec::new(),
        };
        let e = client_handshake(&mut s, &new_secret().unwrap(), "x:1").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth);
        assert!(e.message().contains("did not prove"), "{e}");
        // What the client sent never contains the secret itself.
        assert_eq!(s.output.len(), PROOF_BYTES);
    }

    #[test]
    fn handshake_succeeds_between_matching_sides() {
        let secret = new_secret().unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let server_secret = secret.clone();
        let t = std::thread::spawn(move || {
            let mut a = a;
            server_handshake(&mut a, &server_secret).map_err(|r| r.0)
        });
        let mut b = b;
        client_handshake(&mut b, &secret, "pair").unwrap();
        t.join().unwrap().unwrap();
    }
}
