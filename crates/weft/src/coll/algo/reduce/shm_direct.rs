//! Shared-memory direct reduce (seed 000's single copy applied to seed 004's shared
//! reduction): every rank publishes its send and receive buffers' addresses in the node's
//! collective area and arrives; rank i then combines part i of the vector across all ranks
//! in rank order (so any operation), reading each peer's part straight out of the peer's
//! send buffer with Cross Memory Attach, a piece at a time so the operands stay in cache,
//! and writes the finished part straight into the root's receive buffer; a second arrival
//! ends the call. Unlike the area reduce nobody copies its whole buffer into the area
//! first: one copy of each input byte, two node-wide phases whatever the size. Needs the
//! whole node (`SharedMemory`) and CMA between every pair of local ranks
//! (`CrossMemoryAttach`).

use crate::coll::algo::chunks;
use crate::coll::algo::shm_direct_combine::combine;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, root: u32, count: usize, elem_bytes: usize) -> Plan {
    let mut p = Plan::new();
    let bytes = count * elem_bytes;
    if size == 1 || bytes == 0 {
        p.step();
        p.copy(
            Region::new(Buf::Send, 0, bytes),
            Region::new(Buf::Recv, 0, bytes),
        );
        return p;
    }
    let (off, len) = chunks(count, elem_bytes, size as usize)[rank as usize];
    // The root combines its part in place in its receive buffer; the others in scratch,
    // then write it into the root's.
    let acc_buf = if rank == root { Buf::Recv } else { p.tmp(len) };
    let acc_off = if rank == root { off } else { 0 };
    p.step();
    p.shm_publish_buffers();
    p.shm_arrive();
    p.step();
    combine(
        &mut p,
        rank,
        size,
        off,
        Region::new(acc_buf, acc_off, len),
        elem_bytes,
    );
    if rank != root {
        p.cma_write(root, off, Region::new(acc_buf, 0, len));
    }
    p.shm_arrive();
    p
}

/// Two arrivals; each rank reads its part of every peer's buffer (one CMA read per peer, a
/// system call each), combines, and writes the part to the root.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (intra, pf, n) = (m.intra(), m.procs(), m.bytes());
    2.0 * intra.latency_ns
        + pf * intra.latency_ns
        + (pf - 1.0) * (n / pf) * (intra.ns_per_byte + m.gamma())
        + intra.bytes_ns(n / pf)
}
