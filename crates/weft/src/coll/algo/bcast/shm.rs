//! Broadcast through the node's collective area: the root copies a slot's worth into the
//! shared result slot, one arrival, every other rank copies it out; as many rounds as the
//! buffer needs. The communicator must be the whole node (the `SharedMemory` restriction).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

/// Single-copy broadcast through the shared result slot, `slot_bytes` at a time.
pub(crate) fn plan(rank: u32, root: u32, bytes: usize, slot_bytes: usize) -> Plan {
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

/// Root copies in, every rank copies out, one flag.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.intra().latency_ns + 2.0 * m.intra().bytes_ns(m.bytes())
}
