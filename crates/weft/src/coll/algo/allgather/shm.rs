//! Shared-memory allgather on the node's collective area: every rank copies its block (a
//! slot's worth per round) into its own slot, one arrival, then copies every other rank's
//! block out (the next round writes the slots' other halves, so no arrival frees them). Two
//! copies per byte, one node-wide phase per round, no messages. The
//! communicator must be the whole node (the `SharedMemory` restriction).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, block: usize, slot_bytes: usize) -> Plan {
    let mut p = Plan::new();
    let r = rank as usize;
    p.step();
    p.copy(
        Region::new(Buf::Send, 0, block),
        Region::new(Buf::Recv, r * block, block),
    );
    if size == 1 {
        return p;
    }
    let mut off = 0;
    while off < block {
        let len = slot_bytes.min(block - off);
        p.step();
        p.shm_write(Slot::Rank(rank), 0, Region::new(Buf::Send, off, len));
        p.shm_arrive();
        p.step();
        for j in (0..size as usize).filter(|&j| j != r) {
            p.shm_read(
                Slot::Rank(j as u32),
                0,
                Region::new(Buf::Recv, j * block + off, len),
            );
        }
        off += len;
    }
    p
}

/// One arrival per round; every rank copies its block in and all n out.
pub(crate) fn cost(m: &CollModel) -> f64 {
    (m.intra().latency_ns + m.intra().bytes_ns(m.procs() * m.bytes())) * m.all_ranks_busy()
}
