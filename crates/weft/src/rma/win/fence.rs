//! MPI_Win_fence's barrier when every member of the window is on this node: a counter
//! barrier on two words of the window's node region (in the first local member's control
//! block), instead of the communicator's barrier and its messages.
//!
//! A member reads the generation, then counts itself in; the last to arrive resets the count
//! and advances the generation, which lets the others out. Nobody can arrive for the next
//! fence before the count is reset, since nobody leaves before the generation moves. The
//! release and acquire orderings make every member's writes before its fence (its loads and
//! stores, and every put and accumulate it made, which are complete at the target when their
//! calls return on a node-local window) visible to every member after the fence.
//!
//! While it waits a member keeps the progress engine turning (a fence is a blocking MPI call:
//! a peer may need this process's sends before it reaches the fence), spins while every
//! local rank has a core and yields the core when the node is oversubscribed, as the
//! engine's own waits do; now and then it checks that the members it waits for still live,
//! so a killed member ends the wait with an error instead of a hang.

use super::control::Control;
use crate::engine::Engine;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use weft_core::{Error, ErrorKind, Result};

/// Polls of the generation between two turns of the progress engine.
const POLLS_PER_PROGRESS: u32 = 64;
/// Turns of the progress engine between two liveness checks of the members.
const PROGRESS_PER_LIVENESS: u32 = 1 << 12;

/// The node barrier of one window (see the module).
pub(crate) struct NodeFence {
    /// The first local member's control block, which holds the barrier's words.
    words: *const u8,
    members: u32,
    /// The members' process ids (this process's included), for the liveness checks.
    pids: Vec<i32>,
}

impl NodeFence {
    /// The barrier of `pids.len()` members on the words of the control block at `words`.
    ///
    /// # Safety
    /// `words` must point to a control block (see [`Control::at`]) every member maps, which
    /// outlives this value.
    pub(crate) unsafe fn new(words: *const u8, pids: Vec<i32>) -> NodeFence {
        NodeFence {
            words,
            members: pids.len() as u32,
            pids,
        }
    }

    /// Waits until every member has arrived; `rank` (the caller's world rank) for messages.
    pub(crate) fn wait(&self, rank: u32, engine: &RefCell<Engine>) -> Result<()> {
        if self.members <= 1 {
            return Ok(());
        }
        // SAFETY: `new`'s contract.
        let c = unsafe { Control::at(self.words) };
        let generation = c.fence_generation.load(Ordering::Acquire);
        if c.fence_arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.members {
            c.fence_arrived.store(0, Ordering::Relaxed);
            c.fence_generation
                .store(generation.wrapping_add(1), Ordering::Release);
            return Ok(());
        }
        let mut turns = 0u32;
        loop {
            for _ in 0..POLLS_PER_PROGRESS {
                if c.fence_generation.load(Ordering::Acquire) != generation {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
            let yields = {
                let mut e = engine.borrow_mut();
                !e.progress() && e.yields_when_idle()
            };
            if yields {
                std::thread::yield_now();
            }
            turns = turns.wrapping_add(1);
            if turns.is_multiple_of(PROGRESS_PER_LIVENESS) {
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
        }
    }
}
