//! Linear alltoall(v): every receive and every send is posted at once, in one step, and the
//! rank waits for all of them; the own block is copied across. The peers' messages complete
//! in whatever order the peers get to run, where the pairwise exchange waits for one given
//! peer per step: with more ranks than cores that ordering costs a scheduling round per
//! step. Sends and receives start at the next rank so the ranks do not all hit rank 0 first.

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
    for s in 1..size {
        let from = sub(rank, s, size);
        let (ro, rl) = recv_blocks[from as usize];
        p.recv(from, Region::new(Buf::Recv, ro, rl));
    }
    for s in 1..size {
        let to = (rank + s) % size;
        let (so, sl) = send_blocks[to as usize];
        p.send(to, Region::new(Buf::Send, so, sl));
    }
    let (so, sl) = send_blocks[rank as usize];
    let (ro, _) = recv_blocks[rank as usize];
    p.copy(
        Region::new(Buf::Send, so, sl),
        Region::new(Buf::Recv, ro, sl),
    );
    p
}

/// n − 1 blocks in and out, as the pairwise exchange: the α-β model cannot tell them apart
/// (what differs is which peer a rank waits for while the others are not scheduled), so
/// the table decides between them from measurements.
pub(crate) fn cost(m: &CollModel) -> f64 {
    crate::coll::algo::alltoall::pairwise::cost(m)
}
