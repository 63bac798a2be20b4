//! Shared-memory alltoall on the node's collective area: every rank copies the blocks it
//! sends into its own slot (a chunk of each block per round, as many as fit), one arrival,
//! then every rank copies the blocks meant for it out of every other rank's slot (the next
//! round writes the slots' other halves, so no arrival frees them). Two copies per byte and
//! one node-wide phase per round, no messages; the own block is copied straight across. Equal blocks only; the communicator
//! must be the whole node (the `SharedMemory` restriction).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, block: usize, slot_bytes: usize) -> Plan {
    let mut p = Plan::new();
    let n = size as usize;
    let r = rank as usize;
    p.step();
    p.copy(
        Region::new(Buf::Send, r * block, block),
        Region::new(Buf::Recv, r * block, block),
    );
    if n == 1 || block == 0 {
        return p;
    }
    // Each round moves `chunk` bytes of every block: the slot holds one chunk per peer.
    let chunk = (slot_bytes / n).clamp(1, block);
    let mut off = 0;
    while off < block {
        let len = chunk.min(block - off);
        p.step();
        for j in (0..n).filter(|&j| j != r) {
            p.shm_write(
                Slot::Rank(rank),
                j * len,
                Region::new(Buf::Send, j * block + off, len),
            );
        }
        p.shm_arrive();
        p.step();
        for j in (0..n).filter(|&j| j != r) {
            p.shm_read(
                Slot::Rank(j as u32),
                r * len,
                Region::new(Buf::Recv, j * block + off, len),
            );
        }
        off += len;
    }
    p
}

/// One arrival; every block copied in and out once.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let t = m.intra().latency_ns + 2.0 * m.intra().bytes_ns((m.procs() - 1.0) * m.bytes());
    t * m.all_ranks_busy()
}
