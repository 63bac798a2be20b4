//! The algorithms, one directory per collective and one file per algorithm of it, and each
//! collective's table of them (the directory's `mod.rs`): one [`Algorithm`] row per
//! algorithm with its name, restrictions, plan builder and cost formula. Selection,
//! `weft info --explain`, the tests and the cost model read these tables and nothing else,
//! and a collective runs the builder of the row the selector chose, so an algorithm cannot
//! be named without a plan and a cost, nor chosen and then run as another.
//!
//! A file builds a [`Plan`] for one rank from the communicator's shape and the byte layout
//! of the call ([`Call`]) and states the algorithm's modelled time (`cost`, in the step
//! costs of `weft_model::cost::CollModel`); none touches buffers or the engine, so every
//! plan can be checked without running it. A file that several collectives use says which
//! one it serves first (the ring allgather also serves allgatherv; `shm_direct_combine`
//! serves the direct reduce and reduce-scatter).
//!
//! The `shm` algorithms run on the node's collective area (seeds 000 and 004): data is
//! copied once into the area and once out, and readiness is a node-wide arrival counter
//! instead of messages. What is written before an arrival is read after it; phases
//! alternate between the two halves of each slot (`CollArea`), so nothing waits for the
//! readers to finish: the next arrival says they have. The `shm_direct` ones publish buffer
//! addresses there and copy once with Cross Memory Attach.
//!
//! Adding an algorithm: its file (a plan builder and a `cost`), and one row in its
//! collective's table. A row without a builder or a cost does not compile, and a file that
//! no row uses is dead code (`-D warnings` rejects it).

use super::schedule::Plan;
use super::select::Restriction;
use std::borrow::Cow;
use weft_core::{bail, Result};
use weft_model::tree::{GroupLevels, Tree};

pub(crate) mod allgather;
pub(crate) mod allgatherv;
pub(crate) mod allreduce;
pub(crate) mod alltoall;
pub(crate) mod alltoallv;
pub(crate) mod barrier;
pub(crate) mod bcast;
pub(crate) mod exscan;
pub(crate) mod gather;
pub(crate) mod gatherv;
pub(crate) mod reduce;
pub(crate) mod reduce_scatter;
pub(crate) mod scan;
pub(crate) mod scatter;
pub(crate) mod scatterv;
pub(crate) mod shm_direct_combine;

/// What a plan builder reads: the calling rank's place in the communicator, the radix the
/// selector chose, the call's shape and, where they matter, the node layout and the blocks
/// of a v-form. Made once per new call shape (`Comm::coll_plan`), never per repeated call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call<'a> {
    /// This rank.
    pub rank: u32,
    /// Ranks in the communicator.
    pub size: u32,
    /// The tree radix (2 for algorithms without one).
    pub radix: u32,
    /// The root (0 for collectives without one).
    pub root: u32,
    /// Bytes per rank as the selector counts them: the whole buffer of bcast, reduce,
    /// allreduce and scan; one rank's block of gather, scatter, allgather and alltoall; this
    /// rank's block of gatherv and scatterv; the largest block of allgatherv; the average
    /// block of alltoallv and reduce_scatter.
    pub bytes: usize,
    /// Bytes of one element (reductions; 0 otherwise).
    pub elem_bytes: usize,
    /// Whether the operation commutes (true without one).
    pub commutative: bool,
    /// Bytes of a slot of the node's area (algorithms with the `SharedMemory` restriction;
    /// 0 for the others).
    pub slot_bytes: usize,
    /// Whether recursive halving pairs ranks one apart first (`Comm::coll_near_first`).
    pub near_first: bool,
    /// Network rails between nodes a message can be pinned to (the model's
    /// `Lanes::inter_rails`; 1 without a network).
    pub rails: u32,
    /// The nested rank groups the tree follows, innermost first (core groups, nodes;
    /// `Comm::coll_levels`): hierarchical algorithms only, `None` for the others.
    pub levels: Option<&'a GroupLevels>,
    /// The hierarchical tree of `levels` for this radix, when the caller built it once for
    /// many ranks' plans (the simulator); the hierarchical algorithms build it themselves
    /// otherwise (a live rank plans its own part once).
    pub hier_tree: Option<&'a Tree>,
    /// (offset, length) of each rank's block in the send buffer (scatterv at the root,
    /// alltoallv) or of the vector (reduce_scatter); empty for equal blocks.
    pub send_blocks: &'a [(usize, usize)],
    /// (offset, length) of each rank's block in the receive buffer (gatherv at the root,
    /// allgatherv, alltoallv); empty for equal blocks.
    pub recv_blocks: &'a [(usize, usize)],
}

impl Call<'_> {
    /// The hierarchical k-nomial tree of the call's group levels and radix rooted at `root`:
    /// the caller's when it gave one with that root, else built here.
    pub(crate) fn hier_tree(&self, root: u32) -> Result<Cow<'_, Tree>> {
        match self.hier_tree {
            Some(t) if t.root() == root => Ok(Cow::Borrowed(t)),
            _ => Ok(Cow::Owned(bcast::hier_knomial::tree(
                self.levels()?,
                self.radix,
                root,
            )?)),
        }
    }

    /// The group levels of a hierarchical algorithm's call.
    pub(crate) fn levels(&self) -> Result<&GroupLevels> {
        match self.levels {
            Some(l) => Ok(l),
            None => bail!(
                Internal,
                "a hierarchical collective was planned without group levels"
            ),
        }
    }

    /// Elements in the buffer of a reduction.
    pub(crate) fn count(&self) -> usize {
        self.bytes / self.elem_bytes.max(1)
    }

    /// Every rank's block at `i · bytes`, `bytes` long (the equal-block collectives).
    pub(crate) fn equal_blocks(&self) -> Vec<(usize, usize)> {
        (0..self.size as usize)
            .map(|i| (i * self.bytes, self.bytes))
            .collect()
    }

    /// Bytes of the whole vector [`Call::send_blocks`] cut (reduce_scatter).
    pub(crate) fn total(&self) -> usize {
        self.send_blocks.last().map_or(0, |&(off, len)| off + len)
    }
}

/// A plan builder of a table row.
pub(crate) type Build = fn(&Call) -> Result<Plan>;

/// The restrictions of the algorithms on the node's collective area.
pub(crate) const SHM: &[Restriction] = &[Restriction::SharedMemory, Restriction::Blocking];
/// The restrictions of the single-copy algorithms on the node's collective area.
pub(crate) const SHM_CMA: &[Restriction] = &[
    Restriction::SharedMemory,
    Restriction::Blocking,
    Restriction::CrossMemoryAttach,
];

/// Splits `count` elements of `elem_bytes` into `parts` nearly equal chunks; returns each
/// chunk's byte offset and length (the first `count % parts` chunks get one more element).
pub(crate) fn chunks(count: usize, elem_bytes: usize, parts: usize) -> Vec<(usize, usize)> {
    let base = count / parts;
    let extra = count % parts;
    let mut off = 0;
    (0..parts)
        .map(|i| {
            let n = base + usize::from(i < extra);
            let c = (off * elem_bytes, n * elem_bytes);
            off += n;
            c
        })
        .collect()
}

/// `(a - b) mod n` for ranks.
pub(crate) fn sub(a: u32, b: u32, n: u32) -> u32 {
    ((a as u64 + n as u64 * 2 - (b % n) as u64) % n as u64) as u32
}

/// Every collective's table, for the tests that walk them all.
#[cfg(test)]
pub(crate) fn tables() -> Vec<(super::Coll, &'static [super::select::Algorithm])> {
    super::select::ALL
        .iter()
        .map(|&c| (c, super::select::algorithms(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::select::Algorithm;
    use crate::coll::Coll;
    use weft_model::cost::{AlphaBeta, CollShape, Lanes};

    #[test]
    fn chunks_cover_the_buffer() {
        let c = chunks(10, 4, 3);
        assert_eq!(c, vec![(0, 16), (16, 12), (28, 12)]);
        assert_eq!(chunks(1, 8, 4).iter().map(|c| c.1).sum::<usize>(), 8);
        assert_eq!(sub(0, 3, 5), 2);
        assert_eq!(sub(4, 9, 5), 0);
    }

    /// A call of `coll` on `size` ranks moving `bytes` (8-byte elements) per rank, with
    /// whatever layout the collective needs, as this rank of a two-node job.
    fn plan_of(a: &Algorithm, coll: Coll, rank: u32, size: u32, bytes: usize) -> String {
        let es = 8;
        let blocks: Vec<(usize, usize)> = (0..size as usize).map(|i| (i * bytes, bytes)).collect();
        // Ranks dealt round robin over two nodes: the hierarchical trees differ from the flat.
        let nodes: Vec<u32> = (0..size).map(|r| r % 2).collect();
        let levels = GroupLevels::new(vec![nodes]).unwrap();
        let (send_blocks, recv_blocks): (&[_], &[_]) = match coll {
            Coll::Gatherv | Coll::Allgatherv => (&[], &blocks),
            Coll::Scatterv | Coll::ReduceScatter | Coll::ReduceScatterBlock => (&blocks, &[]),
            Coll::Alltoallv => (&blocks, &blocks),
            _ => (&[], &[]),
        };
        let call = Call {
            rank,
            size,
            radix: 2,
            root: 0,
            bytes,
            elem_bytes: es,
            commutative: true,
            slot_bytes: 4096,
            near_first: false,
            rails: 2,
            levels: a.hierarchical.then_some(&levels),
            hier_tree: None,
            send_blocks,
            recv_blocks,
        };
        let plan = (a.plan)(&call).unwrap_or_else(|e| panic!("{coll:?} {}: {e}", a.name));
        format!("{plan:?}")
    }

    #[test]
    fn every_row_builds_its_own_plan() {
        // Two rows of one table that build the same plans at 4 ranks would be one algorithm
        // under two names (a row wired to another's builder): every pair must differ on
        // some rank at some size.
        for (coll, table) in tables() {
            assert!(!table.is_empty(), "{coll:?}");
            for (i, a) in table.iter().enumerate() {
                assert!(
                    table[..i].iter().all(|b| b.name != a.name),
                    "{coll:?}: {} twice",
                    a.name
                );
                for b in &table[..i] {
                    let differ = [8usize, 4096, 1 << 16].iter().any(|&bytes| {
                        (0..4)
                            .any(|r| plan_of(a, coll, r, 4, bytes) != plan_of(b, coll, r, 4, bytes))
                    });
                    assert!(
                        differ,
                        "{coll:?}: {} and {} build the same plans",
                        a.name, b.name
                    );
                }
            }
        }
    }

    /// Shared memory: 200 ns, 10 GB/s; network: 2 µs, 1 GB/s; reduce 0.2 ns/byte.
    fn lanes() -> Lanes {
        Lanes {
            intra: AlphaBeta::from_bandwidth(200.0, 10e9),
            inter: AlphaBeta::from_bandwidth(2000.0, 1e9),
            reduce_ns_per_byte: 0.2,
            inter_rails: 1,
            stripe_efficiency: 1.0,
            node_cores: 0,
        }
    }

    fn cost(coll: Coll, algo: &str, radix: u32, procs: u32, ppn: u32, bytes: u64) -> f64 {
        let a = crate::coll::select::algorithms(coll)
            .iter()
            .find(|a| a.name == algo)
            .unwrap();
        a.cost_ns(&CollShape { procs, ppn, bytes }, radix, &lanes())
            .unwrap_or_else(|| panic!("{coll:?}/{algo} k={radix} p={procs} ppn={ppn} n={bytes}"))
    }

    #[test]
    fn multi_rail_wins_on_large_vectors_over_rails_that_stripe_imperfectly() {
        let on = |rails: u32, stripe_efficiency: f64, bytes: u64, algo: &str| {
            let l = Lanes {
                inter_rails: rails,
                stripe_efficiency,
                ..lanes()
            };
            let a = crate::coll::select::algorithms(Coll::Allreduce)
                .iter()
                .find(|a| a.name == algo)
                .unwrap();
            a.cost_ns(
                &CollShape {
                    procs: 4,
                    ppn: 2,
                    bytes,
                },
                2,
                &l,
            )
        };
        // One rail, or one node: not a candidate.
        assert_eq!(on(1, 0.8, 1 << 23, "multi_rail"), None);
        let one_node = Lanes {
            inter_rails: 3,
            ..lanes()
        };
        assert_eq!(
            crate::coll::select::algorithms(Coll::Allreduce)
                .iter()
                .find(|a| a.name == "multi_rail")
                .unwrap()
                .cost_ns(
                    &CollShape {
                        procs: 4,
                        ppn: 4,
                        bytes: 1 << 23
                    },
                    2,
                    &one_node
                ),
            None
        );
        // 3 rails striping at 80 %: 8 MiB goes faster on three rings of its own, by what
        // striping loses less the two extra latencies per step; 8 KiB does not.
        let (multi, ring) = (
            on(3, 0.8, 1 << 23, "multi_rail"),
            on(3, 0.8, 1 << 23, "ring"),
        );
        let (multi, ring) = (multi.unwrap(), ring.unwrap());
        let l = lanes();
        let steps = 2.0 * 3.0;
        let expect = ring - steps * (0.2 * l.inter.ns_per_byte * (1 << 23) as f64 / 4.0)
            + steps * 2.0 * l.inter.latency_ns;
        assert!((multi - expect).abs() < 1e-6 * ring, "{multi} vs {expect}");
        assert!(multi < ring);
        assert!(on(3, 0.8, 8192, "multi_rail").unwrap() > on(3, 0.8, 8192, "ring").unwrap());
        // Perfect striping leaves it nothing to win.
        assert!(on(3, 1.0, 1 << 23, "multi_rail").unwrap() > on(3, 1.0, 1 << 23, "ring").unwrap());
    }

    #[test]
    fn every_row_has_a_cost_that_grows_with_bytes() {
        for (coll, table) in tables() {
            for a in table {
                let radices: &[u32] = if a.radix { &[2, 3, 4, 8] } else { &[2] };
                for &k in radices {
                    for (procs, ppn) in [
                        (1u32, 1u32),
                        (2, 2),
                        (7, 7),
                        (16, 16),
                        (64, 8),
                        (100, 6),
                        (256, 32),
                    ] {
                        let nodes = procs.div_ceil(ppn);
                        let shape = |bytes| CollShape { procs, ppn, bytes };
                        if a.restrictions.contains(&Restriction::SharedMemory) && nodes > 1 {
                            assert_eq!(a.cost_ns(&shape(8), k, &lanes()), None);
                            continue;
                        }
                        // The multi-rail rows are priced on two or more nodes with rails.
                        let lanes = if a.restrictions.contains(&Restriction::Rails) {
                            assert_eq!(a.cost_ns(&shape(8), k, &lanes()), None);
                            if nodes == 1 {
                                continue;
                            }
                            Lanes {
                                inter_rails: 3,
                                stripe_efficiency: 0.8,
                                ..lanes()
                            }
                        } else {
                            lanes()
                        };
                        let mut last = -1.0;
                        for bytes in [0u64, 1, 8, 1024, 65536, 1 << 20, 1 << 24] {
                            let t = a.cost_ns(&shape(bytes), k, &lanes).unwrap();
                            assert!(t.is_finite() && t >= 0.0, "{coll:?}/{} {t}", a.name);
                            assert!(
                                t >= last,
                                "{coll:?}/{} k={k} p={procs}: {t} < {last} at {bytes}",
                                a.name
                            );
                            last = t;
                        }
                        if procs == 1 {
                            assert_eq!(last, 0.0);
                        } else if coll != Coll::Barrier {
                            assert!(last > 0.0, "{coll:?}/{} costs nothing at p={procs}", a.name);
                        }
                    }
                }
                if a.radix {
                    assert_eq!(
                        a.cost_ns(
                            &CollShape {
                                procs: 8,
                                ppn: 8,
                                bytes: 8
                            },
                            1,
                            &lanes()
                        ),
                        None
                    );
                }
            }
        }
    }

    #[test]
    fn ranks_beyond_the_cores_stretch_the_all_to_all_collectives() {
        // 4 ranks on a node of 2 cores: every algorithm of a collective in which every rank
        // contributes and receives takes twice as long; a rooted collective's as long as
        // with a core per rank; 2 ranks on 2 cores as long as ever.
        let shared = Lanes {
            node_cores: 2,
            ..lanes()
        };
        let symmetric = [
            (Coll::Allreduce, "ring"),
            (Coll::Allreduce, "recursive_doubling"),
            (Coll::Allreduce, "rabenseifner"),
            (Coll::Allreduce, "shm"),
            (Coll::Allreduce, "shm_one_shot"),
            (Coll::Allgather, "ring"),
            (Coll::Allgather, "bruck"),
            (Coll::Allgather, "shm"),
            (Coll::Alltoall, "pairwise"),
            (Coll::Alltoall, "shm"),
            (Coll::ReduceScatter, "ring"),
            (Coll::ReduceScatter, "shm_direct"),
            (Coll::Allreduce, "knomial"),
            (Coll::Allreduce, "hier_knomial"),
            (Coll::Allgather, "knomial"),
            (Coll::ReduceScatter, "reduce_scatterv"),
        ];
        let rooted = [
            (Coll::Bcast, "knomial"),
            (Coll::Bcast, "shm"),
            (Coll::Reduce, "knomial"),
            (Coll::Gather, "linear"),
            (Coll::Scatter, "knomial"),
            (Coll::Barrier, "dissemination"),
        ];
        let at = |coll: Coll, algo: &str, ppn: u32, l: &Lanes| {
            let a = crate::coll::select::algorithms(coll)
                .iter()
                .find(|a| a.name == algo)
                .unwrap();
            let shape = CollShape {
                procs: ppn,
                ppn,
                bytes: 1 << 16,
            };
            a.cost_ns(&shape, 2, l).unwrap()
        };
        for (list, factor) in [(&symmetric[..], 2.0), (&rooted[..], 1.0)] {
            for &(coll, algo) in list {
                let (own, two) = (at(coll, algo, 4, &lanes()), at(coll, algo, 4, &shared));
                assert!(
                    (two - factor * own).abs() <= 1e-9 * two,
                    "{coll:?}/{algo}: {two} against {own}"
                );
                assert_eq!(at(coll, algo, 2, &lanes()), at(coll, algo, 2, &shared));
            }
        }
    }

    #[test]
    fn allreduce_crossovers() {
        // Large buffers at large P: bandwidth-optimal ring and Rabenseifner beat recursive
        // doubling.
        let big = 64 << 20;
        let ring = cost(Coll::Allreduce, "ring", 2, 256, 32, big);
        let rd = cost(Coll::Allreduce, "recursive_doubling", 2, 256, 32, big);
        let rab = cost(Coll::Allreduce, "rabenseifner", 2, 256, 32, big);
        assert!(ring < rd / 2.0, "ring {ring} rd {rd}");
        assert!(rab < rd / 2.0, "rab {rab} rd {rd}");
        // 8 bytes: latency rules; recursive doubling's log P steps beat the ring's 2(P-1).
        let ring = cost(Coll::Allreduce, "ring", 2, 256, 32, 8);
        let rd = cost(Coll::Allreduce, "recursive_doubling", 2, 256, 32, 8);
        assert!(rd < ring / 10.0, "rd {rd} ring {ring}");
        assert!(
            cost(Coll::Allreduce, "recursive_doubling", 2, 32, 32, 8)
                < cost(Coll::Allreduce, "ring", 2, 32, 32, 8)
        );
        // Inside a node the area wins for small vectors.
        assert!(
            cost(Coll::Allreduce, "shm", 2, 16, 16, 8)
                < cost(Coll::Allreduce, "ring", 2, 16, 16, 8)
        );
    }

    #[test]
    fn closed_forms_and_placement() {
        let l = lanes();
        // Binomial bcast over 16 ranks: 4 levels of one message; 4-nomial: 2 levels of 3.
        let t = cost(Coll::Bcast, "knomial", 2, 16, 16, 1000);
        assert!((t - 4.0 * l.intra.time_ns(1000)).abs() < 1e-9);
        let t = cost(Coll::Bcast, "knomial", 4, 16, 16, 1000);
        assert!((t - 6.0 * l.intra.time_ns(1000)).abs() < 1e-9);
        // Ring allgather: P-1 steps; dissemination barrier: ceil(log2 P) latencies.
        let t = cost(Coll::Allgather, "ring", 2, 8, 8, 100);
        assert!((t - 7.0 * l.intra.time_ns(100)).abs() < 1e-9);
        let t = cost(Coll::Barrier, "dissemination", 2, 9, 9, 0);
        assert!((t - 4.0 * l.intra.latency_ns).abs() < 1e-9);
        // Same P, one node vs eight: crossing nodes costs more.
        for (coll, algo, k) in [
            (Coll::Bcast, "knomial", 2),
            (Coll::Allreduce, "ring", 2),
            (Coll::Alltoall, "pairwise", 2),
        ] {
            assert!(cost(coll, algo, k, 64, 64, 4096) < cost(coll, algo, k, 64, 8, 4096));
        }
        // With a slow network, the hierarchical tree beats a flat k-nomial when nodes are not
        // aligned to the radix (ppn 6: every flat level crosses nodes).
        let flat = cost(Coll::Bcast, "knomial", 2, 96, 6, 8);
        let hier = cost(Coll::Bcast, "hier_knomial", 2, 96, 6, 8);
        assert!(hier < flat, "hier {hier} flat {flat}");
        // Large bcast prefers scatter-allgather, small the binomial tree.
        let big = 16 << 20;
        let sag = cost(Coll::Bcast, "scatter_allgather", 2, 128, 16, big);
        let binomial = cost(Coll::Bcast, "knomial", 2, 128, 16, big);
        assert!(sag < binomial / 1.5, "sag {sag} binomial {binomial}");
        assert!(
            cost(Coll::Bcast, "knomial", 2, 128, 16, 8)
                < cost(Coll::Bcast, "scatter_allgather", 2, 128, 16, 8)
        );
    }
}
