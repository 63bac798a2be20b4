//! Framing and message encoding of the bootstrap protocol, after the handshake.
//!
//! A frame is a 4-byte big-endian body length followed by the body; a body is an opcode byte
//! and its fields. Nothing read from the wire is trusted: lengths are capped before any buffer
//! is sized from them, truncation and trailing bytes are errors, keys must be UTF-8.
//! This module does no networking of its own (it reads from any `Read`) and depends only on
//! weft-core.

use std::io::{self, Read, Write};
pub(crate) use weft_core::handshake::read_full;
use weft_core::{Error, ErrorKind, Result};

/// Longest key or barrier name, in bytes.
pub const MAX_KEY_BYTES: usize = 4 << 10;
/// Longest value a `put` may store, in bytes.
pub const MAX_VALUE_BYTES: usize = 16 << 20;
/// Longest abort or error message carried, in bytes (longer ones are cut by the sender).
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;
/// Largest frame body accepted: a put of the largest key and value plus field headers.
pub const MAX_FRAME_BYTES: usize = MAX_VALUE_BYTES + MAX_KEY_BYTES + 64;

const OP_PUT: u8 = 1;
const OP_GET: u8 = 2;
const OP_BARRIER: u8 = 3;
const OP_ABORT: u8 = 4;
const OP_GET_MANY: u8 = 5;
const RESP_OK: u8 = 0x80;
const RESP_VALUE: u8 = 0x81;
const RESP_ERROR: u8 = 0x82;
const RESP_VALUES: u8 = 0x83;
/// Most keys one `GetMany` may name.
pub const MAX_KEYS_PER_REQUEST: usize = 1 << 16;

/// Rank value on the wire meaning "the client did not say which rank it is".
const RANK_UNKNOWN: u32 = u32::MAX;

/// A client's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Store `value` under `key`.
    Put { key: String, value: Vec<u8> },
    /// Wait up to `timeout_ms` for `key`, then return its value.
    Get { key: String, timeout_ms: u64 },
    /// Enter barrier `name` of `count` callers, waiting up to `timeout_ms`.
    Barrier {
        name: String,
        count: u32,
        timeout_ms: u64,
    },
    /// Wait up to `timeout_ms` (for all of them) for every key of `keys`, then return their
    /// values in order.
    GetMany { keys: Vec<String>, timeout_ms: u64 },
    /// Ask the launcher to end the job with `code`.
    Abort {
        code: i32,
        rank: Option<u32>,
        message: String,
    },
}

/// The server's answer to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The request was carried out.
    Ok,
    /// The value a `get` asked for.
    Value(Vec<u8>),
    /// The values a `get_many` asked for, in its order.
    Values(Vec<Vec<u8>>),
    /// The request failed; the kind and message are those of the server-side error.
    Error(Error),
}

/// Reads one frame body. `Ok(None)` means the peer closed the connection cleanly between
/// frames; a close inside a frame is a protocol error.
pub fn read_frame(r: &mut impl Read) -> Result<Option<Vec<u8>>> {
    let mut header = [0u8; 4];
    let got = read_full(r, &mut header)?;
    if got == 0 {
        return Ok(None);
    }
    if got < header.len() {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("truncated frame header: {got} of 4 bytes before end of stream"),
        ));
    }
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("frame of {len} bytes exceeds the limit of {MAX_FRAME_BYTES} bytes"),
        ));
    }
    // Grow the buffer as bytes arrive rather than trusting `len` up front, so a peer that
    // announces a large frame and sends nothing costs no memory.
    let mut body = Vec::with_capacity(len.min(64 << 10));
    r.take(len as u64)
        .read_to_end(&mut body)
        .map_err(|e| io_error("reading frame body", e))?;
    if body.len() < len {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "truncated frame: header announced {len} bytes, stream ended after {}",
                body.len()
            ),
        ));
    }
    Ok(Some(body))
}

/// Writes `body` as one frame (single write call so frames are not split by Nagle delays).
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> Result<()> {
    if body.len() > MAX_FRAME_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidCount,
            format!(
                "frame of {} bytes exceeds the limit of {MAX_FRAME_BYTES} bytes",
                body.len()
            ),
        ));
    }
    let mut buf = Vec::with_capacity(body.len() + 4);
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(body);
    w.write_all(&buf)
        .and_then(|_| w.flush())
        .map_err(|e| io_error("writing frame", e))
}

/// Maps socket errors so that a read timeout reads as a timeout, not a generic I/O failure.
pub(crate) fn io_error(context: &str, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            Error::new(ErrorKind::Timeout, format!("{context}: no answer in time"))
        }
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionAborted => {
            Error::new(ErrorKind::PeerDead, format!("{context}: {e}"))
        }
        _ => Error::io(context, e),
    }
}

impl Request {
    /// Encodes the request as a frame body, checking the length limits.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        match self {
            Request::Put { key, value } => {
                check_key("key", key)?;
                if value.len() > MAX_VALUE_BYTES {
                    return Err(Error::new(
                        ErrorKind::InvalidCount,
                        format!(
                            "put {key:?}: value of {} bytes exceeds the limit of {MAX_VALUE_BYTES} bytes",
                            value.len()
                        ),
                    ));
                }
                out.push(OP_PUT);
                put_bytes(&mut out, key.as_bytes());
                put_bytes(&mut out, value);
            }
            Request::Get { key, timeout_ms } => {
                check_key("key", key)?;
                out.push(OP_GET);
                put_bytes(&mut out, key.as_bytes());
                out.extend_from_slice(&timeout_ms.to_be_bytes());
            }
            Request::GetMany { keys, timeout_ms } => {
                if keys.len() > MAX_KEYS_PER_REQUEST {
                    return Err(Error::new(
                        ErrorKind::InvalidCount,
                        format!(
                            "get of {} keys at once exceeds the limit of {MAX_KEYS_PER_REQUEST}",
                            keys.len()
                        ),
                    ));
                }
                out.push(OP_GET_MANY);
                out.extend_from_slice(&(keys.len() as u32).to_be_bytes());
                for k in keys {
                    check_key("key", k)?;
                    put_bytes(&mut out, k.as_bytes());
                }
                out.extend_from_slice(&timeout_ms.to_be_bytes());
                if out.len() > MAX_FRAME_BYTES {
                    return Err(Error::new(
                        ErrorKind::InvalidCount,
                        format!("get of {} keys does not fit one frame", keys.len()),
                    ));
                }
            }
            Request::Barrier {
                name,
                count,
                timeout_ms,
            } => {
                check_key("barrier name", name)?;
                out.push(OP_BARRIER);
                put_bytes(&mut out, name.as_bytes());
                out.extend_from_slice(&count.to_be_bytes());
                out.extend_from_slice(&timeout_ms.to_be_bytes());
            }
            Request::Abort {
                code,
                rank,
                message,
            } => {
                out.push(OP_ABORT);
                out.extend_from_slice(&code.to_be_bytes());
                out.extend_from_slice(&rank.unwrap_or(RANK_UNKNOWN).to_be_bytes());
                put_bytes(
                    &mut out,
                    truncate_utf8(message, MAX_MESSAGE_BYTES).as_bytes(),
                );
            }
        }
        Ok(out)
    }

    /// Decodes a frame body; any deviation from the format is a protocol error.
    pub fn decode(body: &[u8]) -> Result<Request> {
        let mut r = Fields::new(body);
        let req = match r.u8("opcode")? {
            OP_PUT => Request::Put {
                key: r.text("key", MAX_KEY_BYTES)?,
                value: r.bytes("value", MAX_VALUE_BYTES)?.to_vec(),
            },
            OP_GET => Request::Get {
                key: r.text("key", MAX_KEY_BYTES)?,
                timeout_ms: r.u64("timeout")?,
            },
            OP_GET_MANY => {
                let n = r.u32("key count")? as usize;
                if n > MAX_KEYS_PER_REQUEST {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("get of {n} keys exceeds the limit of {MAX_KEYS_PER_REQUEST}"),
                    ));
                }
                // Each key takes at least its 4-byte length: a count the frame cannot hold
                // is refused before anything is sized from it.
                if n * 4 > body.len() {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("get of {n} keys in a frame of {} bytes", body.len()),
                    ));
                }
                let mut keys = Vec::with_capacity(n);
                for _ in 0..n {
                    keys.push(r.text("key", MAX_KEY_BYTES)?);
                }
                Request::GetMany {
                    keys,
                    timeout_ms: r.u64("timeout")?,
                }
            }
            OP_BARRIER => Request::Barrier {
                name: r.text("barrier name", MAX_KEY_BYTES)?,
                count: r.u32("barrier count")?,
                timeout_ms: r.u64("timeout")?,
            },
            OP_ABORT => {
                let code = r.u32("abort code")? as i32;
                let rank = r.u32("abort rank")?;
                Request::Abort {
                    code,
                    rank: (rank != RANK_UNKNOWN).then_some(rank),
                    message: r.text("abort message", MAX_MESSAGE_BYTES)?,
                }
            }
            other => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!("unknown request opcode {other:#04x}"),
                ))
            }
        };
        r.finish()?;
        Ok(req)
    }
}

impl Response {
    /// Encodes the response as a frame body. Values that would not fit one frame become an
    /// error response saying so.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Response::Ok => out.push(RESP_OK),
            Response::Value(v) => {
                out.push(RESP_VALUE);
                put_bytes(&mut out, v);
            }
            Response::Values(vs) => {
                let total: usize = vs.iter().map(|v| v.len() + 4).sum::<usize>() + 5;
                if total > MAX_FRAME_BYTES {
                    return Response::Error(Error::new(
                        ErrorKind::InvalidCount,
                        format!(
                            "{} values of {total} bytes do not fit one frame; ask for fewer keys",
                            vs.len()
                        ),
                    ))
                    .encode();
                }
                out.push(RESP_VALUES);
                out.extend_from_slice(&(vs.len() as u32).to_be_bytes());
                for v in vs {
                    put_bytes(&mut out, v);
                }
            }
            Response::Error(e) => {
                out.push(RESP_ERROR);
                out.push(kind_code(e.kind()));
                put_bytes(
                    &mut out,
                    truncate_utf8(e.message(), MAX_MESSAGE_BYTES).as_bytes(),
                );
            }
        }
        out
    }

    /// Decodes a frame body; any deviation from the format is a protocol error.
    pub fn decode(body: &[u8]) -> Result<Response> {
        let mut r = Fields::new(body);
        let resp = match r.u8("response code")? {
            RESP_OK => Response::Ok,
            RESP_VALUE => Response::Value(r.bytes("value", MAX_VALUE_BYTES)?.to_vec()),
            RESP_VALUES => {
                let n = r.u32("value count")? as usize;
                if n * 4 > body.len() {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("{n} values in a frame of {} bytes", body.len()),
                    ));
                }
                let mut vs = Vec::with_capacity(n);
                for _ in 0..n {
                    vs.push(r.bytes("value", MAX_VALUE_BYTES)?.to_vec());
                }
                Response::Values(vs)
            }
            RESP_ERROR => {
                let kind = code_kind(r.u8("error kind")?);
                Response::Error(Error::new(
                    kind,
                    r.text("error message", MAX_MESSAGE_BYTES)?,
                ))
            }
            other => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!("unknown response code {other:#04x}"),
                ))
            }
        };
        r.finish()?;
        Ok(resp)
    }
}

fn check_key(what: &str, key: &str) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{what} of {} bytes exceeds the limit of {MAX_KEY_BYTES} bytes",
                key.len()
            ),
        ));
    }
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub(crate) fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Error kinds travel as small codes; unknown codes decode as `Internal` rather than failing,
/// so a newer server's kinds still reach the user with their message.
const KIND_CODES: &[(ErrorKind, u8)] = &[
    (ErrorKind::InvalidArgument, 1),
    (ErrorKind::InvalidCount, 2),
    (ErrorKind::Timeout, 3),
    (ErrorKind::Protocol, 4),
    (ErrorKind::PeerDead, 5),
    (ErrorKind::Io, 6),
    (ErrorKind::Auth, 7),
    (ErrorKind::Internal, 8),
];

fn kind_code(kind: ErrorKind) -> u8 {
    KIND_CODES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, c)| *c)
        .unwrap_or(8)
}

fn code_kind(code: u8) -> ErrorKind {
    KIND_CODES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(k, _)| *k)
        .unwrap_or(ErrorKind::Internal)
}

/// A cursor over a frame body whose every read is bounds-checked.
struct Fields<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn new(body: &'a [u8]) -> Self {
        Fields { body, pos: 0 }
    }

    fn take(&mut self, what: &str, n: usize) -> Result<&'a [u8]> {
        let left = self.body.len() - self.pos;
        if n > left {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("{what}: needs {n} bytes, frame has {left} left"),
            ));
        }
        let s = &self.body[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(what, 1)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(what, 4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(what, 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn bytes(&mut self, what: &str, max: usize) -> Result<&'a [u8]> {
        let len = self.u32(what)? as usize;
        if len > max {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("{what} of {len} bytes exceeds the limit of {max} bytes"),
            ));
        }
        self.take(what, len)
    }

    fn text(&mut self, what: &str, max: usize) -> Result<String> {
        let b = self.bytes(what, max)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| Error::new(ErrorKind::Protocol, format!("{what} is not valid UTF-8")))
    }

    fn finish(self) -> Result<()> {
        let left = self.body.len() - self.pos;
        if left != 0 {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("{left} unexpected bytes after the last field"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        write_frame(&mut v, body).unwrap();
        v
    }

    #[test]
    fn requests_round_trip() {
        let reqs = [
            Request::Put {
                key: "rank-3/addr".into(),
                value: vec![0, 1, 2, 255],
            },
            Request::Put {
                key: String::new(),
                value: Vec::new(),
            },
            Request::Get {
                key: "k".into(),
                timeout_ms: 12345,
            },
            Request::Barrier {
                name: "init".into(),
                count: 7,
                timeout_ms: u64::MAX,
            },
            Request::Abort {
                code: -3,
                rank: Some(2),
                message: "bad".into(),
            },
            Request::GetMany {
                keys: vec!["node/0".into(), String::new(), "tcp/3".into()],
                timeout_ms: 7,
            },
            Request::GetMany {
                keys: Vec::new(),
                timeout_ms: 0,
            },
            Request::Abort {
                code: 1,
                rank: None,
                message: String::new(),
            },
        ];
        for req in reqs {
            let body = req.encode().unwrap();
            let mut cur = std::io::Cursor::new(frame(&body));
            let got = read_frame(&mut cur).unwrap().unwrap();
            assert_eq!(Request::decode(&got).unwrap(), req);
            assert_eq!(
                read_frame(&mut cur).unwrap(),
                None,
                "clean end after one frame"
            );
        }
    }

    #[test]
    fn responses_round_trip() {
        for resp in [
            Response::Ok,
            Response::Value(b"xyz".to_vec()),
            Response::Values(vec![b"a".to_vec(), Vec::new(), b"ccc".to_vec()]),
            Response::Values(Vec::new()),
            Response::Error(Error::new(ErrorKind::Timeout, "get \"k\": not put")),
        ] {
            assert_eq!(Response::decode(&resp.encode()).unwrap(), resp);
        }
    }

    #[test]
    fn oversized_length_is_refused_without_allocating() {
        let mut wire = (u32::MAX).to_be_bytes().to_vec();
        wire.extend_from_slice(b"abc");
        let e = read_frame(&mut wire.as_slice()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(e.message().contains("exceeds the limit"), "{e}");
        let just_over = ((MAX_FRAME_BYTES + 1) as u32).to_be_bytes();
        assert!(read_frame(&mut just_over.as_slice()).is_err());
    }

    #[test]
    fn truncated_frames_are_errors() {
        let e = read_frame(&mut [0u8, 0].as_slice()).unwrap_err();
        assert!(e.message().contains("truncated frame header"), "{e}");
        let mut wire = 10u32.to_be_bytes().to_vec();
        wire.extend_from_slice(b"abc");
        let e = read_frame(&mut wire.as_slice()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(e.message().contains("announced 10 bytes"), "{e}");
    }

    #[test]
    fn garbage_bodies_are_protocol_errors() {
        let cases: &[&[u8]] = &[
            b"",
            b"\x00",
            b"\x01",
            b"\x01\x00\x00\x00\x05ab",
            b"\x02\xff\xff\xff\xff",
            b"\x01\x00\x00\x00\x01\xff\x00\x00\x00\x00",
            b"\x80\x00",
            b"GET / HTTP/1.1\r\n",
            // GetMany: a count no frame can hold, a key cut short, no timeout.
            b"\x05\xff\xff\xff\xff",
            b"\x05\x00\x00\x00\x02\x00\x00\x00\x01a",
            b"\x05\x00\x00\x00\x00",
        ];
        for body in cases {
            let e = Request::decode(body).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Protocol, "{body:?}: {e}");
        }
        assert_eq!(
            Response::decode(b"\x81\x00\x00").unwrap_err().kind(),
            ErrorKind::Protocol
        );
        for body in [
            &b"\x83\x7f\xff\xff\xff"[..],
            b"\x83\x00\x00\x00\x01",
            b"\x83",
        ] {
            assert_eq!(
                Response::decode(body).unwrap_err().kind(),
                ErrorKind::Protocol,
                "{body:?}"
            );
        }
    }

    #[test]
    fn pseudo_random_bodies_never_panic() {
        // A small deterministic generator: every prefix of every body must decode or error.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut body = Vec::new();
            for _ in 0..(x % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                body.push(x as u8);
            }
            let _ = Request::decode(&body);
            let _ = Response::decode(&body);
            let mut cur = body.as_slice();
            let _ = read_frame(&mut cur);
        }
    }

    #[test]
    fn limits_are_checked_when_encoding() {
        let long_key = "k".repeat(MAX_KEY_BYTES + 1);
        let e = Request::Get {
            key: long_key,
            timeout_ms: 0,
        }
        .encode()
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let e = Request::Put {
            key: "v".into(),
            value: vec![0; MAX_VALUE_BYTES + 1],
        }
        .encode()
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidCount);
        assert!(e.message().contains("\"v\""), "{e}");
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let body = Request::Abort {
            code: 1,
            rank: None,
            message: long,
        }
        .encode()
        .unwrap();
        match Request::decode(&body).unwrap() {
            Request::Abort { message, .. } => assert!(message.len() <= MAX_MESSAGE_BYTES),
            other => panic!("decoded {other:?}"),
        }
    }
}
