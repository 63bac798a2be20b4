//! Shared-memory direct broadcast (seed 000, single copy): the root publishes the address
//! of its buffer in the node's collective area and every rank arrives; every other rank
//! then reads the whole buffer straight out of the root's with one Cross Memory Attach
//! read (all at once, no tree, no staging through the area), and a second arrival tells the
//! root its buffer is no longer read. One copy per byte per rank, two node-wide phases.
//! Needs the whole node (`SharedMemory`) and CMA between every pair of local ranks
//! (`CrossMemoryAttach`).

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, root: u32, bytes: usize) -> Plan {
    let mut p = Plan::new();
    if size == 1 || bytes == 0 {
        return p;
    }
    p.step();
    p.shm_publish_buffers();
    p.shm_arrive();
    p.step();
    if rank != root {
        p.cma_read(root, Buf::Recv, 0, Region::new(Buf::Recv, 0, bytes));
    }
    p.shm_arrive();
    p
}

/// Two arrivals and one CMA read of the whole buffer per rank, all at once.
pub(crate) fn cost(m: &CollModel) -> f64 {
    3.0 * m.intra().latency_ns + m.intra().bytes_ns(m.bytes())
}
