//! Multi-rail allreduce (seed 003): the vector is cut into one contiguous part per network
//! rail, and each part runs its own ring allreduce (reduce-scatter then allgather, as
//! `ring`) whose messages to peers on other nodes are pinned to that part's rail
//! (`Plan::send_on_rail`), so every rail carries a stream of its own at once instead of one
//! message at a time striped over all of them. The rings run in lockstep: every step posts
//! one message per rail, then combines what each brought. Messages between ranks of one
//! node stay on shared memory (a pin means nothing there). Chunks are combined in ring
//! order: commutative operations only.
//!
//! The parts are equal (in elements): the TCP transport's rails are the lanes of one lane
//! choice, priced alike. A part that gets no element (fewer elements than rails) sends
//! nothing.

use crate::coll::algo::{chunks, sub};
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Rails a plan uses at most (a rail index travels as a byte).
const MOST_RAILS: u32 = 64;

pub(crate) fn plan(rank: u32, size: u32, count: usize, elem_bytes: usize, rails: u32) -> Plan {
    let bytes = count * elem_bytes;
    let mut p = Plan::new();
    let acc = |c: (usize, usize)| Region::new(Buf::Recv, c.0, c.1);
    let own = |c: (usize, usize)| Region::new(Buf::Send, c.0, c.1);
    if size == 1 {
        p.step();
        p.copy(own((0, bytes)), acc((0, bytes)));
        return p;
    }
    let rails = rails.clamp(1, MOST_RAILS) as usize;
    // Each rail's part cut into one chunk per rank, at the part's offset; empty parts out.
    let lines: Vec<(u8, Vec<(usize, usize)>)> = chunks(count, elem_bytes, rails)
        .into_iter()
        .enumerate()
        .filter(|(_, part)| part.1 > 0)
        .map(|(r, (off, len))| {
            let cut = chunks(len / elem_bytes, elem_bytes, size as usize);
            let cut = cut.into_iter().map(|(o, l)| (off + o, l)).collect();
            (r as u8, cut)
        })
        .collect();
    let most = lines
        .iter()
        .flat_map(|(_, cut)| cut.iter().map(|c| c.1))
        .max()
        .unwrap_or(0);
    let tmp_buf = p.tmp(most * lines.len());
    let tmp = |line: usize, len: usize| Region::new(tmp_buf, line * most, len);
    let right = (rank + 1) % size;
    let left = sub(rank, 1, size);
    let n = size;
    // Reduce-scatter, every rail's ring at once: after n − 1 steps rank r holds the whole
    // of chunk r + 1 of every part (as in `ring`, own ∘ incoming straight into the receive
    // buffer; the first chunk sent goes from the send buffer).
    for s in 0..n - 1 {
        p.step();
        for (i, (rail, cut)) in lines.iter().enumerate() {
            let send_c = cut[sub(rank, s, n) as usize];
            let recv_c = cut[sub(rank, s + 1, n) as usize];
            p.recv(left, tmp(i, recv_c.1));
            let src = if s == 0 { own(send_c) } else { acc(send_c) };
            p.send_on_rail(right, src, *rail);
        }
        p.step();
        for (i, (_, cut)) in lines.iter().enumerate() {
            let recv_c = cut[sub(rank, s + 1, n) as usize];
            p.reduce_into(own(recv_c), tmp(i, recv_c.1), acc(recv_c));
        }
    }
    // Allgather of the finished chunks, every rail's ring at once.
    for s in 0..n - 1 {
        p.step();
        for (rail, cut) in &lines {
            let send_c = cut[((rank + 1 + n - s) % n) as usize];
            let recv_c = cut[sub(rank, s, n) as usize];
            p.recv(left, acc(recv_c));
            p.send_on_rail(right, acc(send_c), *rail);
        }
    }
    p
}

/// A ring per rail on 1/R of the buffer, the R rings at once: each of the 2(n − 1) steps
/// posts R messages (R latencies) of 1/(nR) of the buffer, each on one rail alone
/// (`CollModel::rail`: the inter lane's bandwidth without striping's share), so the rails
/// together move a step's 1/n at R times one rail's bandwidth. Against `ring` on striped
/// rails it pays R − 1 more latencies per step and gains what striping loses
/// (`Lanes::stripe_efficiency`): it wins only on large buffers.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (pf, n, r) = (m.procs(), m.bytes(), m.rails() as f64);
    let rail = m.rail();
    let step = r * rail.latency_ns + rail.ns_per_byte * n / (pf * r);
    (2.0 * (pf - 1.0) * step + (pf - 1.0) / pf * n * m.gamma()) * m.all_ranks_busy()
}
