//! The mutual challenge-response that opens every authenticated TCP connection of a job (the
//! bootstrap store, the launcher's host agents, the aggregation manager), on the secret's
//! proofs of [`crate::auth`]. One flow, parameterised by a [`Protocol`]: its greeting magic
//! and version, the labels its two sides prove under, and the names its errors use.
//!
//! The secret never crosses the socket. The server sends its magic, version and a random
//! nonce; the client answers with the magic, version, its own nonce and its proof (the
//! client label, challenge the server's nonce); the server checks it and answers an accept
//! byte and its own proof (the server label, challenge the client's nonce), so the client
//! knows it reached a holder of the secret. The two labels differ so that one side's proof
//! can never be replayed as the other's. All messages are fixed-size, so nothing a peer sends
//! before it has proven the secret is parsed beyond a length. A server too busy to finish a
//! handshake may answer "busy" instead ([`refuse_busy`], [`server_handshake_gated`]); the
//! client reports that as an error [`is_busy`] recognises, worth retrying later.
//!
//! [`RefusalLog`] throttles the report lines of refused connections, so a flood of strangers
//! cannot flood a job's output.

use crate::auth::{nonce, prove, verify, Nonce, NONCE_BYTES, PROOF_BYTES as MAC_BYTES};
use crate::{Error, ErrorKind, Result};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// One authenticated protocol: what its greeting says and what its errors call things.
#[derive(Debug)]
pub struct Protocol {
    /// The greeting's first 8 bytes.
    pub magic: &'static [u8; 8],
    /// The protocol version after the magic; both sides must speak the same.
    pub version: u8,
    /// The label of the client's proof.
    pub client_label: &'static [u8],
    /// The label of the server's proof.
    pub server_label: &'static [u8],
    /// Names the protocol at the start of a client's errors ("bootstrap", "aggd").
    pub name: &'static str,
    /// What a server of this protocol is, in errors ("weft bootstrap store").
    pub server: &'static str,
    /// What a client of this protocol is, in a server's refusals ("weft bootstrap client").
    pub client: &'static str,
    /// What the secret is called in errors ("job secret").
    pub secret: &'static str,
    /// Appended to the client's error when the server refused its proof: where the secret
    /// came from (may be empty).
    pub secret_hint: &'static str,
}

/// Server hello: magic, version, server nonce.
const HELLO_BYTES: usize = 8 + 1 + NONCE_BYTES;
/// Client proof: magic, version, client nonce, client MAC.
pub const CLIENT_PROOF_BYTES: usize = 8 + 1 + NONCE_BYTES + MAC_BYTES;
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

/// Why the server turned a connection away; the text goes into the server's log line.
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

/// Reads into `buf` until it is full or the stream ends (or is reset); returns the bytes
/// read. A read timeout is an [`ErrorKind::Timeout`] error.
pub fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A reset is the peer going away (it closed with our bytes unread): report it as
            // the end of the stream so callers name what was missing, not a socket error.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                break
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    "reading from peer: no answer in time",
                ))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof
                ) =>
            {
                return Err(Error::new(
                    ErrorKind::PeerDead,
                    format!("reading from peer: {e}"),
                ))
            }
            Err(e) => return Err(Error::io("reading from peer", e)),
        }
    }
    Ok(got)
}

/// Server side of `protocol`'s handshake. On success the peer has proven the secret.
pub fn server_handshake(
    protocol: &Protocol,
    stream: &mut (impl Read + Write),
    secret: &[u8],
) -> std::result::Result<(), Refusal> {
    server_handshake_gated(protocol, stream, secret, &|| None)
}

/// [`server_handshake`] for a server that may give up a connection while it waits for the
/// client's proof: once the wait ends (proof, close, timeout, or the socket's read side shut
/// down by the server), `busy` is asked; when it gives a reason, the client is told
/// `refused: <reason>` (it may retry) instead of being judged.
pub fn server_handshake_gated(
    protocol: &Protocol,
    stream: &mut (impl Read + Write),
    secret: &[u8],
    busy: &dyn Fn() -> Option<String>,
) -> std::result::Result<(), Refusal> {
    let server_nonce: Nonce = nonce().map_err(|e| Refusal(e.to_string()))?;
    let mut hello = Vec::with_capacity(HELLO_BYTES);
    hello.extend_from_slice(protocol.magic);
    hello.push(protocol.version);
    hello.extend_from_slice(&server_nonce);
    stream
        .write_all(&hello)
        .map_err(|e| Refusal(format!("could not send the greeting: {e}")))?;

    let mut proof = [0u8; CLIENT_PROOF_BYTES];
    let got = read_full(stream, &mut proof);
    if let Some(why) = busy() {
        let mut msg = vec![BUSY];
        msg.extend_from_slice(why.as_bytes());
        let _ = stream.write_all(&msg);
        return Err(Refusal(why));
    }
    let got = got.map_err(|e| match e.kind() {
        ErrorKind::Timeout => Refusal(format!("sent no proof of the {} in time", protocol.secret)),
        _ => Refusal(format!("failed during the handshake: {}", e.message())),
    })?;
    if got == 0 {
        return Err(Refusal(format!(
            "closed without proving the {} (no secret)",
            protocol.secret
        )));
    }
    if got < CLIENT_PROOF_BYTES {
        return Err(Refusal(format!(
            "sent {got} bytes then closed during the handshake (expected {CLIENT_PROOF_BYTES})"
        )));
    }
    if &proof[..8] != protocol.magic {
        let _ = stream.write_all(&[REFUSED]);
        return Err(Refusal(format!(
            "not a {} (bad greeting bytes)",
            protocol.client
        )));
    }
    if proof[8] != protocol.version {
        let _ = stream.write_all(&[REFUSED]);
        return Err(Refusal(format!(
            "speaks {} protocol version {} (this server speaks {})",
            protocol.name, proof[8], protocol.version
        )));
    }
    let client_nonce = &proof[9..9 + NONCE_BYTES];
    let client_mac = &proof[9 + NONCE_BYTES..];
    if !verify(
        secret,
        protocol.client_label,
        &[],
        &server_nonce,
        client_nonce,
        client_mac,
    ) {
        let _ = stream.write_all(&[REFUSED]);
        return Err(Refusal(format!("wrong {}", protocol.secret)));
    }
    let mut reply = Vec::with_capacity(1 + MAC_BYTES);
    reply.push(ACCEPTED);
    reply.extend_from_slice(&prove(
        secret,
        protocol.server_label,
        &[],
        client_nonce,
        &server_nonce,
    ));
    stream
        .write_all(&reply)
        .map_err(|e| Refusal(format!("could not send the acceptance: {e}")))?;
    Ok(())
}

/// Client side of `protocol`'s handshake; `addr` only names the server in errors.
pub fn client_handshake(
    protocol: &Protocol,
    stream: &mut (impl Read + Write),
    secret: &[u8],
    addr: &str,
) -> Result<()> {
    let name = protocol.name;
    let mut hello = [0u8; HELLO_BYTES];
    let got = read_full(stream, &mut hello).map_err(|e| e.context(format!("{name} {addr}")))?;
    if got >= 8 && &hello[..8] == BUSY_MAGIC {
        return Err(busy_error(name, stream, addr, &hello[8..got]));
    }
    if got < HELLO_BYTES || &hello[..8] != protocol.magic {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "{name} {addr}: not a {} (greeting of {got} bytes does not start with {:?})",
                protocol.server,
                String::from_utf8_lossy(protocol.magic)
            ),
        ));
    }
    if hello[8] != protocol.version {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "{name} {addr}: the {} speaks protocol version {} (this client speaks {})",
                protocol.server, hello[8], protocol.version
            ),
        ));
    }
    let server_nonce = &hello[9..];
    let client_nonce = nonce()?;
    let mut proof = Vec::with_capacity(CLIENT_PROOF_BYTES);
    proof.extend_from_slice(protocol.magic);
    proof.push(protocol.version);
    proof.extend_from_slice(&client_nonce);
    proof.extend_from_slice(&prove(
        secret,
        protocol.client_label,
        &[],
        server_nonce,
        &client_nonce,
    ));
    stream
        .write_all(&proof)
        .map_err(|e| Error::io(format!("{name} {addr}: sending proof"), e))?;

    let mut reply = [0u8; 1 + MAC_BYTES];
    let got = read_full(stream, &mut reply).map_err(|e| e.context(format!("{name} {addr}")))?;
    if got > 0 && reply[0] == BUSY {
        return Err(busy_error(name, stream, addr, &reply[1..got]));
    }
    if got == 0 || reply[0] == REFUSED {
        return Err(Error::new(
            ErrorKind::Auth,
            format!(
                "{name} {addr}: the {} refused this client's proof of the {}{}",
                protocol.server, protocol.secret, protocol.secret_hint
            ),
        ));
    }
    if got < reply.len() || reply[0] != ACCEPTED {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("{name} {addr}: malformed handshake answer ({got} bytes)"),
        ));
    }
    if !verify(
        secret,
        protocol.server_label,
        &[],
        &client_nonce,
        server_nonce,
        &reply[1..],
    ) {
        return Err(Error::new(
            ErrorKind::Auth,
            format!(
                "{name} {addr}: the {} did not prove the {}; refusing to talk to it",
                protocol.server, protocol.secret
            ),
        ));
    }
    Ok(())
}

/// The error of a busy answer whose text starts with `head` (the rest is read to the end).
fn busy_error(name: &str, stream: &mut impl Read, addr: &str, head: &[u8]) -> Error {
    let mut text = head.to_vec();
    let _ = stream.take(MAX_BUSY_TEXT).read_to_end(&mut text);
    Error::new(
        ErrorKind::Io,
        format!(
            "{name} {addr}: {BUSY_PREFIX}{}",
            String::from_utf8_lossy(&text).trim()
        ),
    )
}

/// Refusals reported one by one; after that only every [`REFUSAL_REPORT_EVERY`]th.
pub const REFUSALS_REPORTED: u64 = 16;
/// See [`REFUSALS_REPORTED`].
pub const REFUSAL_REPORT_EVERY: u64 = 256;

/// Counts a server's refused connections and says which to report: the first
/// [`REFUSALS_REPORTED`], then every [`REFUSAL_REPORT_EVERY`]th, so a flood of strangers
/// cannot flood a job's output.
#[derive(Debug, Default)]
pub struct RefusalLog {
    refused: AtomicU64,
}

impl RefusalLog {
    /// A log with nothing refused yet.
    pub const fn new() -> Self {
        Self {
            refused: AtomicU64::new(0),
        }
    }

    /// Refusals counted so far.
    pub fn count(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Counts one refusal for `reason`; returns the text to report, or `None` when this
    /// one is not reported.
    pub fn refuse(&self, reason: String) -> Option<String> {
        let n = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        match n {
            _ if n < REFUSALS_REPORTED => Some(reason),
            REFUSALS_REPORTED => Some(format!(
                "{reason} ({n} refused so far; from now on only every {REFUSAL_REPORT_EVERY}th is reported)"
            )),
            _ if n.is_multiple_of(REFUSAL_REPORT_EVERY) => {
                Some(format!("{reason} ({n} refused so far)"))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::new_secret;
    use std::io::Cursor;

    const TEST: Protocol = Protocol {
        magic: b"WEFTTEST",
        version: 3,
        client_label: b"weft-test client",
        server_label: b"weft-test server",
        name: "test",
        server: "weft test server",
        client: "weft test client",
        secret: "test secret",
        secret_hint: " (hint)",
    };
    const OTHER: Protocol = Protocol {
        magic: b"WEFTOTHR",
        version: 3,
        client_label: b"weft-other client",
        server_label: b"weft-other server",
        name: "other",
        server: "weft other server",
        client: "weft other client",
        secret: "secret",
        secret_hint: "",
    };

    /// A stream that reads from a fixed script and records what is written.
    struct Scripted {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn pair(
        server: &'static Protocol,
        client: &'static Protocol,
        server_secret: Vec<u8>,
        client_secret: &[u8],
    ) -> (std::result::Result<(), String>, Result<()>) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            let mut a = a;
            server_handshake(server, &mut a, &server_secret).map_err(|r| r.0)
        });
        let mut b = b;
        let c = client_handshake(client, &mut b, client_secret, "pair");
        // A client that gave up must not leave the server waiting for its proof.
        drop(b);
        (t.join().unwrap(), c)
    }

    #[test]
    fn matching_sides_agree_and_wrong_secrets_or_protocols_are_refused() {
        let secret = new_secret().unwrap();
        let (s, c) = pair(&TEST, &TEST, secret.clone(), &secret);
        s.unwrap();
        c.unwrap();
        let (s, c) = pair(&TEST, &TEST, secret.clone(), &new_secret().unwrap());
        assert_eq!(s.unwrap_err(), "wrong test secret");
        let e = c.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth);
        assert!(
            e.message().ends_with("proof of the test secret (hint)"),
            "{e}"
        );
        // A client of another protocol is told apart by the greeting, whatever its secret.
        let (_, c) = pair(&TEST, &OTHER, secret.clone(), &secret);
        let e = c.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(e.message().contains("not a weft other server"), "{e}");
    }

    #[test]
    fn server_refuses_garbage_and_silence() {
        let secret = new_secret().unwrap();
        let mut other_version = TEST.magic.to_vec();
        other_version.push(9);
        other_version.resize(CLIENT_PROOF_BYTES, 0);
        for (input, want) in [
            (Vec::new(), "no secret"),
            (b"hello".to_vec(), "sent 5 bytes"),
            (vec![b'x'; CLIENT_PROOF_BYTES], "not a weft test client"),
            (other_version, "version 9 (this server speaks 3)"),
        ] {
            let mut s = Scripted {
                input: Cursor::new(input),
                output: Vec::new(),
            };
            let Refusal(reason) = server_handshake(&TEST, &mut s, &secret).unwrap_err();
            assert!(reason.contains(want), "{reason}");
            assert!(s.output.starts_with(TEST.magic));
        }
    }

    #[test]
    fn client_refuses_an_impostor_and_never_sends_the_secret() {
        let mut input = TEST.magic.to_vec();
        input.push(TEST.version);
        input.extend_from_slice(&[5u8; NONCE_BYTES]);
        input.push(ACCEPTED);
        input.extend_from_slice(&[9u8; MAC_BYTES]);
        let secret = new_secret().unwrap();
        let mut s = Scripted {
            input: Cursor::new(input),
            output: Vec::new(),
        };
        let e = client_handshake(&TEST, &mut s, &secret, "x:1").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth);
        assert!(e.message().contains("did not prove"), "{e}");
        assert_eq!(s.output.len(), CLIENT_PROOF_BYTES);
        assert!(!s
            .output
            .windows(secret.len())
            .any(|w| w == secret.as_slice()));
    }

    #[test]
    fn refusal_log_reports_the_first_then_every_256th() {
        let log = RefusalLog::new();
        let reported: Vec<u64> = (1..=1024u64)
            .filter(|_| log.refuse("r".into()).is_some())
            .collect();
        let mut want: Vec<u64> = (1..=REFUSALS_REPORTED).collect();
        want.extend([256, 512, 768, 1024]);
        assert_eq!(reported, want);
    }
}
