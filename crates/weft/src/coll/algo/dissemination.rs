//! Dissemination barrier (Hensgen, Finkel and Manber): in round i every rank signals rank
//! `r + 2^i` and waits for rank `r - 2^i`; after ceil(log2 n) rounds everyone has heard,
//! directly or not, from everyone. Works for any n.

use super::sub;
use crate::coll::schedule::{Buf, Plan, Region};

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
