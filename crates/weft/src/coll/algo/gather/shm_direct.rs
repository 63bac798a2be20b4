//! Shared-memory direct gather (single copy): every rank publishes its buffers' addresses
//! in the node's collective area and arrives; every rank but the root then writes its
//! block straight into the root's receive buffer with one Cross Memory Attach write (all
//! ranks copy at once, instead of the root copying every block in turn), the root copies
//! its own, and a second arrival tells the root its buffer is complete. Needs the whole
//! node (`SharedMemory`) and CMA between every pair of local ranks (`CrossMemoryAttach`).

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Blocks of `block` bytes, rank j's at `j * block` in the root's receive buffer.
pub(crate) fn plan(rank: u32, size: u32, root: u32, block: usize) -> Plan {
    let mut p = Plan::new();
    let mine = Region::new(Buf::Send, 0, block);
    if size == 1 || block == 0 {
        p.step();
        if rank == root {
            p.copy(mine, Region::new(Buf::Recv, rank as usize * block, block));
        }
        return p;
    }
    p.step();
    p.shm_publish_buffers();
    p.shm_arrive();
    p.step();
    if rank == root {
        p.copy(mine, Region::new(Buf::Recv, rank as usize * block, block));
    } else {
        p.cma_write(root, rank as usize * block, mine);
    }
    p.shm_arrive();
    p
}

/// Two arrivals; every rank writes its block into the root's buffer at once (the copies
/// overlap, bounded by the node's memory bandwidth: counted as one stream).
pub(crate) fn cost(m: &CollModel) -> f64 {
    3.0 * m.intra().latency_ns + m.intra().bytes_ns((m.procs() - 1.0) * m.bytes())
}
