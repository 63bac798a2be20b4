//! Two-phase I/O's plan (pure): which ranks aggregate, the file domain each one owns, and
//! the windows it moves a buffer at a time. Every rank computes the same plan from the same
//! inputs (every rank's extent, the node of each rank, the file's settings), so nothing but
//! the extents is exchanged to agree on it.

/// Whether a collective access goes through aggregators: the ranks' extents
/// (`[lo, hi)` of each rank with data, in rank order) interleave when, sorted by start, one
/// begins before the previous ends.
pub(crate) fn interleaved(extents: &[Option<(u64, u64)>]) -> bool {
    let mut e: Vec<(u64, u64)> = extents.iter().flatten().copied().collect();
    e.sort_unstable();
    e.windows(2).any(|w| w[1].0 < w[0].1)
}

/// The aggregators: up to `per_node` ranks of each node (its lowest ranks), taken round
/// robin over the nodes (first aggregator of each node, then the second, ...), so that
/// neighbouring file domains go to different nodes; at most `cap` in all (at least one).
/// `node_of[r]` is the node of rank `r`.
pub(crate) fn aggregators(node_of: &[u32], per_node: u32, cap: u32) -> Vec<u32> {
    let mut nodes: Vec<Vec<u32>> = Vec::new();
    let mut index: Vec<(u32, usize)> = Vec::new();
    for (r, &n) in node_of.iter().enumerate() {
        let i = match index.iter().find(|&&(m, _)| m == n) {
            Some(&(_, i)) => i,
            None => {
                index.push((n, nodes.len()));
                nodes.push(Vec::new());
                nodes.len() - 1
            }
        };
        nodes[i].push(r as u32);
    }
    let per_node = per_node.max(1) as usize;
    let cap = cap.max(1) as usize;
    let mut out = Vec::new();
    for k in 0..per_node {
        for ranks in &nodes {
            if let Some(&r) = ranks.get(k) {
                if out.len() < cap {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// File domains and windows of one collective access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Domains {
    /// The aggregators, in domain order.
    pub aggregators: Vec<u32>,
    /// `lo` rounded down to the alignment: where domain boundaries are counted from.
    base: u64,
    /// The first accessed byte.
    lo: u64,
    /// One past the last accessed byte.
    hi: u64,
    /// Bytes of each domain (the last may be shorter).
    domain_bytes: u64,
    /// Bytes an aggregator moves at a time.
    window_bytes: u64,
}

impl Domains {
    /// Splits `[lo, hi)` among `aggregators` in domains of equal size rounded up to
    /// `align` bytes (boundaries at multiples of `align` past `lo` rounded down), moved
    /// `window_bytes` at a time (at least one byte).
    pub(super) fn new(
        aggregators: Vec<u32>,
        lo: u64,
        hi: u64,
        align: u64,
        window_bytes: u64,
    ) -> Domains {
        let align = align.max(1);
        let base = lo - lo % align;
        let n = aggregators.len().max(1) as u64;
        let per = (hi - base).div_ceil(n).div_ceil(align) * align;
        Domains {
            aggregators,
            base,
            lo,
            hi,
            domain_bytes: per.max(1),
            window_bytes: window_bytes.max(1),
        }
    }

    /// `[lo, hi)` of aggregator `k`'s domain (empty past the data).
    pub(super) fn domain(&self, k: usize) -> (u64, u64) {
        let start = self.base.saturating_add(k as u64 * self.domain_bytes);
        let a = start.max(self.lo).min(self.hi);
        let b = start.saturating_add(self.domain_bytes).min(self.hi).max(a);
        (a, b)
    }

    /// Window `w` of aggregator `k`'s domain: `[lo, hi)`, empty once past its end.
    pub(super) fn window(&self, k: usize, w: u64) -> (u64, u64) {
        let (a, b) = self.domain(k);
        let lo = a.saturating_add(w.saturating_mul(self.window_bytes)).min(b);
        (lo, lo.saturating_add(self.window_bytes).min(b))
    }

    /// Windows of aggregator `k`'s domain.
    pub(super) fn windows(&self, k: usize) -> u64 {
        let (a, b) = self.domain(k);
        (b - a).div_ceil(self.window_bytes)
    }

    /// The index of the aggregator whose domain holds file offset `off`.
    #[cfg(test)]
    pub(super) fn owner(&self, off: u64) -> usize {
        (((off.max(self.base) - self.base) / self.domain_bytes) as usize)
            .min(self.aggregators.len().saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving() {
        assert!(!interleaved(&[Some((0, 10)), None, Some((10, 20))]));
        assert!(!interleaved(&[Some((10, 20)), Some((0, 10))]));
        assert!(interleaved(&[Some((0, 11)), Some((10, 20))]));
        assert!(!interleaved(&[]));
    }

    #[test]
    fn aggregators_alternate_nodes() {
        // Ranks 0-3 on node 0, 4-7 on node 1.
        let node_of = [0, 0, 0, 0, 1, 1, 1, 1];
        assert_eq!(aggregators(&node_of, 2, 99), [0, 4, 1, 5]);
        assert_eq!(aggregators(&node_of, 2, 3), [0, 4, 1]);
        assert_eq!(aggregators(&node_of, 9, 99), [0, 4, 1, 5, 2, 6, 3, 7]);
        assert_eq!(aggregators(&[0], 4, 0), [0]);
    }

    #[test]
    fn domains_cover_the_range_once() {
        let d = Domains::new(vec![0, 1, 2], 5000, 100_000, 4096, 16384);
        let mut next = 5000;
        for k in 0..3 {
            let (a, b) = d.domain(k);
            assert_eq!(a, next);
            if k < 2 {
                assert_eq!(b % 4096, 0, "aligned boundaries");
            }
            let mut wnext = a;
            for w in 0..d.windows(k) {
                let (x, y) = d.window(k, w);
                assert_eq!(x, wnext);
                assert!(y - x <= 16384 && y > x);
                for off in [x, y - 1] {
                    assert_eq!(d.owner(off), k);
                }
                wnext = y;
            }
            assert_eq!(wnext, b);
            next = b;
        }
        assert_eq!(next, 100_000);
        // More aggregators than data: the later domains are empty.
        let d = Domains::new(vec![0, 1, 2, 3], 0, 10, 4096, 100);
        assert_eq!(d.domain(0), (0, 10));
        assert_eq!(d.domain(3), (10, 10));
        assert_eq!(d.windows(3), 0);
    }
}
