//! Shared-memory-native algorithms on the node's collective area (seeds 000 and 004): data
//! is copied once into the area and once out, and readiness is a node-wide arrival counter
//! instead of messages. What is written before an arrival is read after it; phases
//! alternate between the two halves of each slot (`CollArea`), so nothing waits for the
//! readers to finish: the next arrival says they have. Only for a communicator that is the
//! whole node (declared as the `SharedMemory` restriction).

use super::chunks;
use crate::coll::schedule::{Buf, Plan, Region, Slot};

/// Counter barrier: every rank arrives once; the phase ends when all have (the last to
/// arrive leaves first, the others one cache-line transfer later).
pub(crate) fn barrier() -> Plan {
    let mut p = Plan::new();
    p.step();
    p.shm_arrive();
    p
}

/// Leader barrier: every rank marks its arrival in its own word of the area; local rank 0
/// leaves when it has seen all of them and then releases the others, so it always leaves
/// first, one transfer before the rest (a rooted collective after a barrier mostly has root
/// 0, whose data is then out before its receivers look for it), and the release comes from
/// a rank that is running (with more ranks than cores, the others may not be).
pub(crate) fn leader_barrier() -> Plan {
    let mut p = Plan::new();
    p.step();
    p.shm_leader_barrier();
    p
}

/// Single-copy broadcast through the shared result slot, `slot_bytes` at a time.
pub(crate) fn bcast(rank: u32, root: u32, bytes: usize, slot_bytes: usize) -> Plan {
    let mut p = Plan::new();
    let mut off = 0;
    loop {
        let len = (bytes - off).min(slot_bytes);
        let here = Region::new(Buf::Recv, off, len);
        p.step();
        if rank == root {
            p.shm_write(Slot::Result, 0, here);
        }
        p.shm_arrive();
        p.step();
        if rank != root {
            p.shm_read(Slot::Result, 0, here);
        }
        off += len;
        if off >= bytes {
            return p;
        }
    }
}

/// Allreduce: everyone copies a chunk into its slot; rank i combines part i of the chunk
/// across all slots in rank order (any operation) into the result slot; everyone copies the
/// result out.
pub(crate) fn allreduce(
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
