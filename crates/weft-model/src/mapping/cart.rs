//! Which rank takes each position of a Cartesian grid, so that grid neighbours share a node
//! (`MPI_Cart_create` with `reorder`), and nodes that do not share one are near.
//!
//! Positions are numbered as MPI numbers them: row-major, the last dimension fastest. Each
//! grid edge joins a position to its successor in one dimension (the wraparound too where
//! the dimension is periodic and longer than 2). An edge is **cut** when its two ranks are on
//! different nodes, and costs the **hops** between those nodes ([`cart_order_on`] takes the
//! distance; [`cart_order`] counts every cut edge as one hop). The candidates: every block
//! shape that tiles the grid with one node's ranks per block (each side dividing the grid's;
//! node k's ranks fill block k, blocks in row-major order), plus the ranks grouped by node in
//! row-major order. The one with the fewest hops wins, then the fewest cut edges; the identity
//! order (no reorder) wins ties, so a reorder never costs more than none. On a torus of nodes
//! (`weft run --map`), a block shape whose grid of blocks is the torus puts every cut edge
//! between torus neighbours, which a count of cut edges alone cannot tell from a shape that
//! cuts as many edges between nodes further apart. Pure; no I/O.

/// A rank order and what it saves.
#[derive(Clone, Debug, PartialEq)]
pub struct CartOrder {
    /// `rank_at[position]`: the rank (of the first `positions` of the old order) placed
    /// there.
    pub rank_at: Vec<u32>,
    /// Edges cut without reordering.
    pub cut_identity: u64,
    /// Edges cut by `rank_at`.
    pub cut: u64,
    /// Hops of the cut edges without reordering.
    pub hops_identity: u64,
    /// Hops of the cut edges of `rank_at`.
    pub hops: u64,
    /// How `rank_at` was made: `identity`, `by node` or `blocks AxBx..`.
    pub how: String,
}

/// The grid's edges, each once.
fn edges(dims: &[u32], periods: &[bool]) -> Vec<(usize, usize)> {
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let mut out = Vec::new();
    let mut stride = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        stride[i] = stride[i + 1] * dims[i + 1] as usize;
    }
    for pos in 0..n {
        for (i, &d) in dims.iter().enumerate() {
            let c = (pos / stride[i]) % d as usize;
            if c + 1 < d as usize {
                out.push((pos, pos + stride[i]));
            } else if periods.get(i).copied().unwrap_or(false) && d > 2 {
                out.push((pos, pos - c * stride[i]));
            }
        }
    }
    out
}

/// The edges of `rank_at` that join two nodes, and their hops.
fn cut(
    edges: &[(usize, usize)],
    rank_at: &[u32],
    node_of: &[u32],
    hops: &dyn Fn(u32, u32) -> u64,
) -> (u64, u64) {
    edges.iter().fold((0, 0), |(cut, far), &(a, b)| {
        let (na, nb) = (node_of[rank_at[a] as usize], node_of[rank_at[b] as usize]);
        if na == nb {
            (cut, far)
        } else {
            (cut + 1, far + hops(na, nb))
        }
    })
}

/// Every way to write `count` as a product of one divisor of each of `dims`.
fn block_shapes(dims: &[u32], count: u32) -> Vec<Vec<u32>> {
    fn go(dims: &[u32], left: u32, acc: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        match dims.split_first() {
            None => {
                if left == 1 {
                    out.push(acc.clone());
                }
            }
            Some((&d, rest)) => {
                for b in 1..=d.min(left) {
                    if d.is_multiple_of(b) && left.is_multiple_of(b) {
                        acc.push(b);
                        go(rest, left / b, acc, out);
                        acc.pop();
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    go(dims, count, &mut Vec::new(), &mut out);
    out
}

/// The order for a grid of `dims` (`periods` per dimension) over the first
/// `dims.iter().product()` ranks, whose nodes `node_of` gives; every pair of nodes one hop
/// apart.
pub fn cart_order(dims: &[u32], periods: &[bool], node_of: &[u32]) -> CartOrder {
    cart_order_on(dims, periods, node_of, &|_, _| 1)
}

/// [`cart_order`] with `hops(a, b)` the distance between different nodes `a` and `b` (for
/// example on the job's torus of nodes).
pub fn cart_order_on(
    dims: &[u32],
    periods: &[bool],
    node_of: &[u32],
    hops: &dyn Fn(u32, u32) -> u64,
) -> CartOrder {
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let node_of = &node_of[..n.min(node_of.len())];
    let n = node_of.len();
    let grid = edges(dims, periods);
    let identity: Vec<u32> = (0..n as u32).collect();
    let (cut_identity, hops_identity) = cut(&grid, &identity, node_of, hops);
    let mut best = CartOrder {
        rank_at: identity,
        cut_identity,
        cut: cut_identity,
        hops_identity,
        hops: hops_identity,
        how: "identity".into(),
    };
    // Nodes in order of their lowest rank, each with its ranks ascending.
    let mut nodes: Vec<(u32, Vec<u32>)> = Vec::new();
    for (r, &node) in node_of.iter().enumerate() {
        match nodes.iter_mut().find(|(id, _)| *id == node) {
            Some((_, ranks)) => ranks.push(r as u32),
            None => nodes.push((node, vec![r as u32])),
        }
    }
    let consider = |rank_at: Vec<u32>, how: String, best: &mut CartOrder| {
        let (c, h) = cut(&grid, &rank_at, node_of, hops);
        if (h, c) < (best.hops, best.cut) {
            *best = CartOrder {
                rank_at,
                cut_identity,
                cut: c,
                hops_identity,
                hops: h,
                how,
            };
        }
    };
    let by_node: Vec<u32> = nodes.iter().flat_map(|(_, r)| r.iter().copied()).collect();
    consider(by_node, "by node".into(), &mut best);
    let per_node = nodes[0].1.len();
    if n > 0 && nodes.iter().all(|(_, r)| r.len() == per_node) {
        for block in block_shapes(dims, per_node as u32) {
            let rank_at = blocks(dims, &block, &nodes);
            consider(
                rank_at,
                format!(
                    "blocks {}",
                    block
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join("x")
                ),
                &mut best,
            );
        }
    }
    best
}

/// Node k's ranks fill block k (blocks in row-major order), row-major inside the block.
fn blocks(dims: &[u32], block: &[u32], nodes: &[(u32, Vec<u32>)]) -> Vec<u32> {
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let grid_of_blocks: Vec<u32> = dims.iter().zip(block).map(|(d, b)| d / b).collect();
    let mut rank_at = vec![0u32; n];
    for (pos, slot) in rank_at.iter_mut().enumerate() {
        // Coordinates of `pos` (last dimension fastest).
        let mut rest = pos;
        let mut coord = vec![0u32; dims.len()];
        for i in (0..dims.len()).rev() {
            coord[i] = (rest % dims[i] as usize) as u32;
            rest /= dims[i] as usize;
        }
        let (mut which, mut inside) = (0usize, 0usize);
        for i in 0..dims.len() {
            which = which * grid_of_blocks[i] as usize + (coord[i] / block[i]) as usize;
            inside = inside * block[i] as usize + (coord[i] % block[i]) as usize;
        }
        *slot = nodes[which].1[inside];
    }
    rank_at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Torus;

    fn is_permutation(v: &[u32]) -> bool {
        let mut s = v.to_vec();
        s.sort_unstable();
        s.iter().enumerate().all(|(i, &r)| r == i as u32)
    }

    #[test]
    fn grid_edges_count_the_wraparound_once() {
        assert_eq!(edges(&[4], &[false]).len(), 3);
        assert_eq!(edges(&[4], &[true]).len(), 4);
        assert_eq!(edges(&[2], &[true]).len(), 1);
        assert_eq!(edges(&[3, 4], &[true, true]).len(), 24);
    }

    #[test]
    fn a_row_per_node_becomes_square_blocks() {
        // 4x4 grid, 4 nodes of 4 ranks placed round robin: identity cuts every edge.
        let node_of: Vec<u32> = (0..16).map(|r| r % 4).collect();
        let o = cart_order(&[4, 4], &[false, false], &node_of);
        assert!(is_permutation(&o.rank_at));
        assert_eq!(o.cut_identity, 12);
        assert_eq!(o.how, "blocks 2x2");
        assert_eq!(o.cut, 8);
    }

    #[test]
    fn reorder_never_cuts_more_than_identity() {
        for dims in [vec![2u32, 3], vec![4, 2, 3], vec![6], vec![3, 5]] {
            let n: u32 = dims.iter().product();
            for nodes in 1..=n {
                for periodic in [false, true] {
                    let periods = vec![periodic; dims.len()];
                    // Block and cyclic placements of n ranks on `nodes` nodes.
                    for node_of in [
                        (0..n).map(|r| r * nodes / n).collect::<Vec<_>>(),
                        (0..n).map(|r| r % nodes).collect(),
                    ] {
                        let o = cart_order(&dims, &periods, &node_of);
                        assert!(is_permutation(&o.rank_at), "{dims:?} {node_of:?}");
                        assert!(o.cut <= o.cut_identity, "{dims:?} {node_of:?}: {o:?}");
                        let one = |_, _| 1;
                        let counted = cut(&edges(&dims, &periods), &o.rank_at, &node_of, &one);
                        assert_eq!((o.cut, o.hops), counted);
                    }
                }
            }
        }
    }

    #[test]
    fn one_node_or_a_block_placement_keeps_the_identity() {
        let o = cart_order(&[3, 3], &[true, true], &[0; 9]);
        assert_eq!((o.how.as_str(), o.cut), ("identity", 0));
        // Rows on their own nodes cut the 4 column edges; 2x2 blocks cut 2 row edges.
        let node_of: Vec<u32> = (0..8).map(|r| r / 4).collect();
        let o = cart_order(&[2, 4], &[false, false], &node_of);
        assert_eq!(
            (o.cut_identity, o.how.as_str(), o.cut),
            (4, "blocks 2x2", 2)
        );
        // A 1-D ring split in halves: identity is already the best.
        let node_of: Vec<u32> = (0..8).map(|r| r / 4).collect();
        let o = cart_order(&[8], &[true], &node_of);
        assert_eq!((o.how.as_str(), o.cut), ("identity", 2));
    }

    #[test]
    fn on_a_torus_of_nodes_blocks_follow_the_torus() {
        // 4 nodes on a 2x2 torus (node k at row-major position k), 2 ranks each in rank
        // order, a 4x2 grid periodic in its first dimension. A row per node (the identity)
        // and 2x1 blocks both cut 8 edges; the rows put nodes 1,2 and 3,0 (2 hops apart) next
        // to each other, the blocks' 2x2 grid is the torus: every cut edge one hop.
        let torus = Torus::new(&[2, 2]).unwrap();
        let node_of = [0, 0, 1, 1, 2, 2, 3, 3];
        let flat = cart_order(&[4, 2], &[true, false], &node_of);
        assert_eq!((flat.how.as_str(), flat.cut, flat.hops), ("identity", 8, 8));
        let near = |a: u32, b: u32| u64::from(torus.distance(a, b));
        let o = cart_order_on(&[4, 2], &[true, false], &node_of, &near);
        assert_eq!((o.cut_identity, o.hops_identity), (8, 12));
        assert_eq!((o.how.as_str(), o.cut, o.hops), ("blocks 2x1", 8, 8));
        assert!(is_permutation(&o.rank_at));
        // Node k's block sits at its torus coordinates: positions (2i..2i+1, j) on node 2i+j.
        for (pos, &r) in o.rank_at.iter().enumerate() {
            let (row, col) = (pos / 2, pos % 2);
            assert_eq!(node_of[r as usize] as usize, (row / 2) * 2 + col, "{o:?}");
        }
    }

    #[test]
    fn hops_never_exceed_the_identity_s() {
        let torus = Torus::new(&[3, 2]).unwrap();
        let near = |a: u32, b: u32| u64::from(torus.distance(a % 6, b % 6));
        for dims in [vec![6u32, 2], vec![3, 4], vec![12], vec![2, 3, 2]] {
            for periodic in [false, true] {
                let periods = vec![periodic; dims.len()];
                for node_of in [
                    (0..12).map(|r| r / 2).collect::<Vec<u32>>(),
                    (0..12).map(|r| r % 6).collect(),
                ] {
                    let o = cart_order_on(&dims, &periods, &node_of, &near);
                    assert!(is_permutation(&o.rank_at), "{dims:?} {node_of:?}");
                    assert!(o.hops <= o.hops_identity, "{dims:?} {node_of:?}: {o:?}");
                    let counted = cut(&edges(&dims, &periods), &o.rank_at, &node_of, &near);
                    assert_eq!((o.cut, o.hops), counted);
                }
            }
        }
    }

    #[test]
    fn ranks_beyond_the_grid_are_left_out() {
        let node_of = [0, 1, 0, 1, 0, 1, 7];
        let o = cart_order(&[2, 3], &[false, false], &node_of);
        assert_eq!(o.rank_at.len(), 6);
        assert!(is_permutation(&o.rank_at));
    }
}
