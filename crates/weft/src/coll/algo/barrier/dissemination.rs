//! Dissemination barrier (Hensgen, Finkel and Manber): in round i every rank signals rank
//! `r + 2^i` and waits for rank `r - 2^i`; after ceil(log2 n) rounds everyone has heard,
//! directly or not, from everyone. Works for any n.

use crate::coll::algo::sub;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32) -> Plan {
    let mut p = Plan::new();
    let empty = Region::new(Buf::Recv, 0, 0);
    let mut d = 1u32;
    while d < size {
        p.step();
        p.recv(sub(rank, d, size), empty);
        p.send((rank + d) % size, empty);
        d = d.saturating_mul(2);
    }
    p
}

/// ceil(log2 n) rounds of one empty message, on a lane that crosses nodes when there are
/// several.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.log2() as f64 * m.shift().latency_ns
}
