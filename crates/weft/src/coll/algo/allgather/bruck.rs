//! Bruck allgather: ceil(log2 n) steps for any n. Blocks gather in a temporary in the order
//! `r, r + 1, …` (relative to the caller); in the step of distance d each rank sends the
//! first min(d, n − d) blocks it has to `r − d` and receives as many from `r + d`. A final
//! local rotation puts block i at position i. Equal blocks only.

use crate::coll::algo::sub;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, block: usize) -> Plan {
    let mut p = Plan::new();
    let n = size as usize;
    let tmp = p.tmp(block * n);
    p.step();
    p.copy(Region::new(Buf::Send, 0, block), Region::new(tmp, 0, block));
    let mut d = 1usize;
    while d < n {
        let cnt = d.min(n - d);
        p.step();
        p.recv(
            ((rank as usize + d) % n) as u32,
            Region::new(tmp, d * block, cnt * block),
        );
        p.send(sub(rank, d as u32, size), Region::new(tmp, 0, cnt * block));
        d *= 2;
    }
    p.step();
    for i in 0..n {
        let owner = (rank as usize + i) % n;
        p.copy(
            Region::new(tmp, i * block, block),
            Region::new(Buf::Recv, owner * block, block),
        );
    }
    p
}

/// ceil(log2 n) steps moving n − 1 blocks in all, and the final rotation.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (lane, pf, n) = (m.shift(), m.procs(), m.bytes());
    let t = m.log2() as f64 * lane.latency_ns
        + (pf - 1.0) * lane.bytes_ns(n)
        + m.intra().bytes_ns(pf * n);
    t * m.all_ranks_busy()
}
