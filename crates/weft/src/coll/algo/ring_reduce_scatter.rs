//! Ring reduce-scatter: n − 1 steps; in step s each rank sends its partial chunk `r − s − 1`
//! right and combines the chunk `r − s − 2` arriving from the left, so rank r ends with
//! chunk r complete. Combines in ring order: commutative operations only.

use super::sub;
use crate::coll::schedule::{Buf, Plan, Region};

/// `blocks[i]`: (offset, length) of rank i's chunk in the send buffer (and of the whole
/// accumulator); `total` is the send buffer's length.
pub(crate) fn plan(rank: u32, size: u32, blocks: &[(usize, usize)], total: usize) -> Plan {
    let mut p = Plan::new();
    let acc_buf = p.tmp(total);
    let most = blocks.iter().map(|b| b.1).max().unwrap_or(0);
    let tmp_buf = p.tmp(most);
    let acc = |b: (usize, usize)| Region::new(acc_buf, b.0, b.1);
    let n = size;
    p.step();
    p.copy(
        Region::new(Buf::Send, 0, total),
        Region::new(acc_buf, 0, total),
    );
    let right = (rank + 1) % n;
    let left = sub(rank, 1, n);
    for s in 0..n - 1 {
        let send_b = blocks[sub(rank, s + 1, n) as usize];
        let recv_b = blocks[sub(rank, s + 2, n) as usize];
        p.step();
        p.recv(left, Region::new(tmp_buf, 0, recv_b.1));
        p.send(right, acc(send_b));
        p.step();
        p.reduce(Region::new(tmp_buf, 0, recv_b.1), acc(recv_b), true);
    }
    let mine = blocks[rank as usize];
    p.step();
    p.copy(acc(mine), Region::new(Buf::Recv, 0, mine.1));
    p
}
