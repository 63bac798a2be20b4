//! Ring allreduce (reduce-scatter then allgather around a ring, as in Patarasuk and Yuan):
//! each rank sends and receives 2(n − 1)/n of the buffer, whatever n. The chunks are
//! combined in ring order, not rank order: commutative operations only.

use crate::coll::algo::{chunks, sub};
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, count: usize, elem_bytes: usize) -> Plan {
    let bytes = count * elem_bytes;
    let mut p = Plan::new();
    let acc = |c: (usize, usize)| Region::new(Buf::Recv, c.0, c.1);
    let own = |c: (usize, usize)| Region::new(Buf::Send, c.0, c.1);
    if size == 1 {
        p.step();
        p.copy(own((0, bytes)), acc((0, bytes)));
        return p;
    }
    let parts = chunks(count, elem_bytes, size as usize);
    let most = parts.iter().map(|c| c.1).max().unwrap_or(0);
    let tmp_buf = p.tmp(most);
    let tmp = |len: usize| Region::new(tmp_buf, 0, len);
    let right = (rank + 1) % size;
    let left = sub(rank, 1, size);
    let n = size;
    // Reduce-scatter: after n − 1 steps rank r holds the whole of chunk r + 1. Every chunk
    // but r's own is combined here exactly once, as own ∘ incoming straight into the
    // receive buffer, so nothing is copied there first; the first chunk sent (chunk r) goes
    // from the send buffer, and the allgather fills chunk r of the receive buffer.
    for s in 0..n - 1 {
        let send_c = parts[sub(rank, s, n) as usize];
        let recv_c = parts[sub(rank, s + 1, n) as usize];
        p.step();
        p.recv(left, tmp(recv_c.1));
        p.send(right, if s == 0 { own(send_c) } else { acc(send_c) });
        p.step();
        p.reduce_into(own(recv_c), tmp(recv_c.1), acc(recv_c));
    }
    // Allgather of the finished chunks.
    for s in 0..n - 1 {
        let send_c = parts[((rank + 1 + n - s) % n) as usize];
        let recv_c = parts[sub(rank, s, n) as usize];
        p.step();
        p.recv(left, acc(recv_c));
        p.send(right, acc(send_c));
    }
    p
}

/// A ring reduce-scatter and a ring allgather: 2(n − 1) messages of 1/n of the buffer.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (pf, n) = (m.procs(), m.bytes());
    let t = 2.0 * (pf - 1.0) * CollModel::msg(m.shift(), n / pf) + (pf - 1.0) / pf * n * m.gamma();
    t * m.all_ranks_busy()
}
