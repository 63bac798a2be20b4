//! Shared-memory allgatherv on the node's collective area: in each round every rank copies
//! the next slot's worth of its block (possibly nothing: blocks differ) into its own slot,
//! one node-wide arrival, then copies the other ranks' pieces out to their places. Every
//! rank knows every block's length (the counts are the same on all ranks), so all agree on
//! the number of rounds. Two copies per byte, one phase per round, no messages. The
//! communicator must be the whole node (the `SharedMemory` restriction).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

/// `blocks[j]`: (offset, length) of rank j's block in the receive buffer; this rank's block
/// is the whole send buffer.
pub(crate) fn plan(rank: u32, blocks: &[(usize, usize)], slot_bytes: usize) -> Plan {
    let mut p = Plan::new();
    let r = rank as usize;
    let (mo, ml) = blocks[r];
    p.step();
    p.copy(
        Region::new(Buf::Send, 0, ml),
        Region::new(Buf::Recv, mo, ml),
    );
    let most = blocks.iter().map(|&(_, l)| l).max().unwrap_or(0);
    if blocks.len() < 2 || most == 0 {
        return p;
    }
    let mut off = 0;
    while off < most {
        let piece = |l: usize| l.saturating_sub(off).min(slot_bytes);
        p.step();
        p.shm_write(Slot::Rank(rank), 0, Region::new(Buf::Send, off, piece(ml)));
        p.shm_arrive();
        p.step();
        for (j, &(o, l)) in blocks.iter().enumerate().filter(|&(j, _)| j != r) {
            p.shm_read(
                Slot::Rank(j as u32),
                0,
                Region::new(Buf::Recv, o + off, piece(l)),
            );
        }
        off += slot_bytes;
    }
    p
}

/// As the equal-block area allgather, on the largest block.
pub(crate) fn cost(m: &CollModel) -> f64 {
    crate::coll::algo::allgather::shm::cost(m)
}
