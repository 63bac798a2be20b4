//! Allreduce on the node's collective area (seed 004's counter-synchronised reduction):
//! everyone copies a chunk into its slot; rank i combines part i of the chunk across all
//! slots in rank order (any operation) into the result slot; everyone copies the result
//! out. The communicator must be the whole node (the `SharedMemory` restriction).

use super::super::chunks;
use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

/// Allreduce: everyone copies a chunk into its slot; rank i combines part i of the chunk
/// across all slots in rank order (any operation) into the result slot; everyone copies the
/// result out.
pub(crate) fn plan(
    rank: u32,
    size: u32,
    count: usize,
    elem_bytes: usize,
    slot_bytes: usize,
) -> Plan {
    let mut p = Plan::new();
    let per_chunk = (slot_bytes / elem_bytes).max(1);
    // Room for the largest part this rank combines (sized by the call, not the slot).
    let most = count.min(per_chunk).div_ceil(size as usize) * elem_bytes;
    let tmp = p.tmp(most);
    let mut first = 0;
    loop {
        let n = (count - first).min(per_chunk);
        let base = first * elem_bytes;
        p.step();
        p.shm_write(
            Slot::Rank(rank),
            0,
            Region::new(Buf::Send, base, n * elem_bytes),
        );
        p.shm_arrive();
        let (off, len) = chunks(n, elem_bytes, size as usize)[rank as usize];
        let acc = Region::new(Buf::Recv, base + off, len);
        p.step();
        p.shm_read(Slot::Rank(0), off, acc);
        for i in 1..size {
            let t = Region::new(tmp, 0, len);
            p.shm_read(Slot::Rank(i), off, t);
            p.reduce(t, acc, false);
        }
        p.shm_write(Slot::Result, off, acc);
        p.shm_arrive();
        p.step();
        p.shm_read(
            Slot::Result,
            0,
            Region::new(Buf::Recv, base, n * elem_bytes),
        );
        first += n;
        if first >= count {
            return p;
        }
    }
}

/// The area's reduce, then every rank copies the whole result out.
pub(crate) fn cost(m: &CollModel) -> f64 {
    (m.shm_reduce(m.bytes()) + m.intra().bytes_ns(m.bytes())) * m.all_ranks_busy()
}
