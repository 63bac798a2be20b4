//! A blocking collective whose plan is plain messages and local work, run step by step as
//! point-to-point calls without a schedule: receives into, sends from, copies and reductions
//! between the caller's buffers and a scratch kept with the run, and the barriers' one
//! arrival in the node's collective area (no copies through it). A
//! leaf of a small scatter or broadcast spent 0.17-0.23 us per call in the schedule's
//! machinery (np=4, 8 B; Open MPI's leaves 0.06-0.08), and a two-rank allreduce, scan or
//! reduce-scatter went through it for one exchange and one reduction. [`DirectRun::of`]
//! resolves such a plan once, for a repeated call (the memo keeps it): the peers' world
//! ranks, each step's local work, its receives (posted first), and the order of its sends:
//! to peers on other cores first, so they can start while this rank still sends (the ranks
//! pinned to its core cannot run before it yields anyway): np=4 on 2 cores, 8 B, against
//! the plan's order, three A/B runs of 5-7 interleaved jobs, scatter 5-7% faster (0.198 vs
//! 0.213 us), bcast 1-5%. A receive whose message is already here, in the peer's ring or
//! among the messages waiting unmatched (another call's progress pass took it off the
//! ring), with no receive posted and no older matching message waiting, takes it at once
//! ([`Engine::recv_eager_now`](crate::engine::Engine::recv_eager_now)): a rank the
//! scheduler runs after its peers sent (np=4 on 2 cores) skips the request, matching and
//! poll loop (scatter leaf 1179 -> 709 instructions; a scatterv leaf whose message a probe
//! had taken off the ring, np=4 8 B, 286-364 -> 182-208 TSC ticks per call; back-to-back
//! calls with no barrier, np=4 8 B, bcast 105 -> 87 ns, gather 9.0 -> 3.8 us per call). A
//! phase's one receive whose message is not there yet waits for it on its peer's ring
//! alone once the phase's sends are out, on a node that is not oversubscribed
//! ([`spin_for`]: np=2 8 B allreduce 0.215 -> 0.195 us), a run of one message and copies
//! skips the phase loop ([`DirectRun::run_single`]), and one of a message alone its loop
//! over steps too ([`DirectRun::run_lone`]).
//! Calls whose plan is known without one, a linear scatter's root and a leaf whose one
//! message comes from or goes to the root, run from their arguments when repeated
//! ([`root_scatter_now`], [`leaf_take_now`], [`leaf_send_now`]; scatterv's and gatherv's,
//! whose leaves cannot know a plan anyway).
//!
//! Does what the schedule would do for the plan (the same tags and checks of the received
//! length, the same look for a peer that disagrees about the call while it waits, the same
//! local work in the same order), a step at a time. Depends on the engine's request API,
//! matching patterns, the communicator's members and context, and the schedule's plan,
//! buffers and outcome checks; knows nothing of algorithms or selection.

use super::coll_tag;
use super::request::{next_seq, peek_seq};
use super::schedule::{
    abandon_pending, area, collect_outcomes, find_disagreement, sends_solo, wrap_call, Action,
    AreaWait, Buf, Buffers, Pending, Plan, ReductionRef, Region, DISAGREEMENT_EVERY,
    SCRATCH_POISON,
};
use super::select::Coll;
use super::Mode;
use crate::comm::Comm;
use crate::engine::Engine;
use crate::matching::Pattern;
use std::cell::RefCell;
use weft_core::{Error, Result};
use weft_transport::buf::{RawBuf, RawBufMut};

/// Most scratch a direct run keeps (bytes): larger plans take the schedule, whose
/// machinery costs little next to their copies, and whose scratch is pooled.
pub(crate) const DIRECT_SCRATCH_BYTES: usize = 16 << 10;

/// One thing a direct run does, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Receive from rank `peer` (world rank `world`) into `dst`.
    Recv { peer: u32, world: u32, dst: Region },
    /// Copy `src` into `dst`.
    Copy { src: Region, dst: Region },
    /// Reduce `src` into `dst` ([`Action::Reduce`]).
    Reduce {
        src: Region,
        dst: Region,
        src_first: bool,
    },
    /// `dst = a ∘ b` ([`Action::ReduceInto`]).
    ReduceInto { a: Region, b: Region, dst: Region },
    /// Send `src` to rank `peer` (world rank `world`).
    Send { peer: u32, world: u32, src: Region },
    /// Arrive in the node's collective area ([`Action::ShmArrive`], or with `leader`
    /// [`Action::ShmLeaderBarrier`]); the phase ends when every local rank has.
    AreaArrive { leader: bool },
}

/// One step of the plan: its things to do, then a wait for its messages.
#[derive(Clone, Copy, Debug)]
struct Phase {
    /// End (exclusive) of the phase's steps in [`DirectRun::steps`].
    end: usize,
    /// The phase's sends go `solo` (`Engine::start_send_mode`), as the schedule's would.
    solo: bool,
    /// The phase has one receive and no arrival: when its message is not there yet, the
    /// receive may wait for it on its peer's ring after the phase's sends
    /// ([`spin_for`]).
    one_recv: bool,
}

/// A plan resolved for running directly on one communicator ([`DirectRun::of`]).
#[derive(Debug)]
pub(crate) struct DirectRun {
    /// The run's steps, in order, phase after phase.
    steps: Box<[Step]>,
    phases: Box<[Phase]>,
    /// Receives and sends of the widest phase: the room the list of requests to wait for
    /// may need.
    requests: usize,
    /// The plan's temporaries, back to back (`u64`, so each is aligned for any element
    /// type).
    scratch: RefCell<Vec<u64>>,
    /// Where each temporary starts in the scratch, in bytes.
    tmp_offsets: Box<[usize]>,
    /// The run is one message and copies between the caller's buffers (a leaf of a linear
    /// gather or scatter, their roots and a two-rank scan's first rank on two ranks, a
    /// two-rank bcast or reduce's leaf), for [`DirectRun::run_single`].
    single: bool,
    /// The run is its one message and nothing else (an exclusive scan's first and last
    /// ranks, a linear gather's leaves, a two-rank broadcast's leaf), for
    /// [`DirectRun::run_lone`].
    lone: bool,
    /// World rank of the run's first receive's peer, whose next message the run starts
    /// bringing into this core's cache as it begins (`Engine::prefetch_from`), so the
    /// line's transfer overlaps the run's setup and sends.
    first_from: Option<u32>,
}

impl DirectRun {
    /// `plan` resolved for the communicator of world ranks `members`, when every action is
    /// a message or local work between the caller's buffers and at most
    /// [`DIRECT_SCRATCH_BYTES`] of scratch; None otherwise. `shares_my_core(w)` says whether
    /// world rank `w` runs on this rank's core (false when unknown).
    pub(super) fn of(
        plan: &Plan,
        members: &[u32],
        shares_my_core: impl Fn(u32) -> bool,
    ) -> Option<DirectRun> {
        if plan.tmp_total_bytes() > DIRECT_SCRATCH_BYTES {
            return None;
        }
        let writable = |r: Region| r.buf != Buf::Send;
        let overlaps =
            |a: Region, b: Region| a.buf == b.buf && a.off < b.off + b.len && b.off < a.off + a.len;
        let mut steps = Vec::new();
        let mut phases = Vec::new();
        let mut requests = 0;
        for actions in plan.each_step() {
            let mut recvs = Vec::new();
            let mut sends_here = Vec::new();
            let mut sends_mates = Vec::new();
            let mut copies_after = Vec::new();
            let mut arrivals = 0;
            // Local work first, in plan order, as the schedule does it.
            for a in actions {
                match *a {
                    Action::ShmArrive | Action::ShmLeaderBarrier => {
                        arrivals += 1;
                        steps.push(Step::AreaArrive {
                            leader: matches!(a, Action::ShmLeaderBarrier),
                        });
                    }
                    Action::Send { peer, src, .. } => {
                        let world = members[peer as usize];
                        let send = Step::Send { peer, world, src };
                        if shares_my_core(world) {
                            sends_mates.push(send);
                        } else {
                            sends_here.push(send);
                        }
                    }
                    Action::Recv { peer, dst } if writable(dst) => {
                        let world = members[peer as usize];
                        recvs.push(Step::Recv { peer, world, dst });
                    }
                    Action::Copy { src, dst } if writable(dst) => {
                        steps.push(Step::Copy { src, dst });
                    }
                    Action::Reduce {
                        src,
                        dst,
                        src_first,
                    } if writable(dst) => steps.push(Step::Reduce {
                        src,
                        dst,
                        src_first,
                    }),
                    Action::ReduceInto { a, b, dst } if a.buf == Buf::Send && writable(dst) => {
                        steps.push(Step::ReduceInto { a, b, dst });
                    }
                    // Nothing else of the step reads or writes its region, so it may wait for
                    // every send to be posted.
                    Action::CopyAfterPosting { src, dst } if writable(dst) => {
                        copies_after.push(Step::Copy { src, dst });
                    }
                    _ => return None,
                }
            }
            // The moved copies must not write what a send reads (no plan does so today: a
            // scatter root's own block is the only such copy).
            let sent = |c: &Step| {
                let Step::Copy { dst, .. } = *c else {
                    return false;
                };
                sends_here
                    .iter()
                    .chain(&sends_mates)
                    .any(|s| matches!(*s, Step::Send { src, .. } if overlaps(src, dst)))
            };
            if copies_after.iter().any(sent) {
                return None;
            }
            let messages = recvs.len() + sends_here.len() + sends_mates.len();
            let one_recv = recvs.len() == 1 && arrivals == 0;
            // A phase waits for its messages or for one arrival in the area, not both (the
            // barriers; no plan mixes them in a step).
            if arrivals > 1 || (arrivals == 1 && messages > 0) {
                return None;
            }
            requests = requests.max(messages);
            // Receives first, so a peer's eager message finds its receive posted.
            steps.extend(recvs);
            steps.extend(sends_here);
            steps.extend(sends_mates);
            steps.extend(copies_after);
            phases.push(Phase {
                end: steps.len(),
                solo: sends_solo(actions),
                one_recv,
            });
        }
        let messages = steps
            .iter()
            .filter(|s| matches!(s, Step::Recv { .. } | Step::Send { .. }))
            .count();
        // Phases before the message's hold copies only (they wait for nothing), so they
        // may run as one with it; nothing may come after it.
        let last_start = phases.iter().rev().nth(1).map_or(0, |p: &Phase| p.end);
        let single = plan.tmp_total_bytes() == 0
            && messages == 1
            && steps[last_start..]
                .iter()
                .any(|s| matches!(s, Step::Recv { .. } | Step::Send { .. }))
            && steps
                .iter()
                .all(|s| matches!(s, Step::Recv { .. } | Step::Send { .. } | Step::Copy { .. }));
        let lone = single && steps.len() == 1;
        Some(DirectRun {
            single,
            lone,
            first_from: steps.iter().find_map(|s| match *s {
                Step::Recv { world, .. } => Some(world),
                _ => None,
            }),
            steps: steps.into_boxed_slice(),
            phases: phases.into_boxed_slice(),
            requests,
            scratch: RefCell::new(vec![0; plan.tmp_total_bytes() / 8]),
            tmp_offsets: plan.tmp_offsets().into(),
        })
    }

    /// Runs the call on `comm` with the caller's buffers; `what` names the collective in
    /// errors, `tag` is the call's, `reduction` what its reductions apply.
    #[inline]
    pub(super) fn run(
        &self,
        comm: &Comm,
        what: &'static str,
        send: &[u8],
        recv: &mut [u8],
        tag: i32,
        reduction: Option<ReductionRef<'_>>,
    ) -> Result<()> {
        if self.lone {
            self.run_lone(comm, what, send, recv, tag)
        } else if self.single {
            self.run_single(comm, what, send, recv, tag)
        } else {
            self.run_steps(comm, what, send, recv, tag, reduction)
        }
    }

    /// A run that is one message and nothing else, as [`DirectRun::run_single`] runs it
    /// without its loop over steps: a send returns once posted (waiting only when it is not
    /// complete then), a receive takes its message at once when it is already there (else
    /// [`DirectRun::recv_waiting`]). Exscan np=4 8 B, rank 0 (one send), callgrind: 631 -> 569
    /// instructions per MPI_Exscan.
    #[inline]
    fn run_lone(
        &self,
        comm: &Comm,
        what: &'static str,
        send: &[u8],
        recv: &mut [u8],
        tag: i32,
    ) -> Result<()> {
        let (rank, ctx) = (comm.data.rank, comm.data.ctx + 1);
        let (mut bufs, mut e) = self.start_single(comm, send, recv);
        match self.steps[0] {
            Step::Send { peer, world, src } => {
                let solo = self.phases[self.phases.len() - 1].solo;
                match start_send(&mut e, &bufs, peer, world, src, rank, ctx, tag, solo) {
                    Ok(None) => Ok(()),
                    Ok(Some(p)) => self.wait_one(comm, what, e, p, tag),
                    Err(err) => Err(wrap_call(what, rank, err)),
                }
            }
            Step::Recv { peer, world, dst } => {
                let pattern = recv_pattern(peer, ctx, tag);
                if take_now(&mut e, bufs.bytes_mut(dst), &pattern, world) {
                    return Ok(());
                }
                self.recv_waiting(comm, what, e, &mut bufs, peer, world, dst, tag)
            }
            _ => unreachable!("a lone run holds one message"),
        }
    }

    /// What a lone or single run starts with: the caller's buffers (no scratch: the run's
    /// temporaries, if any, are empty) and the engine, its progress marks cleared and the
    /// run counted ([`Comm::coll_direct_runs`]).
    #[inline(always)]
    fn start_single<'b>(
        &'b self,
        comm: &'b Comm,
        send: &'b [u8],
        recv: &'b mut [u8],
    ) -> (Buffers<'b>, std::cell::RefMut<'b, Engine>) {
        let bufs = Buffers {
            send,
            recv,
            tmp: &mut [],
            tmp_offsets: &self.tmp_offsets,
        };
        let mut e = comm.engine.borrow_mut();
        e.clear_advancing();
        let runs = &e.coll_state.direct_runs;
        runs.set(runs.get() + 1);
        (bufs, e)
    }

    /// The one receive of a lone or single run, its message not there when the run reached
    /// it: waits for it on its peer's ring ([`spin_for`]) on a node that is not
    /// oversubscribed, else (or when it does not come) posts it and waits.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn recv_waiting(
        &self,
        comm: &Comm,
        what: &'static str,
        mut e: std::cell::RefMut<'_, Engine>,
        bufs: &mut Buffers<'_>,
        peer: u32,
        world: u32,
        dst: Region,
        tag: i32,
    ) -> Result<()> {
        let (rank, ctx) = (comm.data.rank, comm.data.ctx + 1);
        let spin = !e.oversubscribed();
        match post_waiting(&mut e, bufs, comm, peer, world, dst, ctx, tag, spin) {
            Ok(None) => Ok(()),
            Ok(Some(p)) => self.wait_one(comm, what, e, p, tag),
            Err(err) => Err(wrap_call(what, rank, err)),
        }
    }

    /// A run of one message and copies, without the phase loop, the scratch and the list
    /// of requests: copies and a send run in order, the send returning once posted; a
    /// receive takes its message at once when it is already there and else, after the
    /// copies, waits for it on its peer's ring ([`spin_for`]) and then posts it and waits,
    /// as [`DirectRun::run_steps`] would. A gather leaf's call, np=4 8 B: 746 -> 596
    /// instructions; coll_lat np=2 8 B, 7 interleaved jobs, p50 us: bcast 0.160 -> 0.150,
    /// reduce 0.180 -> 0.170, gather 0.161 -> 0.150, gatherv 0.170 -> 0.160.
    #[inline]
    fn run_single(
        &self,
        comm: &Comm,
        what: &'static str,
        send: &[u8],
        recv: &mut [u8],
        tag: i32,
    ) -> Result<()> {
        let (rank, ctx) = (comm.data.rank, comm.data.ctx + 1);
        let (mut bufs, mut e) = self.start_single(comm, send, recv);
        if let Some(w) = self.first_from {
            e.prefetch_from(w);
        }
        let mut pending = None;
        let mut deferred = None;
        for step in self.steps.iter() {
            match *step {
                Step::Copy { src, dst } => bufs.copy(src, dst),
                Step::Recv { peer, world, dst } => {
                    let pattern = recv_pattern(peer, ctx, tag);
                    if !take_now(&mut e, bufs.bytes_mut(dst), &pattern, world) {
                        deferred = Some((peer, world, dst));
                    }
                }
                Step::Send { peer, world, src } => {
                    let solo = self.phases[self.phases.len() - 1].solo;
                    match start_send(&mut e, &bufs, peer, world, src, rank, ctx, tag, solo) {
                        Ok(p) => pending = p,
                        Err(err) => return Err(wrap_call(what, rank, err)),
                    }
                }
                _ => unreachable!("a single run holds one message and copies"),
            }
        }
        if let Some((peer, world, dst)) = deferred {
            // The run's one message: no send is pending.
            return self.recv_waiting(comm, what, e, &mut bufs, peer, world, dst, tag);
        }
        match pending {
            None => Ok(()),
            Some(p) => self.wait_one(comm, what, e, p, tag),
        }
    }

    /// Waits for a single run's one request and collects it.
    #[inline(never)]
    fn wait_one(
        &self,
        comm: &Comm,
        what: &'static str,
        e: std::cell::RefMut<'_, Engine>,
        pending: Pending,
        tag: i32,
    ) -> Result<()> {
        let (rank, ctx) = (comm.data.rank, comm.data.ctx + 1);
        let size = comm.data.members.len() as u32;
        let mut g = InFlight {
            e,
            one: Some(pending),
            many: None,
        };
        g.finish(size, rank, ctx, tag, what)
    }

    /// [`DirectRun::run`] step by step.
    #[inline(never)]
    fn run_steps(
        &self,
        comm: &Comm,
        what: &'static str,
        send: &[u8],
        recv: &mut [u8],
        tag: i32,
        reduction: Option<ReductionRef<'_>>,
    ) -> Result<()> {
        // Never borrowed twice: the engine is borrowed for the whole run, so a reduction's
        // operation that started a collective would fail on the engine first.
        let mut scratch = self.scratch.borrow_mut();
        if cfg!(debug_assertions) {
            // As the schedule's pool does: a plan that reads a temporary before writing it
            // gives wrong results in the tests instead of the last call's bytes.
            scratch.fill(SCRATCH_POISON);
        }
        let mut bufs = Buffers {
            send,
            recv,
            tmp: &mut scratch,
            tmp_offsets: &self.tmp_offsets,
        };
        let rank = comm.data.rank;
        let ctx = comm.data.ctx + 1;
        let size = comm.data.members.len() as u32;
        let wrap = |err| wrap_call(what, rank, err);
        let red = || reduction.expect("reduce in a plan without an op");
        let mut g = InFlight {
            e: comm.engine.borrow_mut(),
            one: None,
            many: None,
        };
        if let Some(w) = self.first_from {
            g.e.prefetch_from(w);
        }
        g.e.clear_advancing();
        let runs = &g.e.coll_state.direct_runs;
        runs.set(runs.get() + 1);
        let spin = !g.e.oversubscribed();
        let mut start = 0;
        for phase in self.phases.iter() {
            let mut arrived = None;
            // The phase's one receive, not there yet, to wait for on its peer's ring once
            // the sends are out.
            let mut deferred = None;
            for step in &self.steps[start..phase.end] {
                match *step {
                    Step::AreaArrive { leader } => match area(&g.e) {
                        Ok(a) => arrived = Some(AreaWait::arrive(&a, leader)),
                        Err(err) => {
                            g.abandon();
                            return Err(wrap(err));
                        }
                    },
                    Step::Recv { peer, world, dst } if spin && phase.one_recv => {
                        let pattern = recv_pattern(peer, ctx, tag);
                        if !take_now(&mut g.e, bufs.bytes_mut(dst), &pattern, world) {
                            deferred = Some(*step);
                        }
                    }
                    Step::Recv { peer, world, dst } => {
                        match start_recv(&mut g.e, &mut bufs, comm, peer, world, dst, ctx, tag) {
                            Ok(None) => {}
                            Ok(Some(p)) => g.push(p, self.requests),
                            Err(err) => {
                                g.abandon();
                                return Err(wrap(err));
                            }
                        }
                    }
                    Step::Copy { src, dst } => bufs.copy(src, dst),
                    Step::Reduce {
                        src,
                        dst,
                        src_first,
                    } => bufs.reduce(red(), src, dst, src_first),
                    Step::ReduceInto { a, b, dst } => bufs.reduce_into(red(), a, b, dst),
                    Step::Send { peer, world, src } => {
                        let solo = phase.solo;
                        match start_send(&mut g.e, &bufs, peer, world, src, rank, ctx, tag, solo) {
                            Ok(None) => {}
                            Ok(Some(p)) => g.push(p, self.requests),
                            Err(err) => {
                                g.abandon();
                                return Err(wrap(err));
                            }
                        }
                    }
                }
            }
            if let Some(Step::Recv { peer, world, dst }) = deferred {
                // Only with every send out: a send still queued needs the engine's progress.
                let spin = g.one.is_none();
                match post_waiting(&mut g.e, &mut bufs, comm, peer, world, dst, ctx, tag, spin) {
                    Ok(None) => {}
                    Ok(Some(p)) => g.push(p, self.requests),
                    Err(err) => {
                        g.abandon();
                        return Err(wrap(err));
                    }
                }
            }
            start = phase.end;
            if let Some(w) = arrived {
                g.e.wait_until_sharing(|e| w.done(e), |e| w.keeps_core(e));
                if let Some(l) = w.dead() {
                    return Err(wrap(AreaWait::dead_error(l, what)));
                }
            }
            if g.one.is_none() {
                continue;
            }
            if let Some((other, theirs)) = g.wait(size, rank, ctx, tag) {
                g.abandon();
                return Err(super::disagreement(rank, other, tag, theirs));
            }
            // Every request of the phase is collected, whatever the outcome: nothing is
            // left in flight after an error.
            if let Some(err) = g.collect(what, rank) {
                return Err(wrap(err));
            }
        }
        Ok(())
    }
}

/// Starts a run's receive from rank `peer` (world rank `world`) into `dst`: None when its
/// message was already there and is taken now, with no request to post and collect (the
/// engine refuses while any receive, this run's earlier ones included, is posted), else the
/// posted request.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn start_recv(
    e: &mut Engine,
    bufs: &mut Buffers<'_>,
    comm: &Comm,
    peer: u32,
    world: u32,
    dst: Region,
    ctx: u32,
    tag: i32,
) -> Result<Option<Pending>> {
    let pattern = recv_pattern(peer, ctx, tag);
    if take_now(e, bufs.bytes_mut(dst), &pattern, world) {
        return Ok(None);
    }
    post_waiting(e, bufs, comm, peer, world, dst, ctx, tag, false)
}

/// A run's receive whose message was not there when it started: with `spin`, waits for it
/// on its peer's ring ([`spin_for`]; None when taken so), else (or when it does not come)
/// posts it and returns the request.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn post_waiting(
    e: &mut Engine,
    bufs: &mut Buffers<'_>,
    comm: &Comm,
    peer: u32,
    world: u32,
    dst: Region,
    ctx: u32,
    tag: i32,
    spin: bool,
) -> Result<Option<Pending>> {
    let pattern = recv_pattern(peer, ctx, tag);
    if spin && spin_for(e, bufs.bytes_mut(dst), &pattern, world) {
        return Ok(None);
    }
    let buf = RawBufMut::new(bufs.bytes_mut(dst));
    let id = e.start_recv(buf, pattern, Some(world), &comm.data.members)?;
    Ok(Some(Pending {
        id,
        peer,
        expect_bytes: Some(dst.len),
    }))
}

/// Whether a repeated blocking call of `coll` may run from its arguments, without its plan
/// ([`leaf_take_now`], [`leaf_send_now`], [`root_scatter_now`]): the communicator is a live
/// intracommunicator, no nonblocking collective is unfinished (the usual way checks the
/// calls in flight), and an earlier call of `coll` on this rank made its choice (so its
/// checks, its vote and any error of the selection came first). Notes for the next leader
/// barrier which order of core-mates the call wants (as `Comm::coll_note_order` does; the
/// caller holds the engine).
#[inline(always)]
fn runs_without_plan(comm: &Comm, e: &Engine, coll: Coll) -> bool {
    let data = &comm.data;
    e.coll_state.lower_first.set(super::wants_lower_first(coll));
    !data.freed.get()
        && data.inter.is_none()
        && e.coll_state.unfinished.is_empty()
        && e.coll_state.memo[coll.index()].is_some()
}

/// The blocking call of `coll` at a leaf whose plan is one receive of `recv` from `root`
/// whatever the selection (a linear scatterv's leaf), run without its plan when the
/// message is already here ([`take_now`]): true when it was, and the call is done (counted
/// as a direct run). False, with nothing taken and no call number used, when it is not
/// here, the call cannot be taken so (no shared memory to the root, a nonblocking
/// collective unfinished, a bad communicator or root, no earlier call of `coll` on this
/// rank made its choice) or the message is not the length `recv` expects: the caller then
/// makes the call the usual way, which also reports what is wrong. Skips the memo lookup
/// and the run's setup. The transfer of the root's next message to this core starts first
/// (`Engine::prefetch_from`), so it overlaps the checks.
#[inline(always)]
pub(super) fn leaf_take_now(comm: &Comm, coll: Coll, root: u32, recv: &mut [u8]) -> bool {
    let data = &comm.data;
    let Some(&world) = data.members.get(root as usize) else {
        return false;
    };
    let mut e = comm.engine.borrow_mut();
    e.prefetch_from(world);
    if !runs_without_plan(comm, &e, coll) {
        return false;
    }
    let tag = coll_tag(coll.index() as u32, peek_seq(comm, Mode::Blocking), root);
    let pattern = recv_pattern(root, data.ctx + 1, tag);
    if !take_now(&mut e, recv, &pattern, world) {
        return false;
    }
    next_seq(comm);
    let runs = &e.coll_state.direct_runs;
    runs.set(runs.get() + 1);
    true
}

/// The blocking call of `coll` at a leaf whose plan is one send of `send` to `root`
/// whatever the selection (a linear gatherv's leaf), run without its plan: the send goes
/// out as the plan's direct run would send it, and is waited for as its run waits when it
/// is not complete once posted. None, with nothing sent and no call number used, when the
/// call cannot run so (a bad communicator or root, a nonblocking collective unfinished, no
/// earlier call of `coll` on this rank made its choice): the caller takes the usual way.
#[inline(always)]
pub(super) fn leaf_send_now(comm: &Comm, coll: Coll, root: u32, send: &[u8]) -> Option<Result<()>> {
    let data = &comm.data;
    let &world = data.members.get(root as usize)?;
    let mut e = comm.engine.borrow_mut();
    if !runs_without_plan(comm, &e, coll) {
        return None;
    }
    let (rank, ctx, what) = (data.rank, data.ctx + 1, coll.name());
    let tag = coll_tag(coll.index() as u32, next_seq(comm), root);
    e.clear_advancing();
    let runs = &e.coll_state.direct_runs;
    runs.set(runs.get() + 1);
    let id = match e.start_send_mode(RawBuf::new(send), world, rank, ctx, tag, false, false) {
        Ok(None) => return Some(Ok(())),
        Ok(Some(id)) => id,
        Err(err) => return Some(Err(wrap_call(what, rank, err))),
    };
    let mut g = InFlight {
        e,
        one: Some(Pending {
            id,
            peer: root,
            expect_bytes: None,
        }),
        many: None,
    };
    Some(g.finish(data.members.len() as u32, rank, ctx, tag, what))
}

/// The blocking call of `coll` at the root of a linear scatter (rank i's block `block(i)`,
/// an (offset, length) in `send` the caller has checked, sent to it directly; the root's
/// own copied to `recv`) run without its plan: the memo lookup (which compares the count
/// and displacement arrays) and the run's setup are skipped, the sends go out as the
/// plan's direct run would send them (to ranks on other cores first, then to the ones
/// pinned to this rank's core; together, `solo`), and any that are not complete once
/// posted are waited for as its run waits. None, with nothing sent and no call number
/// used, when the call cannot run so (a bad communicator, a nonblocking collective
/// unfinished, no earlier call of `coll` on this rank made its choice): the caller takes
/// the usual way.
pub(super) fn root_scatter_now(
    comm: &Comm,
    coll: Coll,
    send: &[u8],
    recv: &mut [u8],
    block: impl Fn(usize) -> (usize, usize),
) -> Option<Result<()>> {
    let data = &comm.data;
    let mut e = comm.engine.borrow_mut();
    if !runs_without_plan(comm, &e, coll) {
        return None;
    }
    let (rank, size) = (data.rank, data.members.len() as u32);
    let ctx = data.ctx + 1;
    let what = coll.name();
    let tag = coll_tag(coll.index() as u32, next_seq(comm), rank);
    e.clear_advancing();
    let runs = &e.coll_state.direct_runs;
    runs.set(runs.get() + 1);
    let mut g = InFlight {
        e,
        one: None,
        many: None,
    };
    // Ranks on other cores first, then the ones pinned to this rank's core (they cannot
    // run before it yields anyway), as the plan's direct run orders them.
    for mates in [false, true] {
        for (i, &world) in data.members.iter().enumerate() {
            if i as u32 == rank || g.e.shares_my_core(world) != mates {
                continue;
            }
            let (off, len) = block(i);
            let buf = RawBuf::new(&send[off..off + len]);
            match g.e.start_send_mode(buf, world, rank, ctx, tag, false, true) {
                Ok(None) => {}
                Ok(Some(id)) => {
                    let peer = i as u32;
                    let pending = Pending {
                        id,
                        peer,
                        expect_bytes: None,
                    };
                    g.push(pending, size as usize);
                }
                Err(err) => {
                    g.abandon();
                    return Some(Err(wrap_call(what, rank, err)));
                }
            }
        }
    }
    let (off, len) = block(rank as usize);
    recv[..len].copy_from_slice(&send[off..off + len]);
    if g.one.is_none() {
        return Some(Ok(()));
    }
    Some(g.finish(size, rank, ctx, tag, what))
}

/// What a run's receive from rank `peer` matches.
#[inline(always)]
fn recv_pattern(peer: u32, ctx: u32, tag: i32) -> Pattern {
    Pattern {
        ctx,
        src: peer as i32,
        tag,
    }
}

/// Takes the message for `bytes` when it is already here, in world rank `world`'s ring or
/// waiting unmatched ([`Engine::recv_eager_now`]), and counts it.
#[inline(always)]
fn take_now(e: &mut Engine, bytes: &mut [u8], pattern: &Pattern, world: u32) -> bool {
    let taken = e.recv_eager_now(bytes, pattern, world);
    if taken {
        let n = &e.coll_state.received_at_once;
        n.set(n.get() + 1);
    }
    taken
}

/// Polls of world rank `world`'s ring a waiting receive makes before it is posted
/// ([`spin_for`]): a few microseconds.
const SPIN_POLLS: u32 = 1024;

/// Waits up to [`SPIN_POLLS`] polls for the message of a receive that found nothing (its
/// phase's sends out, no other request of the run in flight, the node not oversubscribed,
/// no longer than the eager limit) on its peer's ring alone, taking it as it lands
/// ([`take_now`]); false when it has not come or could not be taken so (the caller posts
/// the receive and waits as usual). A longer message comes by rendezvous, which spinning
/// for an eager one only delayed: np=2 gather of 64 KiB, per-rank TSC medians, root 15678
/// and leaf 14092 ticks against 4030 and 2418 for one MPI_Recv and MPI_Send of it. A
/// message that arrives is then taken without a request, a pass through matching or a
/// poll of every ring.
#[inline(never)]
fn spin_for(e: &mut Engine, bytes: &mut [u8], pattern: &Pattern, world: u32) -> bool {
    if !e.may_recv_eager_now(world, bytes.len()) {
        return false;
    }
    if let Some(hook) = &e.coll_state.ring_wait_hook {
        hook(super::RingWait::Waiting);
    }
    let taken = (0..SPIN_POLLS).any(|_| take_now(e, bytes, pattern, world));
    if !taken {
        if let Some(hook) = &e.coll_state.ring_wait_hook {
            hook(super::RingWait::GaveUp);
        }
    }
    if taken {
        let n = &e.coll_state.received_on_ring;
        n.set(n.get() + 1);
    }
    taken
}

/// Starts a run's send of `src` to rank `peer` (world rank `world`) from `rank`: None when
/// it is complete once posted (eager), else its request.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn start_send(
    e: &mut Engine,
    bufs: &Buffers<'_>,
    peer: u32,
    world: u32,
    src: Region,
    rank: u32,
    ctx: u32,
    tag: i32,
    solo: bool,
) -> Result<Option<Pending>> {
    let buf = RawBuf::new(bufs.bytes(src));
    Ok(e.start_send_mode(buf, world, rank, ctx, tag, false, solo)?
        .map(|id| Pending {
            id,
            peer,
            expect_bytes: None,
        }))
}

/// What a direct run has in flight, with the engine it runs on. Dropped by a panic that
/// unwinds through the run (a user operation of a nonblocking collective that the wait
/// advanced), it gives up the requests, as [`run_blocking`](super::request::run_blocking)
/// does for a schedule: they point into the caller's buffers, which the unwinding frees.
/// A normal end leaves it nothing to give up and hands the pooled list back.
struct InFlight<'e> {
    e: std::cell::RefMut<'e, Engine>,
    one: Option<Pending>,
    /// The second and later requests (a root's rendezvous sends, a gather root's receives),
    /// from the engine's pool.
    many: Option<Vec<Pending>>,
}

impl InFlight<'_> {
    /// Adds a request to wait for; the list for the second and later comes from the pool,
    /// with room for `room`.
    fn push(&mut self, p: Pending, room: usize) {
        if self.one.is_none() {
            self.one = Some(p);
        } else {
            let InFlight { e, many, .. } = self;
            many.get_or_insert_with(|| e.coll_state.pool.take(0, room).1)
                .push(p);
        }
    }

    /// Waits until every request in flight is done, looking now and then for a peer that
    /// disagrees about the call (`size` ranks, this one `rank`, messages on `ctx` with
    /// `tag`); returns such a peer and its tag.
    fn wait(&mut self, size: u32, rank: u32, ctx: u32, tag: i32) -> Option<(u32, i32)> {
        let InFlight { e, one, many } = self;
        let done = |e: &Engine| {
            one.as_ref().is_none_or(|p| e.is_done(p.id))
                && many
                    .as_ref()
                    .is_none_or(|m| m.iter().all(|p| e.is_done(p.id)))
        };
        let mut polls = 0u32;
        let mut disagreement = None;
        e.wait_until(|e| {
            if done(e) {
                return true;
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(DISAGREEMENT_EVERY) {
                disagreement = find_disagreement(e, size, rank, ctx, tag);
            }
            disagreement.is_some()
        });
        disagreement
    }

    /// Collects the outcomes of the requests in flight, all done, and frees them; returns
    /// the first error ([`collect_outcomes`]).
    fn collect(&mut self, what: &str, rank: u32) -> Option<Error> {
        let InFlight { e, one, many } = self;
        let first = one
            .take()
            .and_then(|p| collect_outcomes(e, what, rank, std::iter::once(p)));
        match many {
            Some(m) if !m.is_empty() => {
                let rest = collect_outcomes(e, what, rank, m.drain(..));
                first.or(rest)
            }
            _ => first,
        }
    }

    /// Waits for the requests in flight ([`InFlight::wait`]) and collects them: the call's
    /// outcome, a disagreeing peer's error first.
    fn finish(&mut self, size: u32, rank: u32, ctx: u32, tag: i32, what: &str) -> Result<()> {
        if let Some((other, theirs)) = self.wait(size, rank, ctx, tag) {
            self.abandon();
            return Err(super::disagreement(rank, other, tag, theirs));
        }
        match self.collect(what, rank) {
            Some(err) => Err(wrap_call(what, rank, err)),
            None => Ok(()),
        }
    }

    /// Gives up every request still in flight, as the schedule does after an error: sends
    /// the peer has not taken are dropped, receives cancelled, and each is reaped.
    fn abandon(&mut self) {
        let (e, all) = self.take_all();
        abandon_pending(e, all);
    }

    /// The engine and every request in flight, taken out (the pooled list stays, empty).
    fn take_all(&mut self) -> (&mut Engine, impl Iterator<Item = Pending> + '_) {
        let InFlight { e, one, many } = self;
        let all = one
            .take()
            .into_iter()
            .chain(many.iter_mut().flat_map(|m| m.drain(..)));
        (&mut **e, all)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Give up first, while the guard the panic left set keeps the waits below from
            // advancing (and re-running the operation of) any collective; then clear it.
            self.abandon();
            self.e.clear_advancing();
        }
        if let Some(m) = self.many.take() {
            self.e.coll_state.pool.give(Vec::new(), m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::algo;
    use crate::coll::schedule::Slot;

    fn blocks(n: usize) -> Vec<(usize, usize)> {
        (0..n).map(|i| (i * 8, 8)).collect()
    }

    /// The run's steps, named with the world ranks they involve.
    fn order(run: &DirectRun) -> Vec<String> {
        run.steps
            .iter()
            .map(|s| match *s {
                Step::Send { world, .. } => format!("send {world}"),
                Step::Copy { .. } => "copy".to_string(),
                Step::Recv { world, .. } => format!("recv {world}"),
                Step::Reduce { .. } | Step::ReduceInto { .. } => "reduce".to_string(),
                Step::AreaArrive { leader } => format!("arrive (leader {leader})"),
            })
            .collect()
    }

    /// Where each phase ends in the run's steps.
    fn phase_ends(run: &DirectRun) -> Vec<usize> {
        run.phases.iter().map(|p| p.end).collect()
    }

    #[test]
    fn a_root_sends_to_other_cores_first_and_copies_its_own_block_last() {
        // Scatter from root 0 of 4 ranks, world ranks 10..14; rank 12 shares the root's
        // core (2 cores, ranks pinned to `local mod 2`).
        let mut root = Plan::new();
        algo::scatter::linear::build(&mut root, 0, 0, &blocks(4), 8, Buf::Send);
        let members = [10, 11, 12, 13];
        let run = DirectRun::of(&root, &members, |w| w == 12).unwrap();
        assert_eq!(order(&run), ["send 11", "send 13", "send 12", "copy"]);
        assert!(run.phases[0].solo && run.requests == 3);
        // Unknown placement keeps the plan's order.
        let run = DirectRun::of(&root, &members, |_| false).unwrap();
        assert_eq!(order(&run), ["send 11", "send 12", "send 13", "copy"]);
    }

    #[test]
    fn a_leaf_receives_once_from_its_parent() {
        let mut leaf = Plan::new();
        algo::scatter::linear::build(&mut leaf, 3, 0, &blocks(4), 8, Buf::Send);
        let run = DirectRun::of(&leaf, &[10, 11, 12, 13], |_| false).unwrap();
        assert_eq!(
            *run.steps,
            [Step::Recv {
                peer: 0,
                world: 10,
                dst: Region::new(Buf::Recv, 0, 8),
            }]
        );
        assert_eq!(run.requests, 1);
    }

    #[test]
    fn a_run_of_one_message_alone_is_lone_and_with_copies_single() {
        // (lone, single) of each rank of a 4-rank chain scan, exclusive and inclusive.
        let shape = |p: Plan| {
            let run = DirectRun::of(&p, &[10, 11, 12, 13], |_| false).unwrap();
            (run.lone, run.single)
        };
        let exscan: Vec<_> = (0..4)
            .map(|r| shape(algo::scan::linear::exclusive(r, 4, 8, true)))
            .collect();
        // The first rank only sends, the last only receives; the middle ones reduce.
        assert_eq!(
            exscan,
            [(true, true), (false, false), (false, false), (true, true)]
        );
        // The inclusive scan's first rank sends its block and copies it into the result.
        let scan0 = shape(algo::scan::linear::inclusive(0, 4, 8, true));
        assert_eq!(scan0, (false, true));
        // A scatter leaf's one receive is lone; the root's sends and copy are neither.
        let mut leaf = Plan::new();
        algo::scatter::linear::build(&mut leaf, 2, 0, &blocks(4), 8, Buf::Send);
        assert_eq!(shape(leaf), (true, true));
        let mut root = Plan::new();
        algo::scatter::linear::build(&mut root, 0, 0, &blocks(4), 8, Buf::Send);
        assert_eq!(shape(root), (false, false));
    }

    #[test]
    fn a_copy_after_posting_that_a_send_reads_keeps_the_schedule() {
        let mut p = Plan::new();
        p.step();
        p.send(1, Region::new(Buf::Recv, 0, 8));
        p.copy_after_posting(Region::new(Buf::Send, 0, 8), Region::new(Buf::Recv, 4, 8));
        assert!(DirectRun::of(&p, &[0, 1], |_| false).is_none());
        let mut q = Plan::new();
        q.step();
        q.send(1, Region::new(Buf::Recv, 0, 8));
        q.copy_after_posting(Region::new(Buf::Send, 0, 8), Region::new(Buf::Recv, 8, 8));
        assert!(DirectRun::of(&q, &[0, 1], |_| false).is_some());
    }

    #[test]
    fn an_exchange_posts_its_receive_before_its_send() {
        // Two-rank allgather by recursive doubling: own block copied, the peer's received,
        // own block sent, in one step.
        let p = algo::allgather::recursive_doubling::plan(0, 2, 8);
        let run = DirectRun::of(&p, &[5, 6], |_| false).unwrap();
        assert_eq!(order(&run), ["copy", "recv 6", "send 6"]);
        assert_eq!(run.requests, 2);
    }

    #[test]
    fn a_reduction_runs_step_by_step_with_its_scratch() {
        // Two-rank allreduce by recursive doubling: own contribution copied, the peer's
        // received into scratch while ours is sent, then combined.
        let p = algo::allreduce::recursive_doubling::plan(1, 2, 8, false);
        let run = DirectRun::of(&p, &[5, 6], |_| false).unwrap();
        assert_eq!(order(&run), ["copy", "recv 5", "send 5", "reduce"]);
        assert_eq!(phase_ends(&run), [1, 3, 4]);
        assert_eq!(run.requests, 2);
        assert_eq!(
            run.scratch.borrow().len(),
            1,
            "8 bytes of scratch, in u64 words"
        );
        // With a commutative operation (or as the lower rank) the peer's contribution is
        // received straight into the result and ours sent from the send buffer: no copy.
        for (rank, commutative) in [(1, true), (0, false)] {
            let p = algo::allreduce::recursive_doubling::plan(rank, 2, 8, commutative);
            let run = DirectRun::of(&p, &[5, 6], |_| false).unwrap();
            let peer = if rank == 0 { 6 } else { 5 };
            let (recv, send) = (format!("recv {peer}"), format!("send {peer}"));
            assert_eq!(order(&run), [recv.as_str(), send.as_str(), "reduce"]);
            assert_eq!(phase_ends(&run), [2, 3]);
        }
        // A ring of several exchanges: one phase per step.
        let ring = algo::allgather::ring::plan(0, 4, &blocks(4));
        let run = DirectRun::of(&ring, &[0, 1, 2, 3], |_| false).unwrap();
        assert_eq!(run.phases.len(), ring.each_step().count());
    }

    #[test]
    fn area_copies_or_much_scratch_keep_the_schedule() {
        // The barriers' one arrival in the area runs directly...
        for (plan, leader) in [
            (algo::barrier::shm_counter::plan(), false),
            (algo::barrier::shm_leader::plan(), true),
        ] {
            let run = DirectRun::of(&plan, &[0, 1], |_| false).unwrap();
            assert_eq!(order(&run), [format!("arrive (leader {leader})")]);
        }
        // ...copies through its slots do not, nor an arrival in a step with messages.
        let mut p = Plan::new();
        p.step();
        p.shm_write(Slot::Rank(0), 0, Region::new(Buf::Send, 0, 8));
        p.shm_arrive();
        assert!(DirectRun::of(&p, &[0, 1], |_| false).is_none());
        let mut p = Plan::new();
        p.step();
        p.shm_arrive();
        p.send(1, Region::new(Buf::Send, 0, 8));
        assert!(DirectRun::of(&p, &[0, 1], |_| false).is_none());
        let mut q = Plan::new();
        q.step();
        let t = q.tmp(DIRECT_SCRATCH_BYTES + 8);
        q.recv(1, Region::new(t, 0, 8));
        assert!(DirectRun::of(&q, &[0, 1], |_| false).is_none());
        let mut r = Plan::new();
        r.step();
        let t = r.tmp(DIRECT_SCRATCH_BYTES);
        r.recv(1, Region::new(t, 0, 8));
        assert!(DirectRun::of(&r, &[0, 1], |_| false).is_some());
    }
}
