//! Ring reduce-scatter: n − 1 steps; in step s each rank sends its partial chunk `r − s − 1`
//! right and combines the chunk `r − s − 2` arriving from the left, so rank r ends with
//! chunk r complete. Combines in ring order: commutative operations only.

use crate::coll::algo::sub;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// `blocks[i]`: (offset, length) of rank i's chunk in the send buffer (and of the whole
/// accumulator); `total` is the send buffer's length.
pub(crate) fn plan(rank: u32, size: u32, blocks: &[(usize, usize)], total: usize) -> Plan {
    let mut p = Plan::new();
    let n = size;
    let mine = blocks[rank as usize];
    let own = |b: (usize, usize)| Region::new(Buf::Send, b.0, b.1);
    let out = Region::new(Buf::Recv, 0, mine.1);
    if n == 1 {
        p.step();
        p.copy(own(mine), out);
        return p;
    }
    // Partial results of the blocks passing through (the first and the last step need
    // none: the first sends straight from the send buffer, the last combines into `out`).
    let acc_buf = p.tmp(if n > 2 { total } else { 0 });
    let most = blocks.iter().map(|b| b.1).max().unwrap_or(0);
    let tmp_buf = p.tmp(most);
    let acc = |b: (usize, usize)| Region::new(acc_buf, b.0, b.1);
    let right = (rank + 1) % n;
    let left = sub(rank, 1, n);
    for s in 0..n - 1 {
        let send_b = blocks[sub(rank, s + 1, n) as usize];
        let recv_b = blocks[sub(rank, s + 2, n) as usize];
        p.step();
        p.recv(left, Region::new(tmp_buf, 0, recv_b.1));
        p.send(right, if s == 0 { own(send_b) } else { acc(send_b) });
        p.step();
        // Each block arrives here once: own ∘ incoming, no copy of the own part first.
        let dst = if s == n - 2 { out } else { acc(recv_b) };
        p.reduce_into(own(recv_b), Region::new(tmp_buf, 0, recv_b.1), dst);
    }
    p
}

/// n − 1 steps of one block, each combined.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let n = m.bytes();
    ((m.procs() - 1.0) * (CollModel::msg(m.shift(), n) + m.gamma() * n)) * m.all_ranks_busy()
}
