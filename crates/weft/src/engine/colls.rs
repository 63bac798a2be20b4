//! The engine's side of collectives: registered schedules advanced by every progress call
//! (with the re-entry guard), the collective tuning and the node's verdict on Cross Memory
//! Attach that shared-memory collectives cache here.

use super::Engine;
use crate::coll::request::{self as coll_request, ActivePtr};
use crate::coll::Tuning;
use std::rc::Rc;

impl Engine {
    /// The collective tuning of this process.
    pub(crate) fn tuning(&self) -> Rc<Tuning> {
        self.tuning.clone()
    }

    /// Replaces the collective tuning.
    pub(crate) fn set_tuning(&mut self, tuning: Tuning) {
        self.tuning = Rc::new(tuning);
        self.tuning_gen += 1;
    }

    /// Changes with every [`Engine::set_tuning`]: what communicators derived from the tuning
    /// (ranks per node) is stale when it differs.
    pub(crate) fn tuning_gen(&self) -> u64 {
        self.tuning_gen
    }

    /// The node's verdict on Cross Memory Attach once every local rank has voted (it never
    /// changes after that); None before.
    pub(crate) fn cma_verdict(&self) -> Option<bool> {
        self.cma_verdict
    }

    /// Whether this rank has voted on Cross Memory Attach (see [`Engine::set_cma_voted`]).
    pub(crate) fn cma_voted(&self) -> bool {
        self.cma_voted
    }

    /// Records that this rank's vote is in the node's area (it stays for the segment's life).
    pub(crate) fn set_cma_voted(&mut self) {
        self.cma_voted = true;
    }

    /// Records the node's final verdict on Cross Memory Attach.
    pub(crate) fn set_cma_verdict(&mut self, usable: bool) {
        self.cma_verdict = Some(usable);
    }

    /// Records a started collective, to be advanced by every progress call until it
    /// finishes.
    pub(crate) fn register_coll(&mut self, p: ActivePtr) {
        self.colls.push(p);
    }

    /// Forgets a collective (finished, or about to be freed); nothing if already forgotten.
    pub(crate) fn deregister_coll(&mut self, p: ActivePtr) {
        if let Some(i) = self.colls.iter().position(|&q| q == p) {
            self.colls.swap_remove(i);
        }
    }

    /// Advances one collective on its owner's behalf (test or wait), forgetting it once it
    /// has finished.
    ///
    /// # Safety
    /// `p` points to a live registered collective whose owner holds no reference to it
    /// during the call.
    pub(crate) unsafe fn drive_coll(&mut self, p: ActivePtr) {
        // SAFETY: per the contract; the guard keeps progress made inside from advancing
        // `p` (or any other collective) a second time.
        let (finished, _) = self.advancing_coll(|e| unsafe { coll_request::advance(p, e) });
        if finished {
            self.deregister_coll(p);
        }
    }

    /// Runs `f`, which advances a blocking collective that is not registered, under the
    /// same guard as [`Engine::drive_coll`]: progress made inside advances no collective.
    /// A panic inside `f` (a user reduction operation) leaves the guard set: catching it
    /// here cost 15-50 ns per small blocking collective (measured). The engine's callers
    /// clear it instead ([`Engine::clear_advancing`]) where they take the engine afresh,
    /// which no advance can be in progress at.
    pub(crate) fn advancing_coll<R>(&mut self, f: impl FnOnce(&mut Engine) -> R) -> R {
        debug_assert!(!self.colls_busy, "a collective driven from inside another");
        self.colls_busy = true;
        let r = f(self);
        self.colls_busy = false;
        r
    }

    /// Clears the guard [`Engine::advancing_coll`] set: for a caller that has just borrowed
    /// the engine (so nothing is being advanced: a set guard was left by a panic that
    /// unwound through an advance), or that a panic unwinds through.
    pub(crate) fn clear_advancing(&mut self) {
        self.colls_busy = false;
    }

    /// Advances every registered collective once; forgets the finished ones. True if one
    /// started a step or finished.
    pub(super) fn advance_colls(&mut self) -> bool {
        self.advancing_coll(|e| {
            let mut moved = false;
            let mut i = 0;
            while i < e.colls.len() {
                let p = e.colls[i];
                // SAFETY: a registered collective is live (its request deregisters before
                // freeing it) and its owner holds no reference to it while it calls into
                // the engine; `colls_busy` keeps it from being advanced again from inside.
                let (finished, started) = unsafe { coll_request::advance(p, e) };
                moved |= started;
                if finished {
                    e.colls.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            moved
        })
    }
}
