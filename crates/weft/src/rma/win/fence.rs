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
//! a peer may need this process's sends before it reaches the fence), spins through the
//! engine's spin window (at most 10 us) and then yields the core on every idle turn (at once when the node
//! is oversubscribed), as the engine's own waits do; now and then it checks that the members it waits for still live,
//! so a killed member ends the wait with an error instead of a hang.

use super::control::Control;
use crate::engine::Engine;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::time::Instant;
use weft_core::{Error, ErrorKind, Result};

/// Polls of the members' words between two turns of the progress engine.
const POLLS_PER_PROGRESS: u32 = 64;
/// Turns of the progress engine between two liveness checks of the members.
const PROGRESS_PER_LIVENESS: u32 = 1 << 12;
/// Idle turns of the progress engine between two readings of the clock while a waiter
/// spins (about a microsecond of polls): a fence met sooner never reads it.
const PROGRESS_PER_CLOCK_READ: u32 = 8;
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
}

impl NodeFence {
    /// The barrier of the members whose control blocks are `blocks`, the caller's at `me`.
    ///
    /// # Safety
    /// Each of `blocks` must point to a control block (see [`Control::at`]) every member
    /// maps, which outlives this value, with its fence word 0 before any member's first
    /// fence.
    pub(crate) unsafe fn new(blocks: Vec<*const u8>, me: usize, pids: Vec<i32>) -> NodeFence {
        NodeFence {
            blocks,
            me,
            arrived: Cell::new(0),
            pids,
        }
    }

    fn block(&self, r: usize) -> &Control {
        // SAFETY: `new`'s contract.
        unsafe { Control::at(self.blocks[r]) }
    }

    /// Waits until every member has arrived; `rank` (the caller's world rank) for messages.
    ///
    /// Idle turns (no progress made) spin through the engine's spin window
    /// (`WEFT_YIELD_AFTER_US`), at most [`FENCE_SPIN_MAX`], then yield the core on every
    /// turn, as the engine's own waits do (at once where the engine yields at once; never
    /// under `WEFT_YIELD=off`): a member that arrived first mostly waits for another's
    /// copies of its puts and gets, which a spinning waiter slowed.
    pub(crate) fn wait(&self, rank: u32, engine: &RefCell<Engine>) -> Result<()> {
        let mut w = self.arrive();
        let (yields_at_once, window) = {
            let e = engine.borrow();
            (
                e.yields_when_idle(),
                e.idle_spin_window().map(|w| w.min(FENCE_SPIN_MAX)),
            )
        };
        let mut yielding = yields_at_once;
        // The end of this idle stretch's spin, once the clock was read.
        let mut spin_until: Option<Instant> = None;
        loop {
            for _ in 0..POLLS_PER_PROGRESS {
                if self.arrived_all(&mut w) {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
            if engine.borrow_mut().progress() {
                yielding = yields_at_once;
                spin_until = None;
            } else if yielding {
                std::thread::yield_now();
            } else if let Some(window) = window {
                if w.turns.is_multiple_of(PROGRESS_PER_CLOCK_READ) {
                    let now = Instant::now();
                    match spin_until {
                        None => spin_until = Some(now + window),
                        Some(t) if now >= t => yielding = true,
                        Some(_) => {}
                    }
                }
            }
            self.check_alive(rank, &mut w)?;
        }
    }

    /// Arrives at the next fence without waiting (the caller then polls
    /// [`NodeFence::arrived_all`] with what this returns).
    pub(crate) fn arrive(&self) -> FenceArrival {
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
            if let Some(&pid) = self
                .pids
                .iter()
                .find(|&&p| !weft_transport::shm::process_alive(p))
            {
                return Err(Error::new(
                    ErrorKind::PeerDead,
                    format!(
                        "rank {rank}: MPI_Win_fence: window member process {pid} died before it reached the fence"
                    ),
                ));
            }
        }
        Ok(())
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
