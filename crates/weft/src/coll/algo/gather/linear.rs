//! Linear gather(v): every rank sends its block straight to the root, which receives all of
//! them at once into their places. One step; the root's link carries everything.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// `blocks[i]` is rank i's (offset, length) in the root's receive buffer; `mine` is this
/// rank's send length.
pub(crate) fn plan(rank: u32, root: u32, blocks: &[(usize, usize)], mine: usize) -> Plan {
    let mut p = Plan::new();
    p.step();
    if rank == root {
        for (i, &(off, len)) in blocks.iter().enumerate() {
            let dst = Region::new(Buf::Recv, off, len);
            if i as u32 == root {
                p.copy(Region::new(Buf::Send, 0, len), dst);
            } else {
                p.recv(i as u32, dst);
            }
        }
    } else {
        p.send(root, Region::new(Buf::Send, 0, mine));
    }
    p
}

/// The root takes n − 1 messages one after another: its node's on the intra lane, the
/// others' on the inter lane.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (local, pf, n) = (m.local() as f64, m.procs(), m.bytes());
    (local - 1.0) * CollModel::msg(m.intra(), n) + (pf - local) * CollModel::msg(m.lane(false), n)
}
