//! Shared-memory reduce-scatter on the node's collective area: per round every rank copies a
//! slot's worth of its buffer into its slot; after one arrival each rank combines, across
//! all slots and in rank order (so any operation), the part of its own block that lies in
//! the round's range, straight into its receive buffer (the next round writes the slots'
//! other halves, so no arrival frees them). Every byte is copied in once and read once by its owner; no messages. The communicator
//! must be the whole node (the `SharedMemory` restriction).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

/// `blocks[i]`: (offset, length) of rank i's block in the send buffer of `total` bytes,
/// consecutive in rank order; `elem_bytes` keeps rounds on element boundaries.
pub(crate) fn plan(
    rank: u32,
    size: u32,
    blocks: &[(usize, usize)],
    total: usize,
    elem_bytes: usize,
    slot_bytes: usize,
) -> Plan {
    let mut p = Plan::new();
    let (mo, ml) = blocks[rank as usize];
    if size == 1 {
        p.step();
        p.copy(
            Region::new(Buf::Send, mo, ml),
            Region::new(Buf::Recv, 0, ml),
        );
        return p;
    }
    let round = (slot_bytes / elem_bytes).max(1) * elem_bytes;
    let other = p.tmp(ml.min(round));
    let mut base = 0;
    while base < total {
        let len = round.min(total - base);
        // The part of this rank's block inside [base, base + len).
        let lo = mo.max(base);
        let hi = (mo + ml).min(base + len);
        p.step();
        p.shm_write(Slot::Rank(rank), 0, Region::new(Buf::Send, base, len));
        p.shm_arrive();
        p.step();
        if lo < hi {
            let acc = Region::new(Buf::Recv, lo - mo, hi - lo);
            p.shm_read(Slot::Rank(0), lo - base, acc);
            for i in 1..size {
                let t = Region::new(other, 0, hi - lo);
                p.shm_read(Slot::Rank(i), lo - base, t);
                p.reduce(t, acc, false);
            }
        }
        base += len;
    }
    p
}

/// Everyone copies its whole buffer in; each rank reads its block from every slot and
/// combines; one node-wide phase (the area's slots alternate halves).
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (intra, pf, n) = (m.intra(), m.procs(), m.bytes());
    let t = intra.latency_ns
        + intra.bytes_ns(pf * n)
        + pf * n * intra.ns_per_byte
        + (pf - 1.0) * n * m.gamma();
    t * m.all_ranks_busy()
}
