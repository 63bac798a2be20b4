//! Which rank takes each vertex of a process graph, so that heavily communicating vertices
//! share a node (`MPI_Graph_create`, `MPI_Dist_graph_create(_adjacent)` and
//! `MPI_Graph_map` with `reorder`).
//!
//! The graph has `vertices` vertices (the ranks of the new communicator) and weighted
//! edges (an unweighted graph weighs each edge 1; several edges between one pair add up;
//! self-edges never cross a node). Rank `r` of the old order runs on node `node_of[r]`;
//! each node holds as many vertices as it has ranks among the first `vertices`. An edge is
//! **cut** when its two vertices land on different nodes; the cut is the summed weight of
//! the cut edges (the bytes a neighbour exchange sends between nodes, when weights are
//! message sizes).
//!
//! [`graph_order`] partitions the vertices into one block per node of exactly that node's
//! rank count, in two ways, and keeps the one that cuts least:
//! - **grown**: each node's block grows from the lowest unplaced vertex by repeatedly taking
//!   the unplaced vertex most strongly connected to the block (greedy graph growing);
//! - **identity**: the vertices where the given order puts them;
//!
//! each then refined by **swaps**: a vertex and one of another block trade places when that
//! lowers the cut (the best such swap per vertex, in passes until none helps, within a
//! work bound). Ties keep the identity, so a reorder never cuts more than none. Inside a
//! block the node's ranks take its vertices in ascending order. Pure and deterministic:
//! every rank computing it from the same graph gets the same order; no I/O.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A rank order for a graph and what it saves.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphOrder {
    /// `rank_at[vertex]`: the rank (of the first `vertices` of the old order) that takes
    /// the vertex.
    pub rank_at: Vec<u32>,
    /// Summed weight of the edges cut without reordering.
    pub cut_identity: u64,
    /// Summed weight of the edges cut by `rank_at`.
    pub cut: u64,
    /// How `rank_at` was made: `identity`, `identity + swaps` or `grown + swaps`.
    pub how: String,
}

/// Upper bound on the adjacency entries the swap passes look at (per refinement): a huge
/// graph stops improving after about this much work instead of taking minutes.
const SWAP_WORK_BOUND: u64 = 50_000_000;

/// Passes of swaps at most (each pass visits every vertex once).
const SWAP_PASSES: usize = 16;

/// Undirected adjacency: `adj[v]` = (neighbour, summed weight), neighbours distinct and
/// different from `v`.
fn adjacency(vertices: usize, edges: &[(u32, u32, u64)]) -> Vec<Vec<(u32, u64)>> {
    let mut pairs: Vec<(u32, u32, u64)> = Vec::with_capacity(edges.len() * 2);
    for &(a, b, w) in edges {
        if a != b && (a as usize) < vertices && (b as usize) < vertices {
            pairs.push((a, b, w));
            pairs.push((b, a, w));
        }
    }
    pairs.sort_unstable_by_key(|&(a, b, _)| (a, b));
    let mut adj: Vec<Vec<(u32, u64)>> = vec![Vec::new(); vertices];
    for (a, b, w) in pairs {
        let list = &mut adj[a as usize];
        match list.last_mut() {
            Some((n, sum)) if *n == b => *sum = sum.saturating_add(w),
            _ => list.push((b, w)),
        }
    }
    adj
}

/// Summed weight of the edges whose ends are in different blocks.
fn cut_of(adj: &[Vec<(u32, u64)>], block_of: &[u32]) -> u64 {
    let mut twice = 0u64;
    for (v, list) in adj.iter().enumerate() {
        for &(n, w) in list {
            if block_of[v] != block_of[n as usize] {
                twice = twice.saturating_add(w);
            }
        }
    }
    twice / 2
}

/// Weight from `v` into block `b`.
fn weight_into(adj: &[Vec<(u32, u64)>], block_of: &[u32], v: usize, b: u32) -> u64 {
    adj[v]
        .iter()
        .filter(|&&(n, _)| block_of[n as usize] == b)
        .map(|&(_, w)| w)
        .sum()
}

/// Weight of the edges between `u` and `v`.
fn weight_between(adj: &[Vec<(u32, u64)>], u: usize, v: u32) -> u64 {
    adj[u]
        .binary_search_by_key(&v, |&(n, _)| n)
        .map_or(0, |i| adj[u][i].1)
}

/// Greedy graph growing: block k (of `sizes[k]` vertices) starts at the lowest unplaced
/// vertex and takes, one at a time, the unplaced vertex with the most weight into the block
/// (lowest index on ties; the lowest unplaced vertex when none is connected).
fn grow(adj: &[Vec<(u32, u64)>], sizes: &[usize]) -> Vec<u32> {
    let n = adj.len();
    let mut block_of = vec![u32::MAX; n];
    let mut into = vec![0u64; n];
    let mut touched: Vec<usize> = Vec::new();
    let mut lowest_free = 0usize;
    for (k, &size) in sizes.iter().enumerate() {
        let mut heap: BinaryHeap<(u64, Reverse<usize>)> = BinaryHeap::new();
        for &t in &touched {
            into[t] = 0;
        }
        touched.clear();
        for _ in 0..size {
            let v = loop {
                match heap.pop() {
                    Some((w, Reverse(v))) if block_of[v] == u32::MAX && into[v] == w => break v,
                    Some(_) => continue,
                    None => {
                        while block_of[lowest_free] != u32::MAX {
                            lowest_free += 1;
                        }
                        break lowest_free;
                    }
                }
            };
            block_of[v] = k as u32;
            for &(nb, w) in &adj[v] {
                let nb = nb as usize;
                if block_of[nb] == u32::MAX {
                    if into[nb] == 0 {
                        touched.push(nb);
                    }
                    into[nb] = into[nb].saturating_add(w);
                    heap.push((into[nb], Reverse(nb)));
                }
            }
        }
    }
    block_of
}

/// Swap refinement: for each vertex `u`, the best swap with a vertex `v` of a block `u`
/// is connected to that lowers the cut is made; passes repeat until one makes no swap, at
/// most [`SWAP_PASSES`], within [`SWAP_WORK_BOUND`]. Block sizes never change.
fn refine(adj: &[Vec<(u32, u64)>], block_of: &mut [u32], blocks: usize) {
    let n = adj.len();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); blocks];
    for (v, &b) in block_of.iter().enumerate() {
        members[b as usize].push(v as u32);
    }
    let mut work = 0u64;
    for _ in 0..SWAP_PASSES {
        let mut swapped = false;
        for u in 0..n {
            let pu = block_of[u];
            let own = weight_into(adj, block_of, u, pu) as i128;
            // Blocks u has edges into, each once.
            let mut targets: Vec<u32> = adj[u]
                .iter()
                .map(|&(nb, _)| block_of[nb as usize])
                .filter(|&b| b != pu)
                .collect();
            targets.sort_unstable();
            targets.dedup();
            let mut best: Option<(i128, u32)> = None;
            for q in targets {
                let u_gain = weight_into(adj, block_of, u, q) as i128 - own;
                if u_gain <= 0 {
                    continue;
                }
                for &v in &members[q as usize] {
                    work += adj[v as usize].len() as u64 + 1;
                    let v_gain = weight_into(adj, block_of, v as usize, pu) as i128
                        - weight_into(adj, block_of, v as usize, q) as i128;
                    let gain = u_gain + v_gain - 2 * weight_between(adj, u, v) as i128;
                    if gain > 0 && best.is_none_or(|(g, _)| gain > g) {
                        best = Some((gain, v));
                    }
                }
            }
            if let Some((_, v)) = best {
                let q = block_of[v as usize];
                block_of[u] = q;
                block_of[v as usize] = pu;
                let mu = &mut members[pu as usize];
                let i = mu
                    .iter()
                    .position(|&x| x == u as u32)
                    .expect("u in its block");
                mu[i] = v;
                let mq = &mut members[q as usize];
                let i = mq.iter().position(|&x| x == v).expect("v in its block");
                mq[i] = u as u32;
                swapped = true;
            }
            if work > SWAP_WORK_BOUND {
                return;
            }
        }
        if !swapped {
            return;
        }
    }
}

/// The order for a graph of `vertices` vertices and `edges` (a, b, weight) over the first
/// `vertices` ranks, whose nodes `node_of` gives (it must name at least `vertices` ranks;
/// edges naming a vertex past `vertices` are ignored).
pub fn graph_order(vertices: usize, edges: &[(u32, u32, u64)], node_of: &[u32]) -> GraphOrder {
    let node_of = &node_of[..vertices.min(node_of.len())];
    let n = node_of.len();
    let adj = adjacency(n, edges);
    // Nodes in order of their lowest rank, each with its ranks ascending.
    let mut nodes: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut identity_block = vec![0u32; n];
    for (r, &node) in node_of.iter().enumerate() {
        let k = match nodes.iter().position(|(id, _)| *id == node) {
            Some(k) => k,
            None => {
                nodes.push((node, Vec::new()));
                nodes.len() - 1
            }
        };
        nodes[k].1.push(r as u32);
        identity_block[r] = k as u32;
    }
    let cut_identity = cut_of(&adj, &identity_block);
    let mut best = GraphOrder {
        rank_at: (0..n as u32).collect(),
        cut_identity,
        cut: cut_identity,
        how: "identity".into(),
    };
    if nodes.len() < 2 || cut_identity == 0 {
        return best;
    }
    let sizes: Vec<usize> = nodes.iter().map(|(_, r)| r.len()).collect();
    let mut from_identity = identity_block.clone();
    refine(&adj, &mut from_identity, nodes.len());
    let mut grown = grow(&adj, &sizes);
    refine(&adj, &mut grown, nodes.len());
    for (block_of, how) in [
        (from_identity, "identity + swaps"),
        (grown, "grown + swaps"),
    ] {
        let c = cut_of(&adj, &block_of);
        if c < best.cut {
            best = GraphOrder {
                rank_at: ranks_for(&block_of, &nodes),
                cut_identity,
                cut: c,
                how: how.into(),
            };
        }
    }
    best
}

/// Block k's vertices, ascending, get node k's ranks, ascending.
fn ranks_for(block_of: &[u32], nodes: &[(u32, Vec<u32>)]) -> Vec<u32> {
    let mut next = vec![0usize; nodes.len()];
    block_of
        .iter()
        .map(|&b| {
            let r = nodes[b as usize].1[next[b as usize]];
            next[b as usize] += 1;
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_permutation(v: &[u32]) -> bool {
        let mut s = v.to_vec();
        s.sort_unstable();
        s.iter().enumerate().all(|(i, &r)| r == i as u32)
    }

    /// Cut of `rank_at` computed straight from the edge list.
    fn cut(edges: &[(u32, u32, u64)], rank_at: &[u32], node_of: &[u32]) -> u64 {
        edges
            .iter()
            .filter(|&&(a, b, _)| {
                node_of[rank_at[a as usize] as usize] != node_of[rank_at[b as usize] as usize]
            })
            .map(|&(_, _, w)| w)
            .sum()
    }

    fn ring(n: u32) -> Vec<(u32, u32, u64)> {
        (0..n).map(|v| (v, (v + 1) % n, 1)).collect()
    }

    /// Every permutation of 0..n, by Heap's algorithm.
    fn each_permutation(n: usize, f: &mut impl FnMut(&[u32])) {
        let mut a: Vec<u32> = (0..n as u32).collect();
        let mut c = vec![0usize; n];
        f(&a);
        let mut i = 0;
        while i < n {
            if c[i] < i {
                if i % 2 == 0 {
                    a.swap(0, i);
                } else {
                    a.swap(c[i], i);
                }
                f(&a);
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
    }

    #[test]
    fn a_ring_dealt_round_robin_becomes_two_arcs() {
        // 8 ranks on 2 nodes round robin: the given order cuts every ring edge.
        let node_of: Vec<u32> = (0..8).map(|r| r % 2).collect();
        let o = graph_order(8, &ring(8), &node_of);
        assert!(is_permutation(&o.rank_at));
        assert_eq!((o.cut_identity, o.cut), (8, 2), "{o:?}");
        assert_eq!(o.cut, cut(&ring(8), &o.rank_at, &node_of));
    }

    #[test]
    fn one_node_no_edges_or_a_good_order_keep_the_identity() {
        let o = graph_order(5, &ring(5), &[3; 5]);
        assert_eq!((o.how.as_str(), o.cut), ("identity", 0));
        let o = graph_order(4, &[], &[0, 1, 0, 1]);
        assert_eq!(
            (o.how.as_str(), o.cut, o.rank_at),
            ("identity", 0, vec![0, 1, 2, 3])
        );
        let node_of: Vec<u32> = (0..8).map(|r| r / 4).collect();
        let o = graph_order(8, &ring(8), &node_of);
        assert_eq!((o.how.as_str(), o.cut), ("identity", 2));
        let o = graph_order(0, &[], &[]);
        assert!(o.rank_at.is_empty());
        let o = graph_order(1, &[(0, 0, 5)], &[0]);
        assert_eq!((o.rank_at, o.cut), (vec![0], 0));
    }

    #[test]
    fn weights_decide_which_edges_stay_inside() {
        // A 4-ring 0-1-2-3-0 on 2 nodes of 2: either {0,1}{2,3} or {1,2}{3,0} cuts two
        // edges; the heavy edges 1-2 and 3-0 pick the second.
        let edges = [(0, 1, 1), (1, 2, 10), (2, 3, 1), (3, 0, 10)];
        let node_of = [0, 0, 1, 1];
        let o = graph_order(4, &edges, &node_of);
        assert_eq!((o.cut_identity, o.cut), (20, 2), "{o:?}");
        let n = |v: usize| node_of[o.rank_at[v] as usize];
        assert_eq!(n(1), n(2));
        assert_eq!(n(3), n(0));
        // Unweighted (all 1), the identity already cuts the minimum and stays.
        let flat: Vec<_> = edges.iter().map(|&(a, b, _)| (a, b, 1)).collect();
        let o = graph_order(4, &flat, &node_of);
        assert_eq!((o.how.as_str(), o.cut), ("identity", 2));
    }

    #[test]
    fn vertices_past_the_graph_and_uneven_nodes() {
        // 5 vertices of a 7-rank job; nodes of 3, 2 (and 2 ranks left out).
        let node_of = [0, 1, 0, 1, 0, 1, 1];
        let o = graph_order(5, &ring(5), &node_of);
        assert_eq!(o.rank_at.len(), 5);
        assert!(is_permutation(&o.rank_at));
        assert_eq!(o.cut, cut(&ring(5), &o.rank_at, &node_of));
        assert_eq!((o.cut_identity, o.cut), (4, 2));
        // Edges naming vertices past the graph are ignored.
        let o = graph_order(2, &[(0, 1, 1), (1, 6, 9)], &node_of);
        assert_eq!(o.cut_identity, 1);
    }

    /// Small random weighted graphs on 2 to 4 nodes of uneven sizes, every one against all
    /// n! orders: the result is a permutation, its cut is what it says, never above the
    /// identity's nor below the optimum, no single swap of two vertices lowers it (the
    /// refinement's stopping rule), and it reaches the optimum on most graphs.
    #[test]
    fn brute_force_on_small_graphs() {
        let mut rng = crate::plan::rng::SplitMix64::new(1);
        let (mut graphs, mut optimal) = (0u32, 0u32);
        for n in 2..=8usize {
            for _ in 0..12 {
                let nodes = 2 + rng.below(3) as u32;
                let node_of: Vec<u32> = (0..n).map(|_| rng.below(nodes as u64) as u32).collect();
                let m = rng.below((n * 2) as u64) as usize;
                let weighted = rng.below(2) == 0;
                let edges: Vec<(u32, u32, u64)> = (0..m)
                    .map(|_| {
                        let w = if weighted { 1 + rng.below(9) } else { 1 };
                        (rng.below(n as u64) as u32, rng.below(n as u64) as u32, w)
                    })
                    .collect();
                let o = graph_order(n, &edges, &node_of);
                assert!(is_permutation(&o.rank_at), "{edges:?} {node_of:?}");
                assert_eq!(o.cut, cut(&edges, &o.rank_at, &node_of), "{edges:?}");
                assert_eq!(
                    o.cut_identity,
                    cut(&edges, &(0..n as u32).collect::<Vec<_>>(), &node_of)
                );
                assert!(o.cut <= o.cut_identity, "{edges:?} {node_of:?}: {o:?}");
                let mut best = u64::MAX;
                each_permutation(n, &mut |p| best = best.min(cut(&edges, p, &node_of)));
                assert!(o.cut >= best);
                for i in 0..n {
                    for j in i + 1..n {
                        let mut p = o.rank_at.clone();
                        p.swap(i, j);
                        assert!(
                            cut(&edges, &p, &node_of) >= o.cut,
                            "swapping vertices {i} and {j} helps: {edges:?} {node_of:?} {o:?}"
                        );
                    }
                }
                graphs += 1;
                optimal += (o.cut == best) as u32;
            }
        }
        assert!(
            optimal * 10 >= graphs * 9,
            "optimal on {optimal} of {graphs}"
        );
    }

    #[test]
    fn a_large_graph_finishes_and_improves() {
        // A 64x64 grid (4096 vertices) dealt round robin over 16 nodes.
        let side = 64u32;
        let mut edges = Vec::new();
        for y in 0..side {
            for x in 0..side {
                let v = y * side + x;
                if x + 1 < side {
                    edges.push((v, v + 1, 1));
                }
                if y + 1 < side {
                    edges.push((v, v + side, 1));
                }
            }
        }
        let node_of: Vec<u32> = (0..side * side).map(|r| r % 16).collect();
        let o = graph_order((side * side) as usize, &edges, &node_of);
        assert!(is_permutation(&o.rank_at));
        // Round robin by 16 keeps each column on one node: every row edge is cut.
        assert_eq!(o.cut_identity, 63 * 64);
        // Sixteen 16x16 squares would cut 3*2*64 = 384 edges; greedy growing and swaps get
        // within a few times that.
        assert!(
            o.cut < o.cut_identity / 4,
            "{} of {}",
            o.cut,
            o.cut_identity
        );
        eprintln!(
            "64x64 grid on 16 nodes: cut {} of {} ({})",
            o.cut, o.cut_identity, o.how
        );
    }
}
