//! The frame codec of the TCP transport: a fixed 24-byte little-endian header followed by a
//! body whose length is bounded per kind.
//!
//! The decoder never trusts the wire: an unknown kind, a nonzero reserved field or a body
//! longer than its kind allows is an error (the connection is then dropped), and a truncated
//! frame is reported as "need more bytes" without reading past the input. Nothing here does
//! I/O; it depends only on `weft-core` and the shared message header.

use crate::shm::Header;
use weft_core::{Error, ErrorKind, Result};

/// Bytes of a frame header on the wire.
pub const FRAME_HEADER_BYTES: usize = 24;

/// A message carried whole (at most the eager limit).
pub const KIND_EAGER: u8 = 1;
/// Request to send: the body is the message length (u64); the receiver answers with `CTS`.
pub const KIND_RTS: u8 = 2;
/// Clear to send: `aux` names the sender's request; the body holds the receiver's request
/// (u32) and the largest fragment the receiver wants (u32: small while the peer is in
/// memory-saving mode). Flag [`CTS_DISCARD`] says the receiver wants no data (its buffer is
/// too small).
pub const KIND_CTS: u8 = 3;
/// One fragment of a rendezvous message, in order; `aux` names the receiver's request.
pub const KIND_FRAG: u8 = 5;

/// `CTS` flag: the receive was truncated, complete the send without data.
pub const CTS_DISCARD: u8 = 1;

/// Body bytes of `RTS`.
pub const RTS_BODY_BYTES: usize = 8;
/// Body bytes of `CTS`.
pub const CTS_BODY_BYTES: usize = 8;

/// Largest bodies the decoder accepts, fixed per job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest `EAGER` body.
    pub eager_bytes: u32,
    /// Largest `FRAG` body.
    pub fragment_bytes: u32,
}

impl Limits {
    /// The largest frame (header and body) these limits allow.
    pub fn max_frame_bytes(&self) -> usize {
        FRAME_HEADER_BYTES + self.eager_bytes.max(self.fragment_bytes) as usize
    }
}

/// What [`decode`] found at the start of its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The input holds less than one whole frame.
    NeedMore,
    /// A whole frame: its header, and its body at `FRAME_HEADER_BYTES..FRAME_HEADER_BYTES+len`.
    Frame(Header),
}

/// Writes `h` as a wire header.
pub fn encode_header(h: &Header) -> [u8; FRAME_HEADER_BYTES] {
    let mut b = [0u8; FRAME_HEADER_BYTES];
    b[0] = h.kind;
    b[1] = h.flags;
    b[2..4].copy_from_slice(&h.reserved.to_le_bytes());
    b[4..8].copy_from_slice(&h.src.to_le_bytes());
    b[8..12].copy_from_slice(&h.ctx.to_le_bytes());
    b[12..16].copy_from_slice(&h.tag.to_le_bytes());
    b[16..20].copy_from_slice(&h.len.to_le_bytes());
    b[20..24].copy_from_slice(&h.aux.to_le_bytes());
    b
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Checks that a header is one this job could have sent.
pub fn check_header(h: &Header, limits: &Limits) -> Result<()> {
    if h.reserved != 0 {
        return Err(protocol(format!(
            "frame of kind {} has reserved field {:#x}, expected 0",
            h.kind, h.reserved
        )));
    }
    let (allowed, what) = match h.kind {
        KIND_EAGER => (h.len <= limits.eager_bytes, "at most the eager limit"),
        KIND_RTS => (h.len as usize == RTS_BODY_BYTES, "exactly 8"),
        KIND_CTS => (h.len as usize == CTS_BODY_BYTES, "exactly 8"),
        KIND_FRAG => (
            h.len >= 1 && h.len <= limits.fragment_bytes,
            "1 up to the fragment size",
        ),
        other => return Err(protocol(format!("frame of unknown kind {other}"))),
    };
    if !allowed {
        return Err(protocol(format!(
            "frame of kind {} with a body of {} bytes (must be {what}: eager {} B, fragment {} B)",
            h.kind, h.len, limits.eager_bytes, limits.fragment_bytes
        )));
    }
    Ok(())
}

/// Decodes the frame at the start of `input`. Reads only `input`; never panics.
pub fn decode(input: &[u8], limits: &Limits) -> Result<Decoded> {
    let Some(h) = peek_header(input) else {
        return Ok(Decoded::NeedMore);
    };
    // Checked before the length is used for anything, so a lying length cannot make the
    // caller wait for (or buffer) more than a legitimate frame.
    check_header(&h, limits)?;
    if input.len() - FRAME_HEADER_BYTES < h.len as usize {
        return Ok(Decoded::NeedMore);
    }
    Ok(Decoded::Frame(h))
}

/// The header at the start of `input`, unchecked (None when fewer bytes than a header):
/// for a frame [`decode`] already found sound but incomplete.
pub fn peek_header(input: &[u8]) -> Option<Header> {
    if input.len() < FRAME_HEADER_BYTES {
        return None;
    }
    Some(Header {
        kind: input[0],
        flags: input[1],
        reserved: u16::from_le_bytes([input[2], input[3]]),
        src: word(input, 4),
        ctx: word(input, 8),
        tag: word(input, 12) as i32,
        len: word(input, 16),
        aux: word(input, 20),
    })
}

fn protocol(message: String) -> Error {
    Error::new(ErrorKind::Protocol, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        eager_bytes: 64,
        fragment_bytes: 128,
    };

    fn frame(h: &Header, body: &[u8]) -> Vec<u8> {
        let mut v = encode_header(h).to_vec();
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn round_trip_and_truncation() {
        let h = Header {
            kind: KIND_EAGER,
            src: 3,
            ctx: 4,
            tag: -5,
            len: 3,
            aux: 9,
            ..Header::default()
        };
        let f = frame(&h, b"abc");
        assert_eq!(decode(&f, &LIMITS).unwrap(), Decoded::Frame(h));
        for cut in 0..f.len() {
            assert_eq!(decode(&f[..cut], &LIMITS).unwrap(), Decoded::NeedMore);
        }
    }

    #[test]
    fn lies_are_rejected() {
        let base = Header {
            kind: KIND_EAGER,
            len: 65,
            ..Header::default()
        };
        let e = decode(&encode_header(&base), &LIMITS).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(e.message().contains("65"), "{e}");
        for (kind, len) in [
            (KIND_RTS, 7),
            (KIND_CTS, 4),
            (KIND_FRAG, 0),
            (KIND_FRAG, 129),
        ] {
            let h = Header {
                kind,
                len,
                ..Header::default()
            };
            assert!(decode(&encode_header(&h), &LIMITS).is_err(), "{kind} {len}");
        }
        for kind in [0u8, 4, 6, 7, 200] {
            let h = Header {
                kind,
                ..Header::default()
            };
            let e = decode(&encode_header(&h), &LIMITS).unwrap_err();
            assert!(e.message().contains("unknown kind"), "{e}");
        }
        let h = Header {
            kind: KIND_EAGER,
            reserved: 1,
            ..Header::default()
        };
        assert!(decode(&encode_header(&h), &LIMITS).is_err());
    }
}
