//! Collective schedules: an algorithm is compiled once, at setup, into a list of steps, each
//! some local work (copies, reductions) followed by sends and receives; the schedule then
//! advances step by step whenever it is polled, never blocking a thread. A collective
//! request (`super::request`) polls it, and so does the engine whenever it makes progress;
//! a blocking collective waits on that request.
//!
//! All buffers are allocated at setup (temporaries are `u64` vectors, so every element type
//! is aligned in them); steps allocate nothing. Depends on the engine's request API and on
//! [`super::op`]; knows nothing of algorithms or selection.

use super::datatype::TypeKind;
use super::op::Op;
use crate::comm::Comm;
use crate::engine::{Engine, ReqId};
use crate::matching::Pattern;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;
use weft_core::{Error, ErrorKind, Result, ANY_TAG};
use weft_transport::buf::{RawBuf, RawBufMut};
use weft_transport::shm::cma;
use weft_transport::shm::coll::CollArea;

/// Which buffer a region lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buf {
    /// The caller's send buffer (read only).
    Send,
    /// The caller's receive buffer.
    Recv,
    /// A temporary owned by the schedule.
    Tmp(u8),
}

/// Bytes `[off, off + len)` of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub buf: Buf,
    pub off: usize,
    pub len: usize,
}

impl Region {
    pub(crate) fn new(buf: Buf, off: usize, len: usize) -> Region {
        Region { buf, off, len }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Action {
    Send {
        peer: u32,
        src: Region,
        /// The network rail its data takes to a peer on another node (`send_on_rail`);
        /// None: the transport's striping decides.
        rail: Option<u8>,
    },
    Recv {
        peer: u32,
        dst: Region,
    },
    Copy {
        src: Region,
        dst: Region,
    },
    /// A copy made in the pass that posts the step's sends, in plan order: after the
    /// receives and the sends before it are posted, so peers move those while it copies (a
    /// root's own block: its receivers need not wait for it).
    CopyAfterPosting {
        src: Region,
        dst: Region,
    },
    /// `dst = src ∘ dst` when `src_first`, else `dst = dst ∘ src`; in the second form a
    /// non-commutative operation may clobber `src`, which must be a scratch region.
    Reduce {
        src: Region,
        dst: Region,
        src_first: bool,
    },
    /// `dst = a ∘ b` with `a` in the send buffer (a holds the lower ranks): combines the
    /// own contribution with a received one without copying it first.
    ReduceInto {
        a: Region,
        b: Region,
        dst: Region,
    },
    /// Copy into a slot of the node's collective area.
    ShmWrite {
        slot: Slot,
        off: usize,
        src: Region,
    },
    /// Copy out of a slot of the node's collective area.
    ShmRead {
        slot: Slot,
        off: usize,
        dst: Region,
    },
    /// Arrive at the next node-wide phase; the step completes when every local rank has.
    ShmArrive,
    /// Arrive at the next leader barrier of the node's area: local rank 0 waits for every
    /// arrival and then releases the rest, so it always leaves first (a root 0 that leaves a
    /// barrier first has its data out before its receivers look for it).
    ShmLeaderBarrier,
    /// Publish the addresses of the caller's send buffer (as this rank's flag) and receive
    /// buffer (as its second value) in the node's area, for peers to access them directly.
    ShmPublishBuffers,
    /// Read bytes `off..off + dst.len` of local rank `peer`'s buffer `from` (send or
    /// receive, at the address it published) straight into `dst` with one Cross Memory
    /// Attach read.
    CmaRead {
        peer: u32,
        from: Buf,
        off: usize,
        dst: Region,
    },
    /// Write `src` into bytes `off..off + src.len` of local rank `peer`'s receive buffer
    /// (at the address it published) with one Cross Memory Attach write.
    CmaWrite {
        peer: u32,
        off: usize,
        src: Region,
    },
    /// Write this call's header into this rank's slot at byte 0: the call's tag, then plan
    /// words `first..first + count` ([`Plan::words`]): what peers check with
    /// [`Action::ShmCheckHeaders`].
    ShmWriteHeader {
        first: u32,
        count: u32,
    },
    /// Read every other local rank's header ([`Action::ShmWriteHeader`], written before the
    /// arrival just completed): the same tag as ours (else the ranks disagree about the
    /// call), the rounds it takes, and the bytes it sends this rank. Plan word `first` holds
    /// this rank's own rounds and words `first + 1 + n + j` what it expects from local rank
    /// j (n local ranks); a length that differs is this call's error, reported at its end
    /// (the rank still takes part in every round, so no peer is left waiting). The most
    /// rounds any rank takes less this rank's own are the empty rounds it pads with
    /// ([`Action::ShmArrivePad`]).
    ShmCheckHeaders {
        first: u32,
    },
    /// Arrive once for each round the rank still owes the node ([`Action::ShmCheckHeaders`]):
    /// the step runs again after each arrival until none is owed.
    ShmArrivePad,
}

/// A slot of the node's collective area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Local rank i's slot.
    Rank(u32),
    /// The shared result slot.
    Result,
}

/// A compiled algorithm: steps of actions and the temporaries they use. Independent of the
/// caller's buffers, so a persistent collective can keep it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    actions: Vec<Action>,
    /// Start index in `actions` of each step.
    steps: Vec<usize>,
    /// Start (in bytes, 8-byte aligned) of each temporary in the schedule's one scratch
    /// buffer.
    tmp_offsets: Vec<usize>,
    /// Bytes of scratch in all (a multiple of 8).
    tmp_total_bytes: usize,
    /// Constants the plan writes into the node's area ([`Action::ShmWriteHeader`]) and
    /// checks against it ([`Action::ShmCheckHeaders`]).
    words: Vec<u64>,
    /// The most actions any one step has (the room a schedule's pending list needs).
    widest_step: usize,
}

impl Plan {
    pub(crate) fn new() -> Plan {
        Plan::default()
    }

    /// The actions of step `step`.
    fn step_actions(&self, step: usize) -> &[Action] {
        let end = self
            .steps
            .get(step + 1)
            .copied()
            .unwrap_or(self.actions.len());
        &self.actions[self.steps[step]..end]
    }

    /// A temporary buffer of `bytes`; returns its id.
    pub(crate) fn tmp(&mut self, bytes: usize) -> Buf {
        self.tmp_offsets.push(self.tmp_total_bytes);
        self.tmp_total_bytes += bytes.next_multiple_of(8);
        Buf::Tmp((self.tmp_offsets.len() - 1) as u8)
    }

    /// Keeps `words` with the plan; returns the index of the first.
    pub(crate) fn words(&mut self, words: &[u64]) -> u32 {
        self.words.extend_from_slice(words);
        (self.words.len() - words.len()) as u32
    }

    /// Writes the call's tag and plan words `first..first + count` at the start of this
    /// rank's slot ([`Action::ShmWriteHeader`]).
    pub(crate) fn shm_write_header(&mut self, first: u32, count: u32) {
        self.push(Action::ShmWriteHeader { first, count });
    }

    /// Checks the peers' headers and learns the rounds to pad with
    /// ([`Action::ShmCheckHeaders`]).
    pub(crate) fn shm_check_headers(&mut self, first: u32) {
        self.push(Action::ShmCheckHeaders { first });
    }

    /// Arrives once for every round the rank owes the node ([`Action::ShmArrivePad`]); the
    /// action of a step of its own, the plan's last.
    pub(crate) fn shm_arrive_pad(&mut self) {
        self.push(Action::ShmArrivePad);
    }

    /// Starts a new step: its local actions run once the previous step's messages are done.
    pub(crate) fn step(&mut self) {
        self.steps.push(self.actions.len());
    }

    fn push(&mut self, a: Action) {
        if self.steps.is_empty() {
            self.step();
        }
        self.actions.push(a);
        let start = self.steps.last().copied().unwrap_or(0);
        self.widest_step = self.widest_step.max(self.actions.len() - start);
    }

    pub(crate) fn send(&mut self, peer: u32, src: Region) {
        self.push(Action::Send {
            peer,
            src,
            rail: None,
        });
    }

    /// [`Plan::send`] whose data, to a peer on another node, goes on network rail `rail`
    /// only (modulo the rails there are); to a peer of the node it is a plain send.
    pub(crate) fn send_on_rail(&mut self, peer: u32, src: Region, rail: u8) {
        self.push(Action::Send {
            peer,
            src,
            rail: Some(rail),
        });
    }

    pub(crate) fn recv(&mut self, peer: u32, dst: Region) {
        self.push(Action::Recv { peer, dst });
    }

    pub(crate) fn copy(&mut self, src: Region, dst: Region) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 && src != dst {
            self.push(Action::Copy { src, dst });
        }
    }

    /// A copy that nothing else of its step reads or writes, made once the step's receives
    /// and the sends added before it are posted ([`Action::CopyAfterPosting`]).
    pub(crate) fn copy_after_posting(&mut self, src: Region, dst: Region) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 && src != dst {
            self.push(Action::CopyAfterPosting { src, dst });
        }
    }

    pub(crate) fn shm_write(&mut self, slot: Slot, off: usize, src: Region) {
        if src.len > 0 {
            self.push(Action::ShmWrite { slot, off, src });
        }
    }

    pub(crate) fn shm_read(&mut self, slot: Slot, off: usize, dst: Region) {
        if dst.len > 0 {
            self.push(Action::ShmRead { slot, off, dst });
        }
    }

    /// Arrives at the next node-wide phase (at most one per step, after its local work).
    pub(crate) fn shm_arrive(&mut self) {
        self.push(Action::ShmArrive);
    }

    /// Arrives at a barrier that local rank 0 ends for everyone
    /// ([`Action::ShmLeaderBarrier`]).
    pub(crate) fn shm_leader_barrier(&mut self) {
        self.push(Action::ShmLeaderBarrier);
    }

    /// Publishes the send and receive buffers' addresses in this rank's words of the
    /// node's area (peers may use them once a following arrival has completed).
    pub(crate) fn shm_publish_buffers(&mut self) {
        self.push(Action::ShmPublishBuffers);
    }

    /// Reads bytes `off..off + dst.len` of local rank `peer`'s published buffer `from`
    /// (`Buf::Send` or `Buf::Recv`) into `dst` (one copy, no staging).
    pub(crate) fn cma_read(&mut self, peer: u32, from: Buf, off: usize, dst: Region) {
        debug_assert!(matches!(from, Buf::Send | Buf::Recv));
        if dst.len > 0 {
            self.push(Action::CmaRead {
                peer,
                from,
                off,
                dst,
            });
        }
    }

    /// Writes `src` into bytes `off..off + src.len` of local rank `peer`'s published
    /// receive buffer (one copy).
    pub(crate) fn cma_write(&mut self, peer: u32, off: usize, src: Region) {
        if src.len > 0 {
            self.push(Action::CmaWrite { peer, off, src });
        }
    }

    /// `dst = a ∘ b` for `a` in the send buffer and `b`, `dst` elsewhere (distinct).
    pub(crate) fn reduce_into(&mut self, a: Region, b: Region, dst: Region) {
        debug_assert!(a.buf == Buf::Send && b.buf != Buf::Send && b.buf != dst.buf);
        debug_assert!(a.len == b.len && b.len == dst.len);
        if a.len > 0 {
            self.push(Action::ReduceInto { a, b, dst });
        }
    }

    /// `dst = src ∘ dst` (src holds lower ranks) when `src_first`, else `dst = dst ∘ src`.
    pub(crate) fn reduce(&mut self, src: Region, dst: Region, src_first: bool) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 {
            self.push(Action::Reduce {
                src,
                dst,
                src_first,
            });
        }
    }
}

/// What a schedule reduces with, if anything.
#[derive(Clone)]
pub(crate) struct Reduction {
    pub op: Op,
    pub kind: TypeKind,
}

/// A reduction's operation and element kind, borrowed: what a run applies (a repeated call
/// passes its caller's operation without cloning it).
#[derive(Clone, Copy)]
pub(crate) struct ReductionRef<'o> {
    pub op: &'o Op,
    pub kind: TypeKind,
}

impl Reduction {
    /// The reduction, borrowed.
    pub(crate) fn view(&self) -> ReductionRef<'_> {
        ReductionRef {
            op: &self.op,
            kind: self.kind,
        }
    }
}

/// A request in flight and what to check when it completes.
pub(super) struct Pending {
    pub id: ReqId,
    pub peer: u32,
    /// Expected length of a receive (None for a send).
    pub expect_bytes: Option<usize>,
}

/// A plan bound to the caller's buffers and the communicator, advancing when polled.
pub(crate) struct Schedule<'a> {
    plan: Rc<Plan>,
    send: &'a [u8],
    recv: &'a mut [u8],
    /// Every temporary of the plan, back to back (`u64`, so each is aligned for any
    /// element type); taken from and returned to the engine's pool.
    tmp: Vec<u64>,
    reduction: Option<Reduction>,
    /// What the collective is called, for errors.
    what: &'static str,
    rank: u32,
    members: Rc<[u32]>,
    ctx: u32,
    tag: i32,
    next_step: usize,
    pending: Vec<Pending>,
    /// What the current step waits for in the collective area, if anything.
    shm_wait: Option<AreaWait>,
    /// Polls of an unfinished step, to look now and then for a peer that disagrees.
    msg_polls: Cell<u32>,
    /// A peer and the tag of its message for this call number that disagrees with ours.
    disagreement: Cell<Option<(u32, i32)>>,
    /// A failed direct read of a peer's buffer, reported once the step's arrival is done
    /// (the rank still arrives, so its peers are not left waiting for it).
    failed_read: Option<Error>,
    /// Rounds this rank still owes the node ([`Action::ShmArrivePad`]).
    pad_rounds: u64,
    /// Steps run again to pad (so [`Schedule::steps_started`] still counts up).
    pad_steps: usize,
    /// An error found in a header ([`Action::ShmCheckHeaders`]), reported once the plan
    /// has run to its end.
    late_error: Option<Error>,
}

/// What a step waits for in the node's collective area.
#[derive(Clone, Copy, Debug)]
enum ShmWait {
    /// The arrival counter reaching this count (the phase's last arrival).
    Count(u64),
    /// The leader barrier of this number: local rank 0 waits for every rank's arrival and
    /// releases it; the others wait for the release.
    Barrier(u64),
}

/// A rank's arrival in the node's collective area and its wait for the others, polled: for
/// a schedule's step and for a direct run (`super::direct`). A dead local rank never
/// arrives, so every [`SHM_LIVENESS_PERIOD`] of an unfinished wait the local peers are
/// checked.
#[derive(Debug)]
pub(super) struct AreaWait {
    wait: ShmWait,
    /// Polls of the unfinished wait.
    polls: Cell<u32>,
    /// A local rank found dead while waiting.
    dead: Cell<Option<u32>>,
    /// When the local peers were last checked, or the wait first read the clock.
    last_check: Cell<Option<Instant>>,
}

impl AreaWait {
    /// Arrives at the next node-wide phase ([`Action::ShmArrive`]) or, with `leader`, the
    /// next leader barrier ([`Action::ShmLeaderBarrier`]).
    pub(super) fn arrive(area: &CollArea<'_>, leader: bool) -> AreaWait {
        let wait = if leader {
            ShmWait::Barrier(area.barrier_arrive())
        } else {
            // Everyone finished phase k before anyone can arrive at k + 1, so the count
            // rounded up to a multiple of n ends this rank's phase.
            let n = area.local_size() as u64;
            ShmWait::Count(area.arrive().div_ceil(n) * n)
        };
        AreaWait {
            wait,
            polls: Cell::new(0),
            dead: Cell::new(None),
            last_check: Cell::new(None),
        }
    }

    /// True once every local rank has arrived (the leader releases the others when it sees
    /// that), or a local rank was found dead ([`AreaWait::dead`]).
    pub(super) fn done(&self, e: &Engine) -> bool {
        if self.dead.get().is_some() {
            return true;
        }
        let Some(shm) = e.shm() else { return false };
        let Some(a) = CollArea::new(shm) else {
            return false;
        };
        let reached = match self.wait {
            ShmWait::Count(t) => a.arrivals() >= t,
            ShmWait::Barrier(seq) if a.me() == 0 => {
                let all = a.all_arrived(seq);
                if all {
                    a.release(seq);
                }
                all
            }
            ShmWait::Barrier(seq) => a.released() >= seq,
        };
        if reached {
            return true;
        }
        let polls = self.polls.get().wrapping_add(1);
        self.polls.set(polls);
        if polls.is_multiple_of(SHM_LIVENESS_CLOCK_EVERY) {
            let now = Instant::now();
            // The first reading starts the period: a wait shorter than it checks nothing.
            let last = self.last_check.get().unwrap_or(now);
            self.last_check.set(Some(last));
            if now.duration_since(last) >= SHM_LIVENESS_PERIOD {
                self.last_check.set(Some(now));
                let dead = (0..a.local_size()).find(|&l| l != a.me() && !shm.peer_alive(l));
                self.dead.set(dead);
                return dead.is_some();
            }
        }
        false
    }

    /// The local rank found dead while waiting, if any.
    pub(super) fn dead(&self) -> Option<u32> {
        self.dead.get()
    }

    /// Whether the wait needs no rank pinned to this rank's core to run
    /// ([`Engine::wait_until_sharing`]): it is for the node's arrival counter, and every
    /// co-located rank has already arrived there.
    pub(super) fn keeps_core(&self, e: &Engine) -> bool {
        let co = e.colocated();
        if co.is_empty() {
            return false;
        }
        let Some(a) = e.shm().and_then(CollArea::new) else {
            return false;
        };
        match self.wait {
            ShmWait::Count(_) => {
                let mine = a.phase();
                co.iter().all(|&l| a.phase_of(l) >= mine)
            }
            // The leader barrier: local rank 0 is to leave first, and ranks that kept their
            // cores delayed it (np=4 on 2 cores, rooted 8 B calls after the barrier: 0.23
            // -> 0.7-0.8 us in 2 of 3 jobs). But when the last blocking collective wants
            // the lower ranks of a core to run first ([`super::CallState::lower_first`]), the
            // lowest rank of a core without local rank 0 keeps it once its core-mates have
            // arrived: it sees the release first and leaves first, and no core-mate runs
            // into the next such call ahead of it only to wait for it.
            ShmWait::Barrier(seq) => {
                e.coll_state.lower_first.get()
                    && leaves_first(a.me(), co, |l| a.barrier_arrived(l, seq))
            }
        }
    }

    /// The error of a wait that ended with local rank `l` found dead, in collective `what`.
    pub(super) fn dead_error(l: u32, what: &str) -> Error {
        Error::new(
            ErrorKind::PeerDead,
            format!("local rank {l} died before arriving in the shared-memory {what}"),
        )
    }
}

/// Whether local rank `me`, waiting in a leader barrier with the local ranks `mates` pinned
/// to its core, is the one of its core to keep it and leave first: not local rank 0 (which
/// releases the barrier and leaves first anyway), no local rank 0 on its core (which must
/// run to release it), the lowest of its core, and every core-mate has `arrived` (a rank
/// still to arrive needs the core).
fn leaves_first(me: u32, mates: &[u32], arrived: impl Fn(u32) -> bool) -> bool {
    me != 0 && !mates.is_empty() && mates.iter().all(|&l| l > me && arrived(l))
}

/// Polls of a waiting step between readings of the clock, to see whether the local peers
/// are due for a check that they are alive ([`SHM_LIVENESS_PERIOD`]).
const SHM_LIVENESS_CLOCK_EVERY: u32 = 1 << 6;

/// Time between checks that the local peers of a waiting step are alive (a system call per
/// peer): a dead rank never arrives, and nothing else would end the wait. By the clock, not
/// by a count of polls: a wait that yields on every poll on a loaded machine polls only as
/// often as it is given the core (16 384 polls took 10 s at load 23 on 2 cores).
pub(super) const SHM_LIVENESS_PERIOD: std::time::Duration = std::time::Duration::from_millis(10);

/// Polls of a waiting step between looks for a disagreeing peer (one peek per peer): ranks
/// that passed different roots or collectives exchange no data and would wait forever.
pub(super) const DISAGREEMENT_EVERY: u32 = 1 << 12;

impl<'a> Schedule<'a> {
    /// Binds `plan` to buffers. `tag` must be the same on every rank for this call.
    pub(crate) fn start(
        comm: &Comm,
        what: &'static str,
        plan: Rc<Plan>,
        send: &'a [u8],
        recv: &'a mut [u8],
        reduction: Option<Reduction>,
        tag: i32,
    ) -> Schedule<'a> {
        let (tmp, pending) = comm
            .engine
            .borrow_mut()
            .coll_state
            .pool
            .take(plan.tmp_total_bytes / 8, plan.widest_step);
        Schedule {
            plan,
            send,
            recv,
            tmp,
            reduction,
            what,
            rank: comm.data.rank,
            members: comm.data.members.clone(),
            ctx: comm.data.ctx + 1,
            tag,
            next_step: 0,
            pending,
            shm_wait: None,
            msg_polls: Cell::new(0),
            disagreement: Cell::new(None),
            failed_read: None,
            pad_rounds: 0,
            pad_steps: 0,
            late_error: None,
        }
    }

    /// What the collective is called.
    pub(crate) fn what(&self) -> &'static str {
        self.what
    }

    /// The context and tag its messages carry.
    pub(crate) fn ctx_tag(&self) -> (u32, i32) {
        (self.ctx, self.tag)
    }

    /// Steps started so far (tells a poller whether an advance moved anything).
    pub(crate) fn steps_started(&self) -> usize {
        self.next_step + self.pad_steps
    }

    /// True when every message of the current step has completed and every local rank has
    /// arrived where the step waits for them.
    pub(crate) fn step_done(&self, e: &Engine) -> bool {
        if self.disagreement.get().is_some() {
            return true;
        }
        if let Some(w) = &self.shm_wait {
            if !w.done(e) {
                return false;
            }
            if w.dead().is_some() {
                return true;
            }
        }
        if self.pending.iter().all(|p| e.is_done(p.id)) {
            return true;
        }
        let polls = self.msg_polls.get().wrapping_add(1);
        self.msg_polls.set(polls);
        if polls.is_multiple_of(DISAGREEMENT_EVERY) {
            if let Some(d) = self.find_disagreement(e) {
                self.disagreement.set(Some(d));
                return true;
            }
        }
        false
    }

    /// Whether the current step's wait needs no rank pinned to this rank's core to run
    /// ([`Engine::wait_until_sharing`]): it waits for the node's arrival counter only (no
    /// message, whose sender may depend on anyone), and every co-located rank has already
    /// arrived there.
    pub(crate) fn keeps_core(&self, e: &Engine) -> bool {
        match &self.shm_wait {
            Some(w) if self.pending.is_empty() => w.keeps_core(e),
            _ => false,
        }
    }

    /// A peer whose first unreceived collective message carries this call's number but
    /// another collective or root. Messages from one peer on one context arrive in order,
    /// so its message for this call, if it sent one, is the first with this number.
    fn find_disagreement(&self, e: &Engine) -> Option<(u32, i32)> {
        find_disagreement(e, self.members.len() as u32, self.rank, self.ctx, self.tag)
    }

    /// Moves the schedule as far as it can without waiting; true when it has finished.
    pub(crate) fn advance(&mut self, e: &mut Engine) -> Result<bool> {
        loop {
            if !self.pending.is_empty() || self.shm_wait.is_some() {
                if !self.step_done(e) {
                    e.progress();
                    if !self.step_done(e) {
                        return Ok(false);
                    }
                }
                let dead = self.shm_wait.take().and_then(|w| w.dead());
                if let Some((peer, theirs)) = self.disagreement.take() {
                    self.abandon(e);
                    return Err(super::disagreement(self.rank, peer, self.tag, theirs));
                }
                if let Some(l) = dead {
                    self.abandon(e);
                    return Err(self.wrap(AreaWait::dead_error(l, self.what)));
                }
                if let Some(err) = self.failed_read.take() {
                    self.abandon(e);
                    return Err(self.wrap(err));
                }
                self.complete_step(e)?;
            }
            if self.next_step == self.plan.steps.len() {
                if let Some(err) = self.late_error.take() {
                    return Err(self.wrap(err));
                }
                return Ok(true);
            }
            let s = self.next_step;
            self.next_step += 1;
            let start = self.plan.steps[s];
            let end = start + self.plan.step_actions(s).len();
            for i in start..end {
                match self.plan.actions[i] {
                    Action::Copy { src, dst } => self.local_copy(src, dst),
                    Action::Reduce {
                        src,
                        dst,
                        src_first,
                    } => self.local_reduce(src, dst, src_first),
                    Action::ReduceInto { a, b, dst } => self.local_reduce_into(a, b, dst),
                    Action::ShmWrite { slot, off, src } => {
                        let area = area(e)?;
                        area.write(slot_index(&area, slot), off, self.bytes(src));
                    }
                    Action::ShmRead { slot, off, dst } => {
                        let area = area(e)?;
                        area.read(slot_index(&area, slot), off, self.bytes_mut(dst));
                    }
                    Action::ShmArrive => {
                        self.shm_wait = Some(AreaWait::arrive(&area(e)?, false));
                    }
                    Action::ShmLeaderBarrier => {
                        self.shm_wait = Some(AreaWait::arrive(&area(e)?, true));
                    }
                    Action::ShmPublishBuffers => {
                        let area = area(e)?;
                        area.publish(self.send.as_ptr() as u64);
                        area.publish_second(self.recv.as_ptr() as u64);
                    }
                    Action::CmaRead {
                        peer,
                        from,
                        off,
                        dst,
                    } => {
                        if self.failed_read.is_none() {
                            self.failed_read = self.cma_read(e, peer, from, off, dst).err();
                        }
                    }
                    Action::CmaWrite { peer, off, src } => {
                        if self.failed_read.is_none() {
                            self.failed_read = self.cma_write(e, peer, off, src).err();
                        }
                    }
                    Action::ShmWriteHeader { first, count } => {
                        let area = area(e)?;
                        let (first, count) = (first as usize, count as usize);
                        let me = self.rank;
                        area.write(me, 0, &(self.tag as u64).to_ne_bytes());
                        area.write(
                            me,
                            8,
                            bytemuck::cast_slice(&self.plan.words[first..first + count]),
                        );
                    }
                    Action::ShmCheckHeaders { first } => self.check_headers(e, first as usize)?,
                    Action::ShmArrivePad => {
                        if self.pad_rounds > 0 {
                            self.pad_rounds -= 1;
                            self.pad_steps += 1;
                            // This step again once the arrival is done.
                            self.next_step = s;
                            self.shm_wait = Some(AreaWait::arrive(&area(e)?, false));
                        }
                    }
                    Action::Send { .. } | Action::Recv { .. } | Action::CopyAfterPosting { .. } => {
                    }
                }
            }
            // Receives first, so a peer's eager message finds its receive posted.
            for i in start..end {
                if let Action::Recv { peer, dst } = self.plan.actions[i] {
                    if let Err(err) = self.post_recv(e, peer, dst) {
                        self.abandon(e);
                        return Err(err);
                    }
                }
            }
            let solo = sends_solo(self.plan.step_actions(s));
            for i in start..end {
                match self.plan.actions[i] {
                    Action::Send { peer, src, rail } => {
                        if let Err(err) = self.post_send(e, peer, src, solo, rail) {
                            self.abandon(e);
                            return Err(self.wrap(err));
                        }
                    }
                    Action::CopyAfterPosting { src, dst } => self.local_copy(src, dst),
                    _ => {}
                }
            }
        }
    }

    /// [`Action::ShmCheckHeaders`]: every other local rank's header, against plan words
    /// from `first`.
    fn check_headers(&mut self, e: &Engine, first: usize) -> Result<()> {
        let area = area(e)?;
        // Slots by rank: the area serves the whole node's world, ranked as the node is.
        let (n, me) = (area.local_size() as usize, self.rank);
        let own = self.plan.words[first];
        let expect = &self.plan.words[first + 1 + n..first + 1 + 2 * n];
        let word = |slot: u32, off: usize| {
            let mut b = [0u8; 8];
            area.read(slot, off, &mut b);
            u64::from_ne_bytes(b)
        };
        let mut most = own;
        for j in (0..n as u32).filter(|&j| j != me) {
            let tag = word(j, 0);
            if tag != self.tag as u64 {
                // Another call's header: its rounds mean nothing here, so pad with none.
                self.late_error.get_or_insert_with(|| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "{}: local rank {j} is in another collective call (tag {:#x}, ours \
                             {:#x}): the ranks called different collectives",
                            self.what, tag as i64, self.tag
                        ),
                    )
                });
                self.pad_rounds = 0;
                return Ok(());
            }
            most = most.max(word(j, 8));
            let theirs = word(j, 16 + 8 * me as usize);
            let want = expect[j as usize];
            if theirs != want {
                self.late_error.get_or_insert_with(|| {
                    mismatch(self.what, self.rank, j, theirs as usize, want as usize)
                });
            }
        }
        self.pad_rounds = most - own;
        Ok(())
    }

    /// One Cross Memory Attach read out of local rank `peer`'s published buffer `from`.
    fn cma_read(
        &mut self,
        e: &Engine,
        peer: u32,
        from: Buf,
        off: usize,
        dst: Region,
    ) -> Result<()> {
        let area = area(e)?;
        let shm = e.shm().expect("an area implies a segment");
        let (base, which) = match from {
            Buf::Send => (area.flag(peer), "send"),
            _ => (area.second(peer), "receive"),
        };
        let pid = shm.pid(peer);
        cma::read(pid, base + off as u64, self.bytes_mut(dst)).map_err(|err| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "{}: reading {} bytes of local rank {peer}'s {which} buffer (pid {pid}) \
                     with process_vm_readv failed: {err}",
                    self.what, dst.len
                ),
            )
        })
    }

    /// One Cross Memory Attach write into local rank `peer`'s published receive buffer.
    fn cma_write(&mut self, e: &Engine, peer: u32, off: usize, src: Region) -> Result<()> {
        let area = area(e)?;
        let shm = e.shm().expect("an area implies a segment");
        let (base, pid) = (area.second(peer), shm.pid(peer));
        cma::write(pid, base + off as u64, self.bytes(src)).map_err(|err| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "{}: writing {} bytes into local rank {peer}'s receive buffer (pid {pid}) \
                     with process_vm_writev failed: {err}",
                    self.what, src.len
                ),
            )
        })
    }

    fn post_recv(&mut self, e: &mut Engine, peer: u32, dst: Region) -> Result<()> {
        let buf = RawBufMut::new(self.bytes_mut(dst));
        let pattern = Pattern {
            ctx: self.ctx,
            src: peer as i32,
            tag: self.tag,
        };
        let id = e.start_recv(
            buf,
            pattern,
            Some(self.members[peer as usize]),
            &self.members,
        )?;
        self.pending.push(Pending {
            id,
            peer,
            expect_bytes: Some(dst.len),
        });
        Ok(())
    }

    fn post_send(
        &mut self,
        e: &mut Engine,
        peer: u32,
        src: Region,
        solo: bool,
        rail: Option<u8>,
    ) -> Result<()> {
        let buf = RawBuf::new(self.bytes(src));
        let world = self.members[peer as usize];
        let (rank, ctx, tag) = (self.rank, self.ctx, self.tag);
        let started = match rail {
            Some(r) => e.start_send_on_rail(buf, world, rank, ctx, tag, solo, r.into())?,
            None => e.start_send_mode(buf, world, rank, ctx, tag, false, solo)?,
        };
        if let Some(id) = started {
            self.pending.push(Pending {
                id,
                peer,
                expect_bytes: None,
            });
        }
        Ok(())
    }

    /// Collects the finished step's outcomes; a receive of the wrong size means the ranks
    /// disagree about the call (counts, roots or the collective itself).
    fn complete_step(&mut self, e: &mut Engine) -> Result<()> {
        let (what, rank) = (self.what, self.rank);
        match collect_outcomes(e, what, rank, self.pending.drain(..)) {
            Some(err) => Err(self.wrap(err)),
            None => Ok(()),
        }
    }

    /// Cancels and reaps what is still in flight after an error, so no request outlives the
    /// buffers it points into. Sends the peer has not taken are given up rather than waited
    /// for: after a disagreement the peer waits under another tag and would never take a
    /// rendezvous send, so waiting for it would hang the rank that found the problem.
    pub(crate) fn abandon(&mut self, e: &mut Engine) {
        abandon_pending(e, self.pending.drain(..));
    }

    fn wrap(&self, err: Error) -> Error {
        wrap_call(self.what, self.rank, err)
    }

    /// The caller's buffers and the scratch, for the plan's local work.
    fn bufs(&mut self) -> Buffers<'_> {
        Buffers {
            send: self.send,
            recv: &mut *self.recv,
            tmp: &mut self.tmp,
            tmp_offsets: &self.plan.tmp_offsets,
        }
    }

    fn bytes(&self, r: Region) -> &[u8] {
        Buffers::read(self.send, self.recv, &self.tmp, &self.plan.tmp_offsets, r)
    }

    fn bytes_mut(&mut self, r: Region) -> &mut [u8] {
        self.bufs().into_mut(r)
    }

    fn local_copy(&mut self, src: Region, dst: Region) {
        self.bufs().copy(src, dst);
    }

    fn local_reduce_into(&mut self, a: Region, b: Region, dst: Region) {
        let red = self.reduction.clone();
        let red = red.as_ref().expect("reduce in a plan without an op");
        self.bufs().reduce_into(red.view(), a, b, dst);
    }

    fn local_reduce(&mut self, src: Region, dst: Region, src_first: bool) {
        let red = self.reduction.clone();
        let red = red.as_ref().expect("reduce in a plan without an op");
        self.bufs().reduce(red.view(), src, dst, src_first);
    }
}

/// A plan's buffers during its local work: the caller's send (read only) and receive
/// buffers and the scratch that holds the plan's temporaries back to back, for a schedule
/// or a direct run (`super::direct`).
pub(super) struct Buffers<'s> {
    pub send: &'s [u8],
    pub recv: &'s mut [u8],
    pub tmp: &'s mut [u64],
    /// Where each temporary starts in `tmp`, in bytes ([`Plan::tmp_offsets`]).
    pub tmp_offsets: &'s [usize],
}

impl<'s> Buffers<'s> {
    /// Byte offset of region `r` in its whole buffer (temporaries share one).
    fn abs_off(&self, r: Region) -> usize {
        match r.buf {
            Buf::Tmp(t) => self.tmp_offsets[t as usize] + r.off,
            _ => r.off,
        }
    }

    /// Region `r` of the buffers given apart, for reading.
    fn read<'b>(
        send: &'b [u8],
        recv: &'b [u8],
        tmp: &'b [u64],
        tmp_offsets: &[usize],
        r: Region,
    ) -> &'b [u8] {
        let (whole, off): (&[u8], usize) = match r.buf {
            Buf::Send => (send, r.off),
            Buf::Recv => (recv, r.off),
            Buf::Tmp(t) => (bytemuck::cast_slice(tmp), tmp_offsets[t as usize] + r.off),
        };
        &whole[off..off + r.len]
    }

    /// Region `r`, for reading.
    pub(super) fn bytes(&self, r: Region) -> &[u8] {
        Self::read(self.send, self.recv, self.tmp, self.tmp_offsets, r)
    }

    /// Region `r` (of the receive buffer or the scratch), for writing.
    pub(super) fn bytes_mut(&mut self, r: Region) -> &mut [u8] {
        Buffers {
            send: self.send,
            recv: &mut *self.recv,
            tmp: &mut *self.tmp,
            tmp_offsets: self.tmp_offsets,
        }
        .into_mut(r)
    }

    /// Region `r` (of the receive buffer or the scratch), for writing, for as long as the
    /// buffers are borrowed.
    fn into_mut(self, r: Region) -> &'s mut [u8] {
        let off = self.abs_off(r);
        let whole: &mut [u8] = match r.buf {
            Buf::Send => unreachable!("plans never write the send buffer"),
            Buf::Recv => self.recv,
            Buf::Tmp(_) => bytemuck::cast_slice_mut(self.tmp),
        };
        &mut whole[off..off + r.len]
    }

    /// A readable `src` and a writable `dst` at once; they never overlap in a plan.
    fn pair(&mut self, src: Region, dst: Region) -> (&[u8], &mut [u8]) {
        let (so, d_o) = (self.abs_off(src), self.abs_off(dst));
        let same = std::mem::discriminant(&src.buf) == std::mem::discriminant(&dst.buf);
        let Buffers {
            send, recv, tmp, ..
        } = self;
        if same {
            let whole: &mut [u8] = match dst.buf {
                Buf::Recv => recv,
                Buf::Tmp(_) => bytemuck::cast_slice_mut(tmp),
                Buf::Send => unreachable!("plans never write the send buffer"),
            };
            if so < d_o {
                let (lo, hi) = whole.split_at_mut(d_o);
                (&lo[so..so + src.len], &mut hi[..dst.len])
            } else {
                let (lo, hi) = whole.split_at_mut(so);
                (&hi[..src.len], &mut lo[d_o..d_o + dst.len])
            }
        } else {
            let (s, d): (&[u8], &mut [u8]) = match (src.buf, dst.buf) {
                (Buf::Send, Buf::Recv) => (send, recv),
                (Buf::Send, Buf::Tmp(_)) => (send, bytemuck::cast_slice_mut(tmp)),
                (Buf::Recv, Buf::Tmp(_)) => (recv, bytemuck::cast_slice_mut(tmp)),
                (Buf::Tmp(_), Buf::Recv) => (bytemuck::cast_slice(tmp), recv),
                _ => unreachable!("plans never write the send buffer"),
            };
            (&s[so..so + src.len], &mut d[d_o..d_o + dst.len])
        }
    }

    /// `dst = src` ([`Action::Copy`]).
    pub(super) fn copy(&mut self, src: Region, dst: Region) {
        let (s, d) = self.pair(src, dst);
        d.copy_from_slice(s);
    }

    /// [`Action::ReduceInto`] with `red`.
    pub(super) fn reduce_into(&mut self, red: ReductionRef<'_>, a: Region, b: Region, dst: Region) {
        // The send buffer is borrowed apart from the others, so `b` and `dst` can be
        // taken together as a readable and a writable region.
        let send = self.send;
        let a = &send[a.off..a.off + a.len];
        let (b, d) = self.pair(b, dst);
        red.op.apply_into(red.kind, a, b, d);
    }

    /// [`Action::Reduce`] with `red`.
    pub(super) fn reduce(
        &mut self,
        red: ReductionRef<'_>,
        src: Region,
        dst: Region,
        src_first: bool,
    ) {
        if src_first || red.op.is_commutative() {
            let (s, d) = self.pair(src, dst);
            red.op.apply(red.kind, s, d);
        } else {
            // dst = dst ∘ src: compute into the scratch `src`, then copy back.
            {
                let (d, s) = self.pair(dst, src);
                red.op.apply(red.kind, d, s);
            }
            self.copy(src, dst);
        }
    }
}

/// The node's collective area (a selector bug when there is none).
pub(super) fn area(e: &Engine) -> Result<CollArea<'_>> {
    e.shm().and_then(CollArea::new).ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "a shared-memory collective ran without a collective area (selector bug)",
        )
    })
}

fn slot_index(area: &CollArea<'_>, slot: Slot) -> u32 {
    match slot {
        Slot::Rank(r) => r,
        Slot::Result => area.result_slot(),
    }
}

/// `err` of collective `what` on `rank`, named so (unless its message already names the
/// collective).
pub(super) fn wrap_call(what: &str, rank: u32, err: Error) -> Error {
    if err.message().starts_with(what) {
        err
    } else {
        err.context(format!("{what} on rank {rank}"))
    }
}

/// A peer of `rank` (among `size`) whose first unreceived message on `ctx` carries the call
/// number of `tag` but another collective or root ([`Schedule::find_disagreement`]).
pub(super) fn find_disagreement(
    e: &Engine,
    size: u32,
    rank: u32,
    ctx: u32,
    tag: i32,
) -> Option<(u32, i32)> {
    (0..size).filter(|&p| p != rank).find_map(|p| {
        let st = e.peek(&Pattern {
            ctx,
            src: p as i32,
            tag: ANY_TAG,
        })?;
        super::disagrees(tag, st.tag).then_some((p, st.tag))
    })
}

impl Plan {
    /// The actions of each step, in order (for [`DirectRun`](super::direct::DirectRun)).
    pub(super) fn each_step(&self) -> impl Iterator<Item = &[Action]> + '_ {
        (0..self.steps.len()).map(|s| self.step_actions(s))
    }

    /// Bytes of scratch the plan's temporaries take in all.
    pub(super) fn tmp_total_bytes(&self) -> usize {
        self.tmp_total_bytes
    }

    /// Where each temporary starts in the scratch, in bytes.
    pub(super) fn tmp_offsets(&self) -> &[usize] {
        &self.tmp_offsets
    }
}

/// Collects finished requests' outcomes and frees them; returns the first error (a
/// receive of the wrong size means the ranks disagree about the call: counts, roots or the
/// collective itself).
pub(super) fn collect_outcomes(
    e: &mut Engine,
    what: &str,
    rank: u32,
    done: impl Iterator<Item = Pending>,
) -> Option<Error> {
    let mut first: Option<Error> = None;
    for p in done {
        let outcome = e.outcome(p.id);
        e.free_req(p.id);
        if first.is_some() {
            continue;
        }
        first = match (outcome, p.expect_bytes) {
            (Ok(st), Some(want)) if st.bytes != want => {
                Some(mismatch(what, rank, p.peer, st.bytes, want))
            }
            (Err(err), Some(want)) if err.kind() == ErrorKind::Truncate => {
                Some(mismatch_truncated(what, rank, p.peer, want, &err))
            }
            (Err(err), _) => Some(err),
            _ => None,
        };
    }
    first
}

/// Gives up requests still in flight after an error and reaps them, so none outlives the
/// buffers it points into. Sends the peer has not taken are given up rather than waited
/// for: after a disagreement the peer waits under another tag and would never take a
/// rendezvous send, so waiting for it would hang the rank that found the problem.
pub(super) fn abandon_pending(e: &mut Engine, inflight: impl Iterator<Item = Pending>) {
    for p in inflight {
        if p.expect_bytes.is_none() {
            if e.abandon_send(p.id) {
                continue;
            }
        } else {
            e.cancel_recv(p.id);
        }
        let _ = e.wait(p.id);
        e.free_req(p.id);
    }
}

fn mismatch(what: &str, rank: u32, peer: u32, got: usize, want: usize) -> Error {
    Error::new(
        ErrorKind::InvalidCount,
        format!(
            "{what}: rank {rank} received {got} bytes from rank {peer} where it expected {want}: \
             the ranks passed different counts, roots or collectives"
        ),
    )
}

/// A message longer than the receiving rank's buffer: a truncation, as MPI classes it
/// (MPI_ERR_TRUNCATE), whatever mismatch of counts caused it.
fn mismatch_truncated(what: &str, rank: u32, peer: u32, want: usize, err: &Error) -> Error {
    Error::new(
        ErrorKind::Truncate,
        format!(
            "{what}: rank {rank} expected {want} bytes from rank {peer} but got more ({}): \
             the ranks passed different counts, roots or collectives",
            err.message()
        ),
    )
}

impl Schedule<'_> {
    /// Hands the schedule's scratch and pending list to `pool` for the next schedule (a
    /// schedule dropped without this just frees them).
    pub(crate) fn recycle(&mut self, pool: &mut Pool) {
        pool.give(
            std::mem::take(&mut self.tmp),
            std::mem::take(&mut self.pending),
        );
    }
}

/// Scratch and pending-request vectors of finished schedules, reused by the next ones of
/// the engine that owns the pool, so a collective allocates neither once the pool holds
/// vectors of its size. Scratch keeps its contents between uses: a plan writes every
/// temporary before it reads it, so only never-used words are zeroed (zeroing a large
/// collective's scratch on every call cost as much as a memory copy of it).
#[derive(Default)]
pub(crate) struct Pool {
    tmp: Vec<Vec<u64>>,
    pending: Vec<Vec<Pending>>,
}

/// Vectors kept per kind; more are freed.
const POOL_KEEP: usize = 8;
/// What debug builds fill scratch with before a schedule uses it (no plausible value of any
/// element type: a NaN pattern for floats, a large odd number for integers).
pub(super) const SCRATCH_POISON: u64 = 0xfff5_a5a5_a5a5_a5a5;
/// Most scratch kept in all (in u64 words: 8 MiB); a vector that would pass it is freed.
const POOL_KEEP_WORDS: usize = 1 << 20;

impl Pool {
    /// Scratch of at least `words` (never-used words zeroed) and an empty pending list with
    /// room for `pending`.
    pub(super) fn take(&mut self, words: usize, pending: usize) -> (Vec<u64>, Vec<Pending>) {
        let mut tmp = if words == 0 {
            Vec::new()
        } else {
            // The smallest that fits, so a small call does not take (and a large one then
            // miss) the big vector; it keeps its length: plans address scratch by offset, so
            // a longer one serves, and its initialised words stay initialised.
            let fit = (0..self.tmp.len())
                .filter(|&i| self.tmp[i].capacity() >= words)
                .min_by_key(|&i| self.tmp[i].capacity());
            match fit {
                Some(i) => self.tmp.swap_remove(i),
                None => Vec::with_capacity(words),
            }
        };
        if tmp.len() < words {
            tmp.resize(words, 0);
        }
        if cfg!(debug_assertions) {
            // Test builds poison the scratch, so a plan that reads a temporary before
            // writing it gives wrong results in the tests instead of stale or zero bytes.
            tmp.fill(SCRATCH_POISON);
        }
        let mut pend = match self.pending.iter().position(|v| v.capacity() >= pending) {
            Some(i) => self.pending.swap_remove(i),
            None => Vec::with_capacity(pending),
        };
        pend.clear();
        (tmp, pend)
    }

    /// Keeps vectors for reuse, within the bounds.
    pub(super) fn give(&mut self, tmp: Vec<u64>, mut pending: Vec<Pending>) {
        let kept: usize = self.tmp.iter().map(Vec::capacity).sum();
        if tmp.capacity() > 0
            && kept + tmp.capacity() <= POOL_KEEP_WORDS
            && self.tmp.len() < POOL_KEEP
        {
            self.tmp.push(tmp);
        }
        if pending.capacity() > 0 && self.pending.len() < POOL_KEEP {
            pending.clear();
            self.pending.push(pending);
        }
    }
}

/// Whether a step's sends go `solo` (`Engine::start_send_mode`): a step with several sends,
/// or a copy after posting (a root's fan-out), keeps its rank busy after posting, so its
/// receivers copy a large message alone instead of waiting for this rank's share of a
/// cooperative copy. One send, alone or against one receive (a ring or pairwise exchange),
/// keeps the cooperative copy.
pub(super) fn sends_solo(step: &[Action]) -> bool {
    let mut sends = 0;
    for a in step {
        match a {
            Action::CopyAfterPosting { .. } => return true,
            Action::Send { .. } => sends += 1,
            _ => {}
        }
    }
    sends > 1
}

#[cfg(test)]
mod solo_tests {
    use super::*;
    use crate::coll::algo;

    #[test]
    fn fan_out_steps_send_solo_and_exchanges_cooperate() {
        let blocks = |n: usize| (0..n).map(|i| (i * 64, 64)).collect::<Vec<_>>();
        // The scatter root copies its own block after posting: solo even with one send.
        for n in [2u32, 4] {
            let mut root = Plan::new();
            algo::scatter::linear::build(&mut root, 0, 0, &blocks(n as usize), 64, Buf::Send);
            assert!(sends_solo(root.step_actions(0)), "scatter root, {n} ranks");
            let mut leaf = Plan::new();
            algo::scatter::linear::build(&mut leaf, 1, 0, &blocks(n as usize), 64, Buf::Send);
            assert!(
                !sends_solo(leaf.step_actions(0)),
                "a receiving rank has nothing to cooperate on"
            );
        }
        // One send against one receive per step: both sides copy at once anyway.
        let ring = algo::allgather::ring::plan(0, 4, &blocks(4));
        assert!((0..ring.steps.len()).all(|s| !sends_solo(ring.step_actions(s))));
        // A lone send keeps the cooperative copy; a second send in the step makes it solo.
        let mut p = Plan::new();
        p.step();
        p.send(1, Region::new(Buf::Send, 0, 8));
        assert!(!sends_solo(p.step_actions(0)));
        p.send(2, Region::new(Buf::Send, 0, 8));
        assert!(sends_solo(p.step_actions(0)));
        p.step();
        p.recv(1, Region::new(Buf::Recv, 0, 8));
        assert!(!sends_solo(p.step_actions(1)));
    }
}

#[cfg(test)]
mod barrier_order_tests {
    use super::leaves_first;

    #[test]
    fn the_lowest_rank_of_a_core_without_the_leader_leaves_first_once_its_mates_arrived() {
        let all = |_| true;
        let none = |_| false;
        // Four ranks on two cores, pinned 0 and 2, 1 and 3.
        assert!(leaves_first(1, &[3], all), "rank 1 keeps its core");
        assert!(!leaves_first(1, &[3], none), "rank 3 still has to arrive");
        assert!(
            !leaves_first(3, &[1], all),
            "rank 3 is not the lowest of its core"
        );
        assert!(
            !leaves_first(2, &[0], all),
            "the leader must run to release"
        );
        assert!(
            !leaves_first(0, &[2], all),
            "the leader releases and leaves anyway"
        );
        // Three mates: every one must have arrived.
        assert!(leaves_first(1, &[3, 5], all));
        assert!(
            !leaves_first(1, &[3, 5], |l| l == 3),
            "rank 5 still to arrive"
        );
        assert!(!leaves_first(3, &[1, 5], all));
        // A core of its own: nothing to order.
        assert!(!leaves_first(1, &[], all));
    }
}
