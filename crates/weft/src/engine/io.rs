//! The engine's side of nonblocking collective file I/O: started accesses (`weft::io`'s
//! two-phase machines) advanced by every progress call, as collectives are, so a rank
//! blocked in any other call still plays its part (aggregating, answering) in a collective
//! read or write it started. The engine owns each machine; its request holds the shared
//! outcome ([`IoShared`]) and waits on it.

use super::Engine;
use crate::io::work::{IoShared, IoWork};
use std::rc::Rc;

/// A started access and the outcome its request reads.
pub(crate) struct IoSlot {
    pub(crate) work: Box<dyn IoWork>,
    pub(crate) shared: Rc<IoShared>,
}

impl Engine {
    /// Records a started access, to be advanced by every progress call until it finishes.
    pub(crate) fn register_io(&mut self, slot: IoSlot) {
        self.io_ops.push(slot);
    }

    /// Whether accesses are registered (and not being advanced right now).
    pub(crate) fn io_pending(&self) -> bool {
        !self.io_ops.is_empty() && !self.io_busy
    }

    /// Advances every registered access once; drops the finished ones after recording
    /// their outcome (and running their completion hook). True if one moved.
    pub(super) fn advance_io(&mut self) -> bool {
        self.io_busy = true;
        let mut slots = std::mem::take(&mut self.io_ops);
        let mut moved = false;
        let mut finished = Vec::new();
        slots.retain_mut(|s| {
            let (done, m) = s.work.advance(self);
            moved |= m;
            if let Some(outcome) = done {
                finished.push((s.shared.clone(), outcome));
                false
            } else {
                true
            }
        });
        // Accesses started meanwhile (none today: starting is a user call) are kept.
        slots.append(&mut self.io_ops);
        self.io_ops = slots;
        self.io_busy = false;
        for (shared, outcome) in finished {
            shared.finish(outcome);
        }
        moved
    }
}
