//! Shared-memory direct alltoall (seed 000, single copy): every rank publishes the address
//! of its send buffer in its flag of the node's collective area and arrives; then every rank
//! reads the block meant for it straight out of each peer's send buffer with one Cross
//! Memory Attach read per peer (`process_vm_readv`: one copy per byte, no staging through
//! the area, no messages), and arrives again, which tells every peer its send buffer is no
//! longer read. Two node-wide phases in all, whatever the size. Equal blocks only; needs
//! the communicator to be the whole node (`SharedMemory`) and CMA between every pair of
//! local ranks (`CrossMemoryAttach`, one node-wide verdict).

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Rank `rank` of `size` (the local rank), blocks of `block` bytes.
pub(crate) fn plan(rank: u32, size: u32, block: usize) -> Plan {
    let mut p = Plan::new();
    let r = rank as usize;
    p.step();
    p.copy(
        Region::new(Buf::Send, r * block, block),
        Region::new(Buf::Recv, r * block, block),
    );
    if size == 1 || block == 0 {
        return p;
    }
    p.shm_publish_buffers();
    p.shm_arrive();
    p.step();
    // Start at the next rank so that the ranks' reads spread over the peers' buffers
    // instead of all hitting rank 0's first.
    for s in 1..size {
        let j = (rank + s) % size;
        p.cma_read(
            j,
            Buf::Send,
            r * block,
            Region::new(Buf::Recv, j as usize * block, block),
        );
    }
    p.shm_arrive();
    p
}

/// Publish, one node-wide arrival, one CMA read per peer (a system call each, counted as
/// one intra latency), a second arrival: one copy per byte.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let intra = m.intra();
    let t =
        2.0 * intra.latency_ns + (m.procs() - 1.0) * (intra.latency_ns + intra.bytes_ns(m.bytes()));
    t * m.all_ranks_busy()
}
