//! The k-nomial tree (seed 001 §3.2.2, Algorithm 1): ranks numbered depth-first, so writing a
//! relative rank in base k, the parent clears its lowest non-zero digit. Ranks at or above
//! `size` are holes; because a parent is always smaller than its child, every existing rank's
//! parent exists. Pure arithmetic over [`Tree`].

use super::{check_common, Tree, TreeLinks};
use std::borrow::Cow;
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

/// The k-nomial tree of [`knomial`] seen one rank at a time: parent, children and subtree
/// sizes by arithmetic on relative ranks (O(k log n) per question, nothing of size n built),
/// with the same answers, children in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnomialLinks {
    size: u32,
    k: u32,
    root: u32,
}

impl KnomialLinks {
    /// The k-nomial tree over `size` ranks rooted at `root` (the checks of [`knomial`]).
    pub fn new(size: u32, k: u32, root: u32) -> Result<KnomialLinks> {
        check_common("knomial tree", size, k, root)?;
        Ok(KnomialLinks { size, k, root })
    }

    fn rel(&self, rank: u32) -> u64 {
        (rank as u64 + self.size as u64 - self.root as u64) % self.size as u64
    }

    fn abs(&self, slot: u64) -> u32 {
        ((slot + self.root as u64) % self.size as u64) as u32
    }

    /// The subtree of slot `s` spans slots `s .. s + k^t` (t: the position of its lowest
    /// non-zero digit), cut at the communicator's end; the root's spans them all.
    fn slot_subtree(&self, s: u64) -> u64 {
        let n = self.size as u64;
        if s == 0 {
            return n;
        }
        let k = self.k as u64;
        let mut unit = 1u64;
        while (s / unit).is_multiple_of(k) {
            unit *= k;
        }
        unit.min(n - s)
    }
}

impl TreeLinks for KnomialLinks {
    fn root(&self) -> u32 {
        self.root
    }

    fn parent(&self, rank: u32) -> Option<u32> {
        if rank >= self.size {
            return None;
        }
        match self.rel(rank) {
            0 => None,
            s => Some(self.abs(slot_parent(s, self.k as u64))),
        }
    }

    fn children(&self, rank: u32) -> Cow<'_, [u32]> {
        if rank >= self.size {
            return Cow::Borrowed(&[]);
        }
        let (n, k, s) = (self.size as u64, self.k as u64, self.rel(rank));
        // Children add one digit j·k^i below the lowest non-zero digit of s (any digit for
        // the root), as long as the slot exists.
        let mut kids: Vec<(u64, u32)> = Vec::new();
        let mut unit = 1u64;
        while s + unit < n && (s == 0 || (s / unit).is_multiple_of(k)) {
            for j in 1..k {
                let c = s + j * unit;
                if c >= n {
                    break;
                }
                kids.push((self.slot_subtree(c), self.abs(c)));
            }
            unit = match unit.checked_mul(k) {
                Some(u) => u,
                None => break,
            };
        }
        // Largest subtree first; equal subtrees by rank (the order of `Tree`).
        kids.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        Cow::Owned(kids.into_iter().map(|(_, r)| r).collect())
    }

    fn subtree_size(&self, rank: u32) -> u32 {
        if rank >= self.size {
            return 0;
        }
        self.slot_subtree(self.rel(rank)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank's links equal the whole tree's, for every size up to 70, radix 2 to 6 and
    /// root, children in the same order.
    #[test]
    fn links_agree_with_the_whole_tree() {
        for size in 1..=70u32 {
            for k in 2..=6u32 {
                for root in 0..size {
                    let tree = knomial(size, k, root).unwrap();
                    let links = KnomialLinks::new(size, k, root).unwrap();
                    assert_eq!(TreeLinks::root(&links), root);
                    for r in 0..size + 2 {
                        let at = format!("size {size} k {k} root {root} rank {r}");
                        assert_eq!(links.parent(r), tree.parent(r), "{at}");
                        assert_eq!(&*links.children(r), tree.children(r), "{at}");
                        assert_eq!(links.subtree_size(r), tree.subtree_size(r), "{at}");
                    }
                }
            }
        }
    }

    #[test]
    fn links_check_their_arguments() {
        assert!(KnomialLinks::new(0, 2, 0).is_err());
        assert!(KnomialLinks::new(4, 1, 0).is_err());
        assert!(KnomialLinks::new(4, 2, 4).is_err());
    }
}
