//! Shared-memory direct reduce-scatter (single copy): every rank publishes its send
//! buffer's address in the node's collective area and arrives; rank i then combines its own
//! block across all ranks in rank order (so any operation), reading each peer's block
//! straight out of the peer's send buffer with Cross Memory Attach, a piece at a time, into
//! its receive buffer; a second arrival tells every rank its send buffer is no longer read.
//! One copy of each input byte, two node-wide phases. Needs the whole node
//! (`SharedMemory`) and CMA between every pair of local ranks (`CrossMemoryAttach`).

use crate::coll::schedule::{Buf, Plan, Region};

/// Bytes combined per read: a peer's piece and the accumulator stay in a core's cache.
const PIECE_BYTES: usize = 64 * 1024;

/// `blocks[j]`: (offset, length) in bytes of rank j's block in the send buffers.
pub(crate) fn plan(rank: u32, size: u32, blocks: &[(usize, usize)], elem_bytes: usize) -> Plan {
    let mut p = Plan::new();
    let (off, len) = blocks[rank as usize];
    if size == 1 {
        p.step();
        p.copy(
            Region::new(Buf::Send, off, len),
            Region::new(Buf::Recv, 0, len),
        );
        return p;
    }
    if blocks.iter().all(|b| b.1 == 0) {
        return p;
    }
    let piece = (PIECE_BYTES / elem_bytes).max(1) * elem_bytes;
    let other = p.tmp(piece.min(len));
    p.step();
    p.shm_publish_buffers();
    p.shm_arrive();
    p.step();
    let mut done = 0;
    while done < len {
        let n = piece.min(len - done);
        let acc = Region::new(Buf::Recv, done, n);
        let t = Region::new(other, 0, n);
        read(&mut p, rank, 0, off + done, acc);
        for i in 1..size {
            read(&mut p, rank, i, off + done, t);
            p.reduce(t, acc, false);
        }
        done += n;
    }
    p.shm_arrive();
    p
}

/// Bytes `at..at + dst.len` of rank `from`'s send buffer into `dst`.
fn read(p: &mut Plan, rank: u32, from: u32, at: usize, dst: Region) {
    if from == rank {
        p.copy(Region::new(Buf::Send, at, dst.len), dst);
    } else {
        p.cma_read(from, Buf::Send, at, dst);
    }
}
