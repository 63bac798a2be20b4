//! The vocabulary of the collective algorithms' cost models, for the runtime's selector:
//! Hockney-style step costs in the manner of Thakur, Rabenseifner and Gropp ("Optimization
//! of collective communication operations in MPICH", 2005), written so that each step of a
//! formula uses the lane it actually crosses. The formulas themselves live beside the plans
//! they model, one per algorithm, in the runtime's algorithm tables (`weft::coll`); this
//! module gives them the call's figures ([`CollModel`]) and the steps they are made of.
//!
//! Placement: `ppn` ranks per node, contiguous (ranks `i·ppn .. (i+1)·ppn` share node i).
//! A step whose pairs all stay inside nodes uses the intra lane, any other step the inter
//! lane (a step lasts as long as its slowest pair). With one node everything is intra.
//! Sizes: `bytes` is what one rank contributes or receives as the MPI count says: the whole
//! buffer for bcast, reduce, allreduce and scan; one rank's block for allgather, gather,
//! scatter and reduce_scatter; the block sent to each peer for alltoall.
//!
//! Pure arithmetic, identical on every rank; no I/O. Depends on [`AlphaBeta`] only.

use super::alpha_beta::AlphaBeta;
use serde::{Deserialize, Serialize};

/// The shape of one collective call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollShape {
    /// Ranks in the communicator.
    pub procs: u32,
    /// Ranks per node (contiguous placement).
    pub ppn: u32,
    /// Bytes per rank, as described in the module notes.
    pub bytes: u64,
}

/// The lanes a collective can use.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lanes {
    /// Between ranks of one node (shared memory).
    pub intra: AlphaBeta,
    /// Between nodes (network): what one message gets, striped over every rail when there
    /// are several.
    pub inter: AlphaBeta,
    /// Time to combine one byte in a reduction, ns.
    pub reduce_ns_per_byte: f64,
    /// Network rails between two nodes (links a message's data can be pinned to).
    #[serde(default = "one_rail")]
    pub inter_rails: u32,
    /// Of what the rails move as one message pinned to each, the share one message striped
    /// over all of them gets (1: all of it). One rail alone then moves `inter`'s bandwidth
    /// divided by `inter_rails · stripe_efficiency`.
    #[serde(default = "whole")]
    pub stripe_efficiency: f64,
    /// Cores of a node the job's ranks may use (0: not known, every rank has its own).
    /// With more ranks on a node than this, the ranks share the cores
    /// ([`CollModel::all_ranks_busy`]).
    #[serde(default)]
    pub node_cores: u32,
}

fn one_rail() -> u32 {
    1
}

fn whole() -> f64 {
    1.0
}

/// One call as an algorithm's cost formula sees it: the shape's derived figures, the lanes
/// and the tree radix. Every step cost is in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct CollModel<'a> {
    p: u64,
    ppn: u64,
    nodes: u64,
    n: f64,
    k: u64,
    lanes: &'a Lanes,
}

impl<'a> CollModel<'a> {
    /// The figures of `shape` at tree radix `radix` on `lanes`; None for a shape with no
    /// rank or no rank per node, or a radix below 2.
    pub fn new(shape: &CollShape, radix: u32, lanes: &'a Lanes) -> Option<CollModel<'a>> {
        if shape.procs == 0 || shape.ppn == 0 || radix < 2 {
            return None;
        }
        let p = shape.procs as u64;
        let ppn = shape.ppn as u64;
        Some(CollModel {
            p,
            ppn,
            nodes: p.div_ceil(ppn),
            n: shape.bytes as f64,
            k: radix as u64,
            lanes,
        })
    }

    /// Ranks in the communicator.
    pub fn ranks(&self) -> u64 {
        self.p
    }

    /// Ranks in the communicator, as a factor of a formula.
    pub fn procs(&self) -> f64 {
        self.p as f64
    }

    /// Nodes the communicator spans.
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    /// Bytes per rank (see the module notes).
    pub fn bytes(&self) -> f64 {
        self.n
    }

    /// The tree radix (2 for algorithms without one).
    pub fn radix(&self) -> u64 {
        self.k
    }

    /// The lane between ranks of one node.
    pub fn intra(&self) -> &AlphaBeta {
        &self.lanes.intra
    }

    /// The intra lane when `intra` holds or there is one node, else the inter lane.
    pub fn lane(&self, intra: bool) -> &AlphaBeta {
        if intra || self.nodes == 1 {
            &self.lanes.intra
        } else {
            &self.lanes.inter
        }
    }

    /// Lane of a step where rank r talks to r ± d for every r (rings, Bruck, dissemination,
    /// chains): some pair crosses a node boundary as soon as there are two nodes.
    pub fn shift(&self) -> &AlphaBeta {
        self.lane(false)
    }

    /// Lane of a step where rank r talks to r XOR d (d a power of two): pairs stay inside
    /// nodes when every aligned block of 2d ranks does.
    pub fn xor(&self, d: u64) -> &AlphaBeta {
        self.lane(self.ppn.is_multiple_of(2 * d))
    }

    /// Lane of a k-nomial level whose subtrees are aligned blocks of `block` ranks.
    pub fn block(&self, block: u64) -> &AlphaBeta {
        self.lane(self.ppn.is_multiple_of(block))
    }

    /// Rails between two nodes the call can keep busy at once (1 on one node).
    pub fn rails(&self) -> u64 {
        if self.nodes == 1 {
            1
        } else {
            u64::from(self.lanes.inter_rails.max(1))
        }
    }

    /// One network rail used alone, a message's data pinned to it: the inter lane's
    /// latency, and its bandwidth without the striping over [`CollModel::rails`] rails
    /// (the intra lane on one node).
    pub fn rail(&self) -> AlphaBeta {
        if self.nodes == 1 {
            return self.lanes.intra;
        }
        let inter = self.lanes.inter;
        let striped = self.rails() as f64 * self.lanes.stripe_efficiency.clamp(0.01, 1.0);
        AlphaBeta {
            latency_ns: inter.latency_ns,
            ns_per_byte: inter.ns_per_byte * striped.max(1.0),
        }
    }

    /// Time of one message of `bytes` (fractional shares allowed) on `lane`.
    pub fn msg(lane: &AlphaBeta, bytes: f64) -> f64 {
        lane.latency_ns + lane.ns_per_byte * bytes
    }

    /// Time to combine one byte in a reduction (γ).
    pub fn gamma(&self) -> f64 {
        self.lanes.reduce_ns_per_byte
    }

    /// Levels of a k-nomial tree over `p` ranks: ceil(log_k p).
    pub fn levels(p: u64, k: u64) -> u32 {
        let mut l = 0;
        let mut c = 1u64;
        while c < p {
            c = c.saturating_mul(k);
            l += 1;
        }
        l
    }

    /// k-nomial fan-out/fan-in over the communicator: per level, k−1 sequential messages;
    /// `bytes_at(level)` is the message size at that level (level 0 is the deepest).
    pub fn knomial(&self, k: u64, extra_per_byte: f64, bytes_at: impl Fn(u32) -> f64) -> f64 {
        let levels = Self::levels(self.p, k);
        (0..levels)
            .map(|m| {
                let block = k.saturating_pow(m + 1);
                let lane = self.block(block);
                let b = bytes_at(m);
                (k - 1) as f64 * (Self::msg(lane, b) + extra_per_byte * b)
            })
            .sum()
    }

    /// k-nomial over `count` participants on one fixed lane.
    pub fn knomial_on(
        lane: &AlphaBeta,
        count: u64,
        k: u64,
        bytes: f64,
        extra_per_byte: f64,
    ) -> f64 {
        Self::levels(count, k) as f64
            * (k - 1) as f64
            * (Self::msg(lane, bytes) + extra_per_byte * bytes)
    }

    /// Steps of recursive doubling / halving: ceil(log2 p).
    pub fn log2(&self) -> u32 {
        Self::levels(self.p, 2)
    }

    /// Extra steps when p is not a power of two (fold in, fold out).
    pub fn non_pow2(&self) -> bool {
        !self.p.is_power_of_two()
    }

    /// Ranks on the busiest node.
    pub fn local(&self) -> u64 {
        self.ppn.min(self.p)
    }

    /// How much longer a collective takes in which every rank contributes and receives
    /// (allreduce, allgather, alltoall, reduce_scatter and their v-forms), because the
    /// busiest node's ranks share its cores: ranks per node over cores when there are more
    /// ranks than cores (the lanes' `node_cores`, 0 when not known), else 1. In those
    /// collectives every rank copies or combines its part in the same steps, whatever the
    /// algorithm, so each runs at cores/ranks of a core's speed; every algorithm of them
    /// multiplies its formula by this factor (the same for all, so the cheapest stays the
    /// cheapest). Rooted collectives (bcast, reduce, gather, scatter, scan, barrier) do not:
    /// a step of theirs keeps only some ranks busy while the waiting ones yield their core.
    pub fn all_ranks_busy(&self) -> f64 {
        let cores = u64::from(self.lanes.node_cores);
        if cores == 0 || self.local() <= cores {
            1.0
        } else {
            self.local() as f64 / cores as f64
        }
    }

    /// Two-level k-nomial fan-out (or fan-in with `extra_per_byte` = γ): across node
    /// leaders on the inter lane, then inside the busiest node on the intra lane.
    pub fn hier_fan(&self, k: u64, n: f64, extra_per_byte: f64) -> f64 {
        let inter = Self::knomial_on(self.lane(false), self.nodes, k, n, extra_per_byte);
        let intra = Self::knomial_on(&self.lanes.intra, self.local(), k, n, extra_per_byte);
        if self.nodes == 1 {
            intra
        } else {
            inter + intra
        }
    }

    /// Binomial scatter of `n` bytes from the root: the top level sends half, then a
    /// quarter...
    pub fn scatter_binomial(&self, n: f64) -> f64 {
        let pf = self.procs();
        (0..self.log2())
            .map(|m| {
                let d = 1u64 << m;
                Self::msg(self.block(2 * d), n * (d as f64 / pf).min(0.5))
            })
            .sum()
    }

    /// Binomial gather of `n` bytes in total to the root (mirror of the scatter).
    pub fn gather_binomial(&self, n: f64) -> f64 {
        self.scatter_binomial(n)
    }

    /// Ring allgather of blocks of `block` bytes.
    pub fn ring_allgather(&self, block: f64) -> f64 {
        (self.procs() - 1.0) * Self::msg(self.shift(), block)
    }

    /// Recursive-halving reduce-scatter of a buffer of `n` bytes: step i exchanges
    /// n/2^(i+1) with the rank at distance p/2^(i+1), and combines it.
    pub fn halving_reduce_scatter(&self, n: f64) -> f64 {
        let steps = self.log2();
        (0..steps)
            .map(|i| {
                let d = 1u64 << (steps - 1 - i);
                let part = n / (1u64 << (i + 1)) as f64;
                Self::msg(self.xor(d), part) + self.gamma() * part
            })
            .sum()
    }

    /// Recursive-doubling allgather ending with `n` bytes at every rank: step i exchanges
    /// n/2^(steps-i) with the rank at distance 2^i.
    pub fn doubling_allgather(&self, n: f64) -> f64 {
        let steps = self.log2();
        (0..steps)
            .map(|i| {
                let part = n / (1u64 << (steps - i)) as f64;
                Self::msg(self.xor(1 << i), part)
            })
            .sum()
    }

    /// Extra cost when p is not a power of two: the surplus ranks fold their data in first
    /// (send + combine) and get the result back at the end.
    pub fn fold(&self, n: f64) -> f64 {
        if self.non_pow2() {
            2.0 * Self::msg(self.shift(), n) + self.gamma() * n
        } else {
            0.0
        }
    }

    /// Shared-memory reduce: every rank writes its buffer, each reduces its 1/p share
    /// across all p inputs, and the root reads the result.
    pub fn shm_reduce(&self, n: f64) -> f64 {
        let pf = self.procs();
        let intra = &self.lanes.intra;
        2.0 * intra.latency_ns
            + intra.bytes_ns(n)
            + (pf - 1.0) * (n / pf) * (intra.ns_per_byte + self.gamma())
            + intra.bytes_ns(n)
    }
}
