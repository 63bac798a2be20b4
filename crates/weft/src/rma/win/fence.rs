//! MPI_Win_fence's barrier when every member of the window is on this node: each member
//! counts the fences it has arrived at in a word of its own control block (on a cache line
//! of its own), then waits until every other member's count has reached its own, instead of
//! the communicator's barrier and its messages.
//!
//! Each member writes only its own word and reads the others': arriving is one store that
//! every waiter sees with one cache-line transfer, in parallel (a shared counter would pass
//! one line from member to member, and the waiters' polling would contend with the arrivals
//! on it). A member may run at most one fence ahead of one still waiting (it cannot leave
//! fence `e + 1` before the other has arrived there), so "at least my count" is exact. The
//! release store and acquire loads make every member's writes before its fence (its loads
//! and stores, and every put and accumulate it made, which are complete at the target when
//! their calls return on a node-local window) visible to every member after the fence.
//!
//! While it waits a member keeps the progress engine turning (a fence is a blocking MPI call:
//! a peer may need this process's sends before it reaches the fence) and waits as the
//! engine's own waits do (`Engine::wait_until_spin_max`): it spins through the engine's spin
//! window, at most [`FENCE_SPIN_MAX`], then yields the core on every idle turn (at once when
//! the node is oversubscribed) and, under `WEFT_BLOCK`, sleeps in the kernel when other
//! programs compete for the cores: a member that arrives rings the bell of every other
//! member (one fence and one load each while nobody sleeps), so a sleeper is woken by the
//! last arrival and run at once, instead of a yielding waiter that gets its core back from
//! a spinning program only now and then. Now and then it checks that the members it waits
//! for still live, so a killed member ends the wait with an error instead of a hang.

use super::control::Control;
use crate::engine::Engine;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::time::Instant;
use weft_core::{Error, ErrorKind, Result};

/// Turns of a polled wait ([`NodeFence::check_alive`]) between two liveness checks.
const PROGRESS_PER_LIVENESS: u32 = 1 << 12;
/// Looks of a blocking wait ([`NodeFence::wait`]) between two readings of the clock: a
/// fence met sooner never reads it.
const LOOKS_PER_CLOCK_READ: u32 = 16;
/// How often a blocking wait checks that the members still live (a wait that sleeps looks
/// at least every `WEFT_BLOCK_SLEEP_MS`).
const LIVENESS_PERIOD: std::time::Duration = std::time::Duration::from_millis(100);
/// Longest spin of an idle fence wait before it yields (shorter when `WEFT_YIELD_AFTER_US`
/// is): a member still missing after it is mostly copying its puts and gets, which run
/// slower beside a spinning waiter (np 2 on 2 cores, 8 x 1 MiB per fence, interleaved,
/// median GB/s: put 18.2 with a 100 us spin, 25.4 with 10 us, MPICH 5 29.0; get 23.4, 27.9,
/// 32.1).
const FENCE_SPIN_MAX: std::time::Duration = std::time::Duration::from_micros(10);

/// The node barrier of one window (see the module).
pub(crate) struct NodeFence {
    /// Every member's control block, in window rank order.
    blocks: Vec<*const u8>,
    /// The caller's window rank.
    me: usize,
    /// The fences this process has arrived at.
    arrived: Cell<u64>,
    /// The members' process ids (this process's included), for the liveness checks.
    pids: Vec<i32>,
    /// The other members' local ranks in this process's node segment, whose bells an
    /// arrival rings; `None` when a member is not a rank of that segment (a waiter then
    /// never sleeps).
    bells: Option<Vec<u32>>,
}

impl NodeFence {
    /// The barrier of the members whose control blocks are `blocks`, the caller's at `me`;
    /// `bells` as the field says.
    ///
    /// # Safety
    /// Each of `blocks` must point to a control block (see [`Control::at`]) every member
    /// maps, which outlives this value, with its fence word 0 before any member's first
    /// fence.
    pub(crate) unsafe fn new(
        blocks: Vec<*const u8>,
        me: usize,
        pids: Vec<i32>,
        bells: Option<Vec<u32>>,
    ) -> NodeFence {
        NodeFence {
            blocks,
            me,
            arrived: Cell::new(0),
            pids,
            bells,
        }
    }

    fn block(&self, r: usize) -> &Control {
        // SAFETY: `new`'s contract.
        unsafe { Control::at(self.blocks[r]) }
    }

    /// Waits until every member has arrived; `rank` (the caller's world rank) for messages.
    ///
    /// The engine's wait (`Engine::wait_until_spin_max`) with its spin capped at
    /// [`FENCE_SPIN_MAX`]; it may sleep when every member rings this process's bell.
    pub(crate) fn wait(&self, rank: u32, engine: &RefCell<Engine>) -> Result<()> {
        let mut w = self.arrive(engine);
        if self.arrived_all(&mut w) {
            return Ok(());
        }
        let mut failed = None;
        let mut last_check: Option<Instant> = None;
        engine.borrow_mut().wait_until_spin_max(
            |_| {
                if self.arrived_all(&mut w) {
                    return true;
                }
                w.turns = w.turns.wrapping_add(1);
                if w.turns.is_multiple_of(LOOKS_PER_CLOCK_READ) {
                    let now = Instant::now();
                    let last = *last_check.get_or_insert(now);
                    if now.duration_since(last) >= LIVENESS_PERIOD {
                        last_check = Some(now);
                        if let Err(e) = self.alive(rank) {
                            failed = Some(e);
                            return true;
                        }
                    }
                }
                false
            },
            FENCE_SPIN_MAX,
            self.bells.is_some(),
        );
        failed.map_or(Ok(()), Err)
    }

    /// Arrives at the next fence without waiting (the caller then polls
    /// [`NodeFence::arrived_all`] with what this returns), and rings the bells of the
    /// members that sleep.
    pub(crate) fn arrive(&self, engine: &RefCell<Engine>) -> FenceArrival {
        if self.blocks.len() <= 1 {
            return FenceArrival {
                epoch: 0,
                next: self.blocks.len(),
                turns: 0,
            };
        }
        let epoch = self.arrived.get() + 1;
        self.arrived.set(epoch);
        self.block(self.me)
            .fence_epoch
            .store(epoch, Ordering::Release);
        if let Some(bells) = &self.bells {
            if let Some(shm) = engine.borrow().shm() {
                for &l in bells {
                    shm.wake(l);
                }
            }
        }
        FenceArrival {
            epoch,
            next: 0,
            turns: 0,
        }
    }

    /// Whether every member has arrived at the fence of `w` (one scan, no waiting).
    pub(crate) fn arrived_all(&self, w: &mut FenceArrival) -> bool {
        // Members at or past this fence: the scan resumes at the first one not yet there.
        while w.next < self.blocks.len()
            && (w.next == self.me
                || self.block(w.next).fence_epoch.load(Ordering::Acquire) >= w.epoch)
        {
            w.next += 1;
        }
        w.next == self.blocks.len()
    }

    /// Counts one turn of a wait for the fence of `w`; now and then checks that the members
    /// still live (an error names the first dead one).
    pub(crate) fn check_alive(&self, rank: u32, w: &mut FenceArrival) -> Result<()> {
        w.turns = w.turns.wrapping_add(1);
        if w.turns.is_multiple_of(PROGRESS_PER_LIVENESS) {
            return self.alive(rank);
        }
        Ok(())
    }

    /// Whether every member's process still lives (an error names the first dead one).
    fn alive(&self, rank: u32) -> Result<()> {
        match self
            .pids
            .iter()
            .find(|&&p| !weft_transport::shm::process_alive(p))
        {
            Some(pid) => Err(Error::new(
                ErrorKind::PeerDead,
                format!(
                    "rank {rank}: MPI_Win_fence: window member process {pid} died before it reached the fence"
                ),
            )),
            None => Ok(()),
        }
    }
}

/// A member's arrival at one fence of a [`NodeFence`], for waits that poll.
#[derive(Debug)]
pub(crate) struct FenceArrival {
    epoch: u64,
    /// The first member not seen at the fence yet.
    next: usize,
    /// Turns of the wait so far (for the liveness checks).
    turns: u32,
}
