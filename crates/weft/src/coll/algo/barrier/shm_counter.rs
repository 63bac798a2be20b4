//! Counter barrier on the node's collective area: every rank arrives once; the phase ends
//! when all have (the last to arrive leaves first, the others one cache-line transfer
//! later). The communicator must be the whole node (the `SharedMemory` restriction).

use crate::coll::schedule::Plan;
use weft_model::cost::CollModel;

/// Counter barrier: every rank arrives once; the phase ends when all have (the last to
/// arrive leaves first, the others one cache-line transfer later).
pub(crate) fn plan() -> Plan {
    let mut p = Plan::new();
    p.step();
    p.shm_arrive();
    p
}

/// Every rank bumps one shared counter (serialised cache-line transfers), then all see the
/// release flag.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.intra().latency_ns + m.procs() * m.intra().bytes_ns(64.0)
}
