//! Fan-out scan and exscan: every rank sends its own contribution straight to every higher
//! rank and combines what the lower ranks sent it, in rank order (so any operation). One
//! step of messages instead of the chain's n − 1 sequential hops: rank r waits only for
//! ranks 0..r to have started, not for each of them to have finished. n(n − 1)/2 messages of
//! the whole vector, so for few ranks and small vectors.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Receives x₀ … x_{r−1} into one temporary (block j holds x_j) while sending x_r to every
/// higher rank; returns the temporary's block of each lower rank.
fn exchange(p: &mut Plan, rank: u32, size: u32, bytes: usize) -> Vec<Region> {
    let own = Region::new(Buf::Send, 0, bytes);
    p.step();
    let lower: Vec<Region> = if rank > 0 {
        let t = p.tmp(rank as usize * bytes);
        (0..rank as usize)
            .map(|j| Region::new(t, j * bytes, bytes))
            .collect()
    } else {
        Vec::new()
    };
    for (j, r) in lower.iter().enumerate() {
        p.recv(j as u32, *r);
    }
    for j in rank + 1..size {
        p.send(j, own);
    }
    lower
}

/// Inclusive scan: the receive buffer gets `x₀ ∘ … ∘ x_r`.
pub(crate) fn inclusive(rank: u32, size: u32, bytes: usize) -> Plan {
    let mut p = Plan::new();
    let lower = exchange(&mut p, rank, size, bytes);
    let acc = Region::new(Buf::Recv, 0, bytes);
    p.copy(Region::new(Buf::Send, 0, bytes), acc);
    if !lower.is_empty() {
        p.step();
        // acc = x_j ∘ acc for j = r − 1 down to 0: the lower rank's operand always first.
        for t in lower.iter().rev() {
            p.reduce(*t, acc, true);
        }
    }
    p
}

/// Exclusive scan: the receive buffer gets `x₀ ∘ … ∘ x_{r−1}` (untouched on rank 0).
pub(crate) fn exclusive(rank: u32, size: u32, bytes: usize) -> Plan {
    let mut p = Plan::new();
    let lower = exchange(&mut p, rank, size, bytes);
    if let Some((last, rest)) = lower.split_last() {
        let acc = Region::new(Buf::Recv, 0, bytes);
        p.step();
        p.copy(*last, acc);
        for t in rest.iter().rev() {
            p.reduce(*t, acc, true);
        }
    }
    p
}

/// The last rank takes n − 1 messages one after another and combines each: the chain's
/// cost on the α-β model (see `linear::cost`).
pub(crate) fn cost(m: &CollModel) -> f64 {
    super::linear::cost(m)
}
