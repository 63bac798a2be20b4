//! Synchronisation of a window (MPI-4.1 §12.5): which targets this process may access now
//! (its access epochs) and who may access it (its exposure epochs), and the calls that open
//! and close them.
//!
//! - Fence: completes this process's operations, then a barrier on the window's
//!   communicator; every member may then access every other until the next fence (unless
//!   MPI_MODE_NOSUCCEED).
//! - Post-start-complete-wait: `post` sends a zero-byte message to each origin of its group,
//!   `start` waits for those of its targets, `complete` completes the operations to each
//!   target and sends it a message, `wait`/`test` take those of the origins. MPI_MODE_NOCHECK
//!   (given to both `post` and `start`, as MPI requires) skips the post messages.
//! - Lock/unlock: the target's lock word (see `control.rs`): exclusive is a compare-and-swap
//!   from 0, shared an increment that backs out when an exclusive holder is there; waiting
//!   drives this process's progress and yields like any wait. MPI_MODE_NOCHECK skips the
//!   word. `lock_all` takes every member's lock shared.
//! - Flush completes the operations to a target (same-node ones already are; a service's
//!   lane is synchronised); sync is a memory fence.
//!
//! Errors of the synchronisation itself (an access outside any epoch, an unlock without a
//! lock, a fence inside a passive epoch) are `RmaSync` errors naming the call.

use super::{Path, Window};
use crate::rma::net;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use weft_core::{Error, ErrorKind, Result};

/// MPI_MODE_NOCHECK.
pub const MODE_NOCHECK: u32 = 1024;
/// MPI_MODE_NOPRECEDE.
pub const MODE_NOPRECEDE: u32 = 2048;
/// MPI_MODE_NOPUT.
pub const MODE_NOPUT: u32 = 4096;
/// MPI_MODE_NOSTORE.
pub const MODE_NOSTORE: u32 = 8192;
/// MPI_MODE_NOSUCCEED.
pub const MODE_NOSUCCEED: u32 = 16384;

/// Tag of the post messages on the window's communicator.
const TAG_POST: i32 = 1;
/// Tag of the complete messages.
const TAG_COMPLETE: i32 = 2;

/// A lock's kind (MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    /// One holder at a time.
    Exclusive,
    /// Any number of shared holders, no exclusive one.
    Shared,
}

/// This process's epochs on one window.
#[derive(Default, Debug)]
pub struct Epochs {
    /// A fence opened an epoch (no MPI_MODE_NOSUCCEED) and no fence closed it.
    fence: bool,
    /// Targets of the access epoch `start` opened.
    started: Option<Vec<u32>>,
    /// Origins of the exposure epoch `post` opened, and whether each has completed.
    posted: Option<Vec<(u32, bool)>>,
    /// Targets locked by `lock`: rank, kind, whether the lock word was taken.
    locks: Vec<(u32, LockType, bool)>,
    /// `lock_all` is in force; whether the lock words were taken.
    lock_all: Option<bool>,
}

impl Epochs {
    /// Refuses `what` (a call that needs no epoch open, such as MPI_Win_free) while one is.
    pub(crate) fn check_closed(&self, me: u32, what: &str) -> Result<()> {
        let open = if self.started.is_some() {
            "an access epoch from MPI_Win_start"
        } else if self.posted.is_some() {
            "an exposure epoch from MPI_Win_post"
        } else if !self.locks.is_empty() {
            "a lock from MPI_Win_lock"
        } else if self.lock_all.is_some() {
            "MPI_Win_lock_all"
        } else {
            return Ok(());
        };
        Err(sync_error(me, format!("{what} while {open} is open")))
    }

    fn passive(&self) -> bool {
        !self.locks.is_empty() || self.lock_all.is_some()
    }
}

fn sync_error(me: u32, what: String) -> Error {
    Error::new(ErrorKind::RmaSync, format!("rank {me}: {what}"))
}

impl Window {
    /// Checks that `target` may be accessed now by `what` (MPI_ERR_RMA_SYNC otherwise).
    pub(crate) fn check_access(&self, target: u32, what: &str) -> Result<()> {
        if self.may_access(target) {
            return Ok(());
        }
        Err(sync_error(
            self.weft_rank,
            format!(
                "{what} to window rank {target} outside an access epoch to it (open one with MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all)"
            ),
        ))
    }

    /// Whether an epoch allows accessing `target` now.
    #[inline]
    pub(crate) fn may_access(&self, target: u32) -> bool {
        let e = self.epochs.borrow();
        e.fence
            || e.lock_all.is_some()
            || e.locks.iter().any(|l| l.0 == target)
            || e.started.as_ref().is_some_and(|g| g.contains(&target))
    }

    /// MPI_Win_fence with assertions `assert` (MPI_MODE_* bits).
    pub fn fence(&self, assert: u32) -> Result<()> {
        self.epochs
            .borrow()
            .check_closed(self.weft_rank, "MPI_Win_fence")?;
        // Completes every operation, with a full memory fence.
        self.flush_all()?;
        if assert & MODE_NOPRECEDE == 0 || assert & MODE_NOSUCCEED == 0 {
            match &self.node_fence {
                Some(f) => f.wait(self.weft_rank, &self.comm.engine)?,
                // The nonblocking barrier [`Window::fence_start`] uses: members that wait
                // either way (a thread level apart) meet.
                None => self.comm.ibarrier()?.wait()?,
            }
        }
        self.epochs.borrow_mut().fence = assert & MODE_NOSUCCEED == 0;
        Ok(())
    }

    /// Starts MPI_Win_fence for a caller that must not block while the other members
    /// arrive (the MPI layer under MPI_THREAD_MULTIPLE): completes this process's
    /// operations as [`Window::fence`] does and arrives at the fence; then poll
    /// [`Window::fence_test`] until it says done, and finish with [`Window::fence_end`].
    pub fn fence_start(&self, assert: u32) -> Result<FenceWait> {
        self.epochs
            .borrow()
            .check_closed(self.weft_rank, "MPI_Win_fence")?;
        self.flush_all()?;
        if assert & MODE_NOPRECEDE != 0 && assert & MODE_NOSUCCEED != 0 {
            return Ok(FenceWait(FenceWaitOn::Done));
        }
        Ok(FenceWait(match &self.node_fence {
            Some(f) => FenceWaitOn::Node(f.arrive(&self.comm.engine)),
            None => FenceWaitOn::Barrier(self.comm.ibarrier()?),
        }))
    }

    /// Whether every member has arrived at the fence `w` started (drives progress once).
    pub fn fence_test(&self, w: &mut FenceWait) -> Result<bool> {
        match &mut w.0 {
            FenceWaitOn::Done => Ok(true),
            FenceWaitOn::Node(a) => {
                let f = self
                    .node_fence
                    .as_ref()
                    .expect("a node fence started on this window");
                if f.arrived_all(a) {
                    return Ok(true);
                }
                self.comm.engine.borrow_mut().progress();
                f.check_alive(self.weft_rank, a)?;
                Ok(f.arrived_all(a))
            }
            FenceWaitOn::Barrier(q) => q.test(),
        }
    }

    /// Ends the fence `fence_start` began once [`Window::fence_test`] said done: opens the
    /// next epoch unless `assert` has MPI_MODE_NOSUCCEED.
    pub fn fence_end(&self, assert: u32) {
        self.epochs.borrow_mut().fence = assert & MODE_NOSUCCEED == 0;
    }

    fn check_group(&self, group: &[u32], what: &str) -> Result<()> {
        let n = self.members.len() as u32;
        if let Some(&r) = group.iter().find(|&&r| r >= n) {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "rank {}: {what}: group member {r} is not a window rank (0..{n})",
                    self.weft_rank
                ),
            ));
        }
        Ok(())
    }

    /// MPI_Win_post: exposes this process's memory to the window ranks in `group`.
    pub fn post(&self, group: &[u32], assert: u32) -> Result<()> {
        self.check_group(group, "MPI_Win_post")?;
        if self.epochs.borrow().posted.is_some() {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_post while an exposure epoch is open".into(),
            ));
        }
        fence(Ordering::SeqCst);
        if assert & MODE_NOCHECK == 0 {
            for &o in group {
                self.comm.send::<u8>(&[], o, TAG_POST)?;
            }
        }
        self.epochs.borrow_mut().posted = Some(group.iter().map(|&r| (r, false)).collect());
        Ok(())
    }

    /// MPI_Win_start: opens an access epoch to the window ranks in `group`, once each has
    /// posted.
    pub fn start(&self, group: &[u32], assert: u32) -> Result<()> {
        let mut w = self.start_begin(group, assert)?;
        for (t, _) in &mut w.posts {
            self.comm.recv::<u8>(&mut [], *t as i32, TAG_POST)?;
        }
        self.start_end(w);
        Ok(())
    }

    /// Starts MPI_Win_start for a caller that must not block while the targets post (the
    /// MPI layer under MPI_THREAD_MULTIPLE): checks the call; then poll
    /// [`Window::start_test`] until it says done, and finish with [`Window::start_end`].
    pub fn start_begin(&self, group: &[u32], assert: u32) -> Result<StartWait> {
        self.check_group(group, "MPI_Win_start")?;
        if self.epochs.borrow().started.is_some() {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_start while an access epoch from MPI_Win_start is open".into(),
            ));
        }
        let posts = if assert & MODE_NOCHECK == 0 {
            group.iter().map(|&t| (t, false)).collect()
        } else {
            Vec::new()
        };
        Ok(StartWait {
            group: group.to_vec(),
            posts,
        })
    }

    /// Whether every target of the start `w` has posted (takes the post messages that
    /// arrived; drives progress once).
    pub fn start_test(&self, w: &mut StartWait) -> Result<bool> {
        for (t, got) in w.posts.iter_mut() {
            if !*got && self.comm.iprobe(*t as i32, TAG_POST)?.is_some() {
                self.comm.recv::<u8>(&mut [], *t as i32, TAG_POST)?;
                *got = true;
            }
        }
        Ok(w.posts.iter().all(|p| p.1))
    }

    /// Opens the access epoch of the start `w` (once every target posted).
    pub fn start_end(&self, w: StartWait) {
        self.epochs.borrow_mut().started = Some(w.group);
    }

    /// MPI_Win_complete: completes the operations of the access epoch and tells each target.
    pub fn complete(&self) -> Result<()> {
        let Some(group) = self.epochs.borrow_mut().started.take() else {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_complete without MPI_Win_start".into(),
            ));
        };
        for &t in &group {
            self.flush(t)?;
        }
        for &t in &group {
            self.comm.send::<u8>(&[], t, TAG_COMPLETE)?;
        }
        Ok(())
    }

    /// MPI_Win_wait: waits until every origin of the exposure epoch has completed.
    pub fn wait(&self) -> Result<()> {
        let Some(group) = self.epochs.borrow_mut().posted.take() else {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_wait without MPI_Win_post".into(),
            ));
        };
        for (o, done) in group {
            if !done {
                self.comm.recv::<u8>(&mut [], o as i32, TAG_COMPLETE)?;
            }
        }
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// MPI_Win_test: whether every origin of the exposure epoch has completed (it then ends).
    pub fn test(&self) -> Result<bool> {
        let mut e = self.epochs.borrow_mut();
        let Some(group) = e.posted.as_mut() else {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_test without MPI_Win_post".into(),
            ));
        };
        for (o, done) in group.iter_mut() {
            if !*done && self.comm.iprobe(*o as i32, TAG_COMPLETE)?.is_some() {
                self.comm.recv::<u8>(&mut [], *o as i32, TAG_COMPLETE)?;
                *done = true;
            }
        }
        if group.iter().all(|g| g.1) {
            e.posted = None;
            fence(Ordering::SeqCst);
            return Ok(true);
        }
        Ok(false)
    }

    /// MPI_Win_lock: a lock of `kind` on window rank `target`.
    pub fn lock(&self, kind: LockType, target: u32, assert: u32) -> Result<()> {
        let take = self.lock_begin(target, assert)?;
        if take {
            self.acquire(target, kind)?;
        }
        self.lock_end(kind, target, take);
        Ok(())
    }

    /// Checks MPI_Win_lock of `target` for a caller that must not block while another
    /// holder has the lock (the MPI layer under MPI_THREAD_MULTIPLE); whether the lock word
    /// must be taken: then poll [`Window::lock_attempt`] until it says held; finish with
    /// [`Window::lock_end`].
    pub fn lock_begin(&self, target: u32, assert: u32) -> Result<bool> {
        self.member(target, "MPI_Win_lock")?;
        let e = self.epochs.borrow();
        if e.lock_all.is_some() || e.locks.iter().any(|l| l.0 == target) {
            return Err(sync_error(
                self.weft_rank,
                format!(
                    "MPI_Win_lock of window rank {target}, which this process has locked already"
                ),
            ));
        }
        Ok(assert & MODE_NOCHECK == 0)
    }

    /// One attempt to take `target`'s lock word for a lock of `kind`: whether it is held
    /// now (drives this process's progress when it is not).
    pub fn lock_attempt(&self, kind: LockType, target: u32) -> Result<bool> {
        let got = self.lock_word(target)?.try_acquire(kind).map_err(|e| {
            e.context(format!(
                "rank {}: MPI_Win_lock of window rank {target}",
                self.weft_rank
            ))
        })?;
        if !got {
            self.comm.engine.borrow_mut().progress();
        }
        Ok(got)
    }

    /// Records the lock of `kind` on `target` ([`Window::lock_begin`] said whether the
    /// word was `taken`).
    pub fn lock_end(&self, kind: LockType, target: u32, taken: bool) {
        self.epochs.borrow_mut().locks.push((target, kind, taken));
    }

    /// MPI_Win_unlock: completes the operations to `target` and releases its lock.
    pub fn unlock(&self, target: u32) -> Result<()> {
        self.member(target, "MPI_Win_unlock")?;
        let pos = self
            .epochs
            .borrow()
            .locks
            .iter()
            .position(|l| l.0 == target);
        let Some(pos) = pos else {
            return Err(sync_error(
                self.weft_rank,
                format!(
                    "MPI_Win_unlock of window rank {target}, which this process has not locked"
                ),
            ));
        };
        self.flush(target)?;
        let (_, kind, taken) = self.epochs.borrow_mut().locks.remove(pos);
        if taken {
            self.release_lock(target, kind)?;
        }
        Ok(())
    }

    /// MPI_Win_lock_all: a shared lock on every member.
    pub fn lock_all(&self, assert: u32) -> Result<()> {
        let take = self.lock_all_begin(assert)?;
        if take {
            for t in 0..self.members.len() as u32 {
                if let Err(e) = self.acquire(t, LockType::Shared) {
                    for u in 0..t {
                        let _ = self.release_lock(u, LockType::Shared);
                    }
                    return Err(e);
                }
            }
        }
        self.lock_all_end(take);
        Ok(())
    }

    /// Checks MPI_Win_lock_all for a caller that must not block while an exclusive holder
    /// has a member's lock (the MPI layer under MPI_THREAD_MULTIPLE); whether the lock words
    /// must be taken: then poll [`Window::lock_all_attempt`] with `next` at 0 until it says
    /// held; finish with [`Window::lock_all_end`].
    pub fn lock_all_begin(&self, assert: u32) -> Result<bool> {
        if self.epochs.borrow().passive() {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_lock_all while this process holds locks on the window".into(),
            ));
        }
        Ok(assert & MODE_NOCHECK == 0)
    }

    /// Takes the members' locks shared from member `next` on, in rank order, until one is
    /// held by an exclusive holder (`next` then names it; drives progress) or all are held
    /// (true). On an error the locks taken are given back.
    pub fn lock_all_attempt(&self, next: &mut u32) -> Result<bool> {
        while (*next as usize) < self.members.len() {
            match self.lock_attempt(LockType::Shared, *next) {
                Ok(true) => *next += 1,
                Ok(false) => return Ok(false),
                Err(e) => {
                    for u in 0..*next {
                        let _ = self.release_lock(u, LockType::Shared);
                    }
                    return Err(e);
                }
            }
        }
        Ok(true)
    }

    /// Records MPI_Win_lock_all ([`Window::lock_all_begin`] said whether the words were
    /// `taken`).
    pub fn lock_all_end(&self, taken: bool) {
        self.epochs.borrow_mut().lock_all = Some(taken);
    }

    /// MPI_Win_unlock_all.
    pub fn unlock_all(&self) -> Result<()> {
        let Some(taken) = self.epochs.borrow().lock_all else {
            return Err(sync_error(
                self.weft_rank,
                "MPI_Win_unlock_all without MPI_Win_lock_all".into(),
            ));
        };
        self.flush_all()?;
        self.epochs.borrow_mut().lock_all = None;
        let mut first = Ok(());
        if taken {
            for t in 0..self.members.len() as u32 {
                let r = self.release_lock(t, LockType::Shared);
                if first.is_ok() {
                    first = r;
                }
            }
        }
        first
    }

    /// MPI_Win_flush (and MPI_Win_flush_local: a put's origin buffer is free when the put
    /// returns, and gets complete before they return): the operations to `target` are done.
    #[inline]
    pub fn flush(&self, target: u32) -> Result<()> {
        let m = self.member(target, "MPI_Win_flush")?;
        match m.path {
            Path::Service { pe, .. } => self.net()?.quiet_pe(pe),
            _ => {
                fence(Ordering::SeqCst);
                Ok(())
            }
        }
    }

    /// MPI_Win_flush_all (and _local_all): every operation of this process is done.
    pub fn flush_all(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        match &self.net {
            Some(n) => n.quiet(Some(0)),
            None => Ok(()),
        }
    }

    /// Whether `flush` must be called to complete operations to `target`, or they complete
    /// when their calls return.
    pub fn completes_at_once(&self, target: u32) -> bool {
        self.members
            .get(target as usize)
            .is_some_and(|m| !matches!(m.path, Path::Service { .. }))
    }

    /// What completes this process's operations to `target` (`None`: to every member) at
    /// the targets, for a caller that waits for it without holding what guards the window
    /// (the MPI layer under MPI_THREAD_MULTIPLE gives its thread lock back meanwhile: the
    /// completion waits for other nodes' one-sided services only, never for an MPI call).
    /// The flush, unlock, complete, fence or free that follows then finds them done.
    pub fn completion(&self, target: Option<u32>) -> Result<Completion> {
        let pe = match target {
            None => None,
            Some(t) => match self.member(t, "MPI_Win_flush")?.path {
                Path::Service { pe, .. } => Some(pe),
                _ => {
                    return Ok(Completion {
                        net: None,
                        pe: None,
                    })
                }
            },
        };
        Ok(Completion {
            net: self.net.clone(),
            pe,
        })
    }

    /// MPI_Win_sync: orders this process's loads and stores to the window memory with other
    /// processes' (a full memory fence).
    pub fn sync(&self) {
        fence(Ordering::SeqCst);
    }

    /// The lock word of `target`: mapped (this node) or through its service.
    fn lock_word(&self, target: u32) -> Result<LockWord<'_>> {
        let m = self.member(target, "lock")?;
        Ok(match m.path {
            Path::Service { pe, slot } => LockWord::Remote {
                net: self.net()?,
                at: net::Remote {
                    pe,
                    space: net::wire::SPACE_WINDOW_CONTROL,
                    offset: net::wire::window_offset(slot, super::control::LOCK_OFFSET)
                        .expect("small offset"),
                },
            },
            Path::Me => LockWord::Local(&self.my_control().lock),
            // SAFETY: same-node members' control blocks lie in the mapped region.
            _ => LockWord::Local(&unsafe { super::control::Control::at(m.control) }.lock),
        })
    }

    fn acquire(&self, target: u32, kind: LockType) -> Result<()> {
        let word = self.lock_word(target)?;
        let mut failed = None;
        let mut held = false;
        // The wait may ask again after a `true` (it checks before and inside its loop): once
        // held, the answer stays yes without another attempt.
        let mut attempt = || {
            if held || failed.is_some() {
                return true;
            }
            match word.try_acquire(kind) {
                Ok(got) => {
                    held = got;
                    got
                }
                Err(e) => {
                    failed = Some(e);
                    true
                }
            }
        };
        if !attempt() {
            crate::raw::wait_until(&self.comm, &mut attempt);
        }
        match failed {
            Some(e) => Err(e.context(format!(
                "rank {}: MPI_Win_lock of window rank {target}",
                self.weft_rank
            ))),
            None => Ok(()),
        }
    }

    fn release_lock(&self, target: u32, kind: LockType) -> Result<()> {
        self.lock_word(target)?.release(kind)
    }
}

/// A target's lock word as this process reaches it.
enum LockWord<'a> {
    Local(&'a AtomicU64),
    Remote { net: &'a net::Net, at: net::Remote },
}

impl LockWord<'_> {
    /// One attempt to take the lock; whether it is held now.
    fn try_acquire(&self, kind: LockType) -> Result<bool> {
        use super::control::EXCLUSIVE;
        match (self, kind) {
            (LockWord::Local(w), LockType::Exclusive) => Ok(w
                .compare_exchange(0, EXCLUSIVE, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()),
            (LockWord::Local(w), LockType::Shared) => {
                if w.load(Ordering::Relaxed) & EXCLUSIVE != 0 {
                    return Ok(false);
                }
                if w.fetch_add(1, Ordering::SeqCst) & EXCLUSIVE == 0 {
                    return Ok(true);
                }
                w.fetch_sub(1, Ordering::SeqCst);
                Ok(false)
            }
            (LockWord::Remote { net, at }, LockType::Exclusive) => {
                let old = net.amo(0, *at, 8, net::Amo::CompareSwap, 0, EXCLUSIVE, true)?;
                Ok(old == 0)
            }
            (LockWord::Remote { net, at }, LockType::Shared) => {
                let old = net.amo(0, *at, 8, net::Amo::Add, 1, 0, true)?;
                if old & EXCLUSIVE == 0 {
                    return Ok(true);
                }
                net.amo(0, *at, 8, net::Amo::Add, u64::MAX, 0, true)?;
                Ok(false)
            }
        }
    }

    /// Releases a lock of `kind` this process holds. Remotely the release is answered, so
    /// it is applied (after every earlier request of the lane) when this returns.
    fn release(&self, kind: LockType) -> Result<()> {
        use super::control::EXCLUSIVE;
        let delta = match kind {
            LockType::Exclusive => EXCLUSIVE.wrapping_neg(),
            LockType::Shared => u64::MAX,
        };
        match self {
            LockWord::Local(w) => {
                w.fetch_add(delta, Ordering::SeqCst);
                Ok(())
            }
            LockWord::Remote { net, at } => net
                .amo(0, *at, 8, net::Amo::Add, delta, 0, true)
                .map(|_| ()),
        }
    }
}

/// A fence in progress on one window ([`Window::fence_start`]).
#[derive(Debug)]
pub struct FenceWait(FenceWaitOn);

#[derive(Debug)]
enum FenceWaitOn {
    /// Nothing to wait for (MPI_MODE_NOPRECEDE with MPI_MODE_NOSUCCEED).
    Done,
    /// Every member is on this node: the barrier in the node region.
    Node(super::fence::FenceArrival),
    /// The window communicator's barrier.
    Barrier(crate::coll::CollRequest<'static>),
}

/// An MPI_Win_start waiting for its targets' posts ([`Window::start_begin`]).
#[derive(Debug)]
pub struct StartWait {
    group: Vec<u32>,
    /// The targets whose post message is awaited, and whether it came.
    posts: Vec<(u32, bool)>,
}

/// The completion of this process's operations to other nodes' targets of a window
/// ([`Window::completion`]): holds no reference into the window.
pub struct Completion {
    net: Option<std::sync::Arc<net::Net>>,
    /// One member's service (`None`: every lane).
    pe: Option<u32>,
}

impl Completion {
    /// Waits until the operations are complete at their targets (a full memory fence
    /// first).
    pub fn wait(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        match (&self.net, self.pe) {
            (None, _) => Ok(()),
            (Some(n), Some(pe)) => n.quiet_pe(pe),
            (Some(n), None) => n.quiet(Some(0)),
        }
    }
}
