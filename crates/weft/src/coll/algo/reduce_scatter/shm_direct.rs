//! Shared-memory direct reduce-scatter (single copy): every rank publishes its send
//! buffer's address in the node's collective area and arrives; rank i then combines its own
//! block across all ranks in rank order (so any operation), reading each peer's block
//! straight out of the peer's send buffer with Cross Memory Attach, a piece at a time, into
//! its receive buffer; a second arrival tells every rank its send buffer is no longer read.
//! One copy of each input byte, two node-wide phases. Needs the whole node
//! (`SharedMemory`) and CMA between every pair of local ranks (`CrossMemoryAttach`).

use crate::coll::algo::shm_direct_combine::combine;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

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
    p.step();
    p.shm_publish_buffers();
    p.shm_arrive();
    p.step();
    combine(
        &mut p,
        rank,
        size,
        off,
        Region::new(Buf::Recv, 0, len),
        elem_bytes,
    );
    p.shm_arrive();
    p
}

/// Two arrivals; each rank reads its block from every peer (one CMA read each) and
/// combines.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let intra = m.intra();
    let t = 2.0 * intra.latency_ns
        + (m.procs() - 1.0) * (intra.latency_ns + m.bytes() * (intra.ns_per_byte + m.gamma()));
    t * m.all_ranks_busy()
}
