//! Ring allgather(v): n − 1 steps; in step s each rank passes block `r − s` to its right
//! neighbour and receives block `r − s − 1` from its left. Bandwidth-optimal, latency linear
//! in n.

use crate::coll::algo::sub;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// `blocks[i]`: (offset, length) of rank i's block in the receive buffer.
pub(crate) fn plan(rank: u32, size: u32, blocks: &[(usize, usize)]) -> Plan {
    let mut p = Plan::new();
    p.step();
    let (off, len) = blocks[rank as usize];
    p.copy(
        Region::new(Buf::Send, 0, len),
        Region::new(Buf::Recv, off, len),
    );
    let right = (rank + 1) % size;
    let left = sub(rank, 1, size);
    for s in 0..size.saturating_sub(1) {
        if s > 0 {
            p.step();
        }
        let (so, sl) = blocks[sub(rank, s, size) as usize];
        let (ro, rl) = blocks[sub(rank, s + 1, size) as usize];
        p.recv(left, Region::new(Buf::Recv, ro, rl));
        // Our own block leaves from the send buffer: its cache lines are clean, whereas the
        // copy just written into the receive buffer would have to migrate from our core.
        let src = if s == 0 {
            Region::new(Buf::Send, 0, sl)
        } else {
            Region::new(Buf::Recv, so, sl)
        };
        p.send(right, src);
    }
    p
}

/// n − 1 steps of one block.
pub(crate) fn cost(m: &CollModel) -> f64 {
    (m.ring_allgather(m.bytes())) * m.all_ranks_busy()
}
