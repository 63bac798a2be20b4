//! The k-nomial tree (seed 001 §3.2.2, Algorithm 1): ranks numbered depth-first, so writing a
//! relative rank in base k, the parent clears its lowest non-zero digit. Ranks at or above
//! `size` are holes; because a parent is always smaller than its child, every existing rank's
//! parent exists. Pure arithmetic over [`Tree`].

use super::{check_common, Tree};
use weft_core::Result;

/// Parent of slot `s` (> 0) in the infinite k-nomial numbering: `s` with its lowest non-zero
/// base-k digit cleared.
pub(crate) fn slot_parent(s: u64, k: u64) -> u64 {
    let mut unit = 1u64;
    while (s / unit).is_multiple_of(k) {
        unit *= k;
    }
    s - ((s / unit) % k) * unit
}

/// Number of non-zero base-k digits of `s`: its depth in the k-nomial tree.
pub(crate) fn slot_depth(mut s: u64, k: u64) -> u32 {
    let mut d = 0;
    while s > 0 {
        if !s.is_multiple_of(k) {
            d += 1;
        }
        s /= k;
    }
    d
}

/// Builds the k-nomial tree over `size` ranks rooted at `root`, using relative ranks
/// `(r - root) mod size`.
pub fn knomial(size: u32, k: u32, root: u32) -> Result<Tree> {
    check_common("knomial tree", size, k, root)?;
    let n = size as u64;
    let parents: Vec<Option<u32>> = (0..size)
        .map(|r| {
            let rel = (r as u64 + n - root as u64) % n;
            if rel == 0 {
                None
            } else {
                Some(((slot_parent(rel, k as u64) + root as u64) % n) as u32)
            }
        })
        .collect();
    Tree::from_parents(root, &parents)
}
