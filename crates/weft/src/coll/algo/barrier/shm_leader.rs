//! Leader barrier on the node's collective area. The communicator must be the whole node
//! (the `SharedMemory` restriction).

use crate::coll::schedule::Plan;
use weft_model::cost::CollModel;

/// Leader barrier: every rank marks its arrival in its own word of the area; local rank 0
/// leaves when it has seen all of them and then releases the others, so it always leaves
/// first, one transfer before the rest (a rooted collective after a barrier mostly has root
/// 0, whose data is then out before its receivers look for it), and the release comes from
/// a rank that is running (with more ranks than cores, the others may not be).
pub(crate) fn plan() -> Plan {
    let mut p = Plan::new();
    p.step();
    p.shm_leader_barrier();
    p
}

/// Local rank 0 reads every rank's arrival line, then all read its release: one hop more
/// than the counter.
pub(crate) fn cost(m: &CollModel) -> f64 {
    2.0 * m.intra().latency_ns + m.procs() * m.intra().bytes_ns(64.0)
}
