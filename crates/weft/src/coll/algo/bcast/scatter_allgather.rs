//! Scatter-allgather broadcast (van de Geijn): the root cuts its buffer into n chunks and
//! sends chunk i to rank i, then a ring allgather completes every copy. Each rank moves about
//! 2(n − 1)/n of the buffer instead of the whole buffer per tree level: for large messages.

use crate::coll::algo::{chunks, sub};
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, root: u32, bytes: usize) -> Plan {
    let mut p = Plan::new();
    let parts = chunks(bytes, 1, size as usize);
    let at = |i: u32| {
        let (o, l) = parts[i as usize];
        Region::new(Buf::Recv, o, l)
    };
    p.step();
    if rank == root {
        for i in (0..size).filter(|&i| i != root) {
            p.send(i, at(i));
        }
    } else {
        p.recv(root, at(rank));
    }
    let right = (rank + 1) % size;
    let left = sub(rank, 1, size);
    for s in 0..size.saturating_sub(1) {
        let send_c = sub(rank, s, size);
        let recv_c = sub(rank, s + 1, size);
        p.step();
        // The root holds every chunk already: nobody sends to it.
        if rank != root {
            p.recv(left, at(recv_c));
        }
        if right != root {
            p.send(right, at(send_c));
        }
    }
    p
}

/// A binomial scatter of the buffer, then a ring allgather of its n chunks.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.scatter_binomial(m.bytes()) + m.ring_allgather(m.bytes() / m.procs())
}
