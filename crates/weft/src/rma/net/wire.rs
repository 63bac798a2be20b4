//! The byte format of one-sided requests and replies between an initiator's lane and a
//! target PE's service (after the HMAC handshake). Pure: encodes and decodes byte strings,
//! no I/O, no `unsafe`, trusts nothing it reads.
//!
//! A request is a 16-byte head — op, width, space, atomic kind (one byte each), length
//! (u32), offset (u64), little endian — then, for atomics, two 8-byte operands, and for
//! puts, `length` bytes of data. A reply (sent only for gets, fetching atomics and syncs, in
//! request order) is a 16-byte head — status, three bytes of zero, length (u32), value
//! (u64) — then `length` bytes: the data of a get, or the error text when status is 1.
//!
//! MPI windows add two spaces ([`SPACE_WINDOW`], [`SPACE_WINDOW_CONTROL`]: the window's
//! slot in the offset's top bits) and three operations with data: accumulate, accumulate
//! with the old elements answered (the width byte names the element kind, the atomic-kind
//! byte the operation) and compare-and-swap (comparand then new value).
//!
//! [`decode_request`] checks the head against [`MAX_PAYLOAD_BYTES`] before anything else, so
//! a hostile length can neither allocate nor make the reader wait for gigabytes; offsets are
//! checked against the target's memory by the service, not here.

use weft_core::{Error, ErrorKind, Result};

/// Bytes of a request head.
pub const HEAD_BYTES: usize = 16;
/// Bytes of the operands that follow the head of an atomic.
pub const OPERAND_BYTES: usize = 16;
/// Bytes of a reply head.
pub const REPLY_HEAD_BYTES: usize = 16;
/// Largest payload of one put or get frame; longer transfers are split by the initiator.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// Store bytes at the offset.
pub const OP_PUT: u8 = 1;
/// Answer with bytes from the offset.
pub const OP_GET: u8 = 2;
/// Apply an atomic and answer with the old value.
pub const OP_AMO: u8 = 3;
/// Apply an atomic, answer nothing (set, add, ... and the signal of put-with-signal).
pub const OP_AMO_QUIET: u8 = 4;
/// Answer an empty reply once every earlier request of the connection is applied.
pub const OP_SYNC: u8 = 5;
/// Accumulate: combine the data (elements of the kind named by the width byte) into the
/// elements at the offset with the operation named by the atomic-kind byte; no answer.
pub const OP_ACC: u8 = 6;
/// Accumulate like [`OP_ACC`] and answer with the elements as they were before.
pub const OP_GET_ACC: u8 = 7;
/// Compare-and-swap of a `width`-byte element (1 to 16 bytes): the data is the comparand then
/// the new value; the answer is the element as it was.
pub const OP_CAS: u8 = 8;

/// The target PE's symmetric heap.
pub const SPACE_HEAP: u8 = 0;
/// The target PE's executable image (globals), offset from its load base.
pub const SPACE_IMAGE: u8 = 1;
/// Memory of an MPI window at the target: the offset's bits from [`WINDOW_SLOT_SHIFT`] up
/// name the window's slot in the target's registry, the bits below it a byte offset in the
/// window's memory (an address, for a dynamic window).
pub const SPACE_WINDOW: u8 = 2;
/// The control block (lock words) of an MPI window at the target, addressed as
/// [`SPACE_WINDOW`] is.
pub const SPACE_WINDOW_CONTROL: u8 = 3;
/// Where the window slot starts in the offset of [`SPACE_WINDOW`] and
/// [`SPACE_WINDOW_CONTROL`] requests: 48 bits of offset cover every user-space address of
/// x86-64 and AArch64.
pub const WINDOW_SLOT_SHIFT: u32 = 48;
/// Largest element of a compare-and-swap.
pub const MAX_CAS_BYTES: u8 = 16;

/// The offset of a window request: `slot` and the byte offset (or address) `at` in it, or
/// `None` when `at` does not fit below [`WINDOW_SLOT_SHIFT`].
pub fn window_offset(slot: u16, at: u64) -> Option<u64> {
    (at >> WINDOW_SLOT_SHIFT == 0).then_some((slot as u64) << WINDOW_SLOT_SHIFT | at)
}

/// The slot and byte offset of a window request's offset (the inverse of [`window_offset`]).
pub fn window_parts(offset: u64) -> (u16, u64) {
    (
        (offset >> WINDOW_SLOT_SHIFT) as u16,
        offset & ((1u64 << WINDOW_SLOT_SHIFT) - 1),
    )
}

/// The atomic operations a target applies to one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amo {
    /// Read the word.
    Fetch,
    /// Store `a`.
    Set,
    /// Store `a`, answer the old word.
    Swap,
    /// Store `b` when the word equals `a`.
    CompareSwap,
    /// Add `a` (wrapping).
    Add,
    /// And with `a`.
    And,
    /// Or with `a`.
    Or,
    /// Xor with `a`.
    Xor,
}

impl Amo {
    const ALL: [Amo; 8] = [
        Amo::Fetch,
        Amo::Set,
        Amo::Swap,
        Amo::CompareSwap,
        Amo::Add,
        Amo::And,
        Amo::Or,
        Amo::Xor,
    ];

    fn code(self) -> u8 {
        Amo::ALL.iter().position(|&a| a == self).unwrap_or(0) as u8
    }

    fn from_code(c: u8) -> Option<Amo> {
        Amo::ALL.get(c as usize).copied()
    }
}

/// One decoded request; `data` borrows the put's bytes from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// Store `data` at `offset` of `space`.
    Put {
        /// [`SPACE_HEAP`] or [`SPACE_IMAGE`].
        space: u8,
        /// Offset in that space.
        offset: u64,
        /// The bytes.
        data: &'a [u8],
    },
    /// Answer `len` bytes from `offset` of `space`.
    Get {
        /// [`SPACE_HEAP`] or [`SPACE_IMAGE`].
        space: u8,
        /// Offset in that space.
        offset: u64,
        /// Bytes wanted.
        len: u32,
    },
    /// Apply `amo` to the `width`-byte word at `offset`.
    Amo {
        /// [`SPACE_HEAP`] or [`SPACE_IMAGE`].
        space: u8,
        /// Offset of the word.
        offset: u64,
        /// 4 or 8.
        width: u8,
        /// The operation.
        amo: Amo,
        /// First operand (the value, or the comparand of a compare-swap).
        a: u64,
        /// Second operand (the new value of a compare-swap).
        b: u64,
        /// Whether the old value is answered.
        reply: bool,
    },
    /// Answer once everything before is applied.
    Sync,
    /// Combine `data` (elements of kind `kind`) into the elements at `offset` with
    /// operation `op` (codes of the window layer); with `reply`, answer the old elements.
    Acc {
        /// [`SPACE_WINDOW`] (the service refuses others).
        space: u8,
        /// Offset of the first element.
        offset: u64,
        /// Element kind code.
        kind: u8,
        /// Operation code.
        op: u8,
        /// The origin's elements.
        data: &'a [u8],
        /// Whether the old elements are answered.
        reply: bool,
    },
    /// Compare-and-swap of one element of `data.len() / 2` bytes: `data` is the comparand,
    /// then the new value; answers the old element.
    Cas {
        /// [`SPACE_WINDOW`].
        space: u8,
        /// Offset of the element.
        offset: u64,
        /// Comparand and new value.
        data: &'a [u8],
    },
}

/// A request decoded from the front of a buffer, or how many bytes are still missing.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A whole request and the bytes it took.
    Request(Request<'a>, usize),
    /// The buffer holds only part of a request: at least this many bytes in all are needed.
    NeedBytes(usize),
}

fn head(op: u8, width: u8, space: u8, amo: u8, len: u32, offset: u64) -> [u8; HEAD_BYTES] {
    let mut h = [0u8; HEAD_BYTES];
    h[0] = op;
    h[1] = width;
    h[2] = space;
    h[3] = amo;
    h[4..8].copy_from_slice(&len.to_le_bytes());
    h[8..16].copy_from_slice(&offset.to_le_bytes());
    h
}

/// Appends the head of a put of `len` bytes (the caller appends the bytes).
pub fn put_head(out: &mut Vec<u8>, space: u8, offset: u64, len: u32) {
    out.extend_from_slice(&head(OP_PUT, 0, space, 0, len, offset));
}

/// Grows the length of the put whose head starts at `at` in `out` by `more` bytes (the
/// caller appends them right after), for coalescing a contiguous put.
#[inline]
pub fn grow_put(out: &mut [u8], at: usize, more: u32) {
    let len = u32::from_le_bytes(out[at + 4..at + 8].try_into().expect("4 bytes"));
    out[at + 4..at + 8].copy_from_slice(&(len + more).to_le_bytes());
}

/// Appends a get request.
pub fn get(out: &mut Vec<u8>, space: u8, offset: u64, len: u32) {
    out.extend_from_slice(&head(OP_GET, 0, space, 0, len, offset));
}

/// Appends an atomic request.
#[allow(clippy::too_many_arguments)]
pub fn amo(
    out: &mut Vec<u8>,
    space: u8,
    offset: u64,
    width: u8,
    amo: Amo,
    a: u64,
    b: u64,
    reply: bool,
) {
    let op = if reply { OP_AMO } else { OP_AMO_QUIET };
    out.extend_from_slice(&head(op, width, space, amo.code(), 0, offset));
    out.extend_from_slice(&a.to_le_bytes());
    out.extend_from_slice(&b.to_le_bytes());
}

/// Appends a sync request.
pub fn sync(out: &mut Vec<u8>) {
    out.extend_from_slice(&head(OP_SYNC, 0, 0, 0, 0, 0));
}

/// Appends the head of an accumulate of `len` bytes of elements of `kind` with operation
/// `op` (the caller appends the bytes); with `reply`, the old elements are answered.
pub fn acc_head(
    out: &mut Vec<u8>,
    space: u8,
    offset: u64,
    kind: u8,
    op: u8,
    len: u32,
    reply: bool,
) {
    let code = if reply { OP_GET_ACC } else { OP_ACC };
    out.extend_from_slice(&head(code, kind, space, op, len, offset));
}

/// Appends a compare-and-swap of `compare.len()` bytes (`new` as long).
pub fn cas(out: &mut Vec<u8>, space: u8, offset: u64, compare: &[u8], new: &[u8]) {
    debug_assert_eq!(compare.len(), new.len());
    let len = (compare.len() + new.len()) as u32;
    out.extend_from_slice(&head(OP_CAS, compare.len() as u8, space, 0, len, offset));
    out.extend_from_slice(compare);
    out.extend_from_slice(new);
}

fn bad(what: String) -> Error {
    Error::new(ErrorKind::Protocol, format!("one-sided request: {what}"))
}

/// Decodes the request at the front of `input`.
pub fn decode_request(input: &[u8]) -> Result<Decoded<'_>> {
    if input.len() < HEAD_BYTES {
        return Ok(Decoded::NeedBytes(HEAD_BYTES));
    }
    let (op, width, space, amo) = (input[0], input[1], input[2], input[3]);
    let len = u32::from_le_bytes(input[4..8].try_into().expect("4 bytes"));
    let offset = u64::from_le_bytes(input[8..16].try_into().expect("8 bytes"));
    if op != OP_SYNC && space > SPACE_WINDOW_CONTROL {
        return Err(bad(format!(
            "space {space} is none of heap (0), image (1), window (2) and window control (3)"
        )));
    }
    match op {
        OP_PUT | OP_GET => {
            if len as usize > MAX_PAYLOAD_BYTES {
                return Err(bad(format!(
                    "length {len} is above the frame limit of {MAX_PAYLOAD_BYTES} bytes"
                )));
            }
            if op == OP_GET {
                return Ok(Decoded::Request(
                    Request::Get { space, offset, len },
                    HEAD_BYTES,
                ));
            }
            let total = HEAD_BYTES + len as usize;
            if input.len() < total {
                return Ok(Decoded::NeedBytes(total));
            }
            let data = &input[HEAD_BYTES..total];
            Ok(Decoded::Request(
                Request::Put {
                    space,
                    offset,
                    data,
                },
                total,
            ))
        }
        OP_AMO | OP_AMO_QUIET => {
            if width != 4 && width != 8 {
                return Err(bad(format!("atomic width {width}: must be 4 or 8")));
            }
            let amo =
                Amo::from_code(amo).ok_or_else(|| bad(format!("atomic kind {amo} is unknown")))?;
            let total = HEAD_BYTES + OPERAND_BYTES;
            if input.len() < total {
                return Ok(Decoded::NeedBytes(total));
            }
            let a = u64::from_le_bytes(input[16..24].try_into().expect("8 bytes"));
            let b = u64::from_le_bytes(input[24..32].try_into().expect("8 bytes"));
            let reply = op == OP_AMO;
            Ok(Decoded::Request(
                Request::Amo {
                    space,
                    offset,
                    width,
                    amo,
                    a,
                    b,
                    reply,
                },
                total,
            ))
        }
        OP_SYNC => Ok(Decoded::Request(Request::Sync, HEAD_BYTES)),
        OP_ACC | OP_GET_ACC | OP_CAS => {
            if len as usize > MAX_PAYLOAD_BYTES {
                return Err(bad(format!(
                    "length {len} is above the frame limit of {MAX_PAYLOAD_BYTES} bytes"
                )));
            }
            if op == OP_CAS && (width == 0 || width > MAX_CAS_BYTES || len != 2 * width as u32) {
                return Err(bad(format!(
                    "compare-and-swap of {width} bytes with {len} bytes of operands"
                )));
            }
            let total = HEAD_BYTES + len as usize;
            if input.len() < total {
                return Ok(Decoded::NeedBytes(total));
            }
            let data = &input[HEAD_BYTES..total];
            let req = if op == OP_CAS {
                Request::Cas {
                    space,
                    offset,
                    data,
                }
            } else {
                Request::Acc {
                    space,
                    offset,
                    kind: width,
                    op: amo,
                    data,
                    reply: op == OP_GET_ACC,
                }
            };
            Ok(Decoded::Request(req, total))
        }
        _ => Err(bad(format!("op {op} is unknown"))),
    }
}

/// Appends a successful reply carrying `value` and `data`.
pub fn reply_ok(out: &mut Vec<u8>, value: u64, data: &[u8]) {
    let mut h = [0u8; REPLY_HEAD_BYTES];
    h[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
    h[8..16].copy_from_slice(&value.to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
}

/// Appends a failed reply carrying the error text.
pub fn reply_err(out: &mut Vec<u8>, message: &str) {
    let text = &message.as_bytes()[..message.len().min(4096)];
    let mut h = [0u8; REPLY_HEAD_BYTES];
    h[0] = 1;
    h[4..8].copy_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(text);
}

/// A reply head: (failed, length of what follows, value).
pub fn decode_reply_head(
    h: &[u8; REPLY_HEAD_BYTES],
    max_bytes: usize,
) -> Result<(bool, usize, u64)> {
    let status = h[0];
    let len = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")) as usize;
    let value = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
    if status > 1 || h[1..4] != [0, 0, 0] {
        return Err(bad(format!("reply status {status} is not 0 or 1")));
    }
    if len > max_bytes.max(4096) {
        return Err(bad(format!(
            "reply of {len} bytes where at most {max_bytes} were asked"
        )));
    }
    Ok((status == 1, len, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_partial_frames() {
        let mut b = Vec::new();
        put_head(&mut b, SPACE_HEAP, 64, 3);
        b.extend_from_slice(b"abc");
        let at = 0;
        grow_put(&mut b, at, 2);
        b.extend_from_slice(b"de");
        amo(&mut b, SPACE_IMAGE, 8, 4, Amo::CompareSwap, 1, 2, true);
        get(&mut b, SPACE_HEAP, 0, 100);
        sync(&mut b);
        let mut pos = 0;
        let mut seen = Vec::new();
        while pos < b.len() {
            for cut in pos..b.len() {
                if let Decoded::NeedBytes(n) = decode_request(&b[pos..cut]).unwrap() {
                    assert!(n > cut - pos);
                } else {
                    break;
                }
            }
            match decode_request(&b[pos..]).unwrap() {
                Decoded::Request(r, n) => {
                    seen.push(format!("{r:?}"));
                    pos += n;
                }
                Decoded::NeedBytes(_) => panic!("whole buffer"),
            }
        }
        assert_eq!(seen.len(), 4);
        assert!(seen[0].contains("[97, 98, 99, 100, 101]"), "{seen:?}");
        assert!(seen[1].contains("CompareSwap") && seen[1].contains("reply: true"));
    }

    #[test]
    fn window_requests_round_trip() {
        let at = window_offset(7, 0x1234).unwrap();
        assert_eq!(window_parts(at), (7, 0x1234));
        assert!(window_offset(1, 1 << WINDOW_SLOT_SHIFT).is_none());
        let mut b = Vec::new();
        acc_head(&mut b, SPACE_WINDOW, at, 9, 0, 8, true);
        b.extend_from_slice(&1.5f64.to_le_bytes());
        cas(&mut b, SPACE_WINDOW, at, &[1, 0], &[2, 0]);
        let Decoded::Request(r, n) = decode_request(&b).unwrap() else {
            panic!("whole request")
        };
        assert_eq!(
            r,
            Request::Acc {
                space: SPACE_WINDOW,
                offset: at,
                kind: 9,
                op: 0,
                data: &1.5f64.to_le_bytes(),
                reply: true
            }
        );
        assert_eq!(n, HEAD_BYTES + 8);
        let Decoded::Request(r, m) = decode_request(&b[n..]).unwrap() else {
            panic!("whole request")
        };
        assert_eq!(
            r,
            Request::Cas {
                space: SPACE_WINDOW,
                offset: at,
                data: &[1, 0, 2, 0]
            }
        );
        assert_eq!(n + m, b.len());
        assert!(matches!(
            decode_request(&b[..n - 1]).unwrap(),
            Decoded::NeedBytes(_)
        ));
        // A compare-and-swap whose operands disagree with its width is refused.
        let mut c = Vec::new();
        cas(&mut c, SPACE_WINDOW, at, &[1, 0], &[2, 0]);
        c[1] = 3;
        assert!(decode_request(&c).is_err());
        c[1] = 0;
        assert!(decode_request(&c).is_err());
    }

    #[test]
    fn hostile_heads_are_errors() {
        let mut b = Vec::new();
        get(&mut b, SPACE_HEAP, 0, (MAX_PAYLOAD_BYTES + 1) as u32);
        assert!(decode_request(&b).is_err());
        let mut b = Vec::new();
        put_head(&mut b, 7, 0, 1);
        assert!(decode_request(&b).is_err());
        let mut b = Vec::new();
        amo(&mut b, SPACE_HEAP, 0, 8, Amo::Add, 1, 0, false);
        b[1] = 3;
        assert!(decode_request(&b).is_err());
        b[1] = 8;
        b[3] = 99;
        assert!(decode_request(&b).is_err());
        b[0] = 42;
        assert!(decode_request(&b).is_err());
        let mut r = [0u8; REPLY_HEAD_BYTES];
        r[0] = 2;
        assert!(decode_reply_head(&r, 8).is_err());
        r[0] = 0;
        r[4..8].copy_from_slice(&(1u32 << 30).to_le_bytes());
        assert!(decode_reply_head(&r, 8).is_err());
    }
}
