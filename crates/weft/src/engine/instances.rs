//! A process in several weft instances: its world's, and one in the universe of each
//! MPI_Comm_spawn it took part in as parent or child (`crate::port`). MPI's progress rule
//! (MPI-4.1 §2.9) asks that a process blocked in any call, or polling with any test, still
//! plays its part in all its outstanding communication, whichever instance carries it: a
//! parent waiting on one spawn's children must answer the other spawn's children, whose
//! rendezvous, synchronous sends and collectives wait for it.
//!
//! The engines of one process's instances share one list ([`Instances`]); every progress
//! call of one of them ([`Engine::progress`]) polls the others once too. The list is made
//! when the second instance starts ([`link`]) and dropped again when only one is left
//! ([`unlink`]): a process in one instance pays one test of an empty field per progress
//! call. An engine in the middle of a call further up this thread's stack (the one that
//! polls, or one whose wait called into another instance) is borrowed and skipped; it goes
//! on with its own polling when that call resumes. A wait in several instances never
//! sleeps in the kernel (`WEFT_BLOCK`): one instance's deliveries do not ring another's
//! bell.

use super::Engine;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// The engines of one process's instances (the world's first), shared by each of them.
#[derive(Clone, Default)]
pub(crate) struct Instances(Rc<RefCell<Vec<Weak<RefCell<Engine>>>>>);

impl Engine {
    /// Polls the process's other instances once ([`Engine::progress_self`] of each that no
    /// call further up holds); true if anything moved there.
    #[cold]
    #[inline(never)]
    pub(super) fn progress_other_instances(&mut self) -> bool {
        let Some(all) = self.instances.clone() else {
            return false;
        };
        // Progress never starts or leaves an instance, so the list stays as it is meanwhile.
        let Ok(list) = all.0.try_borrow() else {
            return false;
        };
        let mut moved = false;
        for e in list.iter().filter_map(Weak::upgrade) {
            // This engine is borrowed by its caller: try_borrow_mut skips it.
            if let Ok(mut e) = e.try_borrow_mut() {
                moved |= e.progress_self();
            }
        }
        moved
    }

    /// Whether this engine shares its progress with other instances of the process.
    pub(super) fn in_several_instances(&self) -> bool {
        self.instances.is_some()
    }
}

/// Makes `joined` (the engine of an instance this process just started) and `first` (the
/// engine of its world) poll each other and every other instance of the process.
pub(crate) fn link(first: &Rc<RefCell<Engine>>, joined: &Rc<RefCell<Engine>>) {
    let all = first
        .borrow_mut()
        .instances
        .get_or_insert_with(|| {
            let all = Instances::default();
            all.0.borrow_mut().push(Rc::downgrade(first));
            all
        })
        .clone();
    all.0.borrow_mut().push(Rc::downgrade(joined));
    joined.borrow_mut().instances = Some(all);
}

/// Takes `left` (the engine of an instance this process leaves) out of its instances'
/// list; when one instance is left, it polls alone again.
pub(crate) fn unlink(left: &Rc<RefCell<Engine>>) {
    let Some(all) = left.borrow_mut().instances.take() else {
        return;
    };
    let remaining: Vec<Rc<RefCell<Engine>>> = {
        let mut list = all.0.borrow_mut();
        list.retain(|w| w.upgrade().is_some_and(|e| !Rc::ptr_eq(&e, left)));
        list.iter().filter_map(Weak::upgrade).collect()
    };
    if let [last] = remaining.as_slice() {
        last.borrow_mut().instances = None;
        all.0.borrow_mut().clear();
    }
}
