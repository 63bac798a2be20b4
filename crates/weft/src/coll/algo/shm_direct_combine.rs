//! The combine loop the direct (single-copy) reduce and reduce-scatter share: a rank
//! combines bytes `at..at + len` of every local rank's send buffer, in rank order (so any
//! operation), into an accumulator region, a piece at a time so that a peer's piece and the
//! accumulator stay in a core's cache. Its own part is copied, the peers' are read straight
//! out of their published send buffers with Cross Memory Attach. The callers arrive before
//! (buffers published) and after (send buffers no longer read).

use crate::coll::schedule::{Buf, Plan, Region};

/// Bytes combined per read: a peer's piece and the accumulator stay in a core's cache.
const PIECE_BYTES: usize = 64 * 1024;

/// Appends to the current step of `p` the combination of bytes `at..at + len` of the send
/// buffers of ranks `0..size` (this rank is `rank`) into `acc` (`len` bytes), whole
/// elements of `elem_bytes` per piece. Allocates the one piece of scratch it needs.
pub(crate) fn combine(
    p: &mut Plan,
    rank: u32,
    size: u32,
    at: usize,
    acc: Region,
    elem_bytes: usize,
) {
    let len = acc.len;
    if len == 0 {
        return;
    }
    let piece = (PIECE_BYTES / elem_bytes).max(1) * elem_bytes;
    let other = p.tmp(piece.min(len));
    let mut done = 0;
    while done < len {
        let n = piece.min(len - done);
        let a = Region::new(acc.buf, acc.off + done, n);
        let t = Region::new(other, 0, n);
        read(p, rank, 0, at + done, a);
        for i in 1..size {
            read(p, rank, i, at + done, t);
            p.reduce(t, a, false);
        }
        done += n;
    }
}

/// Bytes `at..at + dst.len` of rank `from`'s send buffer into `dst`.
fn read(p: &mut Plan, rank: u32, from: u32, at: usize, dst: Region) {
    if from == rank {
        p.copy(Region::new(Buf::Send, at, dst.len), dst);
    } else {
        p.cma_read(from, Buf::Send, at, dst);
    }
}
