//! Pairwise-exchange alltoall(v): in step s every rank sends to `r + s` and receives from
//! `r − s`, so each step is a permutation and no rank is swamped. n − 1 steps.

use crate::coll::algo::sub;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// `send_blocks[j]` / `recv_blocks[j]`: (offset, length) of the block for / from rank j.
pub(crate) fn plan(
    rank: u32,
    size: u32,
    send_blocks: &[(usize, usize)],
    recv_blocks: &[(usize, usize)],
) -> Plan {
    let mut p = Plan::new();
    p.step();
    let (so, sl) = send_blocks[rank as usize];
    let (ro, _) = recv_blocks[rank as usize];
    // In the first exchange's step: its receive and send touch other blocks, so a two-rank
    // call is one step (run without a schedule when repeated, `coll::direct`).
    p.copy(
        Region::new(Buf::Send, so, sl),
        Region::new(Buf::Recv, ro, sl),
    );
    for s in 1..size {
        let to = (rank + s) % size;
        let from = sub(rank, s, size);
        if s > 1 {
            p.step();
        }
        let (ro, rl) = recv_blocks[from as usize];
        p.recv(from, Region::new(Buf::Recv, ro, rl));
        let (so, sl) = send_blocks[to as usize];
        p.send(to, Region::new(Buf::Send, so, sl));
    }
    p
}

/// n − 1 exchanges of one block.
pub(crate) fn cost(m: &CollModel) -> f64 {
    ((m.procs() - 1.0) * CollModel::msg(m.shift(), m.bytes())) * m.all_ranks_busy()
}
