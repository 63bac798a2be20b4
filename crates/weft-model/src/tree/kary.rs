//! The k-ary tree (seed 001 §3.2.1): ranks numbered breadth-first from the root, so the
//! parent of relative rank r is (r - 1) / k. Balanced; upper levels wait for lower ones.
//! Pure arithmetic, no dependencies beyond [`Tree`].

use super::{check_common, Tree};
use weft_core::Result;

/// Builds the k-ary tree over `size` ranks rooted at `root`; ranks are renumbered relative to
/// the root, `(r - root) mod size`, so any root gives the same shape.
pub fn kary(size: u32, k: u32, root: u32) -> Result<Tree> {
    check_common("kary tree", size, k, root)?;
    let n = size as u64;
    let parents: Vec<Option<u32>> = (0..size)
        .map(|r| {
            let rel = (r as u64 + n - root as u64) % n;
            if rel == 0 {
                None
            } else {
                let prel = (rel - 1) / k as u64;
                Some(((prel + root as u64) % n) as u32)
            }
        })
        .collect();
    Tree::from_parents(root, &parents)
}
