//! The fuzz bodies of every decoder that reads bytes from another process: TCP transport
//! frames and handshake, the bootstrap store's frames, requests, responses and handshake,
//! the launcher's agent wire, and the one-sided (RMA) network wire.
//!
//! Each body takes arbitrary bytes, feeds them to the decoder and checks what a decoder must
//! guarantee whatever it is given: an answer within its limits or a `Protocol`/`Auth` error,
//! never a panic, a hang or a read past the input; and whatever it accepts re-encodes to the
//! same bytes (or decodes again to the same value). The cargo-fuzz targets in `fuzz/` (run
//! with a nightly toolchain) call these bodies, and `tests/corpus.rs` replays every file of
//! `fuzz/corpus/<target>/` through them in a plain `cargo test`, so CI replays the corpora
//! without nightly. [`seeds`] makes the seed inputs of each corpus from the encoders.
//!
//! Depends on the crates whose decoders it exercises; nothing depends on it.

use std::io::{Cursor, Read, Write};
use weft_core::ErrorKind;

/// A fuzz target: its name (also its corpus directory) and its body.
pub struct Target {
    /// The name of the target, of its `fuzz/fuzz_targets/<name>.rs` and of its corpus.
    pub name: &'static str,
    /// The body: panics when the decoder breaks a guarantee.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "tcp_frame",
        run: tcp_frame,
    },
    Target {
        name: "tcp_handshake",
        run: tcp_handshake,
    },
    Target {
        name: "boot_frame",
        run: boot_frame,
    },
    Target {
        name: "boot_request",
        run: boot_request,
    },
    Target {
        name: "boot_response",
        run: boot_response,
    },
    Target {
        name: "boot_handshake",
        run: boot_handshake,
    },
    Target {
        name: "agent_to_agent",
        run: agent_to_agent,
    },
    Target {
        name: "agent_from_agent",
        run: agent_from_agent,
    },
    Target {
        name: "rma_request",
        run: rma_request,
    },
    Target {
        name: "rma_reply",
        run: rma_reply,
    },
];

fn protocol_or_auth(e: &weft_core::Error) {
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Protocol | ErrorKind::Auth | ErrorKind::InvalidCount
        ),
        "unexpected error kind: {e}"
    );
}

const FRAME_LIMITS: weft_transport::tcp::frame::Limits = weft_transport::tcp::frame::Limits {
    eager_bytes: 1024,
    fragment_bytes: 4096,
};

/// The TCP transport's frame decoder over a receive buffer.
pub fn tcp_frame(data: &[u8]) {
    use weft_transport::tcp::frame::{decode, encode_header, Decoded, FRAME_HEADER_BYTES};
    let mut rest = data;
    // Whole frames one after another, as a connection's buffer holds them.
    loop {
        match decode(rest, &FRAME_LIMITS) {
            Ok(Decoded::NeedMore) => return,
            Ok(Decoded::Frame(h)) => {
                let total = FRAME_HEADER_BYTES + h.len as usize;
                assert!(total <= rest.len(), "a frame longer than its input");
                assert!(total <= FRAME_LIMITS.max_frame_bytes());
                assert_eq!(encode_header(&h), rest[..FRAME_HEADER_BYTES]);
                rest = &rest[total..];
            }
            Err(e) => return protocol_or_auth(&e),
        }
    }
}

const KEY: [u8; 32] = [0x5a; 32];

/// The TCP transport's handshake messages (hello, challenge, proof) as an acceptor and a
/// connector read them.
pub fn tcp_handshake(data: &[u8]) {
    use weft_transport::tcp::handshake::{
        check_challenge, check_proof, parse_hello, CHALLENGE_BYTES, HELLO_BYTES, NONCE_BYTES,
        PROOF_BYTES,
    };
    let nonce = [7u8; NONCE_BYTES];
    if let Some(b) = data.get(..HELLO_BYTES) {
        let b: &[u8; HELLO_BYTES] = b.try_into().expect("hello bytes");
        match parse_hello(b, 1, 4) {
            Ok((from, _)) => assert!(from < 4 && from != 1, "hello from {from}"),
            Err(e) => protocol_or_auth(&e),
        }
    }
    if let Some(b) = data.get(..CHALLENGE_BYTES) {
        let b: &[u8; CHALLENGE_BYTES] = b.try_into().expect("challenge bytes");
        if let Err(e) = check_challenge(&KEY, 0, 1, &nonce, b) {
            protocol_or_auth(&e);
        }
    }
    if let Some(b) = data.get(..PROOF_BYTES) {
        let b: &[u8; PROOF_BYTES] = b.try_into().expect("proof bytes");
        if let Err(e) = check_proof(&KEY, 0, 1, &nonce, &nonce, b) {
            protocol_or_auth(&e);
        }
    }
}

/// The bootstrap store's framing over a stream: frames read until the stream ends or a frame
/// is refused, each body decoded as a request.
pub fn boot_frame(data: &[u8]) {
    let mut r = Cursor::new(data);
    for _ in 0..1024 {
        match weft_boot::wire::read_frame(&mut r) {
            Ok(Some(body)) => {
                assert!(body.len() <= weft_boot::wire::MAX_FRAME_BYTES);
                boot_request(&body);
            }
            Ok(None) => return,
            Err(e) => return protocol_or_auth(&e),
        }
    }
}

/// A bootstrap request body; what decodes re-encodes to the same bytes.
pub fn boot_request(data: &[u8]) {
    use weft_boot::wire::Request;
    match Request::decode(data) {
        Ok(req) => {
            let again = req.encode().expect("a decoded request re-encodes");
            assert_eq!(Request::decode(&again).expect("re-decodes"), req);
        }
        Err(e) => protocol_or_auth(&e),
    }
}

/// A bootstrap response body; what decodes re-encodes and decodes to the same value.
pub fn boot_response(data: &[u8]) {
    use weft_boot::wire::Response;
    match Response::decode(data) {
        Ok(resp) => {
            let again = Response::decode(&resp.encode()).expect("re-decodes");
            assert_eq!(again, resp);
        }
        Err(e) => protocol_or_auth(&e),
    }
}

/// A stream that reads from fixed bytes and swallows what is written.
struct Scripted<'a> {
    input: Cursor<&'a [u8]>,
}

impl Read for Scripted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Scripted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Both sides of the bootstrap handshake reading a peer that sends these bytes: never
/// accepted without the secret (the server's random nonce cannot be answered in advance),
/// and a client never accepts a server that did not prove it.
pub fn boot_handshake(data: &[u8]) {
    let secret = [0x33u8; 32];
    let mut s = Scripted {
        input: Cursor::new(data),
    };
    assert!(
        weft_boot::auth::server_handshake(&mut s, &secret).is_err(),
        "a scripted peer proved the secret against a fresh nonce"
    );
    let mut c = Scripted {
        input: Cursor::new(data),
    };
    if let Err(e) = weft_boot::auth::client_handshake(&mut c, &secret, "fuzz") {
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Protocol | ErrorKind::Auth | ErrorKind::Io | ErrorKind::PeerDead
            ),
            "{e}"
        );
    } else {
        panic!("a client accepted a server that never saw its nonce");
    }
}

/// A launcher-to-agent message; what decodes re-encodes to the same bytes.
pub fn agent_to_agent(data: &[u8]) {
    use weft_launch::agent_wire::ToAgent;
    match ToAgent::decode(data) {
        Ok(m) => assert_eq!(ToAgent::decode(&m.encode()).expect("re-decodes"), m),
        Err(e) => protocol_or_auth(&e),
    }
}

/// An agent-to-launcher message; what decodes re-encodes to the same bytes.
pub fn agent_from_agent(data: &[u8]) {
    use weft_launch::agent_wire::FromAgent;
    match FromAgent::decode(data) {
        Ok(m) => assert_eq!(FromAgent::decode(&m.encode()).expect("re-decodes"), m),
        Err(e) => protocol_or_auth(&e),
    }
}

/// The one-sided service's request stream: requests decoded one after another.
pub fn rma_request(data: &[u8]) {
    use weft::rma::net::wire::{decode_request, Decoded, HEAD_BYTES, MAX_PAYLOAD_BYTES};
    let mut rest = data;
    loop {
        match decode_request(rest) {
            Ok(Decoded::NeedBytes(n)) => {
                assert!(
                    n > rest.len(),
                    "asks for {n} bytes while holding {}",
                    rest.len()
                );
                assert!(
                    n <= HEAD_BYTES + MAX_PAYLOAD_BYTES + 64,
                    "asks for {n} bytes"
                );
                return;
            }
            Ok(Decoded::Request(_, used)) => {
                assert!(
                    used > 0 && used <= rest.len(),
                    "used {used} of {}",
                    rest.len()
                );
                rest = &rest[used..];
            }
            Err(e) => return protocol_or_auth(&e),
        }
    }
}

/// A one-sided reply head as the initiator reads it.
pub fn rma_reply(data: &[u8]) {
    use weft::rma::net::wire::{decode_reply_head, REPLY_HEAD_BYTES};
    for chunk in data.chunks_exact(REPLY_HEAD_BYTES) {
        let h: &[u8; REPLY_HEAD_BYTES] = chunk.try_into().expect("head bytes");
        match decode_reply_head(h, 64) {
            Ok((_, len, _)) => assert!(len <= 4096, "a reply of {len} bytes accepted"),
            Err(e) => protocol_or_auth(&e),
        }
    }
}

/// Seed inputs of each target's corpus: (target, file name, bytes), made with the encoders,
/// plus a few malformed ones.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    use weft_boot::wire::{Request, Response};
    use weft_launch::agent_wire::{FromAgent, RankStart, ToAgent};
    let mut out = Vec::new();
    let mut add =
        |t: &'static str, name: &str, bytes: Vec<u8>| out.push((t, name.to_owned(), bytes));
    // Bootstrap requests and responses, and their frames.
    let requests = [
        (
            "put",
            Request::Put {
                key: "node/0".into(),
                value: b"host-a".to_vec(),
            },
        ),
        (
            "get",
            Request::Get {
                key: "shm/a".into(),
                timeout_ms: 30_000,
            },
        ),
        (
            "barrier",
            Request::Barrier {
                name: "shm-attached/a".into(),
                count: 4,
                timeout_ms: 1000,
            },
        ),
        (
            "abort",
            Request::Abort {
                code: 58,
                rank: Some(3),
                message: "peer died".into(),
            },
        ),
        (
            "abort-anon",
            Request::Abort {
                code: -1,
                rank: None,
                message: String::new(),
            },
        ),
    ];
    for (name, r) in &requests {
        let body = r.encode().expect("seed encodes");
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        add("boot_frame", &format!("ok-{name}.bin"), frame);
        add("boot_request", &format!("ok-{name}.bin"), body);
    }
    add("boot_request", "err-opcode.bin", vec![0x7f, 1, 2]);
    add(
        "boot_request",
        "err-key-too-long.bin",
        vec![1, 0xff, 0xff, 0xff, 0xff],
    );
    add(
        "boot_frame",
        "err-len-max.bin",
        u32::MAX.to_be_bytes().to_vec(),
    );
    add("boot_frame", "err-truncated.bin", vec![0, 0, 1, 0, 1, 2]);
    let responses = [
        ("ok", Response::Ok),
        ("value", Response::Value(b"127.0.0.1:4000".to_vec())),
        (
            "error",
            Response::Error(weft_core::Error::new(ErrorKind::Timeout, "no answer")),
        ),
    ];
    for (name, r) in &responses {
        add("boot_response", &format!("ok-{name}.bin"), r.encode());
    }
    add("boot_response", "err-code.bin", vec![0x10]);
    // Handshake bytes: a store's greeting, a busy answer, garbage.
    let mut hello = b"WEFTBOOT".to_vec();
    hello.push(1);
    hello.extend_from_slice(&[9u8; 32]);
    add("boot_handshake", "greeting.bin", hello.clone());
    hello.push(1);
    hello.extend_from_slice(&[0u8; 32]);
    add("boot_handshake", "greeting-and-accept.bin", hello);
    add(
        "boot_handshake",
        "busy.bin",
        b"WEFTBUSYtoo many pending connections from 10.0.0.1".to_vec(),
    );
    add(
        "boot_handshake",
        "http.bin",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
    );
    // Agent wire.
    let start = ToAgent::Start {
        program: b"/bin/true".to_vec(),
        args: vec![b"-x".to_vec(), Vec::new()],
        env: vec![("WEFT_YIELD".into(), "on".into())],
        ranks: vec![RankStart {
            rank: 3,
            vars: vec![("WEFT_RANK".into(), "3".into())],
            stdin: true,
        }],
    };
    add("agent_to_agent", "ok-start.bin", start.encode());
    add("agent_to_agent", "ok-stop.bin", ToAgent::Stop.encode());
    add(
        "agent_to_agent",
        "ok-input.bin",
        ToAgent::Input {
            rank: 2,
            data: b"line of stdin\n".to_vec(),
        }
        .encode(),
    );
    add("agent_to_agent", "err-empty.bin", Vec::new());
    add(
        "agent_to_agent",
        "err-count-huge.bin",
        vec![1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
    );
    let from = [
        (
            "hello",
            FromAgent::Hello {
                host: "a".into(),
                job_id: "0123456789ab".into(),
            },
        ),
        ("started", FromAgent::Started { rank: 1, pid: 4242 }),
        (
            "not-started",
            FromAgent::NotStarted {
                rank: 0,
                exit_code: 127,
                message: "not found".into(),
            },
        ),
        (
            "output",
            FromAgent::Output {
                rank: 2,
                stream: 1,
                data: b"hello\n".to_vec(),
            },
        ),
        (
            "exited",
            FromAgent::Exited {
                rank: 2,
                pid: 9,
                signal: true,
                value: 9,
            },
        ),
        (
            "finished",
            FromAgent::Finished {
                segments_removed: 2,
            },
        ),
    ];
    for (name, m) in &from {
        add("agent_from_agent", &format!("ok-{name}.bin"), m.encode());
    }
    add("agent_from_agent", "err-tag.bin", vec![99]);
    // One-sided requests and replies.
    {
        use weft::rma::net::wire::{self, Amo};
        let mut reqs = Vec::new();
        wire::put_head(&mut reqs, wire::SPACE_HEAP, 64, 4);
        reqs.extend_from_slice(&[1, 2, 3, 4]);
        wire::get(&mut reqs, wire::SPACE_IMAGE, 8, 16);
        wire::amo(&mut reqs, wire::SPACE_HEAP, 0, 8, Amo::Add, 5, 0, true);
        wire::sync(&mut reqs);
        add("rma_request", "ok-put-get-amo-sync.bin", reqs.clone());
        add("rma_request", "more-cut.bin", reqs[..20].to_vec());
        add(
            "rma_request",
            "err-space.bin",
            vec![2, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        let mut replies = Vec::new();
        wire::reply_err(&mut replies, "out of bounds");
        add("rma_reply", "ok-error.bin", replies[..16].to_vec());
        let mut bad = vec![0u8; 16];
        bad[0] = 7;
        add("rma_reply", "err-status.bin", bad);
    }
    // TCP handshake: a hello from rank 0 to rank 1 of 4, and noise.
    let hello = weft_transport::tcp::handshake::hello(0, 1, &[3u8; 32]);
    add("tcp_handshake", "ok-hello.bin", hello.to_vec());
    add("tcp_handshake", "err-noise.bin", vec![0xa5; 96]);
    out
}
