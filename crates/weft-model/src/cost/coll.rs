//! Modelled time of each collective algorithm, for the runtime's selector: Hockney-style
//! formulas in the manner of Thakur, Rabenseifner and Gropp ("Optimization of collective
//! communication operations in MPICH", 2005), written out step by step so that each step
//! uses the lane it actually crosses.
//!
//! Placement: `ppn` ranks per node, contiguous (ranks `i·ppn .. (i+1)·ppn` share node i).
//! A step whose pairs all stay inside nodes uses the intra lane, any other step the inter
//! lane (a step lasts as long as its slowest pair). With one node everything is intra.
//! Sizes: `bytes` is what one rank contributes or receives as the MPI count says: the whole
//! buffer for bcast, reduce and allreduce; one rank's block for allgather, gather, scatter
//! and reduce_scatter; the block sent to each peer for alltoall.
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
    /// Between nodes (network).
    pub inter: AlphaBeta,
    /// Time to combine one byte in a reduction, ns.
    pub reduce_ns_per_byte: f64,
}

/// Collectives with a cost model.
pub const COLLECTIVES: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "allgather",
    "alltoall",
    "gather",
    "scatter",
    "reduce_scatter",
];

/// Algorithms modelled for `coll` (empty for an unknown collective). Names that take a
/// radix are listed by [`takes_radix`].
pub fn algorithms(coll: &str) -> &'static [&'static str] {
    match coll {
        "barrier" => &["dissemination", "knomial", "shm_counter", "shm_leader"],
        "bcast" => &[
            "knomial",
            "hier_knomial",
            "scatter_allgather",
            "shm",
            "shm_direct",
        ],
        "reduce" => &[
            "knomial",
            "hier_knomial",
            "reduce_scatter_gather",
            "shm",
            "shm_direct",
        ],
        "allreduce" => &[
            "recursive_doubling",
            "knomial",
            "ring",
            "rabenseifner",
            "hier_knomial",
            "shm",
            "shm_one_shot",
        ],
        "allgather" => &["ring", "recursive_doubling", "bruck", "knomial", "shm"],
        "alltoall" => &["pairwise", "bruck", "shm", "shm_direct"],
        "gather" => &["knomial", "linear", "shm_direct"],
        "scatter" => &["knomial", "linear"],
        "reduce_scatter" => &["ring", "recursive_halving", "shm", "shm_direct"],
        _ => &[],
    }
}

/// Whether `algo` uses the `radix` argument of [`cost_ns`] (it must then be at least 2).
pub fn takes_radix(algo: &str) -> bool {
    matches!(algo, "knomial" | "hier_knomial")
}

/// Derived figures of a shape.
struct Ctx<'a> {
    p: u64,
    ppn: u64,
    nodes: u64,
    n: f64,
    lanes: &'a Lanes,
}

impl Ctx<'_> {
    fn lane(&self, intra: bool) -> &AlphaBeta {
        if intra || self.nodes == 1 {
            &self.lanes.intra
        } else {
            &self.lanes.inter
        }
    }

    /// Lane of a step where rank r talks to r ± d for every r (rings, Bruck, dissemination):
    /// some pair crosses a node boundary as soon as there are two nodes.
    fn shift(&self) -> &AlphaBeta {
        self.lane(false)
    }

    /// Lane of a step where rank r talks to r XOR d (d a power of two): pairs stay inside
    /// nodes when every aligned block of 2d ranks does.
    fn xor(&self, d: u64) -> &AlphaBeta {
        self.lane(self.ppn.is_multiple_of(2 * d))
    }

    /// Lane of a k-nomial level whose subtrees are aligned blocks of `block` ranks.
    fn block(&self, block: u64) -> &AlphaBeta {
        self.lane(self.ppn.is_multiple_of(block))
    }

    /// Time of one message of `bytes` (fractional shares allowed) on `lane`.
    fn msg(lane: &AlphaBeta, bytes: f64) -> f64 {
        lane.latency_ns + lane.ns_per_byte * bytes
    }

    fn gamma(&self) -> f64 {
        self.lanes.reduce_ns_per_byte
    }

    /// Levels of a k-nomial tree over `p` ranks: ceil(log_k p).
    fn levels(p: u64, k: u64) -> u32 {
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
    fn knomial(&self, k: u64, extra_per_byte: f64, bytes_at: impl Fn(u32) -> f64) -> f64 {
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
    fn knomial_on(lane: &AlphaBeta, count: u64, k: u64, bytes: f64, extra_per_byte: f64) -> f64 {
        Self::levels(count, k) as f64
            * (k - 1) as f64
            * (Self::msg(lane, bytes) + extra_per_byte * bytes)
    }

    /// Steps of recursive doubling / halving: ceil(log2 p).
    fn log2(&self) -> u32 {
        Self::levels(self.p, 2)
    }

    /// Extra steps when p is not a power of two (fold in, fold out).
    fn non_pow2(&self) -> bool {
        !self.p.is_power_of_two()
    }

    /// Ranks on the busiest node.
    fn local(&self) -> u64 {
        self.ppn.min(self.p)
    }
}

/// Modelled time in ns of `algo` for `coll` (`radix` is used by [`takes_radix`] algorithms
/// only). `None` for an unknown combination, a radix below 2 where one is needed, a shape
/// with no rank or no rank per node, or a shared-memory algorithm on more than one node.
pub fn cost_ns(
    coll: &str,
    algo: &str,
    radix: u32,
    shape: &CollShape,
    lanes: &Lanes,
) -> Option<f64> {
    if !algorithms(coll).contains(&algo) {
        return None;
    }
    if takes_radix(algo) && radix < 2 {
        return None;
    }
    if shape.procs == 0 || shape.ppn == 0 {
        return None;
    }
    let p = shape.procs as u64;
    let ppn = shape.ppn as u64;
    let c = Ctx {
        p,
        ppn,
        nodes: p.div_ceil(ppn),
        n: shape.bytes as f64,
        lanes,
    };
    let shm = matches!(
        algo,
        "shm" | "shm_counter" | "shm_leader" | "shm_direct" | "shm_one_shot"
    );
    if shm && c.nodes > 1 {
        return None;
    }
    if p == 1 {
        return Some(0.0);
    }
    let k = radix as u64;
    let n = c.n;
    let g = c.gamma();
    let pf = p as f64;
    let intra = lanes.intra;
    let t = match (coll, algo) {
        // Barrier: zero-byte messages.
        ("barrier", "dissemination") => c.log2() as f64 * c.shift().latency_ns,
        ("barrier", "knomial") => 2.0 * c.knomial(k, 0.0, |_| 0.0),
        // Every rank bumps one shared counter (serialised cache-line transfers), then all
        // see the release flag.
        ("barrier", "shm_counter") => intra.latency_ns + pf * intra.bytes_ns(64.0),
        // Local rank 0 reads every rank's arrival line, then all read its release: one hop
        // more than the counter.
        ("barrier", "shm_leader") => 2.0 * intra.latency_ns + pf * intra.bytes_ns(64.0),

        ("bcast", "knomial") => c.knomial(k, 0.0, |_| n),
        ("bcast", "hier_knomial") => hier_fan(&c, k, n, 0.0),
        ("bcast", "scatter_allgather") => scatter_binomial(&c, n) + ring_allgather(&c, n / pf),
        // Root copies in, every rank copies out, one flag.
        ("bcast", "shm") => intra.latency_ns + 2.0 * intra.bytes_ns(n),
        // Two arrivals and one CMA read of the whole buffer per rank, all at once.
        ("bcast", "shm_direct") => 3.0 * intra.latency_ns + intra.bytes_ns(n),

        ("reduce", "knomial") => c.knomial(k, g, |_| n),
        ("reduce", "hier_knomial") => hier_fan(&c, k, n, g),
        ("reduce", "reduce_scatter_gather") => {
            halving_reduce_scatter(&c, n) + gather_binomial(&c, n)
        }
        ("reduce", "shm") => shm_reduce(&c, n),
        // Two arrivals; each rank reads its part of every peer's buffer (one CMA read per
        // peer, a system call each), combines, and writes the part to the root.
        ("reduce", "shm_direct") => {
            2.0 * intra.latency_ns
                + pf * intra.latency_ns
                + (pf - 1.0) * (n / pf) * (intra.ns_per_byte + g)
                + intra.bytes_ns(n / pf)
        }

        ("allreduce", "recursive_doubling") => {
            let steps: f64 = (0..c.log2())
                .map(|i| Ctx::msg(c.xor(1 << i), n) + g * n)
                .sum();
            steps + fold(&c, n)
        }
        ("allreduce", "knomial") => c.knomial(k, g, |_| n) + c.knomial(k, 0.0, |_| n),
        ("allreduce", "ring") => {
            let lane = c.shift();
            2.0 * (pf - 1.0) * Ctx::msg(lane, n / pf) + (pf - 1.0) / pf * n * g
        }
        ("allreduce", "rabenseifner") => {
            halving_reduce_scatter(&c, n) + doubling_allgather(&c, n) + fold(&c, n)
        }
        // Reduce (with γ) up both levels, then bcast down both levels.
        ("allreduce", "hier_knomial") => hier_fan(&c, k, n, g) + hier_fan(&c, k, n, 0.0),
        ("allreduce", "shm") => shm_reduce(&c, n) + intra.bytes_ns(n),
        // One arrival; every rank copies its vector in, reads all p and combines p - 1.
        ("allreduce", "shm_one_shot") => {
            intra.latency_ns + intra.bytes_ns((pf + 1.0) * n) + (pf - 1.0) * n * g
        }

        ("allgather", "ring") => (pf - 1.0) * Ctx::msg(c.shift(), n),
        ("allgather", "recursive_doubling") => {
            doubling_allgather(&c, pf * n)
                + if c.non_pow2() {
                    Ctx::msg(c.shift(), pf * n)
                } else {
                    0.0
                }
        }
        ("allgather", "bruck") => {
            let lane = c.shift();
            c.log2() as f64 * lane.latency_ns
                + (pf - 1.0) * lane.bytes_ns(n)
                + intra.bytes_ns(pf * n)
        }
        ("allgather", "knomial") => {
            c.knomial(k, 0.0, |m| (k.saturating_pow(m) as f64).min(pf) * n)
                + c.knomial(k, 0.0, |_| pf * n)
        }
        ("allgather", "shm") => intra.latency_ns + intra.bytes_ns(pf * n),

        ("alltoall", "pairwise") => (pf - 1.0) * Ctx::msg(c.shift(), n),
        ("alltoall", "bruck") => {
            let lane = c.shift();
            c.log2() as f64 * Ctx::msg(lane, pf / 2.0 * n) + 2.0 * intra.bytes_ns(pf * n)
        }
        ("alltoall", "shm") => intra.latency_ns + 2.0 * intra.bytes_ns((pf - 1.0) * n),
        // Publish, one node-wide arrival, one CMA read per peer (a system call each, counted
        // as one intra latency), a second arrival: one copy per byte.
        ("alltoall", "shm_direct") => {
            2.0 * intra.latency_ns + (pf - 1.0) * (intra.latency_ns + intra.bytes_ns(n))
        }

        ("gather" | "scatter", "knomial") => {
            c.knomial(k, 0.0, |m| (k.saturating_pow(m) as f64).min(pf) * n)
        }
        // Two arrivals; every rank writes its block into the root's buffer at once (the
        // copies overlap, bounded by the node's memory bandwidth: counted as one stream).
        ("gather", "shm_direct") => 3.0 * intra.latency_ns + intra.bytes_ns((pf - 1.0) * n),
        ("gather" | "scatter", "linear") => {
            let local = c.local() as f64;
            (local - 1.0) * Ctx::msg(&lanes.intra, n) + (pf - local) * Ctx::msg(c.lane(false), n)
        }

        ("reduce_scatter", "ring") => (pf - 1.0) * (Ctx::msg(c.shift(), n) + g * n),
        // Everyone copies its whole buffer in; each rank reads its block from every slot and
        // combines; one node-wide phase (the area's slots alternate halves).
        ("reduce_scatter", "shm") => {
            intra.latency_ns
                + intra.bytes_ns(pf * n)
                + pf * n * intra.ns_per_byte
                + (pf - 1.0) * n * g
        }
        // Two arrivals; each rank reads its block from every peer (one CMA read each) and
        // combines.
        ("reduce_scatter", "shm_direct") => {
            2.0 * intra.latency_ns + (pf - 1.0) * (intra.latency_ns + n * (intra.ns_per_byte + g))
        }
        ("reduce_scatter", "recursive_halving") => {
            halving_reduce_scatter(&c, pf * n) + fold(&c, pf * n)
        }
        _ => return None,
    };
    Some(t)
}

/// Two-level k-nomial fan-out (or fan-in with `extra_per_byte` = γ): across node leaders on
/// the inter lane, then inside the busiest node on the intra lane.
fn hier_fan(c: &Ctx, k: u64, n: f64, extra_per_byte: f64) -> f64 {
    let inter = Ctx::knomial_on(c.lane(false), c.nodes, k, n, extra_per_byte);
    let intra = Ctx::knomial_on(&c.lanes.intra, c.local(), k, n, extra_per_byte);
    if c.nodes == 1 {
        intra
    } else {
        inter + intra
    }
}

/// Binomial scatter of `n` bytes from the root: the top level sends half, then a quarter...
fn scatter_binomial(c: &Ctx, n: f64) -> f64 {
    let pf = c.p as f64;
    (0..c.log2())
        .map(|m| {
            let d = 1u64 << m;
            Ctx::msg(c.block(2 * d), n * (d as f64 / pf).min(0.5))
        })
        .sum()
}

/// Binomial gather of `n` bytes in total to the root (mirror of the scatter).
fn gather_binomial(c: &Ctx, n: f64) -> f64 {
    scatter_binomial(c, n)
}

/// Ring allgather of blocks of `block` bytes.
fn ring_allgather(c: &Ctx, block: f64) -> f64 {
    (c.p as f64 - 1.0) * Ctx::msg(c.shift(), block)
}

/// Recursive-halving reduce-scatter of a buffer of `n` bytes: step i exchanges n/2^(i+1)
/// with the rank at distance p/2^(i+1), and combines it.
fn halving_reduce_scatter(c: &Ctx, n: f64) -> f64 {
    let steps = c.log2();
    (0..steps)
        .map(|i| {
            let d = 1u64 << (steps - 1 - i);
            let part = n / (1u64 << (i + 1)) as f64;
            Ctx::msg(c.xor(d), part) + c.gamma() * part
        })
        .sum()
}

/// Recursive-doubling allgather ending with `n` bytes at every rank: step i exchanges
/// n/2^(steps-i) with the rank at distance 2^i.
fn doubling_allgather(c: &Ctx, n: f64) -> f64 {
    let steps = c.log2();
    (0..steps)
        .map(|i| {
            let part = n / (1u64 << (steps - i)) as f64;
            Ctx::msg(c.xor(1 << i), part)
        })
        .sum()
}

/// Extra cost when p is not a power of two: the surplus ranks fold their data in first
/// (send + combine) and get the result back at the end.
fn fold(c: &Ctx, n: f64) -> f64 {
    if c.non_pow2() {
        2.0 * Ctx::msg(c.shift(), n) + c.gamma() * n
    } else {
        0.0
    }
}

/// Shared-memory reduce: every rank writes its buffer, each reduces its 1/p share across all
/// p inputs, and the root reads the result.
fn shm_reduce(c: &Ctx, n: f64) -> f64 {
    let pf = c.p as f64;
    let intra = &c.lanes.intra;
    2.0 * intra.latency_ns
        + intra.bytes_ns(n)
        + (pf - 1.0) * (n / pf) * (intra.ns_per_byte + c.gamma())
        + intra.bytes_ns(n)
}
