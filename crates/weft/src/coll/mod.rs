//! Collective operations (MPI-4.1 chapter 6) on communicators: barrier, bcast, reduce,
//! allreduce, gather(v), scatter(v), allgather(v), alltoall(v), reduce_scatter(_block),
//! scan and exscan.
//!
//! Each collective (one file each) checks its arguments, asks [`select`] for a row of its
//! algorithm table (`algo/<collective>/`, one file per algorithm), has that row's builder
//! compile a `schedule::Plan` (`Comm::coll_plan`), and starts
//! the schedule as a [`CollRequest`]: the nonblocking form (`iallreduce`) returns it, the
//! blocking form runs it to completion first (a repeated call whose plan is only messages,
//! copies and reductions, with little scratch, as plain point-to-point calls: `direct`).
//! Reductions have byte-level entry points (`allreduce_bytes`) taking the element type at
//! run time, for the C layers; the typed functions wrap them.
//! Collective traffic uses the communicator's second context (`ctx + 1`), so it never meets
//! point-to-point messages, with a tag made of the collective and its sequence number on the
//! communicator, so several outstanding collectives never take each other's messages.
//!
//! Depends on the engine, communicators, `weft_model` (trees, cost) and nothing above.

mod algo;
pub mod datatype;
mod direct;
pub mod knobs;
pub mod op;
pub(crate) mod schedule;
pub mod select;
pub mod sim_plan;

mod allgather;
mod allgatherv;
mod allreduce;
mod alltoall;
mod alltoallv;
mod barrier;
mod bcast;
mod exscan;
mod gather;
mod gatherv;
mod reduce;
mod reduce_scatter;
mod reduce_scatter_block;
pub(crate) mod request;
mod scan;
mod scatter;
mod scatterv;

pub use datatype::{Datatype, TypeKind, F32I32, F64I32, I32I32, I64I32};
pub use op::Op;
pub use request::numbered_as_blocking;
pub use request::CollRequest;
pub use select::{explain, Coll, Explanation, Tuning};

use crate::comm::Comm;
use direct::DirectRun;
use schedule::{Plan, Reduction, ReductionRef, Schedule};
use select::Choice;
use std::cell::{Cell, OnceCell};
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result};
use weft_model::tree::{nest_in, GroupLevels, Tree};

/// Collective tags on the collective context (`ctx + 1`, which only collectives and
/// communicator creation use; the latter's tag 0x7fff_0001 lies above every collective tag):
/// bits 0-3 name the collective, bits 4-16 hold its call number on the communicator, bits
/// 17-27 its root, bit 28 says whether the number is a persistent collective's
/// ([`PERSISTENT_SEQ`]) and bit 29 whether it is a nonblocking one's ([`NONBLOCKING_SEQ`]). Several outstanding collectives thus never take each other's
/// messages, and ranks that disagree about the collective or the root exchange no data —
/// a waiting rank recognises a peer's message of the same call number with another tag and
/// reports the disagreement (see `schedule`). Two unfinished calls on one rank never share
/// a tag: a start whose tag an unfinished call on the communicator holds is refused
/// (`request::check_tag_free`), which covers call numbers that repeat (persistent
/// collectives restart with their number) as well as the 2^13 wrap-around. Roots are
/// compared modulo 2^11: on a communicator of more than 2048 ranks, ranks that disagree on
/// the root by a multiple of 2048 are not detected (an erroneous program; the others are).
const TAG_COLL_BITS: u32 = 4;
pub(crate) const TAG_SEQ_BITS: u32 = 13;
const TAG_ROOT_BITS: u32 = 11;
const TAG_PERSISTENT: u32 = 1 << (TAG_COLL_BITS + TAG_SEQ_BITS + TAG_ROOT_BITS);
const TAG_NONBLOCKING: u32 = TAG_PERSISTENT << 1;

/// Marks a call number as a persistent collective's: such numbers count apart from the
/// others (a communicator's persistent collectives are numbered in the order of their
/// collective initialisation, which every rank shares, while their starts may come in any
/// order), and their tags carry bit 29, so a persistent start never shares a tag with a
/// call of the running count.
pub const PERSISTENT_SEQ: u32 = 1 << 31;

/// Marks a call number as a nonblocking collective's: those count apart from the blocking
/// ones, so that a blocking and a nonblocking collective started in different orders on
/// different ranks still meet (as in MPICH and Open MPI, whose blocking and nonblocking
/// collectives use separate tags; programs rely on it, mpi4py's fallback MPI_Comm_iagree
/// among them). Within each count the order must agree, as MPI requires.
pub const NONBLOCKING_SEQ: u32 = 1 << 30;

/// The tag of collective `coll` (index in [`select::ALL`]) number `seq` with `root`.
fn coll_tag(index: u32, seq: u32, root: u32) -> i32 {
    debug_assert!(index < 1 << TAG_COLL_BITS);
    let persistent = if seq & PERSISTENT_SEQ != 0 {
        TAG_PERSISTENT
    } else if seq & NONBLOCKING_SEQ != 0 {
        TAG_NONBLOCKING
    } else {
        0
    };
    let seq = seq & ((1 << TAG_SEQ_BITS) - 1);
    let root = root & ((1 << TAG_ROOT_BITS) - 1);
    (persistent | (root << (TAG_COLL_BITS + TAG_SEQ_BITS)) | (seq << TAG_COLL_BITS) | index) as i32
}

/// The parts of a collective tag: (collective, call number with [`PERSISTENT_SEQ`] when
/// the tag is a persistent collective's, root) as far as they fit.
fn tag_parts(tag: i32) -> (Coll, u32, u32) {
    let t = tag as u32;
    let index = t & ((1 << TAG_COLL_BITS) - 1);
    let mut seq = (t >> TAG_COLL_BITS) & ((1 << TAG_SEQ_BITS) - 1);
    if t & TAG_PERSISTENT != 0 {
        seq |= PERSISTENT_SEQ;
    }
    if t & TAG_NONBLOCKING != 0 {
        seq |= NONBLOCKING_SEQ;
    }
    let root = (t >> (TAG_COLL_BITS + TAG_SEQ_BITS)) & ((1 << TAG_ROOT_BITS) - 1);
    let coll = select::ALL
        .get(index as usize)
        .copied()
        .unwrap_or(Coll::Barrier);
    (coll, seq, root)
}

/// True when a peer's message with tag `theirs` belongs to the same call number as this
/// rank's collective with tag `mine` but disagrees about which collective or root it is.
pub(crate) fn disagrees(mine: i32, theirs: i32) -> bool {
    if mine == theirs || !(0..1 << 30).contains(&theirs) {
        return false;
    }
    tag_parts(mine).1 == tag_parts(theirs).1
}

/// The error for a peer whose message of this call disagrees with it ([`disagrees`]).
pub(crate) fn disagreement(rank: u32, peer: u32, mine: i32, theirs: i32) -> Error {
    let (mc, seq, mr) = tag_parts(mine);
    let seq = if seq & PERSISTENT_SEQ != 0 {
        format!("(persistent {})", seq & !PERSISTENT_SEQ)
    } else if seq & NONBLOCKING_SEQ != 0 {
        format!("(nonblocking {})", seq & !NONBLOCKING_SEQ)
    } else {
        seq.to_string()
    };
    let (tc, _, tr) = tag_parts(theirs);
    let what = if mc != tc {
        format!(
            "rank {peer} called {} where this rank called {}",
            tc.name(),
            mc.name()
        )
    } else {
        format!(
            "rank {peer} passed root {tr} where this rank passed root {mr} (roots modulo {})",
            1u32 << TAG_ROOT_BITS
        )
    };
    Error::new(
        ErrorKind::InvalidRoot,
        format!(
            "{} on rank {rank}: the ranks disagree about collective call {seq} on this \
             communicator: {what}",
            mc.name()
        ),
    )
}

/// How a node of `ppn` ranks of this machine, or of the topology `WEFT_TOPOLOGY` gives,
/// splits into the core groups of the hierarchical collectives (docs/topology.md), as a
/// live job with `config` would see it: what the groups are (`L3`, `NUMA`, `package`) and
/// each local rank's group. `Err` says why the node is one group.
pub fn node_core_groups(
    config: &crate::Config,
    ppn: u32,
) -> std::result::Result<(&'static str, Vec<u32>), String> {
    if ppn < 2 {
        return Err("a node of one rank".into());
    }
    let groups = crate::topology::core_groups(config, ppn).map_err(|why| why.to_string())?;
    let kind = groups[0].kind;
    let ids: Vec<u32> = groups.iter().map(|g| g.index).collect();
    if ids.iter().all(|&g| g == ids[0]) {
        return Err(format!("all {ppn} ranks are in {kind} {}", ids[0]));
    }
    Ok((kind, ids))
}

/// Whether a call waits for its result (the blocking form) or returns a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Blocking,
    Nonblocking,
}

impl Comm {
    /// Ranks per node of this communicator as the selector and the cost model see it: the
    /// most members any one node holds, computed from the job's node table (the same on
    /// every rank, so every rank decides alike; counting only this node's members would
    /// differ between nodes of unequal shares and split the ranks between algorithms).
    pub(crate) fn coll_ppn(&self) -> u32 {
        let e = self.engine.borrow();
        let gen = e.tuning_gen();
        if let Some((g, ppn)) = self.data.coll_ppn.get() {
            if g == gen {
                return ppn;
            }
        }
        let ppn = self.count_coll_ppn(&e);
        self.data.coll_ppn.set(Some((gen, ppn)));
        ppn
    }

    fn count_coll_ppn(&self, e: &crate::engine::Engine) -> u32 {
        let tuning = e.tuning();
        let table = tuning.synthetic_nodes().unwrap_or(e.node_of());
        let node = |w: u32| table.get(w as usize).copied().unwrap_or(0);
        let members = &self.data.members;
        let first = node(members[0]);
        // The common case, one node, without allocating.
        if members.iter().all(|&w| node(w) == first) {
            return members.len() as u32;
        }
        let mut ids: Vec<u32> = members.iter().map(|&w| node(w)).collect();
        ids.sort_unstable();
        ids.chunk_by(|a, b| a == b)
            .map(|c| c.len() as u32)
            .max()
            .unwrap_or(1)
    }

    /// Whether recursive halving should pair ranks one apart first on this communicator's
    /// node layout (see `algo::allreduce::rabenseifner::pairs_near_first`), remembered per
    /// tuning.
    #[inline]
    pub(crate) fn coll_near_first(&self) -> bool {
        if self.size() < 4 {
            // Fewer ranks have one halving step or none: nothing to order.
            return false;
        }
        let gen = self.engine.borrow().tuning_gen();
        if let Some((g, near)) = self.data.coll_near_first.get() {
            if g == gen {
                return near;
            }
        }
        let near = algo::allreduce::rabenseifner::pairs_near_first(&self.coll_nodes());
        self.data.coll_near_first.set(Some((gen, near)));
        near
    }

    /// Node id of every rank of this communicator, the groups of the hierarchical trees
    /// (the same on every rank: every rank has the job's node table).
    pub(crate) fn coll_nodes(&self) -> Vec<u32> {
        let e = self.engine.borrow();
        let tuning = e.tuning();
        let nodes = tuning.synthetic_nodes().unwrap_or(e.node_of());
        self.data
            .members
            .iter()
            .map(|&w| nodes.get(w as usize).copied().unwrap_or(0))
            .collect()
    }

    /// The nested rank groups the hierarchical collectives (`hier_knomial`) follow,
    /// innermost first: the core groups (the finest of the L3 caches, NUMA nodes and packages
    /// that splits a node, `WEFT_TOPOLOGY`, docs/topology.md) inside each node, then the
    /// nodes. A node where some rank is in no core group is one group; levels that split
    /// nothing are left out (`GroupLevels::pruned`), so one node of two packages has the
    /// one level of its packages. Above the nodes come the levels of the type II tree the
    /// aggregation manager gave the communicator, if any (docs/aggd.md): hosts grouped by
    /// the switch they hang under, then by the one above, up to the root. The same on every
    /// rank: every rank has the job's tables and the answer rank 0 broadcast.
    pub fn coll_levels(&self) -> Result<GroupLevels> {
        use crate::engine::NO_CORE_GROUP;
        let nodes = self.coll_nodes();
        let e = self.engine.borrow();
        let table = e.core_group_of();
        let mut cores: Vec<u32> = self
            .data
            .members
            .iter()
            .map(|&w| table.get(w as usize).copied().unwrap_or(NO_CORE_GROUP))
            .collect();
        let mut ungrouped: Vec<u32> = (0..cores.len())
            .filter(|&i| cores[i] == NO_CORE_GROUP)
            .map(|i| nodes[i])
            .collect();
        ungrouped.sort_unstable();
        ungrouped.dedup();
        for (c, n) in cores.iter_mut().zip(&nodes) {
            if ungrouped.binary_search(n).is_ok() {
                *c = 0;
            }
        }
        let inner = nest_in(&nodes, &cores);
        let levels = vec![inner, nodes];
        // A type II tree from the aggregation manager (`crate::agg`): the switches above the
        // hosts, innermost first. A host's ranks share its chain, so they nest over the
        // nodes; over a tuning's synthetic nodes they may not, and are then left out.
        let agg = self.data.agg.borrow();
        if !agg.levels.is_empty() {
            let mut with = levels.clone();
            with.extend(agg.levels.iter().cloned());
            if let Ok(l) = GroupLevels::pruned(with) {
                return Ok(l);
            }
        }
        GroupLevels::pruned(levels)
    }

    /// The tree the hierarchical broadcast and reduce of this communicator build for `root`
    /// with radix `radix` (the allreduce's is the one for root 0): for tests and tools that
    /// check which edges cross which groups of [`Comm::coll_levels`].
    pub fn coll_hier_tree(&self, radix: u32, root: u32) -> Result<Tree> {
        algo::bcast::hier_knomial::tree(&self.coll_levels()?, radix, root)
    }

    /// Bytes of each slot of the node's collective area when this communicator may use it:
    /// the world of a job of 2 or more ranks all on this node. Every rank of such a job
    /// sees the same segment, so every rank answers alike.
    pub(crate) fn coll_shm_slot_bytes(&self) -> Option<usize> {
        *self.data.coll_slot_bytes.get_or_init(|| {
            if self.data.ctx != 0 || self.size() < 2 {
                return None;
            }
            let e = self.engine.borrow();
            if e.local_ranks().0.len() != self.size() as usize {
                return None;
            }
            e.shm()
                .and_then(weft_transport::shm::coll::CollArea::new)
                .map(|a| a.slot_bytes())
        })
    }

    /// The algorithm for one call of `coll` moving `bytes` per rank.
    pub(crate) fn coll_choose(
        &self,
        coll: Coll,
        bytes: usize,
        commutative: bool,
        mode: Mode,
    ) -> Result<Choice> {
        let shared_memory = self.coll_shm_slot_bytes().is_some();
        // Every collective on the node's communicator votes (once per segment), so a rank
        // that needs the verdict finds every peer's vote as soon as the peer has called any
        // collective, even another one than this (then the call's disagreement is reported
        // as usual instead of hanging here).
        if shared_memory {
            self.coll_cma_vote();
        }
        let (tuning, oversubscribed) = {
            let e = self.engine.borrow();
            (e.tuning(), e.oversubscribed())
        };
        let (size, ppn) = (self.size(), self.coll_ppn());
        let choose = |cma: bool| {
            let traits = select::CallTraits {
                commutative,
                shared_memory,
                blocking: mode == Mode::Blocking,
                cma,
                oversubscribed,
            };
            tuning
                .select(coll, size, ppn, bytes as u64, traits)
                .map_err(|e| e.context(format!("{} on rank {}", coll.name(), self.rank())))
        };
        let known = self.engine.borrow().cma_verdict();
        // Choose first as if the node's verdict were (or is) that CMA works: a choice that
        // does not need it stands whatever the verdict, so the call does not wait for the
        // peers' votes. Every rank makes the same first choice, so either every rank waits
        // for the verdict below or none does.
        let first = choose(shared_memory && known.unwrap_or(true))?;
        if known.is_some() || !first.needs_cma() {
            return Ok(first);
        }
        if self.coll_cma_usable()? {
            Ok(first)
        } else {
            choose(false)
        }
    }

    /// This rank's vote on Cross Memory Attach in the node's area, once per segment: whether
    /// it can read every local peer's memory (a probe of each) and `WEFT_SHM_CMA` is not
    /// `off`.
    fn coll_cma_vote(&self) {
        use weft_transport::shm::coll::CollArea;
        let mut e = self.engine.borrow_mut();
        if e.cma_voted() || e.cma_verdict().is_some() {
            // A final verdict includes our vote.
            return;
        }
        let Some(shm) = e.shm() else { return };
        let Some(area) = CollArea::new(shm) else {
            return;
        };
        if !area.voted_cma() {
            let me = area.me();
            let ok = e.tuning().cma_allowed()
                && (0..area.local_size())
                    .filter(|&l| l != me)
                    .all(|l| shm.probe_cma(l));
            area.vote_cma(ok);
        }
        e.set_cma_voted();
    }

    /// Whether every local rank can read every other's memory with Cross Memory Attach: the
    /// node's common verdict, so that every rank picks the same algorithm (a per-rank
    /// fallback would leave ranks running different schedules). Waits, making progress,
    /// until every local rank has voted (each does at its first collective on the node's
    /// communicator, [`Comm::coll_cma_vote`]); votes stay for the segment's life, so later
    /// calls only read them. Only for a communicator that may use the area (the whole node).
    pub(crate) fn coll_cma_usable(&self) -> Result<bool> {
        use weft_transport::shm::coll::{CmaVerdict, CollArea};
        if let Some(usable) = self.engine.borrow().cma_verdict() {
            return Ok(usable);
        }
        // A rank that died before voting never will: look by the clock (a rank on a loaded
        // core polls only as often as it is given the core). The first reading starts the
        // period, every 64 polls.
        let mut polls = 0u32;
        let mut last_check: Option<std::time::Instant> = None;
        loop {
            {
                let e = self.engine.borrow();
                let Some(shm) = e.shm() else { return Ok(false) };
                let Some(area) = CollArea::new(shm) else {
                    return Ok(false);
                };
                let verdict = match area.cma_verdict() {
                    CmaVerdict::Usable => Some(true),
                    CmaVerdict::Refused(_) => Some(false),
                    CmaVerdict::Pending => None,
                };
                if let Some(usable) = verdict {
                    drop(e);
                    self.engine.borrow_mut().set_cma_verdict(usable);
                    return Ok(usable);
                }
                polls = polls.wrapping_add(1);
                let due = polls.is_multiple_of(64) && {
                    let now = std::time::Instant::now();
                    let last = *last_check.get_or_insert(now);
                    now.duration_since(last) >= schedule::SHM_LIVENESS_PERIOD && {
                        last_check = Some(now);
                        true
                    }
                };
                if due {
                    if let Some(l) =
                        (0..area.local_size()).find(|&l| l != area.me() && !shm.peer_alive(l))
                    {
                        return Err(Error::new(
                            ErrorKind::PeerDead,
                            format!(
                                "rank {}: local rank {l} died before the node agreed whether \
                                 Cross Memory Attach works",
                                self.rank()
                            ),
                        ));
                    }
                }
            }
            let mut e = self.engine.borrow_mut();
            if !e.progress() && e.yields_when_idle() {
                std::thread::yield_now();
            }
        }
    }

    /// Replaces the collective tuning (forced algorithms, radices, table; the network's
    /// rails stay the endpoint's) of this process, for every communicator. Tools and tests use it; jobs set it with knobs, read at init.
    pub fn set_collective_tuning(&self, tuning: Tuning) {
        let mut e = self.engine.borrow_mut();
        // The rails are the network's, not the tuning's.
        let rails = e.net_rails();
        e.set_tuning(tuning.with_inter_rails(rails));
        e.coll_state.memo = Default::default();
    }

    /// Blocking collective calls of this rank, on any communicator, that ran as plain
    /// point-to-point calls without a schedule (a repeated call whose plan is only messages,
    /// copies and reductions); for tests and tools that check which path a call took.
    pub fn coll_direct_runs(&self) -> u64 {
        self.engine.borrow().coll_state.direct_runs.get()
    }

    /// Of [`Comm::coll_direct_runs`], the calls that repeated the last directly run call
    /// of their collective on their communicator (root, buffer lengths, element kind and
    /// predefined operation) and skipped its checks and memo lookup; for tests and tools.
    pub fn coll_repeat_runs(&self) -> u64 {
        self.engine.borrow().coll_state.repeat_runs.get()
    }

    /// Messages of this rank's directly run collectives (any communicator) that were
    /// already here (in their ring, or taken off it by a progress pass and waiting
    /// unmatched) when the receive would have been posted, and were taken at once without a
    /// request; for tests and tools that check which path a call took.
    pub fn coll_received_at_once(&self) -> u64 {
        self.engine.borrow().coll_state.received_at_once.get()
    }

    /// Of [`Comm::coll_received_at_once`], the messages a receive waited for on its peer's
    /// ring and took as they landed; for tests and tools.
    pub fn coll_received_on_ring(&self) -> u64 {
        self.engine.borrow().coll_state.received_on_ring.get()
    }

    /// For tests: `hook` runs each time a directly run collective's receive of this rank
    /// (any communicator) finds its message missing and starts waiting for it on its peer's
    /// ring ([`RingWait::Waiting`], before the first look), and when that wait ends without
    /// the message ([`RingWait::GaveUp`], before the receive is posted), so that a test can
    /// let the peer send at either moment instead of hoping the timing works out. It must
    /// not call into weft. `None` removes it.
    #[doc(hidden)]
    pub fn set_coll_ring_wait_hook(&self, hook: Option<Box<dyn Fn(RingWait)>>) {
        self.engine.borrow_mut().coll_state.ring_wait_hook = hook;
    }

    /// The inputs of a call of this communicator, for [`Comm::coll_prepared`].
    #[inline]
    pub(crate) fn coll_key(
        &self,
        bytes: usize,
        root: u32,
        elem_bytes: usize,
        commutative: bool,
        mode: Mode,
    ) -> CallKey {
        CallKey {
            ctx: self.data.ctx,
            bytes,
            root,
            elem_bytes,
            commutative,
            mode,
            extra: 0,
        }
    }

    /// The plan of a call: the memo's when the last call of `coll` had the same inputs
    /// (`key`, and for the v-forms their count and displacement `arrays`, compared, not
    /// copied), else `build`'s (which checks the inputs and returns the choice and plan),
    /// then remembered. A loop of the same call skips the selection, the checks of its
    /// inputs and the plan lookup (a third to a half of a small blocking collective's
    /// instructions). Whatever depends on the buffers themselves (their alignment) or on
    /// the operation is not the memo's: callers check it on every call.
    #[inline]
    pub(crate) fn coll_prepared(
        &self,
        coll: Coll,
        key: CallKey,
        arrays: &[&[usize]],
        build: impl FnOnce() -> Result<(Choice, Rc<Plan>)>,
    ) -> Result<Prepared> {
        if let Some(prepared) = self.coll_memo(coll, &key, arrays) {
            return Ok(prepared);
        }
        let (choice, plan) = build()?;
        self.coll_remember(coll, key, arrays, &choice, &plan);
        Ok(plan.into())
    }

    /// The memo's plan when the call repeats the memo's, with its direct run for a blocking
    /// call ([`DirectRun`], resolved at the first repetition, so a first call or a rotating
    /// root takes the schedule, which allocates nothing; counted when it runs:
    /// [`Comm::coll_direct_runs`]).
    #[inline(always)]
    fn coll_memo(&self, coll: Coll, key: &CallKey, arrays: &[&[usize]]) -> Option<Prepared> {
        // Every array of a v-form has one entry per rank; one of another length is bad
        // input for the checks of a fresh call to report.
        let size = self.size() as usize;
        if arrays.iter().any(|a| a.len() != size) {
            return None;
        }
        let e = self.engine.borrow();
        let m = e.coll_state.memo[coll.index()].as_ref()?;
        if m.key != *key || !same_arrays(&m.arrays, arrays) {
            return None;
        }
        let direct = match (key.mode, m.direct.get()) {
            (Mode::Blocking, Some(d)) => d.clone(),
            (Mode::Blocking, None) => self.coll_resolve_direct(&e, m),
            (Mode::Nonblocking, _) => None,
        };
        Some(Prepared {
            plan: m.plan.clone(),
            direct,
        })
    }

    /// The memo's plan resolved for running directly, at the first repetition of its call.
    #[inline(never)]
    fn coll_resolve_direct(&self, e: &crate::engine::Engine, m: &Memo) -> Option<Rc<DirectRun>> {
        m.direct
            .get_or_init(|| {
                DirectRun::of(&m.plan, &self.data.members, |w| e.shares_my_core(w)).map(Rc::new)
            })
            .clone()
    }

    /// Remembers a call's plan for the next call with the same inputs, unless its choice may
    /// still change (it needs Cross Memory Attach and the node has not voted).
    #[inline]
    fn coll_remember(
        &self,
        coll: Coll,
        key: CallKey,
        arrays: &[&[usize]],
        choice: &Choice,
        plan: &Rc<Plan>,
    ) {
        let mut e = self.engine.borrow_mut();
        if choice.needs_cma() && e.cma_verdict().is_none() {
            return;
        }
        e.coll_state.memo[coll.index()] = Some(Memo {
            key,
            arrays: arrays.concat(),
            plan: plan.clone(),
            direct: OnceCell::new(),
            repeat: Cell::new(None),
        });
    }

    /// A blocking call of `coll` (one that [`repeats_from_lengths`]) with `root`, the
    /// buffers and the reduction (`kind` and `op`) of the last one that ran directly on this
    /// communicator, run the same way from here: the call's checks, its memo lookup, the
    /// operation's packaging and its request are skipped, as they would decide and do what
    /// they did last time. None, with nothing done and no call number used, when the call
    /// differs (a user operation always does), its buffers are misaligned for the kind, or
    /// a nonblocking collective is unfinished: the caller then takes the usual way.
    #[inline(always)]
    pub(crate) fn coll_repeat(
        &self,
        coll: Coll,
        root: u32,
        send: &[u8],
        recv: &mut [u8],
        reduction: Option<(TypeKind, &Op)>,
    ) -> Option<Result<()>> {
        debug_assert!(repeats_from_lengths(coll));
        let reduction = reduction.map(|(kind, op)| ReductionRef { op, kind });
        let sig = Repeat::of(send, recv, reduction)?;
        if let Some(r) = reduction {
            if misaligned(send, r.kind) || misaligned(recv, r.kind) {
                return None;
            }
        }
        let run = {
            let e = self.engine.borrow();
            let m = e.coll_state.memo[coll.index()].as_ref()?;
            if m.repeat.get() != Some(sig)
                || m.key.ctx != self.data.ctx
                || m.key.root != root
                || !e.coll_state.unfinished.is_empty()
                || self.data.freed.get()
                || self.data.inter.is_some()
            {
                return None;
            }
            let runs = &e.coll_state.repeat_runs;
            let run = m.direct.get()?.clone()?;
            runs.set(runs.get() + 1);
            run
        };
        self.coll_note_order(coll);
        let tag = coll_tag(coll.index() as u32, request::next_seq(self), root);
        Some(run.run(self, coll.name(), send, recv, tag, reduction))
    }

    /// Notes for the next leader barrier whether a blocking call of `coll` runs best with the
    /// lower ranks of a shared core first ([`CallState::lower_first`]; a barrier leaves it
    /// as it is).
    #[inline(always)]
    pub(crate) fn coll_note_order(&self, coll: Coll) {
        if coll != Coll::Barrier {
            let e = self.engine.borrow();
            e.coll_state.lower_first.set(wants_lower_first(coll));
        }
    }

    /// Binds `plan` to the buffers and starts it (a collective without a root); a blocking
    /// call runs to completion here and its request holds the outcome.
    #[inline(always)]
    pub(crate) fn coll_start<'a>(
        &self,
        coll: Coll,
        plan: impl Into<Prepared>,
        send: &'a [u8],
        recv: &'a mut [u8],
        reduction: Option<Reduction>,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_start_rooted(coll, 0, plan, send, recv, reduction, mode)
    }

    /// Binds `plan` of a collective with `root` to the buffers and starts it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn coll_start_rooted<'a>(
        &self,
        coll: Coll,
        root: u32,
        prepared: impl Into<Prepared>,
        send: &'a [u8],
        recv: &'a mut [u8],
        reduction: Option<Reduction>,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        let prepared = prepared.into();
        if mode == Mode::Blocking {
            self.coll_note_order(coll);
        }
        // The usual repeated blocking call: nothing to check while no nonblocking collective
        // is unfinished, so it runs here.
        if let (Some(run), Mode::Blocking) = (&prepared.direct, mode) {
            let e = self.engine.borrow();
            if e.coll_state.unfinished.is_empty() {
                let red = reduction.as_ref().map(Reduction::view);
                if repeats_from_lengths(coll) {
                    if let Some(m) = &e.coll_state.memo[coll.index()] {
                        m.repeat.set(Repeat::of(send, recv, red));
                    }
                }
                drop(e);
                let tag = coll_tag(coll.index() as u32, request::next_seq(self), root);
                let outcome = run.run(self, coll.name(), send, recv, tag, red);
                return Ok(CollRequest::completed(outcome));
            }
        }
        self.coll_start_scheduled(coll, root, prepared, send, recv, reduction, mode)
    }

    /// [`Comm::coll_start_rooted`] for every call but a repeated blocking one with no
    /// nonblocking collective unfinished.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn coll_start_scheduled<'a>(
        &self,
        coll: Coll,
        root: u32,
        prepared: Prepared,
        send: &'a [u8],
        recv: &'a mut [u8],
        reduction: Option<Reduction>,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        let index = coll.index() as u32;
        let tag = coll_tag(index, request::peek_seq(self, mode), root);
        // Checked before the number is taken, so that the ranks' numbering stays aligned
        // when the caller completes the other calls and retries; nothing to check while no
        // nonblocking collective is unfinished (the usual case).
        if !self.engine.borrow().coll_state.unfinished.is_empty() {
            request::check_outstanding(self, coll.name())?;
            request::check_tag_free(self, coll.name(), tag)?;
        }
        request::next_seq_of(self, mode);
        let Prepared { plan, direct } = prepared;
        if let (Some(run), Mode::Blocking) = (direct, mode) {
            let red = reduction.as_ref().map(Reduction::view);
            let outcome = run.run(self, coll.name(), send, recv, tag, red);
            return Ok(CollRequest::completed(outcome));
        }
        let mut s = Schedule::start(self, coll.name(), plan, send, recv, reduction, tag);
        if mode == Mode::Blocking {
            let outcome = request::run_blocking(self, &mut s);
            return Ok(CollRequest::completed(outcome));
        }
        CollRequest::start(self, s)
    }

    /// The plan of a call for `choice`: built by the chosen row's builder from the call's
    /// `shape` (the collective's fields; this function adds the communicator's: the area's
    /// slot for algorithms on it, the halving order) and, for the v-forms, the blocks, or
    /// taken from the cache of recent small plans. A plan is a pure function of its
    /// [`PlanKey`] (this rank and size, the collective, the choice and the call's
    /// [`PlanShape`]), so plans of equal blocks moving at most [`PLAN_CACHE_BYTES`] are
    /// kept and shared between communicators of the same shape: it saves the plan's
    /// allocations on the latency-bound path. Plans of hierarchical algorithms also read the
    /// node layout, and those of v-forms their blocks, which the key does not hold: they are
    /// never cached.
    #[inline]
    pub(crate) fn coll_plan(
        &self,
        coll: Coll,
        choice: &Choice,
        shape: PlanShape,
        send_blocks: &[(usize, usize)],
        recv_blocks: &[(usize, usize)],
    ) -> Result<Rc<Plan>> {
        let a = choice.algo;
        let shape = PlanShape {
            slot_bytes: if a.needs(select::Restriction::SharedMemory) {
                // The restriction held, so the area exists.
                self.coll_shm_slot_bytes().unwrap_or(0)
            } else {
                0
            },
            near_first: self.coll_near_first(),
            ..shape
        };
        if shape.bytes > PLAN_CACHE_BYTES
            || a.hierarchical
            || !send_blocks.is_empty()
            || !recv_blocks.is_empty()
        {
            return self.coll_build_plan(choice, shape, send_blocks, recv_blocks);
        }
        let key = PlanKey {
            rank: self.rank(),
            size: self.size(),
            coll,
            algo: a.name,
            radix: choice.radix,
            shape,
        };
        {
            let e = self.engine.borrow();
            if let Some((_, p)) = e.coll_state.plans.iter().find(|(k, _)| *k == key) {
                return Ok(p.clone());
            }
        }
        self.coll_build_cached(key, choice)
    }

    /// Builds a plan by the chosen row's builder ([`Comm::coll_plan`]'s work when the cache
    /// does not have it).
    #[inline(never)]
    fn coll_build_plan(
        &self,
        choice: &Choice,
        shape: PlanShape,
        send_blocks: &[(usize, usize)],
        recv_blocks: &[(usize, usize)],
    ) -> Result<Rc<Plan>> {
        let a = choice.algo;
        let levels = if a.hierarchical {
            let l = self.coll_levels()?;
            log::debug!(
                "rank {}: {} over group levels (innermost first) {:?}",
                self.rank(),
                a.name,
                (0..l.depth()).map(|i| l.level(i)).collect::<Vec<_>>()
            );
            Some(l)
        } else {
            None
        };
        let call = algo::Call {
            rank: self.rank(),
            size: self.size(),
            radix: choice.radix,
            root: shape.root,
            bytes: shape.bytes,
            elem_bytes: shape.elem_bytes,
            commutative: shape.commutative,
            slot_bytes: shape.slot_bytes,
            near_first: shape.near_first,
            rails: self.engine.borrow().tuning().model_lanes().inter_rails,
            levels: levels.as_ref(),
            hier_tree: None,
            send_blocks,
            recv_blocks,
        };
        (a.plan)(&call).map(Rc::new)
    }

    /// Builds the plan of `key` and keeps it in the cache of recent small plans, the
    /// oldest leaving first.
    #[inline(never)]
    fn coll_build_cached(&self, key: PlanKey, choice: &Choice) -> Result<Rc<Plan>> {
        let plan = self.coll_build_plan(choice, key.shape, &[], &[])?;
        let plans = &mut self.engine.borrow_mut().coll_state.plans;
        if plans.len() == PLAN_CACHE_ENTRIES {
            plans.remove(0);
        }
        plans.push((key, plan.clone()));
        Ok(plan)
    }

    #[inline]
    pub(crate) fn coll_check_root(&self, coll: Coll, root: u32) -> Result<()> {
        self.check()?;
        if root >= self.size() {
            return Err(self.root_error(coll, root));
        }
        Ok(())
    }

    /// What [`Comm::coll_check_root`] reports for a root that is not a rank.
    #[cold]
    #[inline(never)]
    fn root_error(&self, coll: Coll, root: u32) -> Error {
        Error::new(
            ErrorKind::InvalidRoot,
            format!(
                "{} on rank {}: root {root} is not a rank of communicator {} (size {})",
                coll.name(),
                self.rank(),
                self.name(),
                self.size()
            ),
        )
    }
}

/// Calls moving at most this many bytes keep their plans for the next call.
const PLAN_CACHE_BYTES: usize = 16384;
/// Plans kept per engine; the oldest goes first.
const PLAN_CACHE_ENTRIES: usize = 32;

/// What a call's plan depends on besides the communicator and the algorithm chosen:
/// whatever a collective's plan builder reads of the call (unused fields stay at their
/// defaults; [`Comm::coll_plan`] fills the communicator's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PlanShape {
    /// Bytes per rank, as the selector counts them.
    pub bytes: usize,
    /// The root (0 for collectives without one).
    pub root: u32,
    /// Bytes of one element (reductions).
    pub elem_bytes: usize,
    /// Bytes of a slot of the node's area, for algorithms that stage through it.
    pub slot_bytes: usize,
    /// Whether the operation commutes (reductions).
    pub commutative: bool,
    /// Whether recursive halving pairs ranks one apart first ([`Comm::coll_near_first`]).
    pub near_first: bool,
}

/// What a cached plan was built from (the algorithm's name last: the cheaper fields decide
/// most mismatches).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanKey {
    rank: u32,
    size: u32,
    coll: Coll,
    radix: u32,
    shape: PlanShape,
    algo: &'static str,
}

/// The moments [`Comm::set_coll_ring_wait_hook`]'s hook is told about.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingWait {
    /// A receive starts waiting for its message on its peer's ring.
    Waiting,
    /// The wait ended without the message: the receive is posted.
    GaveUp,
}

/// What the engine keeps for this rank's collective calls (one engine per rank, so none of
/// it is shared between ranks or threads).
#[derive(Default)]
pub(crate) struct CallState {
    /// (collective context, tag) of each started and unfinished nonblocking collective (a
    /// blocking one completes before anything else starts).
    pub unfinished: Vec<(u32, i32)>,
    /// Scratch of finished schedules, for the next ones.
    pub pool: schedule::Pool,
    /// Recent small plans ([`Comm::coll_plan`]), oldest first.
    pub plans: Vec<(PlanKey, Rc<Plan>)>,
    /// The last call of each collective ([`Coll::index`]): its inputs and plan
    /// ([`Comm::coll_prepared`]).
    pub memo: [Option<Memo>; select::ALL.len()],
    /// Blocking calls that ran directly ([`Comm::coll_direct_runs`]).
    pub direct_runs: Cell<u64>,
    /// Of those, the ones that repeated the last call ([`Comm::coll_repeat_runs`]).
    pub repeat_runs: Cell<u64>,
    /// The last blocking collective other than a barrier ran best with the lower ranks
    /// of a shared core first (a scan or exscan: rank r waits for every lower rank), so
    /// the leader barrier lets the lowest of a core leave first
    /// ([`schedule::AreaWait::keeps_core`]): the next call is likely the same.
    pub lower_first: Cell<bool>,
    /// Messages direct runs took from a ring at once ([`Comm::coll_received_at_once`]).
    pub received_at_once: Cell<u64>,
    /// Of those, the ones a receive waited for ([`Comm::coll_received_on_ring`]).
    pub received_on_ring: Cell<u64>,
    /// Test hook run as a receive starts waiting on its peer's ring and when it gives up
    /// ([`Comm::set_coll_ring_wait_hook`]).
    pub ring_wait_hook: Option<Box<dyn Fn(RingWait)>>,
}

/// What a call's plan is a function of, besides the tuning (a new tuning
/// forgets every memo) and what the communicator's context id fixes (members, node layout,
/// collective area: context ids are never reused within a process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallKey {
    /// The communicator's context id.
    pub ctx: u32,
    /// Bytes per rank, as the selector counts them.
    pub bytes: usize,
    /// The root (0 for collectives without one).
    pub root: u32,
    /// Bytes of one element (reductions; 0 otherwise).
    pub elem_bytes: usize,
    /// Whether the operation commutes (true without one).
    pub commutative: bool,
    /// Blocking or not.
    pub mode: Mode,
    /// Another length a call's checks read (the v-forms' other buffer; 0 otherwise).
    pub extra: usize,
}

/// One remembered call ([`CallState::memo`]).
pub(crate) struct Memo {
    key: CallKey,
    /// The call's count and displacement arrays, back to back (v-forms; empty otherwise).
    arrays: Vec<usize>,
    plan: Rc<Plan>,
    /// The plan resolved for running directly, once a blocking call repeated this one
    /// (None inside: it cannot run so).
    direct: OnceCell<Option<Rc<DirectRun>>>,
    /// The arguments of the blocking call that last ran it directly, for
    /// [`Comm::coll_repeat`].
    repeat: Cell<Option<Repeat>>,
}

/// What the checks of a blocking call of a collective that [`repeats_from_lengths`] read
/// besides the communicator and the root: the lengths of its buffers and, for a reduction,
/// the element kind and the predefined operation (alignment depends on the buffers
/// themselves and is checked on every call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Repeat {
    send_bytes: usize,
    recv_bytes: usize,
    reduction: Option<(TypeKind, u8)>,
}

impl Repeat {
    /// The signature of a call with these buffers and reduction; None for a user operation,
    /// whose identity the signature cannot hold.
    #[inline(always)]
    fn of(send: &[u8], recv: &[u8], reduction: Option<ReductionRef<'_>>) -> Option<Repeat> {
        let reduction = match reduction {
            Some(r) => Some((r.kind, r.op.predefined_code()?)),
            None => None,
        };
        Some(Repeat {
            send_bytes: send.len(),
            recv_bytes: recv.len(),
            reduction,
        })
    }
}

/// Whether a blocking call of `coll` passes its checks when another call on the same
/// communicator with the same root, buffer lengths, element kind and predefined operation
/// did, and its buffers are aligned for the kind: true for the collectives whose checks read
/// nothing else (not the v-forms, whose count arrays the memo compares).
#[inline(always)]
const fn repeats_from_lengths(coll: Coll) -> bool {
    matches!(
        coll,
        Coll::Bcast
            | Coll::Reduce
            | Coll::Allreduce
            | Coll::Gather
            | Coll::Scatter
            | Coll::Allgather
            | Coll::Alltoall
            | Coll::ReduceScatterBlock
            | Coll::Scan
            | Coll::Exscan
    )
}

/// Whether a blocking call of `coll` runs best with the lower ranks of a shared core first
/// ([`CallState::lower_first`]): a scan or exscan, where rank r waits for every lower rank.
#[inline(always)]
pub(crate) const fn wants_lower_first(coll: Coll) -> bool {
    matches!(coll, Coll::Scan | Coll::Exscan)
}

/// What a call starts from: its plan and, for a blocking call that repeats the memo's, the
/// plan resolved for running directly.
pub(crate) struct Prepared {
    plan: Rc<Plan>,
    direct: Option<Rc<DirectRun>>,
}

impl From<Rc<Plan>> for Prepared {
    fn from(plan: Rc<Plan>) -> Prepared {
        Prepared { plan, direct: None }
    }
}

/// Whether `stored` is `parts` back to back.
#[inline]
fn same_arrays(stored: &[usize], parts: &[&[usize]]) -> bool {
    // Element by element: the arrays have one entry per rank, few in the calls this saves
    // time for, where a library comparison per array costs more than the comparing.
    let mut rest = stored.iter();
    for p in parts {
        for x in p.iter() {
            if rest.next() != Some(x) {
                return false;
            }
        }
    }
    rest.next().is_none()
}

/// An `InvalidCount` error for a buffer of the wrong length.
pub(crate) fn count_error(coll: Coll, rank: u32, what: &str, got: usize, want: usize) -> Error {
    Error::new(
        ErrorKind::InvalidCount,
        format!(
            "{} on rank {rank}: {what} holds {got} elements but {want} are needed",
            coll.name()
        ),
    )
}

/// Checks the op against the element type and packages it for a schedule.
#[inline(always)]
pub(crate) fn reduction(coll: Coll, rank: u32, op: &Op, kind: TypeKind) -> Result<Reduction> {
    if let Err(e) = op.check(kind) {
        return Err(in_call(e, coll, rank));
    }
    Ok(Reduction {
        op: op.clone(),
        kind,
    })
}

/// `e` with the call and rank in front of its message (off the hot path).
#[cold]
#[inline(never)]
fn in_call(e: Error, coll: Coll, rank: u32) -> Error {
    e.context(format!("{} on rank {rank}", coll.name()))
}

/// Elements of `kind` in a byte buffer of a reduction, checking that it holds whole elements
/// and is aligned for them (the reduction kernels read it as typed slices).
#[inline]
pub(crate) fn elements(
    coll: Coll,
    rank: u32,
    what: &str,
    buf: &[u8],
    kind: TypeKind,
) -> Result<usize> {
    // Every kind's size and alignment are powers of two.
    let (es, align) = (kind.size_bytes(), kind.align_bytes());
    debug_assert!(es.is_power_of_two() && align.is_power_of_two());
    let ragged = buf.len() & (es - 1) != 0;
    if ragged || misaligned(buf, kind) {
        return Err(elements_error(coll, rank, what, buf, kind));
    }
    Ok(buf.len() >> es.trailing_zeros())
}

/// Whether a non-empty `buf` does not start at an address aligned for elements of `kind`
/// (the reduction kernels read it as typed slices).
#[inline(always)]
fn misaligned(buf: &[u8], kind: TypeKind) -> bool {
    !buf.is_empty() && (buf.as_ptr() as usize) & (kind.align_bytes() - 1) != 0
}

/// What [`elements`] reports.
#[cold]
#[inline(never)]
fn elements_error(coll: Coll, rank: u32, what: &str, buf: &[u8], kind: TypeKind) -> Error {
    let es = kind.size_bytes();
    if !buf.len().is_multiple_of(es) {
        return Error::new(
            ErrorKind::InvalidCount,
            format!(
                "{} on rank {rank}: {what} has {} bytes, not a whole number of {}-byte {} elements",
                coll.name(),
                buf.len(),
                es,
                kind.name()
            ),
        );
    }
    Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "{} on rank {rank}: {what} at address {:p} is not aligned to {} bytes as {} needs",
            coll.name(),
            buf.as_ptr(),
            kind.align_bytes(),
            kind.name()
        ),
    )
}

/// (offset, length) in bytes of blocks given element counts and displacements, checking that
/// each lies within a buffer of `len` elements.
pub(crate) fn blocks(
    coll: Coll,
    rank: u32,
    what: &str,
    counts: &[usize],
    displs: &[usize],
    len: usize,
    elem_bytes: usize,
) -> Result<Vec<(usize, usize)>> {
    counts
        .iter()
        .zip(displs)
        .enumerate()
        .map(|(i, (&c, &d))| match d.checked_add(c) {
            // An empty block's displacement means nothing (MPI gives it none).
            _ if c == 0 => Ok((0, 0)),
            Some(end) if end <= len => Ok((d * elem_bytes, c * elem_bytes)),
            _ => Err(Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "{} on rank {rank}: {what} block {i} (displacement {d}, count {c}) \
                         ends past the buffer of {len} elements",
                    coll.name()
                ),
            )),
        })
        .collect()
}

/// Checks that a counts (and displacements) array has one entry per rank.
pub(crate) fn check_len(coll: Coll, rank: u32, what: &str, got: usize, size: u32) -> Result<()> {
    if got != size as usize {
        return Err(Error::new(
            ErrorKind::InvalidCount,
            format!(
                "{} on rank {rank}: {what} has {got} entries but the communicator has {size} ranks",
                coll.name()
            ),
        ));
    }
    Ok(())
}

/// Rejects a receive block layout where two blocks overlap (MPI forbids writing one place
/// twice in a single receive buffer).
pub(crate) fn check_disjoint(
    coll: Coll,
    rank: u32,
    what: &str,
    blocks: &[(usize, usize)],
) -> Result<()> {
    let mut v: Vec<(usize, usize, usize)> = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.1 > 0)
        .map(|(i, b)| (b.0, b.0 + b.1, i))
        .collect();
    v.sort_unstable();
    for w in v.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} on rank {rank}: {what} blocks {} and {} overlap in the receive buffer",
                    coll.name(),
                    w[0].2,
                    w[1].2
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_keep_persistent_numbers_apart() {
        let running = coll_tag(3, 5, 2);
        let persistent = coll_tag(3, 5 | PERSISTENT_SEQ, 2);
        assert_ne!(running, persistent);
        assert_eq!(
            running,
            coll_tag(3, 5 + (1 << TAG_SEQ_BITS), 2),
            "13-bit numbers"
        );
        assert_eq!(
            tag_parts(persistent),
            (select::ALL[3], 5 | PERSISTENT_SEQ, 2)
        );
        assert_eq!(tag_parts(running), (select::ALL[3], 5, 2));
        // Every collective tag stays below communicator creation's and the range a
        // disagreement is looked for in.
        let top = coll_tag(15, u32::MAX, u32::MAX);
        assert!((0..1 << 30).contains(&top) && top < 0x7fff_0001);
        // Same number, other collective: a disagreement; a persistent start and a call of
        // the running count with the same 13 bits are not the same call.
        assert!(disagrees(running, coll_tag(4, 5, 2)));
        assert!(!disagrees(running, coll_tag(4, 5 | PERSISTENT_SEQ, 2)));
        assert!(disagrees(persistent, coll_tag(3, 5 | PERSISTENT_SEQ, 1)));
        // Nonblocking numbers are a third count: apart from both others.
        let nonblocking = coll_tag(3, 5 | NONBLOCKING_SEQ, 2);
        assert!(nonblocking != running && nonblocking != persistent);
        assert_eq!(
            tag_parts(nonblocking),
            (select::ALL[3], 5 | NONBLOCKING_SEQ, 2)
        );
        assert!(!disagrees(running, coll_tag(4, 5 | NONBLOCKING_SEQ, 2)));
        assert!(disagrees(nonblocking, coll_tag(4, 5 | NONBLOCKING_SEQ, 2)));
        let top = coll_tag(15, !PERSISTENT_SEQ, u32::MAX);
        assert!((0..1 << 30).contains(&top));
    }
}
