//! Context ids and nonblocking duplications: the next free id, the ranges taken while
//! duplications are in flight, and the duplications progress advances.

use super::Engine;
use weft_core::{Error, ErrorKind, Result};

/// A duplication in flight and whether its request was dropped (it is removed once its
/// messages are done).
pub(super) struct IdupSlot {
    pub(super) key: u64,
    pub(super) state: crate::comm::IdupState,
    pub(super) dropped: bool,
}

impl Engine {
    /// Processes of the world this engine routes to.
    pub(crate) fn world_size(&self) -> u32 {
        self.routes.len() as u32
    }

    /// The next free context id (see `comm`: new communicators agree on the maximum).
    pub(crate) fn next_ctx(&self) -> u32 {
        self.next_ctx
    }

    pub(crate) fn set_next_ctx(&mut self, ctx: u32) {
        self.next_ctx = self.next_ctx.max(ctx);
    }

    /// Takes `width` fresh context ids on this process, `skip` ids above the next free one
    /// (they are below `next_ctx` from now on, so no later creation here picks them), and
    /// returns the first. Only duplications reserve, so the ids are recorded for their
    /// checks (see `ctx_taken`).
    pub(crate) fn reserve_ctx(&mut self, width: u32, skip: u32) -> u32 {
        let p = self.next_ctx + skip;
        self.ctx_taken.push((p, p + width));
        self.next_ctx = p + width;
        p
    }

    /// A new communicator of this process takes ids `first..first + width` (a creation's
    /// agreed context): later ones start above them.
    pub(crate) fn take_ctx(&mut self, first: u32, width: u32) {
        if !self.idups.is_empty() || self.idups_busy {
            self.ctx_taken.push((first, first + width));
        }
        self.set_next_ctx(first + width);
    }

    /// Whether ids `first..first + width` overlap ids this process took since its oldest
    /// duplication in flight started, apart from one range `own` (the asking duplication's
    /// proposal).
    pub(crate) fn ctx_overlaps(&self, first: u32, width: u32, own: (u32, u32)) -> bool {
        let mut own_seen = false;
        self.ctx_taken.iter().any(|&(a, b)| {
            if (a, b) == own && !own_seen {
                own_seen = true;
                return false;
            }
            a < first + width && first < b
        })
    }

    /// A blocking communicator creation starts (`end_creation` when it has set `next_ctx`).
    pub(crate) fn begin_creation(&mut self) {
        self.creating += 1;
    }

    pub(crate) fn end_creation(&mut self) {
        self.creating -= 1;
    }

    /// Whether a blocking communicator creation is between reading and setting `next_ctx`.
    pub(crate) fn creating(&self) -> bool {
        self.creating > 0
    }

    /// Files a started duplication; progress advances it from now on. Returns its key.
    pub(crate) fn add_idup(&mut self, state: crate::comm::IdupState) -> u64 {
        if self.idups.is_empty() {
            // Ids taken before lie below every proposal of the new duplication.
            self.ctx_taken.clear();
        }
        let key = self.next_idup_key;
        self.next_idup_key += 1;
        self.idups.push(IdupSlot {
            key,
            state,
            dropped: false,
        });
        key
    }

    /// Whether duplication `key` has an outcome (a context id or an error).
    pub(crate) fn idup_finished(&self, key: u64) -> bool {
        self.idups
            .iter()
            .find(|s| s.key == key)
            .is_none_or(|s| s.state.outcome.is_some())
    }

    /// The outcome of duplication `key` once it has one; the slot goes (or stays, marked
    /// dropped, until messages it still has in flight are done).
    pub(crate) fn take_idup(&mut self, key: u64) -> Option<Result<u32>> {
        let i = self.idups.iter().position(|s| s.key == key)?;
        let out = self.idups[i].state.outcome.take()?;
        self.drop_idup_at(i);
        Some(out)
    }

    /// Forgets duplication `key` (its request was dropped unfinished or has taken the outcome).
    pub(crate) fn drop_idup(&mut self, key: u64) {
        if let Some(i) = self.idups.iter().position(|s| s.key == key) {
            self.drop_idup_at(i);
        }
    }

    fn drop_idup_at(&mut self, i: usize) {
        let mut slot = self.idups.swap_remove(i);
        slot.state.abandon(self);
        // A dropped agreement posts nothing more: only its messages in flight are waited for.
        slot.state.outcome.get_or_insert_with(|| {
            Err(Error::new(
                ErrorKind::InvalidRequest,
                "the duplication was dropped",
            ))
        });
        if slot.state.in_flight() {
            slot.dropped = true;
            self.idups.push(slot);
        }
    }

    /// Advances every duplication once; true if any moved.
    pub(super) fn advance_idups(&mut self) -> bool {
        self.idups_busy = true;
        let mut slots = std::mem::take(&mut self.idups);
        let mut moved = false;
        for s in slots.iter_mut() {
            moved |= s.state.step(self);
        }
        slots.retain(|s| !s.dropped || s.state.in_flight());
        // Duplications filed meanwhile (none today: filing is a user call) are kept.
        slots.append(&mut self.idups);
        self.idups = slots;
        self.idups_busy = false;
        moved
    }
}
