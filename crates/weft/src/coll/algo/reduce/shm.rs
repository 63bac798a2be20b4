//! Shared-memory reduce on the node's collective area (seed 004's counter-synchronised
//! reduction): per round every rank copies a chunk of its buffer into its slot; after one
//! arrival rank i combines part i of the chunk across all slots, in rank order (so any
//! operation), into the result slot; after a second arrival the root copies the result out.
//! All ranks share the combining work, no messages; the next phase's writes go to the slots'
//! other halves, so nothing waits for the root's copy. The communicator must be the whole
//! node (the `SharedMemory` restriction).

use crate::coll::algo::chunks;
use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

pub(crate) fn plan(
    rank: u32,
    size: u32,
    root: u32,
    count: usize,
    elem_bytes: usize,
    slot_bytes: usize,
) -> Plan {
    let mut p = Plan::new();
    let bytes = count * elem_bytes;
    if size == 1 {
        p.step();
        p.copy(
            Region::new(Buf::Send, 0, bytes),
            Region::new(Buf::Recv, 0, bytes),
        );
        return p;
    }
    let per_chunk = (slot_bytes / elem_bytes).max(1);
    let most = count.min(per_chunk).div_ceil(size as usize) * elem_bytes;
    let part = p.tmp(most);
    let other = p.tmp(most);
    let mut first = 0;
    while first < count {
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
        let acc = Region::new(part, 0, len);
        p.step();
        p.shm_read(Slot::Rank(0), off, acc);
        for i in 1..size {
            let t = Region::new(other, 0, len);
            p.shm_read(Slot::Rank(i), off, t);
            p.reduce(t, acc, false);
        }
        p.shm_write(Slot::Result, off, acc);
        p.shm_arrive();
        p.step();
        if rank == root {
            p.shm_read(
                Slot::Result,
                0,
                Region::new(Buf::Recv, base, n * elem_bytes),
            );
        }
        first += n;
    }
    p
}

/// Every rank copies its buffer in, each combines its 1/n share across all inputs, the root
/// copies the result out.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.shm_reduce(m.bytes())
}
