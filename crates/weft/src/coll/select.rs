//! Algorithm selection over each collective's table of algorithms ([`Algorithm`], one row
//! per algorithm with its restrictions, plan builder and cost formula; the tables are in
//! `algo/<collective>/`): a forced algorithm, else the first rule of the tuning table
//! (`tuning/default.toml`, data) that holds, else the cheapest row by its modelled cost. A
//! decision depends only on the collective, the communicator size, ranks per node, bytes
//! per rank, whether the operation commutes and the knobs, all of which every rank shares,
//! so every rank decides alike. Alltoallv is the exception: each
//! rank knows only its own counts, so its bytes differ by rank, and it takes an algorithm
//! that needs every rank alike (the node's area) only when the question every rank shares
//! (the same call of 0 bytes) answers with one. Forcing an algorithm whose
//! restriction fails is an error naming the restriction, never a silent fallback.
//! No I/O here except reading `WEFT_TUNING_FILE` once when the tuning is built.

use super::algo;
use super::knobs::KNOBS;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::fmt;
use toml::Spanned;
use weft_core::knob::KnobValues;
use weft_core::{Error, ErrorKind, Result};
use weft_model::cost::{AlphaBeta, CollModel, CollShape, Lanes};

/// The collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coll {
    /// MPI_Barrier
    Barrier,
    /// MPI_Bcast
    Bcast,
    /// MPI_Reduce
    Reduce,
    /// MPI_Allreduce
    Allreduce,
    /// MPI_Gather
    Gather,
    /// MPI_Gatherv
    Gatherv,
    /// MPI_Scatter
    Scatter,
    /// MPI_Scatterv
    Scatterv,
    /// MPI_Allgather
    Allgather,
    /// MPI_Allgatherv
    Allgatherv,
    /// MPI_Alltoall
    Alltoall,
    /// MPI_Alltoallv
    Alltoallv,
    /// MPI_Reduce_scatter
    ReduceScatter,
    /// MPI_Reduce_scatter_block
    ReduceScatterBlock,
    /// MPI_Scan
    Scan,
    /// MPI_Exscan
    Exscan,
}

/// Every collective, in knob order.
pub const ALL: &[Coll] = &[
    Coll::Barrier,
    Coll::Bcast,
    Coll::Reduce,
    Coll::Allreduce,
    Coll::Gather,
    Coll::Gatherv,
    Coll::Scatter,
    Coll::Scatterv,
    Coll::Allgather,
    Coll::Allgatherv,
    Coll::Alltoall,
    Coll::Alltoallv,
    Coll::ReduceScatter,
    Coll::ReduceScatterBlock,
    Coll::Scan,
    Coll::Exscan,
];

impl Coll {
    /// The collective's name (`allreduce`, `reduce_scatter_block`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast => "bcast",
            Coll::Reduce => "reduce",
            Coll::Allreduce => "allreduce",
            Coll::Gather => "gather",
            Coll::Gatherv => "gatherv",
            Coll::Scatter => "scatter",
            Coll::Scatterv => "scatterv",
            Coll::Allgather => "allgather",
            Coll::Allgatherv => "allgatherv",
            Coll::Alltoall => "alltoall",
            Coll::Alltoallv => "alltoallv",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::ReduceScatterBlock => "reduce_scatter_block",
            Coll::Scan => "scan",
            Coll::Exscan => "exscan",
        }
    }

    /// The collective named `name`.
    pub fn from_name(name: &str) -> Result<Coll> {
        ALL.iter()
            .copied()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown collective {name:?}; known: {}",
                        ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
                    ),
                )
            })
    }

    /// Position in [`ALL`] (its declaration order; a test checks they agree).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A condition an algorithm needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restriction {
    /// The operation must be commutative (the algorithm combines out of rank order).
    Commutative,
    /// The communicator size must be a power of two.
    PowerOfTwo,
    /// The communicator must be the world of a job on one node with a collective area.
    SharedMemory,
    /// The call must be blocking: the node's collective area serves one collective at a
    /// time, and nonblocking collectives may be outstanding together.
    Blocking,
    /// Every local rank must be able to read every other's memory with Cross Memory Attach
    /// (`process_vm_readv`), as the node's ranks decide together once (one verdict for all,
    /// never a per-rank fallback), and `WEFT_SHM_CMA` must not be `off`.
    CrossMemoryAttach,
    /// The communicator must span two or more nodes joined by two or more network rails
    /// that a message can be pinned to (the TCP transport with `WEFT_MAX_RAILS` of 2 or
    /// more and as many lanes).
    Rails,
}

impl fmt::Display for Restriction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Restriction::Commutative => f.write_str("needs a commutative operation"),
            Restriction::PowerOfTwo => f.write_str("needs a power-of-two number of ranks"),
            Restriction::SharedMemory => f.write_str(
                "needs the world communicator of a job of 2 or more ranks on one node with a shared-memory collective area",
            ),
            Restriction::Blocking => f.write_str(
                "needs a blocking call (the node's collective area serves one collective at a time)",
            ),
            Restriction::CrossMemoryAttach => f.write_str(
                "needs Cross Memory Attach (process_vm_readv) between every pair of local ranks and WEFT_SHM_CMA not off",
            ),
            Restriction::Rails => f.write_str(
                "needs two or more nodes joined by two or more network rails a message can be pinned to",
            ),
        }
    }
}

/// One row of a collective's algorithm table (`coll/algo/<collective>/mod.rs`): what
/// selection, `weft info --explain`, the tests and the cost model know of an algorithm,
/// and the function that builds its plan. Rows are statics, one per algorithm: two rows
/// are equal when they are the same row.
#[derive(Debug)]
pub struct Algorithm {
    /// Name as `WEFT_<COLL>_ALGO` and the tuning table take it.
    pub name: &'static str,
    /// What it needs; the selector never picks it for a call that lacks one of them.
    pub restrictions: &'static [Restriction],
    /// Whether it takes a tree radix.
    pub radix: bool,
    /// Whether its plan follows the job's node layout (groups of ranks per node), which
    /// then is an input of the plan beside the call's shape.
    pub hierarchical: bool,
    /// Builds one rank's plan of a call.
    pub(crate) plan: algo::Build,
    /// Its modelled time in ns, in the step costs of [`CollModel`] (called for a shape of
    /// 2 or more ranks; [`Algorithm::cost_ns`] answers the rest).
    pub(crate) cost: fn(&CollModel) -> f64,
}

impl PartialEq for Algorithm {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Algorithm {
    /// Modelled time in ns of a call of `shape` at `radix` (used by algorithms that take
    /// one) on `lanes`. None for a shape with no rank or no rank per node, a radix below 2
    /// where one is needed, or an algorithm of the node's area on more than one node.
    pub fn cost_ns(&self, shape: &CollShape, radix: u32, lanes: &Lanes) -> Option<f64> {
        let m = CollModel::new(shape, if self.radix { radix } else { 2 }, lanes)?;
        if m.nodes() > 1 && self.needs(Restriction::SharedMemory) {
            return None;
        }
        if m.rails() < 2 && self.needs(Restriction::Rails) {
            return None;
        }
        if m.ranks() == 1 {
            return Some(0.0);
        }
        Some((self.cost)(&m))
    }

    /// Whether `r` is one of its restrictions.
    pub fn needs(&self, r: Restriction) -> bool {
        self.restrictions.contains(&r)
    }
}

/// The algorithms of `coll`: its table, each row working end to end. Reduce_scatter_block
/// shares reduce_scatter's (it is the case of equal counts).
pub fn algorithms(coll: Coll) -> &'static [Algorithm] {
    match coll {
        Coll::Barrier => algo::barrier::ALGORITHMS,
        Coll::Bcast => algo::bcast::ALGORITHMS,
        Coll::Reduce => algo::reduce::ALGORITHMS,
        Coll::Allreduce => algo::allreduce::ALGORITHMS,
        Coll::Gather => algo::gather::ALGORITHMS,
        Coll::Gatherv => algo::gatherv::ALGORITHMS,
        Coll::Scatter => algo::scatter::ALGORITHMS,
        Coll::Scatterv => algo::scatterv::ALGORITHMS,
        Coll::Allgather => algo::allgather::ALGORITHMS,
        Coll::Allgatherv => algo::allgatherv::ALGORITHMS,
        Coll::Alltoall => algo::alltoall::ALGORITHMS,
        Coll::Alltoallv => algo::alltoallv::ALGORITHMS,
        Coll::ReduceScatter | Coll::ReduceScatterBlock => algo::reduce_scatter::ALGORITHMS,
        Coll::Scan => algo::scan::ALGORITHMS,
        Coll::Exscan => algo::exscan::ALGORITHMS,
    }
}

/// The row of `coll`'s table named `name`.
fn algorithm(coll: Coll, name: &str) -> Option<&'static Algorithm> {
    algorithms(coll).iter().find(|a| a.name == name)
}

/// One rule of the tuning table.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The collective it applies to.
    pub coll: Coll,
    /// The algorithm it picks.
    pub algo: &'static Algorithm,
    /// The radix it picks, if any.
    pub radix: Option<u32>,
    /// Inclusive range of bytes per rank.
    pub bytes: (u64, u64),
    /// Inclusive range of communicator sizes.
    pub procs: (u32, u32),
    /// Inclusive range of ranks per node.
    pub ppn: (u32, u32),
    /// Inclusive range of nodes the communicator spans (`ceil(procs / ppn)`).
    pub nodes: (u32, u32),
    /// Only on a node with more ranks than cores (`Some(true)`), only on one without
    /// (`Some(false)`), or either.
    pub oversubscribed: Option<bool>,
}

/// The knobs and the tuning table, read once.
#[derive(Clone, Debug)]
pub struct Tuning {
    forced_algo: Vec<Option<&'static Algorithm>>,
    forced_radix: Vec<Option<u32>>,
    rules: Vec<Rule>,
    /// Where a rule's choice says it came from: `table` (the shipped one) or `tuning file`.
    rules_source: &'static str,
    lanes: Lanes,
    synthetic_nodes: Option<Vec<u32>>,
    /// `WEFT_SHM_CMA=off`: no algorithm may read peers' memory directly.
    cma_off: bool,
    /// The last [`MEMO_WAYS`] choices per collective, newest first (see [`Tuning::select`]).
    memo: Vec<Cell<Option<(MemoKey, Choice)>>>,
}

/// Choices remembered per collective: a program usually repeats a few call shapes, and a
/// remembered choice costs a few compares instead of the table walk and the model
/// (about a thousand instructions per call, measured with callgrind).
const MEMO_WAYS: usize = 4;

/// What a choice depends on besides the tuning itself.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MemoKey {
    procs: u32,
    ppn: u32,
    bytes: u64,
    traits: CallTraits,
}

fn empty_memo() -> Vec<Cell<Option<(MemoKey, Choice)>>> {
    vec![Cell::new(None); ALL.len() * MEMO_WAYS]
}

/// The table shipped with weft.
pub const DEFAULT_TABLE: &str = include_str!("../../../../tuning/default.toml");

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            forced_algo: vec![None; ALL.len()],
            forced_radix: vec![None; ALL.len()],
            rules: parse_table(DEFAULT_TABLE, "tuning/default.toml")
                .expect("the shipped tuning table parses (tested)"),
            rules_source: "table",
            lanes: default_lanes(),
            synthetic_nodes: None,
            cma_off: false,
            memo: empty_memo(),
        }
    }
}

/// The lanes assumed until measured ones are configured: shared memory on this class of
/// machine (0.3 µs, 8 GB/s); between nodes weft's TCP transport as measured between two
/// hosts on this machine in session 2 (8 B 3.2 µs; 1 MiB 441 µs and 4 MiB at 1.9 GB/s, so
/// 3 µs and 2 GB/s); reductions at 4 GB/s.
pub fn default_lanes() -> Lanes {
    Lanes {
        intra: AlphaBeta::from_bandwidth(300.0, 8e9),
        inter: AlphaBeta::from_bandwidth(3000.0, 2e9),
        reduce_ns_per_byte: 0.25,
        inter_rails: 1,
        stripe_efficiency: DEFAULT_STRIPE_EFFICIENCY,
        node_cores: 0,
    }
}

/// Of what R TCP rails move as R messages each pinned to one rail, the share one message
/// striped over them gets (a tuning file's `[model] stripe_efficiency` replaces it):
/// `scripts/rails-bench.sh allreduce` (docs/bench/rails.md), 8 MiB between two hosts over
/// 2 and 3 rails of 200 Mbit/s, measured multi_rail within the runs' spread of the best
/// striped algorithm (ring, rabenseifner or recursive doubling), quiet and beside spinners
/// (the ratios are in that file), so nothing is taken as lost to striping: 1, and the
/// selector keeps striping unless a tuning file says it loses.
pub const DEFAULT_STRIPE_EFFICIENCY: f64 = 1.0;

impl Tuning {
    /// Reads the knobs from explicit variables (tests; variables other than the
    /// collectives' are ignored).
    pub fn from_vars(vars: &[(&str, &str)]) -> Result<Tuning> {
        let (values, _) = KnobValues::read(
            &[KNOBS],
            vars.iter().map(|(a, b)| (a.to_string(), b.to_string())),
        )?;
        Tuning::from_values(&values)
    }

    /// Reads the knobs from the process environment.
    pub fn from_env() -> Result<Tuning> {
        let (values, _) = KnobValues::read_env(&[KNOBS])?;
        Tuning::from_values(&values)
    }

    /// Builds the tuning from knob values (which must include [`KNOBS`]); reads
    /// `WEFT_TUNING_FILE` when set.
    pub fn from_values(values: &KnobValues) -> Result<Tuning> {
        // The transport's knob: set only when the values come from the runtime's full set
        // (text() of an undeclared knob would panic, is_set() does not).
        let mut t = Tuning {
            cma_off: values.is_set("WEFT_SHM_CMA")
                && values.text("WEFT_SHM_CMA").as_deref() == Some("off"),
            ..Tuning::default()
        };
        if let Some((_, file)) = read_tuning_file(values)? {
            t.rules = file.rules;
            t.rules_source = "tuning file";
            t.lanes = file.coll_lanes;
        }
        for (i, &c) in ALL.iter().enumerate() {
            let upper = c.name().to_ascii_uppercase();
            let algo_knob = KNOBS[2 * i].name;
            let radix_knob = KNOBS[2 * i + 1].name;
            debug_assert!(algo_knob.contains(&upper));
            if let Some(a) = values.text(algo_knob) {
                t.forced_algo[i] =
                    Some(algorithm(c, &a).ok_or_else(|| unknown_algo(c, &a, algo_knob))?);
            }
            if let Some(k) = values.uint(radix_knob) {
                if !(2..=64).contains(&k) {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!("{radix_knob}={k}: the radix must be 2..=64"),
                    ));
                }
                t.forced_radix[i] = Some(k as u32);
            }
        }
        Ok(t)
    }

    /// The algorithm forced for `coll`, if any.
    pub fn forced(&self, coll: Coll) -> Option<&'static Algorithm> {
        self.forced_algo[coll.index()]
    }

    /// The rules of the tuning table.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The lanes the cost model prices the algorithms on ([`default_lanes`], or a tuning
    /// file's figures).
    pub fn model_lanes(&self) -> &Lanes {
        &self.lanes
    }

    /// For tests of the hierarchical algorithms on one machine: world rank w is taken to
    /// live on node `nodes[w]` (ranks past the end on node 0) when the hierarchical trees
    /// group ranks, instead of the node it is on. Nothing else changes (transport, shared-
    /// memory restriction, ranks per node).
    pub fn with_synthetic_nodes(mut self, nodes: Vec<u32>) -> Tuning {
        self.synthetic_nodes = Some(nodes);
        self.memo = empty_memo();
        self
    }

    /// False when `WEFT_SHM_CMA=off` forbids reading peers' memory directly.
    pub fn cma_allowed(&self) -> bool {
        !self.cma_off
    }

    /// The tuning on a network of `rails` rails between nodes (what the network endpoint
    /// can pin messages to; the model's [`Lanes::inter_rails`]).
    pub fn with_inter_rails(mut self, rails: u32) -> Tuning {
        self.lanes.inter_rails = rails.max(1);
        self.memo = empty_memo();
        self
    }

    /// The node grouping set by [`Tuning::with_synthetic_nodes`], if any.
    pub fn synthetic_nodes(&self) -> Option<&[u32]> {
        self.synthetic_nodes.as_deref()
    }
}

fn unknown_algo(c: Coll, a: &str, knob: &str) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "{knob}={a}: {} has no algorithm {a:?}; registered: {}",
            c.name(),
            algorithms(c)
                .iter()
                .map(|x| x.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// A tuning file as TOML gives it: `[[rule]]` tables (the shipped table has only those),
/// and what `weft tune` writes beside them: `[machine]`, `[[lane]]` (the lane figures the
/// lanes reader, `crate::lanes`, takes), `[crossover]`, `[model]` and `[[point]]` (the
/// measurements `weft tune --check` compares with the model). Nothing else: an unknown key
/// anywhere is an error naming its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    machine: Option<Machine>,
    #[serde(default)]
    lane: Vec<Spanned<crate::lanes::LaneEntry>>,
    #[serde(default)]
    crossover: Option<Crossovers>,
    #[serde(default)]
    model: Option<ModelFigures>,
    #[serde(default)]
    rule: Vec<Spanned<RuleFile>>,
    #[serde(default)]
    point: Vec<Spanned<MeasuredPoint>>,
}

/// The machine a tuning file was measured on (`[machine]`, written by `weft tune`;
/// descriptive: the runtime checks the types only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Cores the measuring process could use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// The CPU's model name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// When it was measured (UTC, RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The weft version that measured it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weft_version: Option<String>,
    /// Measured with `weft tune --quick`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick: Option<bool>,
    /// The rank counts measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub np: Option<Vec<u32>>,
}

/// Crossover sizes measured between point-to-point protocols (`[crossover]`). Recorded
/// for the reader: the runtime's single-copy threshold follows from the `[[lane]]` figures
/// through the lane model, and the eager limit stays `WEFT_SHM_EAGER_BYTES`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Crossovers {
    /// Smallest measured size at which a rendezvous send beat an eager one (absent: none
    /// did up to the largest size measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_rendezvous_bytes: Option<u64>,
    /// Smallest measured size from which the single copy (CMA) beat the pipelined copy
    /// (absent: none did, or CMA is refused here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipelined_cma_bytes: Option<u64>,
    /// The single-copy threshold the lane model computes from the `[[lane]]` figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_cma_bytes: Option<u64>,
}

/// Figures of the collectives' cost model that are not a lane's (`[model]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFigures {
    /// Time to combine one byte of a reduction (f32 sum), ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduce_ns_per_byte: Option<f64>,
    /// Of what the network rails move as one message pinned to each, the share one message
    /// striped over them gets, in (0, 1] (`Lanes::stripe_efficiency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_efficiency: Option<f64>,
}

/// One measured cell (`[[point]]`): a collective forced to one algorithm (and radix), its
/// OSU p50 latency at one size and rank count on one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredPoint {
    /// The collective.
    pub coll: String,
    /// The algorithm forced.
    pub algo: String,
    /// The radix forced (algorithms that take one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub radix: Option<u32>,
    /// Ranks.
    pub procs: u32,
    /// Ranks per node.
    pub ppn: u32,
    /// Bytes per rank, as the cost model counts them.
    pub bytes: u64,
    /// Measured p50 latency, µs.
    pub measured_us: f64,
}

/// A whole tuning file, checked: every section, the rules resolved to algorithms and the
/// collectives' model lanes derived from the `[[lane]]` figures.
#[derive(Clone, Debug)]
pub struct TuningFile {
    /// `[machine]`.
    pub machine: Option<Machine>,
    /// `[[lane]]`, in order.
    pub lanes: Vec<crate::lanes::LaneEntry>,
    /// `[crossover]`.
    pub crossover: Option<Crossovers>,
    /// `[model]`.
    pub model: Option<ModelFigures>,
    /// `[[rule]]`, in order.
    pub rules: Vec<Rule>,
    /// `[[point]]`, in order.
    pub points: Vec<MeasuredPoint>,
    /// The collectives' cost-model lanes: [`default_lanes`] with the file's figures over
    /// them (see [`coll_lanes`]).
    pub coll_lanes: Lanes,
}

/// The collectives' model lanes from lane figures: the intra lane's latency is the shm
/// lane's latency plus overhead, its bandwidth the better of the shm (pipelined copy) and
/// cma (single copy) lanes' (the runtime takes the single copy where it is faster); the
/// inter lane is the tcp lane; the reduction rate is `[model]`'s. Figures absent keep
/// [`default_lanes`]'.
pub fn coll_lanes(lanes: &[crate::lanes::LaneEntry], model: Option<&ModelFigures>) -> Lanes {
    let mut out = default_lanes();
    let bw = |e: &crate::lanes::LaneEntry| {
        e.dedicated_gbytes_per_s.unwrap_or(0.0) * 1e9 + e.shared_gbytes_per_s.unwrap_or(0.0) * 1e9
    };
    let fixed = |e: &crate::lanes::LaneEntry, d: &AlphaBeta| match (e.latency_us, e.overhead_us) {
        (None, None) => d.latency_ns,
        (l, o) => (l.unwrap_or(0.0) + o.unwrap_or(0.0)) * 1e3,
    };
    let find = |t: &str| {
        lanes
            .iter()
            .rev()
            .find(|e| e.transport == t && e.device.is_none())
            .or_else(|| lanes.iter().rev().find(|e| e.transport == t))
    };
    if let Some(shm) = find("shm") {
        let mut b = bw(shm);
        if let Some(cma) = find("cma") {
            b = b.max(bw(cma));
        }
        let latency = fixed(shm, &out.intra);
        out.intra = if b > 0.0 {
            AlphaBeta::from_bandwidth(latency, b)
        } else {
            AlphaBeta {
                latency_ns: latency,
                ..out.intra
            }
        };
    }
    if let Some(tcp) = find("tcp") {
        let b = bw(tcp);
        let latency = fixed(tcp, &out.inter);
        out.inter = if b > 0.0 {
            AlphaBeta::from_bandwidth(latency, b)
        } else {
            AlphaBeta {
                latency_ns: latency,
                ..out.inter
            }
        };
    }
    if let Some(g) = model.and_then(|m| m.reduce_ns_per_byte) {
        out.reduce_ns_per_byte = g;
    }
    if let Some(e) = model.and_then(|m| m.stripe_efficiency) {
        out.stripe_efficiency = e;
    }
    out
}

/// The tuning file `WEFT_TUNING_FILE` names, read and checked, with its path; None when the
/// knob is unset or empty. The one reader of the knob: the rule table ([`Tuning`]) and the
/// lane figures (`crate::lanes`) both take their part of the file from here.
pub fn read_tuning_file(values: &KnobValues) -> Result<Option<(String, TuningFile)>> {
    let Some(path) = values.text("WEFT_TUNING_FILE").filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("WEFT_TUNING_FILE={path}"), e))?;
    let file = parse_tuning_file(&text, &format!("WEFT_TUNING_FILE={path}"))?;
    Ok(Some((path, file)))
}

/// One `[[rule]]` as written (ranges default to everything).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    coll: Spanned<String>,
    algo: Spanned<String>,
    radix: Option<Spanned<u32>>,
    min_bytes: Option<u64>,
    max_bytes: Option<u64>,
    min_procs: Option<u32>,
    max_procs: Option<u32>,
    min_ppn: Option<u32>,
    max_ppn: Option<u32>,
    min_nodes: Option<u32>,
    max_nodes: Option<u32>,
    oversubscribed: Option<bool>,
}

/// Parses a tuning table (TOML: a sequence of `[[rule]]` tables; see
/// `tuning/default.toml`). `source` names the file in errors, which give its line and the
/// key at fault: an unknown key, a value of the wrong type, an unknown collective or
/// algorithm, a radix below 2 or a range whose minimum is above its maximum.
pub fn parse_table(text: &str, source: &str) -> Result<Vec<Rule>> {
    parse_tuning_file(text, source).map(|f| f.rules)
}

/// Parses and checks a whole tuning file (its sections: [`TuningFile`]): errors name
/// `source`, the line and the key at fault, as [`parse_table`]'s do; lane figures must be
/// numbers of at least 0 of a registered transport, points name a registered collective
/// and algorithm.
pub fn parse_tuning_file(text: &str, source: &str) -> Result<TuningFile> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let bad = |offset: usize, msg: String| {
        Error::new(
            ErrorKind::Config,
            format!("{source} line {}: {msg}", line_of(offset)),
        )
    };
    let file: TableFile = toml::from_str(text).map_err(|e| {
        // The crate's message, on one line, after the text of the line at fault.
        let at = e.span().map_or(0, |s| s.start.min(text.len()));
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = text[start..].lines().next().unwrap_or("").trim();
        let msg = e.message().trim().replace('\n', "; ");
        bad(at, format!("{line:?}: {msg}"))
    })?;
    // Where `key` is written in the table that starts at `span` (up to the next table's
    // header; the table's start when it is not there).
    let key_at = |span: std::ops::Range<usize>, key: &str| {
        let rest = text.get(span.start..).unwrap_or("");
        let mut offset = 0;
        for (i, line) in rest.split_inclusive('\n').enumerate() {
            let l = line.trim_start();
            if i > 0 && l.starts_with('[') {
                break;
            }
            if l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
            {
                return span.start + offset;
            }
            offset += line.len();
        }
        span.start
    };
    let mut lanes = Vec::with_capacity(file.lane.len());
    for spanned in file.lane {
        let span = spanned.span();
        let e = spanned.into_inner();
        crate::lanes::check_entry(&e)
            .map_err(|(key, why)| bad(key_at(span.clone(), key), format!("[[lane]]: {why}")))?;
        lanes.push(e);
    }
    let mut points = Vec::with_capacity(file.point.len());
    for spanned in file.point {
        let span = spanned.span();
        let p = spanned.into_inner();
        let coll = Coll::from_name(&p.coll).map_err(|e| {
            bad(
                key_at(span.clone(), "coll"),
                format!("[[point]] coll: {}", e.message()),
            )
        })?;
        if algorithm(coll, &p.algo).is_none() {
            let e = unknown_algo(coll, &p.algo, "[[point]] algo");
            return Err(bad(key_at(span.clone(), "algo"), e.message().to_string()));
        }
        for (key, v) in [("procs", p.procs), ("ppn", p.ppn)] {
            if v == 0 {
                return Err(bad(
                    key_at(span.clone(), key),
                    format!("[[point]] {key} = 0: must be at least 1"),
                ));
            }
        }
        if !(p.measured_us.is_finite() && p.measured_us >= 0.0) {
            return Err(bad(
                key_at(span.clone(), "measured_us"),
                format!(
                    "[[point]] measured_us = {}: must be a number of at least 0",
                    p.measured_us
                ),
            ));
        }
        points.push(p);
    }
    if let Some(g) = file.model.as_ref().and_then(|m| m.reduce_ns_per_byte) {
        if !(g.is_finite() && g >= 0.0) {
            return Err(bad(
                text.find("reduce_ns_per_byte").unwrap_or(0),
                format!("reduce_ns_per_byte = {g}: must be a number of at least 0"),
            ));
        }
    }
    if let Some(e) = file.model.as_ref().and_then(|m| m.stripe_efficiency) {
        if !(e > 0.0 && e <= 1.0) {
            return Err(bad(
                text.find("stripe_efficiency").unwrap_or(0),
                format!("stripe_efficiency = {e}: must be above 0 and at most 1"),
            ));
        }
    }
    let mut coll_lanes = coll_lanes(&lanes, file.model.as_ref());
    // The cores the lanes were measured with: the model's ranks share them.
    coll_lanes.node_cores = file.machine.as_ref().and_then(|m| m.cores).unwrap_or(0);
    let rules = file
        .rule
        .into_iter()
        .map(|spanned| {
            let at = spanned.span().start;
            let r = spanned.into_inner();
            let coll = Coll::from_name(r.coll.get_ref())
                .map_err(|e| bad(r.coll.span().start, format!("coll: {}", e.message())))?;
            let algo = algorithm(coll, r.algo.get_ref()).ok_or_else(|| {
                let e = unknown_algo(coll, r.algo.get_ref(), "algo");
                bad(r.algo.span().start, e.message().to_string())
            })?;
            if let Some(k) = r.radix.as_ref().filter(|k| *k.get_ref() < 2) {
                return Err(bad(
                    k.span().start,
                    format!("radix = {}: must be at least 2", k.get_ref()),
                ));
            }
            let range = |name: &str, min: Option<u64>, max: Option<u64>, all: u64| {
                let (lo, hi) = (min.unwrap_or(0), max.unwrap_or(all));
                if lo > hi {
                    return Err(bad(
                        at,
                        format!(
                            "min_{name} = {lo} is above max_{name} = {hi}: the rule never applies"
                        ),
                    ));
                }
                Ok((lo, hi))
            };
            let narrow = |(lo, hi): (u64, u64)| (lo as u32, hi as u32);
            let count = |v: Option<u32>| v.map(u64::from);
            let max = u64::from(u32::MAX);
            Ok(Rule {
                coll,
                algo,
                radix: r.radix.map(Spanned::into_inner),
                bytes: range("bytes", r.min_bytes, r.max_bytes, u64::MAX)?,
                procs: narrow(range(
                    "procs",
                    Some(count(r.min_procs).unwrap_or(1)),
                    count(r.max_procs),
                    max,
                )?),
                ppn: narrow(range(
                    "ppn",
                    Some(count(r.min_ppn).unwrap_or(1)),
                    count(r.max_ppn),
                    max,
                )?),
                nodes: narrow(range(
                    "nodes",
                    Some(count(r.min_nodes).unwrap_or(1)),
                    count(r.max_nodes),
                    max,
                )?),
                oversubscribed: r.oversubscribed,
            })
        })
        .collect::<Result<Vec<Rule>>>()?;
    Ok(TuningFile {
        machine: file.machine,
        lanes,
        crossover: file.crossover,
        model: file.model,
        rules,
        points,
        coll_lanes,
    })
}

/// What the selector decided for one call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// The algorithm: its row of the collective's table, whose builder the call runs.
    pub algo: &'static Algorithm,
    /// Its radix (for tree algorithms; 2 otherwise).
    pub radix: u32,
    /// Where the decision came from: `forced`, `table` (the shipped one), `tuning file`
    /// or `model`.
    pub source: &'static str,
}

impl Choice {
    fn of(algo: &'static Algorithm, radix: u32, source: &'static str) -> Choice {
        Choice {
            algo,
            radix,
            source,
        }
    }

    /// The algorithm needs Cross Memory Attach (one of its restrictions), so the node's
    /// verdict on it must be known before it runs.
    pub fn needs_cma(&self) -> bool {
        self.algo.needs(Restriction::CrossMemoryAttach)
    }
}

/// Every candidate with its modelled cost, and the choice.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The algorithm chosen.
    pub choice: String,
    /// Where the decision came from: `forced`, `table` or `model`.
    pub source: String,
    /// Each registered algorithm with its modelled cost in µs (None where not modelled) and
    /// its radix.
    pub candidates: Vec<Candidate>,
}

/// One line of an [`Explanation`].
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Algorithm name.
    pub algo: String,
    /// Modelled cost in µs at `radix`.
    pub cost_us: Option<f64>,
    /// Radix the cost was computed at.
    pub radix: u32,
}

/// What a call offers that restrictions test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTraits {
    /// The operation commutes (true when there is none).
    pub commutative: bool,
    /// The communicator can use the node's collective area.
    pub shared_memory: bool,
    /// The call is blocking (it finishes before the next collective starts on this rank).
    pub blocking: bool,
    /// Every local rank can read every other's memory with Cross Memory Attach (the node's
    /// common verdict; false when it has not been asked for).
    pub cma: bool,
    /// The node runs more of the job's ranks than the process may use cores (a rule with
    /// `oversubscribed = true` or `false` applies only then, or only otherwise).
    pub oversubscribed: bool,
}

fn violated(
    a: &Algorithm,
    traits: CallTraits,
    procs: u32,
    ppn: u32,
    lanes: &Lanes,
) -> Option<Restriction> {
    let nodes = procs.div_ceil(ppn.max(1));
    a.restrictions.iter().copied().find(|r| match r {
        Restriction::Commutative => !traits.commutative,
        Restriction::PowerOfTwo => !procs.is_power_of_two(),
        Restriction::SharedMemory => !traits.shared_memory,
        Restriction::Blocking => !traits.blocking,
        Restriction::CrossMemoryAttach => !traits.cma,
        Restriction::Rails => nodes < 2 || lanes.inter_rails < 2,
    })
}

/// Modelled cost in ns of `a` and the radix it would use (the model's best in 2..=8 unless
/// forced).
fn modelled(
    a: &Algorithm,
    shape: &CollShape,
    lanes: &Lanes,
    radix: Option<u32>,
) -> (Option<f64>, u32) {
    if !a.radix {
        return (a.cost_ns(shape, 2, lanes), 2);
    }
    if let Some(k) = radix {
        return (a.cost_ns(shape, k, lanes), k);
    }
    let mut best: (Option<f64>, u32) = (None, 2);
    for k in 2..=8u32 {
        if let Some(c) = a.cost_ns(shape, k, lanes) {
            if best.0.is_none_or(|b| c < b) {
                best = (Some(c), k);
            }
        }
    }
    best
}

impl Tuning {
    /// Chooses the algorithm for one call (see the module notes). The choice is a pure
    /// function of the arguments and the tuning, so the last few per collective are
    /// remembered and a repeated call shape is answered from memory; errors are not
    /// remembered.
    ///
    /// Alltoallv's `bytes` (the rank's average block) differ by rank, and its area
    /// algorithm needs every local rank to run it: it is taken when the choice for 0 bytes
    /// (the same on every rank) is an area algorithm, whatever this rank's size; otherwise
    /// the rank's own size chooses among the others, which work against each other.
    pub fn select(
        &self,
        coll: Coll,
        procs: u32,
        ppn: u32,
        bytes: u64,
        traits: CallTraits,
    ) -> Result<Choice> {
        if coll != Coll::Alltoallv || !traits.shared_memory {
            return self.select_remembered(coll, procs, ppn, bytes, traits);
        }
        let shared = self.select_remembered(coll, procs, ppn, 0, traits)?;
        if shared.algo.needs(Restriction::SharedMemory) {
            return Ok(shared);
        }
        let own = CallTraits {
            shared_memory: false,
            cma: false,
            ..traits
        };
        self.select_remembered(coll, procs, ppn, bytes, own)
    }

    /// [`Tuning::select`] for one question, from memory when asked before.
    fn select_remembered(
        &self,
        coll: Coll,
        procs: u32,
        ppn: u32,
        bytes: u64,
        traits: CallTraits,
    ) -> Result<Choice> {
        let key = MemoKey {
            procs,
            ppn,
            bytes,
            traits,
        };
        let row = &self.memo[coll.index() * MEMO_WAYS..][..MEMO_WAYS];
        for slot in row {
            match slot.get() {
                Some((k, choice)) if k == key => return Ok(choice),
                Some(_) => {}
                None => break,
            }
        }
        let choice = self.choose(coll, procs, ppn, bytes, traits)?;
        // Once per new call shape: repeated shapes are answered above, before any logging.
        log::debug!(
            "{} of {bytes} bytes on {procs} ranks, {ppn} per node: {} radix {} ({})",
            coll.name(),
            choice.algo.name,
            choice.radix,
            choice.source
        );
        for i in (1..MEMO_WAYS).rev() {
            row[i].set(row[i - 1].get());
        }
        row[0].set(Some((key, choice)));
        Ok(choice)
    }

    /// The selection itself: forced algorithm, then the table's first matching rule, then
    /// the cost model.
    fn choose(
        &self,
        coll: Coll,
        procs: u32,
        ppn: u32,
        bytes: u64,
        traits: CallTraits,
    ) -> Result<Choice> {
        let algos = algorithms(coll);
        let forced_radix = self.forced_radix[coll.index()];
        let shape = CollShape { procs, ppn, bytes };
        let nodes = procs.div_ceil(ppn.max(1));
        if let Some(a) = self.forced(coll) {
            let name = a.name;
            if let Some(r) = violated(a, traits, procs, ppn, &self.lanes) {
                return Err(Error::new(
                    ErrorKind::InvalidOp,
                    format!(
                        "WEFT_{}_ALGO={name}: {} {name} {r}; this call has {}",
                        coll.name().to_ascii_uppercase(),
                        coll.name(),
                        match r {
                            Restriction::Commutative => "a non-commutative operation".to_string(),
                            Restriction::PowerOfTwo => format!("{procs} ranks"),
                            Restriction::SharedMemory =>
                                "a communicator that is not a whole node's world (or no collective area)".to_string(),
                            Restriction::Blocking => "a nonblocking call".to_string(),
                            Restriction::CrossMemoryAttach =>
                                "local ranks that cannot read each other's memory (or WEFT_SHM_CMA=off)".to_string(),
                            Restriction::Rails => format!(
                                "{nodes} node(s) and {} network rail(s)",
                                self.lanes.inter_rails
                            ),
                        }
                    ),
                ));
            }
            let radix = forced_radix.unwrap_or_else(|| modelled(a, &shape, &self.lanes, None).1);
            return Ok(Choice::of(a, radix, "forced"));
        }
        for rule in &self.rules {
            if rule.coll != coll
                || !(rule.bytes.0..=rule.bytes.1).contains(&bytes)
                || !(rule.procs.0..=rule.procs.1).contains(&procs)
                || !(rule.ppn.0..=rule.ppn.1).contains(&ppn)
                || !(rule.nodes.0..=rule.nodes.1).contains(&nodes)
                || rule
                    .oversubscribed
                    .is_some_and(|o| o != traits.oversubscribed)
            {
                continue;
            }
            let a = rule.algo;
            if violated(a, traits, procs, ppn, &self.lanes).is_some() {
                continue;
            }
            let radix = forced_radix
                .or(rule.radix)
                .unwrap_or_else(|| modelled(a, &shape, &self.lanes, None).1);
            return Ok(Choice::of(a, radix, self.rules_source));
        }
        let mut best: Option<(f64, &'static Algorithm, u32)> = None;
        let mut first_ok: Option<&'static Algorithm> = None;
        for a in algos {
            if violated(a, traits, procs, ppn, &self.lanes).is_some() {
                continue;
            }
            first_ok.get_or_insert(a);
            let (cost, radix) = modelled(a, &shape, &self.lanes, forced_radix);
            if let Some(c) = cost {
                // Across nodes a hierarchical tree wins a tie: the flat tree's cost assumes
                // ranks placed in node-aligned blocks (then its subtrees are the nodes), while
                // the hierarchical tree groups by the real nodes whatever the placement.
                let tie_to_hier =
                    nodes > 1 && a.hierarchical && best.is_some_and(|b| c <= b.0 * (1.0 + 1e-9));
                if best.is_none_or(|b| c < b.0) || tie_to_hier {
                    best = Some((c, a, radix));
                }
            }
        }
        match (best, first_ok) {
            (Some((_, a, radix)), _) => Ok(Choice::of(a, radix, "model")),
            (None, Some(a)) => Ok(Choice::of(a, forced_radix.unwrap_or(2), "model")),
            (None, None) => Err(Error::new(
                ErrorKind::InvalidOp,
                format!(
                    "{}: no registered algorithm accepts this call (non-commutative operation?)",
                    coll.name()
                ),
            )),
        }
    }

    /// Every candidate for `coll` with its modelled cost in µs, and the choice (for
    /// `weft info --explain`). Same inputs, same answer, on every rank of one machine (rules
    /// for oversubscribed nodes compare `ppn` with this machine's cores).
    pub fn explain(&self, coll: Coll, bytes: u64, procs: u32, ppn: u32) -> Result<Explanation> {
        if procs == 0 || ppn == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "explain {}: procs={procs} ppn={ppn}: both must be at least 1",
                    coll.name()
                ),
            ));
        }
        let traits = CallTraits {
            commutative: true,
            shared_memory: procs > 1 && ppn >= procs,
            blocking: true,
            // The model's view: a node where the kernel allows CMA (the usual case).
            cma: procs > 1 && ppn >= procs && !self.cma_off,
            // As this machine would run `ppn` ranks.
            oversubscribed: ppn.min(procs) as usize > crate::bind::usable_cores(),
        };
        let choice = self.select(coll, procs, ppn.min(procs), bytes, traits)?;
        let shape = CollShape {
            procs,
            ppn: ppn.min(procs),
            bytes,
        };
        let forced_radix = self.forced_radix[coll.index()];
        let candidates = algorithms(coll)
            .iter()
            .map(|a| {
                // The chosen algorithm at the radix chosen (a table rule may fix one);
                // the others at the model's best radix.
                let radix = if a == choice.algo {
                    Some(choice.radix)
                } else {
                    forced_radix
                };
                let (cost, radix) = modelled(a, &shape, &self.lanes, radix);
                Candidate {
                    algo: a.name.to_string(),
                    cost_us: cost.map(|c| c / 1000.0),
                    radix,
                }
            })
            .collect();
        Ok(Explanation {
            choice: choice.algo.name.to_string(),
            source: choice.source.to_string(),
            candidates,
        })
    }
}

/// [`Tuning::explain`] with the default tuning and the process's knobs, on a network of
/// `rails` rails between nodes ([`Tuning::with_inter_rails`]).
pub fn explain(coll: &str, bytes: u64, procs: u32, ppn: u32, rails: u32) -> Result<Explanation> {
    Tuning::from_env()?
        .with_inter_rails(rails)
        .explain(Coll::from_name(coll)?, bytes, procs, ppn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, &c) in ALL.iter().enumerate() {
            assert_eq!(c.index(), i, "{c:?}");
        }
    }

    #[test]
    fn remembered_choices_are_the_computed_ones() {
        // More call shapes than the memory holds, interleaved and repeated, through one
        // tuning: every answer equals a fresh selection's, forced and table rules included.
        let tunings = [
            Tuning::default(),
            Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", "ring")]).unwrap(),
            Tuning::from_vars(&[("WEFT_BCAST_RADIX", "3")]).unwrap(),
        ];
        let traits = [
            CallTraits {
                commutative: true,
                shared_memory: true,
                blocking: true,
                cma: true,
                oversubscribed: false,
            },
            CallTraits {
                commutative: false,
                shared_memory: false,
                blocking: false,
                cma: false,
                oversubscribed: false,
            },
        ];
        for t in &tunings {
            for round in 0..3 {
                for &coll in ALL {
                    for (i, &bytes) in [0u64, 8, 4096, 65536, 1 << 20, 4 << 20].iter().enumerate() {
                        for &tr in &traits {
                            let (procs, ppn) = if (i + round) % 2 == 0 { (4, 4) } else { (8, 2) };
                            let fresh = Tuning::choose(t, coll, procs, ppn, bytes, tr);
                            let got = t.select(coll, procs, ppn, bytes, tr);
                            match (fresh, got) {
                                (Ok(a), Ok(b)) => assert_eq!(a, b, "{coll:?} {bytes} {tr:?}"),
                                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                                (a, b) => panic!("{coll:?} {bytes}: fresh {a:?}, remembered {b:?}"),
                            }
                        }
                    }
                }
            }
        }
        // The memory holds the newest shape first.
        let t = Tuning::default();
        let c = t.select(Coll::Bcast, 4, 4, 8, traits[0]).unwrap();
        let row = &t.memo[Coll::Bcast.index() * MEMO_WAYS..][..MEMO_WAYS];
        assert_eq!(row[0].get().map(|(k, ch)| (k.bytes, ch)), Some((8, c)));
        assert!(row[1].get().is_none());
    }

    const C: CallTraits = CallTraits {
        commutative: true,
        shared_memory: false,
        blocking: true,
        cma: false,
        oversubscribed: false,
    };
    const NC: CallTraits = CallTraits {
        commutative: false,
        shared_memory: false,
        blocking: true,
        cma: false,
        oversubscribed: false,
    };

    #[test]
    fn alltoallv_takes_the_area_by_the_shared_question_only() {
        // A table whose area rule holds from 1 KiB only: asked with each rank's own bytes it
        // would split the ranks; asked with the shared 0 bytes it never applies.
        let rules = "[[rule]]\ncoll = \"alltoallv\"\nmin_bytes = 1024\nalgo = \"shm\"\n\n\
                     [[rule]]\ncoll = \"alltoallv\"\nalgo = \"pairwise\"\n";
        let split = Tuning {
            rules: parse_table(rules, "test").unwrap(),
            ..Tuning::default()
        };
        let shm = CallTraits {
            commutative: true,
            shared_memory: true,
            blocking: true,
            cma: true,
            oversubscribed: false,
        };
        for bytes in [0u64, 8, 1 << 20] {
            let a = split
                .select(Coll::Alltoallv, 4, 4, bytes, shm)
                .unwrap()
                .algo
                .name;
            assert_eq!(a, "pairwise", "{bytes} bytes");
        }
        // The shipped table: the area on a node of 3 or 4 ranks at every size, messages
        // chosen by the rank's own size on 2 ranks or off the node's area.
        let t = Tuning::default();
        for bytes in [0u64, 8, 1 << 16, 1 << 20] {
            for np in [3, 4] {
                assert_eq!(
                    t.select(Coll::Alltoallv, np, np, bytes, shm)
                        .unwrap()
                        .algo
                        .name,
                    "shm"
                );
                let a = t
                    .select(Coll::Alltoallv, np, np, bytes, C)
                    .unwrap()
                    .algo
                    .name;
                assert_ne!(a, "shm", "np={np} {bytes} bytes off the area");
            }
            assert_ne!(
                t.select(Coll::Alltoallv, 2, 2, bytes, shm)
                    .unwrap()
                    .algo
                    .name,
                "shm"
            );
        }
        assert_eq!(
            t.select(Coll::Alltoallv, 2, 2, 8, shm).unwrap().algo.name,
            "linear"
        );
        assert_eq!(
            t.select(Coll::Alltoallv, 2, 2, 1 << 20, shm)
                .unwrap()
                .algo
                .name,
            "pairwise"
        );
    }

    #[test]
    fn shared_memory_algorithms_need_the_node() {
        let t = Tuning::from_vars(&[("WEFT_BARRIER_ALGO", "shm_counter")]).unwrap();
        let e = t.select(Coll::Barrier, 4, 4, 0, C).unwrap_err();
        assert!(
            e.message().contains("shm_counter") && e.message().contains("one node"),
            "{e}"
        );
        let shm = CallTraits {
            commutative: true,
            shared_memory: true,
            blocking: true,
            cma: false,
            oversubscribed: false,
        };
        assert_eq!(
            t.select(Coll::Barrier, 4, 4, 0, shm).unwrap().algo.name,
            "shm_counter"
        );
        // A nonblocking call may overlap others: forcing the area is refused, and the table
        // falls through to a point-to-point algorithm.
        let nb = CallTraits {
            blocking: false,
            ..shm
        };
        let e = t.select(Coll::Barrier, 4, 4, 0, nb).unwrap_err();
        assert!(e.message().contains("a nonblocking call"), "{e}");
        let free = Tuning::default();
        for bytes in [0u64, 1 << 16, 1 << 22] {
            for c in [Coll::Barrier, Coll::Bcast, Coll::Allreduce] {
                let a = free.select(c, 4, 4, bytes, nb).unwrap().algo.name;
                assert!(!a.starts_with("shm"), "{} {bytes}: {a}", c.name());
            }
        }
    }

    #[test]
    fn direct_alltoall_needs_the_nodes_cma_verdict() {
        let t = Tuning::from_vars(&[("WEFT_ALLTOALL_ALGO", "shm_direct")]).unwrap();
        let node = CallTraits {
            commutative: true,
            shared_memory: true,
            blocking: true,
            cma: false,
            oversubscribed: false,
        };
        let e = t.select(Coll::Alltoall, 4, 4, 1 << 20, node).unwrap_err();
        assert!(
            e.message().contains("shm_direct") && e.message().contains("Cross Memory Attach"),
            "{e}"
        );
        let cma = CallTraits { cma: true, ..node };
        assert_eq!(
            t.select(Coll::Alltoall, 4, 4, 1 << 20, cma)
                .unwrap()
                .algo
                .name,
            "shm_direct"
        );
        // The shipped table: the node area on 3 to 5 ranks (sessions 10, 13 and 14), on 6 or
        // more up to 512 KiB blocks and the pairwise exchange above (session 14), whether or
        // not the node's ranks agreed CMA works; on 2 ranks the direct copy from 64 KiB to
        // 1 MiB where CMA works (session 20), else the area.
        let table = Tuning::default();
        let pick = |t: CallTraits, p: u32, b: u64| table.select(Coll::Alltoall, p, p, b, t);
        assert_eq!(pick(cma, 5, 1 << 20).unwrap().algo.name, "shm");
        assert_eq!(pick(node, 5, 1 << 20).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 6, 512 << 10).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 6, 1 << 20).unwrap().algo.name, "pairwise");
        assert_eq!(pick(cma, 8, 8).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 3, 1 << 20).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 3, 8).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 4, 1 << 20).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 4, 8).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 2, 1 << 20).unwrap().algo.name, "shm_direct");
        assert_eq!(pick(cma, 2, 64 << 10).unwrap().algo.name, "shm_direct");
        assert_eq!(pick(node, 2, 1 << 20).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 2, 32 << 10).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 2, 2 << 20).unwrap().algo.name, "shm");
        assert_eq!(pick(cma, 2, 8).unwrap().algo.name, "pairwise");
        // The explanation (the model's view of a node where CMA works) lists the direct
        // copy with a cost beside the table's choice.
        assert!(table.cma_allowed());
        let x = table.explain(Coll::Alltoall, 1 << 20, 5, 5).unwrap();
        assert_eq!(x.choice, "shm");
        assert!(x
            .candidates
            .iter()
            .any(|c| c.algo == "shm_direct" && c.cost_us.is_some_and(|v| v > 0.0)));
    }

    #[test]
    fn two_ranks_broadcast_large_buffers_by_the_k_nomial() {
        // The shipped table (session 20): on 2 ranks of a node, the area past the eager
        // limit, the k-nomial (one rendezvous, a single copy) from 48 KiB to 2 MiB.
        let t = Tuning::default();
        let node = CallTraits {
            shared_memory: true,
            ..C
        };
        let pick = |b: u64| t.select(Coll::Bcast, 2, 2, b, node).unwrap().algo.name;
        assert_eq!(pick(32 << 10), "shm");
        assert_eq!(pick(48 << 10), "shm");
        assert_eq!(pick((48 << 10) + 1), "knomial");
        assert_eq!(pick(64 << 10), "knomial");
        assert_eq!(pick(1 << 20), "knomial");
        assert_eq!(pick(2 << 20), "knomial");
        assert_eq!(pick(4 << 20), "shm");
        // Three and four ranks keep their rules.
        assert_eq!(
            t.select(Coll::Bcast, 4, 4, 1 << 20, node)
                .unwrap()
                .algo
                .name,
            "shm"
        );
    }

    #[test]
    fn across_nodes_the_model_decides_with_the_network_lane() {
        let t = Tuning::default();
        // One node: the shipped (measured) table.
        let one = t.select(Coll::Bcast, 4, 4, 8, C).unwrap();
        assert_eq!((one.algo.name, one.source), ("knomial", "table"));
        // Two nodes of 4: the table's single-node rules do not apply; the model picks the
        // hierarchical tree for latency-bound bcast and reduce and for the barrier-like
        // small allreduce it keeps recursive doubling (cheaper in the model).
        for (c, bytes) in [(Coll::Bcast, 8u64), (Coll::Bcast, 65536), (Coll::Reduce, 8)] {
            let x = t.select(c, 8, 4, bytes, C).unwrap();
            assert_eq!(
                (x.algo.name, x.source),
                ("hier_knomial", "model"),
                "{c:?} {bytes}"
            );
            // Declared, not guessed from the name: its plans read the node layout.
            assert!(x.algo.hierarchical);
        }
        assert!(!one.algo.hierarchical);
        for c in ALL {
            for a in algorithms(*c) {
                let forced = Tuning::from_vars(&[(
                    &format!("WEFT_{}_ALGO", c.name().to_ascii_uppercase()),
                    a.name,
                )])
                .unwrap();
                let traits = CallTraits {
                    commutative: true,
                    shared_memory: true,
                    blocking: true,
                    cma: true,
                    oversubscribed: false,
                };
                if let Ok(x) = forced.select(*c, 4, 4, 8, traits) {
                    assert_eq!(x.algo, a, "{} {}", c.name(), a.name);
                }
            }
        }
        let x = t.explain(Coll::Bcast, 65536, 8, 4).unwrap();
        assert_eq!(x.choice, "hier_knomial");
        let cost = |e: &Explanation, a: &str| {
            e.candidates
                .iter()
                .find(|c| c.algo == a)
                .and_then(|c| c.cost_us)
                .unwrap()
        };
        // The network lane makes every multi-node algorithm dearer than on one node.
        let y = t.explain(Coll::Bcast, 65536, 8, 8).unwrap();
        assert!(cost(&x, "hier_knomial") > cost(&y, "knomial"));
        // Large allreduce across nodes: the bandwidth-optimal Rabenseifner beats the trees.
        let z = t.select(Coll::Allreduce, 8, 4, 1 << 20, C).unwrap();
        assert_eq!((z.algo.name, z.source), ("rabenseifner", "model"));
        // Shared-memory algorithms have no cost across nodes and are never picked there.
        let w = t.explain(Coll::Alltoall, 1 << 20, 8, 4).unwrap();
        assert!(w
            .candidates
            .iter()
            .filter(|c| c.algo.starts_with("shm"))
            .all(|c| c.cost_us.is_none()));
        assert_eq!(w.choice, "pairwise");
    }

    #[test]
    fn a_rule_can_hold_for_oversubscribed_nodes_only() {
        let rules = parse_table(
            "[[rule]]\ncoll = \"scan\"\noversubscribed = true\nalgo = \"fan_out\"\n",
            "test",
        )
        .unwrap();
        let t = Tuning {
            rules,
            ..Tuning::default()
        };
        let on = CallTraits {
            commutative: true,
            shared_memory: true,
            blocking: true,
            cma: false,
            oversubscribed: true,
        };
        let off = CallTraits {
            oversubscribed: false,
            ..on
        };
        assert_eq!(
            t.select(Coll::Scan, 4, 4, 8, on).unwrap().algo.name,
            "fan_out"
        );
        let other = t.select(Coll::Scan, 4, 4, 8, off).unwrap();
        assert_eq!((other.algo.name, other.source), ("linear", "model"));
        let e = parse_table(
            "[[rule]]\ncoll = \"scan\"\noversubscribed = yes\nalgo = \"fan_out\"\n",
            "test",
        )
        .unwrap_err();
        assert!(
            e.message().contains("test line 3") && e.message().contains("oversubscribed = yes"),
            "{e}"
        );
    }

    #[test]
    fn a_tuning_file_carries_lanes_rules_and_points() {
        let text = "[machine]\nhostname = \"h\"\ncores = 2\n\n\
            [[lane]]\ntransport = \"shm\"\nlatency_us = 1.0\noverhead_us = 0.5\ndedicated_gbytes_per_s = 2.0\n\n\
            [[lane]]\ntransport = \"cma\"\ndedicated_gbytes_per_s = 4.0\n\n\
            [[lane]]\ntransport = \"tcp\"\nlatency_us = 20.0\ndedicated_gbytes_per_s = 1.0\n\n\
            [model]\nreduce_ns_per_byte = 0.5\nstripe_efficiency = 0.8\n\n\
            [crossover]\npipelined_cma_bytes = 65536\n\n\
            [[rule]]\ncoll = \"bcast\"\nalgo = \"scatter_allgather\"\nmax_procs = 2\nmax_nodes = 1\nmax_bytes = 1024\n\n\
            [[point]]\ncoll = \"bcast\"\nalgo = \"knomial\"\nradix = 2\nprocs = 2\nppn = 2\nbytes = 8\nmeasured_us = 1.5\n";
        let f = parse_tuning_file(text, "t").unwrap();
        assert_eq!(f.machine.as_ref().unwrap().cores, Some(2));
        assert_eq!((f.lanes.len(), f.rules.len(), f.points.len()), (3, 1, 1));
        assert_eq!(
            f.crossover.as_ref().unwrap().pipelined_cma_bytes,
            Some(65536)
        );
        // The model's lanes: shm's latency and overhead, the better of the shm and cma
        // bandwidths, tcp between nodes, the file's reduction rate.
        assert_eq!(f.coll_lanes.intra.latency_ns, 1500.0);
        assert!((f.coll_lanes.intra.bandwidth_bytes_per_s() - 4e9).abs() < 1.0);
        assert_eq!(f.coll_lanes.inter.latency_ns, 20000.0);
        assert_eq!(f.coll_lanes.reduce_ns_per_byte, 0.5);
        assert_eq!(f.coll_lanes.stripe_efficiency, 0.8);
        assert_eq!(f.coll_lanes.node_cores, 2);
        let e = parse_tuning_file("[model]\nstripe_efficiency = 1.5\n", "t").unwrap_err();
        assert!(e.message().contains("stripe_efficiency = 1.5"), "{e}");
        // The selector: the file's rule inside its bounds, the model (on the file's lanes)
        // outside them.
        let t = Tuning {
            rules: f.rules.clone(),
            rules_source: "tuning file",
            lanes: f.coll_lanes,
            ..Tuning::default()
        };
        let c = t.select(Coll::Bcast, 2, 2, 64, C).unwrap();
        assert_eq!(
            (c.algo.name, c.source),
            ("scatter_allgather", "tuning file")
        );
        assert_eq!(
            t.select(Coll::Bcast, 2, 2, 4096, C).unwrap().source,
            "model"
        );
        assert_eq!(t.select(Coll::Bcast, 4, 2, 64, C).unwrap().source, "model");
        assert_ne!(t.model_lanes(), Tuning::default().model_lanes());
        // Errors name the line of the key at fault.
        let e = parse_tuning_file(
            &text.replace("overhead_us = 0.5", "overhead_us = -0.5"),
            "t",
        )
        .unwrap_err();
        assert!(
            e.message().contains("t line 8") && e.message().contains("overhead_us"),
            "{e}"
        );
        let e = parse_tuning_file(&text.replace("[crossover]", "[crossovers]"), "t").unwrap_err();
        assert!(e.message().contains("crossovers"), "{e}");
        let e = parse_tuning_file(&text.replace("measured_us = 1.5", "measured_us = -2"), "t")
            .unwrap_err();
        assert!(e.message().contains("t line 41"), "{e}");
        let e = parse_tuning_file(&text.replace("\"tcp\"", "\"ib\""), "t").unwrap_err();
        assert!(
            e.message().contains("t line 16") && e.message().contains("unknown transport"),
            "{e}"
        );
        // Without lanes or a [model], the model keeps its defaults.
        let rules_only =
            parse_tuning_file("[[rule]]\ncoll = \"bcast\"\nalgo = \"knomial\"\n", "t").unwrap();
        assert_eq!(rules_only.coll_lanes, default_lanes());
    }

    #[test]
    fn shipped_table_parses_and_names_registered_algorithms() {
        let rules = parse_table(DEFAULT_TABLE, "default").unwrap();
        assert!(rules.iter().any(|r| r.coll == Coll::Allreduce));
    }

    #[test]
    fn table_errors_name_line_and_key() {
        // (text, what the message must hold besides the source's name)
        let cases: &[(&str, &[&str])] = &[
            (
                "[[rule]]\ncoll = \"allreduce\"\nalgo = \"nope\"\n",
                &["t line 3", "\"nope\"", "recursive_doubling"],
            ),
            (
                "# a comment\n[[rule]]\ncoll = \"allreduce\"\nalgo = \"ring\"\nfoo = 3\n",
                &["t line 5", "unknown field `foo`"],
            ),
            ("x = 1\n", &["t line 1", "unknown field `x`"]),
            (
                "[[rule]]\ncoll = \"allreduce\"\n\n[[rule]]\ncoll = \"bcast\"\nalgo = \"shm\"\n",
                &["t line 1", "missing field `algo`"],
            ),
            (
                "[[rule]]\ncoll = \"allreduse\"\nalgo = \"ring\"\n",
                &["t line 2", "allreduse", "allreduce"],
            ),
            (
                "[[rule]]\ncoll = \"bcast\"\nalgo = \"knomial\"\nradix = 1\n",
                &["t line 4", "radix = 1"],
            ),
            (
                "[[rule]]\ncoll = \"bcast\"\nalgo = \"knomial\"\nmax_bytes = \"64K\"\n",
                &["t line 4", "max_bytes"],
            ),
            (
                "[[rule]]\ncoll = \"bcast\"\nalgo = \"knomial\"\nmax_procs = -1\n",
                &["t line 4", "max_procs"],
            ),
            (
                "[[rule]]\ncoll = \"bcast\"\nalgo = \"knomial\"\nmin_procs = 8\nmax_procs = 4\n",
                &["t line 1", "min_procs = 8 is above max_procs = 4"],
            ),
            ("[[rule]\n", &["t line 1", "[[rule]"]),
        ];
        for (text, want) in cases {
            let e = parse_table(text, "t").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config);
            for w in *want {
                assert!(e.message().contains(w), "{text:?}: {e} lacks {w:?}");
            }
        }
        // Underscores in numbers and comments after values are TOML.
        let r = parse_table(
            "[[rule]]\ncoll = \"bcast\" # why\nalgo = \"knomial\"\nmax_bytes = 1_048_576\n",
            "t",
        )
        .unwrap();
        assert_eq!(r[0].bytes, (0, 1 << 20));
        assert_eq!(r[0].procs, (1, u32::MAX));
        assert!(parse_table("", "t").unwrap().is_empty());
    }

    #[test]
    fn forcing_a_restricted_algorithm_names_the_restriction() {
        let t = Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", "ring")]).unwrap();
        let e = t.select(Coll::Allreduce, 4, 4, 1 << 20, NC).unwrap_err();
        assert!(
            e.message().contains("commutative") && e.message().contains("ring"),
            "{e}"
        );
        assert_eq!(
            t.select(Coll::Allreduce, 4, 4, 8, C).unwrap().algo.name,
            "ring"
        );
        let e = Tuning::from_vars(&[("WEFT_BCAST_ALGO", "magic")]).unwrap_err();
        assert!(
            e.message().contains("WEFT_BCAST_ALGO") && e.message().contains("knomial"),
            "{e}"
        );
        let e = Tuning::from_vars(&[("WEFT_BCAST_RADIX", "1")]).unwrap_err();
        assert!(e.message().contains("WEFT_BCAST_RADIX"), "{e}");
    }

    #[test]
    fn table_and_model_decide_without_knobs() {
        let t = Tuning::default();
        let small = t.select(Coll::Allreduce, 4, 4, 8, C).unwrap();
        assert_eq!(
            (small.algo.name, small.source),
            ("recursive_doubling", "table")
        );
        let big = t.select(Coll::Allreduce, 4, 4, 1 << 20, C).unwrap();
        assert_eq!((big.algo.name, big.source), ("ring", "table"));
        // A non-commutative op skips the ring rule and falls to the model.
        let nc = t.select(Coll::Allreduce, 4, 4, 1 << 20, NC).unwrap();
        assert_ne!(nc.algo.name, "ring");
        // Without the node's area the shm rule is skipped for the next one.
        let shm = CallTraits {
            commutative: true,
            shared_memory: true,
            blocking: true,
            cma: false,
            oversubscribed: false,
        };
        let big_shm = t.select(Coll::Allreduce, 4, 4, 1 << 20, shm).unwrap();
        assert_eq!(big_shm.algo.name, "shm");
        // Gather is linear up to 8 ranks of a node (the table), the model's above.
        assert_eq!(
            t.select(Coll::Gather, 8, 8, 1 << 20, C).unwrap().algo.name,
            "linear"
        );
        let b = t.select(Coll::Gather, 16, 16, 1 << 20, C).unwrap();
        assert_eq!(b.source, "model");
        assert!(b.radix >= 2);
    }

    #[test]
    fn explain_lists_candidates_with_costs() {
        let t = Tuning::default();
        let x = t.explain(Coll::Allreduce, 1 << 20, 4, 4).unwrap();
        assert_eq!(x.choice, "shm");
        assert_eq!(
            t.explain(Coll::Allreduce, 1 << 20, 2, 1).unwrap().choice,
            "ring"
        );
        assert_eq!(x.candidates.len(), algorithms(Coll::Allreduce).len());
        // Every candidate but the multi-rail one, which needs two nodes and rails.
        assert!(x
            .candidates
            .iter()
            .all(|c| c.cost_us.is_some_and(|v| v > 0.0) || c.algo == "multi_rail"));
        // Striping as good as pinned rails (the default): striping's ring, whose explanation
        // gives multi_rail's cost beside it; losing 20 % to striping: multi_rail.
        let on = |r: u32, e: f64| {
            let mut t = Tuning::default().with_inter_rails(r);
            t.lanes.stripe_efficiency = e;
            t
        };
        let striped = on(3, 1.0).explain(Coll::Allreduce, 8 << 20, 2, 1).unwrap();
        assert_eq!(striped.choice, "ring");
        let multi = striped.candidates.iter().find(|c| c.algo == "multi_rail");
        assert!(multi.unwrap().cost_us.is_some());
        let rails = |r: u32, bytes: u64| on(r, 0.8).explain(Coll::Allreduce, bytes, 2, 1).unwrap();
        assert_eq!(rails(3, 8 << 20).choice, "multi_rail");
        assert_ne!(rails(3, 8 << 10).choice, "multi_rail");
        assert_eq!(rails(1, 8 << 20).choice, "ring");
        let multi = rails(1, 8 << 20);
        let multi = multi.candidates.iter().find(|c| c.algo == "multi_rail");
        assert_eq!(multi.unwrap().cost_us, None);
        assert!(t.explain(Coll::Bcast, 8, 0, 1).is_err());
        assert_eq!(
            x,
            t.explain(Coll::Allreduce, 1 << 20, 4, 4).unwrap(),
            "deterministic"
        );
    }
}
