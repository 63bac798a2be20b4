//! A blocking collective whose plan is one step of plain messages, run as point-to-point
//! calls without a schedule: receives into, sends from and copies between the caller's
//! buffers, no scratch and no reduction (a leaf of a flat tree: a broadcast's or a
//! scatter's receiver; a flat tree's root; a gather's or a reduction's leaf; a gather's
//! root; a two-rank exchange: allgather, alltoall; alltoallv's one step of every message).
//! A leaf of a small scatter or broadcast spent 0.17-0.23 us per call in the schedule's
//! machinery (np=4, 8 B; Open MPI's leaves 0.06-0.08). [`DirectRun::of`] resolves such a
//! plan once, for a repeated call (the memo keeps it): the peers' world ranks, the copies,
//! the receives (posted first), and the order of the sends: to peers on other cores first,
//! so they can start while this rank still sends (the ranks pinned to its core cannot run
//! before it yields anyway): np=4 on 2 cores, 8 B, against the plan's order, three A/B
//! runs of 5-7 interleaved jobs, scatter 5-7% faster (0.198 vs 0.213 us), bcast 1-5%.
//!
//! Does what the schedule would do for the plan (the same tags and checks of the received
//! length, the same look for a peer that disagrees about the call while it waits), in the
//! order above. Depends on the engine's request API, matching patterns, the communicator's
//! members and context, and the schedule's plan and outcome checks; knows nothing of
//! algorithms or selection.

use super::schedule::{
    abandon_pending, collect_outcomes, find_disagreement, sends_solo, wrap_call, Action, Buf,
    Pending, Plan, Region, DISAGREEMENT_EVERY,
};
use crate::comm::Comm;
use crate::engine::Engine;
use crate::matching::Pattern;
use weft_core::Result;
use weft_transport::buf::{RawBuf, RawBufMut};

/// One thing a direct run does, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Receive from rank `peer` (world rank `world`) into `dst` of the receive buffer.
    Recv { peer: u32, world: u32, dst: Region },
    /// Copy `src` (send or receive buffer) into `dst` of the receive buffer.
    Copy { src: Region, dst: Region },
    /// Send `src` (send or receive buffer) to rank `peer` (world rank `world`).
    Send { peer: u32, world: u32, src: Region },
}

/// A plan resolved for running directly on one communicator ([`DirectRun::of`]).
#[derive(Debug)]
pub(crate) struct DirectRun {
    /// The run's steps, in order.
    steps: Box<[Step]>,
    /// The sends go `solo` (`Engine::start_send_mode`), as the schedule's would.
    solo: bool,
    /// Receives and sends in all: the room the list of requests to wait for may need.
    requests: usize,
}

impl DirectRun {
    /// `plan` resolved for the communicator of world ranks `members`, when it is one step
    /// without scratch of receives into the receive buffer and sends and copies between the
    /// caller's buffers; None otherwise. `shares_my_core(w)`
    /// says whether world rank `w` runs on this rank's core (false when unknown).
    pub fn of(
        plan: &Plan,
        members: &[u32],
        shares_my_core: impl Fn(u32) -> bool,
    ) -> Option<DirectRun> {
        let actions = plan.single_step()?;
        let user = |r: Region| matches!(r.buf, Buf::Send | Buf::Recv);
        let mut copies = Vec::new();
        let mut recvs = Vec::new();
        let mut sends_here = Vec::new();
        let mut sends_mates = Vec::new();
        let mut copies_after = Vec::new();
        for a in actions {
            match *a {
                Action::Send { peer, src } if user(src) => {
                    let world = members[peer as usize];
                    let send = Step::Send { peer, world, src };
                    if shares_my_core(world) {
                        sends_mates.push(send);
                    } else {
                        sends_here.push(send);
                    }
                }
                Action::Recv { peer, dst } if dst.buf == Buf::Recv => {
                    let world = members[peer as usize];
                    recvs.push(Step::Recv { peer, world, dst });
                }
                Action::Copy { src, dst } if user(src) && dst.buf == Buf::Recv => {
                    copies.push(Step::Copy { src, dst });
                }
                // Nothing else of the step reads or writes its region, so it may wait for
                // every send to be posted.
                Action::CopyAfterPosting { src, dst } if user(src) && dst.buf == Buf::Recv => {
                    copies_after.push(Step::Copy { src, dst });
                }
                _ => return None,
            }
        }
        // The moved copies must not write what a send reads (no plan does so today: a
        // scatter root's own block is the only such copy).
        let overlaps =
            |a: Region, b: Region| a.buf == b.buf && a.off < b.off + b.len && b.off < a.off + a.len;
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
        let requests = recvs.len() + sends_here.len() + sends_mates.len();
        let mut steps = Vec::with_capacity(actions.len());
        steps.extend(copies);
        // Receives first, so a peer's eager message finds its receive posted.
        steps.extend(recvs);
        steps.extend(sends_here);
        steps.extend(sends_mates);
        steps.extend(copies_after);
        Some(DirectRun {
            steps: steps.into_boxed_slice(),
            solo: sends_solo(actions),
            requests,
        })
    }

    /// Runs the call on `comm` with the caller's buffers; `what` names the collective in
    /// errors, `tag` is the call's.
    pub fn run(
        &self,
        comm: &Comm,
        what: &'static str,
        send: &[u8],
        recv: &mut [u8],
        tag: i32,
    ) -> Result<()> {
        let rank = comm.data.rank;
        let ctx = comm.data.ctx + 1;
        let wrap = |err| wrap_call(what, rank, err);
        let mut g = InFlight {
            e: comm.engine.borrow_mut(),
            one: None,
            many: None,
        };
        g.e.clear_advancing();
        for step in self.steps.iter() {
            match *step {
                Step::Recv { peer, world, dst } => {
                    let buf = RawBufMut::new(&mut recv[dst.off..dst.off + dst.len]);
                    let pattern = Pattern {
                        ctx,
                        src: peer as i32,
                        tag,
                    };
                    match g
                        .e
                        .start_recv(buf, pattern, Some(world), &comm.data.members)
                    {
                        Ok(id) => g.push(
                            Pending {
                                id,
                                peer,
                                expect_bytes: Some(dst.len),
                            },
                            self.requests,
                        ),
                        Err(err) => {
                            g.abandon();
                            return Err(wrap(err));
                        }
                    }
                }
                Step::Copy { src, dst } => copy(send, recv, src, dst),
                Step::Send { peer, world, src } => {
                    let whole = if src.buf == Buf::Send { send } else { &*recv };
                    let buf = RawBuf::new(&whole[src.off..src.off + src.len]);
                    match g
                        .e
                        .start_send_mode(buf, world, rank, ctx, tag, false, self.solo)
                    {
                        // An eager send is complete once posted.
                        Ok(None) => {}
                        Ok(Some(id)) => g.push(
                            Pending {
                                id,
                                peer,
                                expect_bytes: None,
                            },
                            self.requests,
                        ),
                        Err(err) => {
                            g.abandon();
                            return Err(wrap(err));
                        }
                    }
                }
            }
        }
        if g.one.is_none() {
            return Ok(());
        }
        let size = comm.data.members.len() as u32;
        let mut polls = 0u32;
        let mut disagreement = None;
        {
            let InFlight { e, one, many } = &mut g;
            let done = |e: &Engine| {
                one.as_ref().is_none_or(|p| e.is_done(p.id))
                    && many
                        .as_ref()
                        .is_none_or(|m| m.iter().all(|p| e.is_done(p.id)))
            };
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
        }
        if let Some((other, theirs)) = disagreement {
            g.abandon();
            return Err(super::disagreement(rank, other, tag, theirs));
        }
        let (e, all) = g.take_all();
        collect_outcomes(e, what, rank, all).map_or(Ok(()), |err| Err(wrap(err)))
    }
}

/// Copies region `src` (send or receive buffer) into region `dst` of the receive buffer.
fn copy(send: &[u8], recv: &mut [u8], src: Region, dst: Region) {
    if src.buf == Buf::Recv {
        recv.copy_within(src.off..src.off + src.len, dst.off);
    } else {
        recv[dst.off..dst.off + dst.len].copy_from_slice(&send[src.off..src.off + src.len]);
    }
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
            })
            .collect()
    }

    #[test]
    fn a_root_sends_to_other_cores_first_and_copies_its_own_block_last() {
        // Scatter from root 0 of 4 ranks, world ranks 10..14; rank 12 shares the root's
        // core (2 cores, ranks pinned to `local mod 2`).
        let mut root = Plan::new();
        algo::linear_scatter::build(&mut root, 0, 0, &blocks(4), 8, Buf::Send);
        let members = [10, 11, 12, 13];
        let run = DirectRun::of(&root, &members, |w| w == 12).unwrap();
        assert_eq!(order(&run), ["send 11", "send 13", "send 12", "copy"]);
        assert!(run.solo && run.requests == 3);
        // Unknown placement keeps the plan's order.
        let run = DirectRun::of(&root, &members, |_| false).unwrap();
        assert_eq!(order(&run), ["send 11", "send 12", "send 13", "copy"]);
    }

    #[test]
    fn a_leaf_receives_once_from_its_parent() {
        let mut leaf = Plan::new();
        algo::linear_scatter::build(&mut leaf, 3, 0, &blocks(4), 8, Buf::Send);
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
        let p = algo::recursive_doubling_allgather::plan(0, 2, 8);
        let run = DirectRun::of(&p, &[5, 6], |_| false).unwrap();
        assert_eq!(order(&run), ["copy", "recv 6", "send 6"]);
        assert_eq!(run.requests, 2);
    }

    #[test]
    fn plans_of_several_steps_or_scratch_are_not_run_directly() {
        let ring = algo::ring_allgather::plan(0, 4, &blocks(4));
        assert!(DirectRun::of(&ring, &[0, 1, 2, 3], |_| false).is_none());
        let mut p = Plan::new();
        p.step();
        let t = p.tmp(8);
        p.recv(1, Region::new(t, 0, 8));
        assert!(DirectRun::of(&p, &[0, 1], |_| false).is_none());
    }
}
