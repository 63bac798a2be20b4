//! A lane as the registry and the threads hold it: its owner thread (the one initiator whose
//! default-context lane it is) works on it without any atomic read-modify-write, every
//! other user (a quiet of another thread, a context's lane shared by threads) takes a lock.
//!
//! The owner's side is the light half of an asymmetric Dekker handshake: it marks itself
//! busy with a plain store, then reads whether a guard is up (a compiler fence between the
//! two); a guard raises its flag, then runs `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`,
//! which executes a full memory barrier on every running thread of the process, so that
//! either the owner sees the flag (and takes the lock like everyone else) or the guard sees
//! the owner busy (and waits for it to finish). The rare side pays one system call; the
//! per-put side pays two plain stores and a load. Where the kernel has no membarrier (or a
//! seccomp filter refuses it), every lane takes the lock.

use super::lane::Lane;
use std::cell::UnsafeCell;
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` and its registration (linux/membarrier.h).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// Whether this process registered for expedited private membarriers (tried once).
fn membarrier_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) and touches no memory of ours.
        let r = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        };
        r == 0
    })
}

/// A full memory barrier on every running thread of this process.
fn heavy_barrier() {
    // SAFETY: as in membarrier_ready; the process registered (callers check `owned`).
    let r = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_PRIVATE_EXPEDITED,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    // The registration succeeded, after which the kernel does not refuse the command;
    // going on without the barrier could let two threads use one lane at once.
    assert!(
        r == 0,
        "membarrier(PRIVATE_EXPEDITED) failed after the process registered for it: {}",
        std::io::Error::last_os_error()
    );
}

pub(crate) struct LaneCell {
    lane: UnsafeCell<Lane>,
    /// Taken by everyone but the owner on its fast path.
    lock: Mutex<()>,
    /// Whether the owner thread's fast path exists for this lane.
    owned: bool,
    /// The thread that created the lane (its owner when `owned`).
    owner: std::thread::ThreadId,
    /// Set by the owner while it works on the lane without the lock.
    owner_busy: AtomicBool,
    /// Set by a holder of `lock` that needs the owner out of the lane.
    guarded: AtomicBool,
}

// SAFETY: the lane inside is reached only through `with_owner` (by its one owner thread,
// excluded from guarded users by the busy/guard handshake) and `with_locked` (under `lock`,
// with the guard up when the lane has an owner), so no two threads touch it at once; Lane
// itself is Send.
unsafe impl Sync for LaneCell {}

impl LaneCell {
    /// A lane whose owner thread may use [`Self::with_owner`] (`owned`), or one that every
    /// thread uses with [`Self::with_locked`] (a context's lane shared by its threads).
    pub(crate) fn new(lane: Lane, owned: bool) -> LaneCell {
        LaneCell {
            lane: UnsafeCell::new(lane),
            lock: Mutex::new(()),
            owned: owned && membarrier_ready(),
            owner: std::thread::current().id(),
            owner_busy: AtomicBool::new(false),
            guarded: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the lane from its owner thread: the only thread that may call this for
    /// an owned lane (the one whose default-context lane it is).
    #[inline]
    pub(crate) fn with_owner<R>(&self, f: impl FnOnce(&mut Lane) -> R) -> R {
        if !self.owned {
            return self.with_locked(f);
        }
        self.owner_busy.store(true, Ordering::Relaxed);
        // The membarrier of a guard orders this store before the load below as a full
        // fence would; the compiler must not reorder them either.
        compiler_fence(Ordering::SeqCst);
        if self.guarded.load(Ordering::Acquire) {
            self.owner_busy.store(false, Ordering::Release);
            return self.with_locked(f);
        }
        // SAFETY: we are the owner (caller's contract) and no guard is up: a guard raised
        // from now on sees `owner_busy` and waits until the store below; other users hold
        // `lock` and raise the guard before touching the lane.
        let r = f(unsafe { &mut *self.lane.get() });
        self.owner_busy.store(false, Ordering::Release);
        r
    }

    /// Runs `f` on the lane from any thread (the owner's fast path when it is the owner).
    #[inline]
    pub(crate) fn with_any<R>(&self, f: impl FnOnce(&mut Lane) -> R) -> R {
        if self.owned && std::thread::current().id() == self.owner {
            self.with_owner(f)
        } else {
            self.with_locked(f)
        }
    }

    /// Runs `f` on the lane from any thread, taking the lock.
    pub(crate) fn with_locked<R>(&self, f: impl FnOnce(&mut Lane) -> R) -> R {
        // A panic inside a lane call leaves at worst a half-sent buffer, which the lane's
        // error state already covers.
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.owned {
            self.guarded.store(true, Ordering::Relaxed);
            heavy_barrier();
            let mut spins = 0u32;
            while self.owner_busy.load(Ordering::Acquire) {
                // The owner is inside one lane call (a send at worst): wait it out.
                spins += 1;
                if spins < 100 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        // SAFETY: we hold `lock`, so no other locked user is inside; with an owner, the
        // guard is up and the owner was seen not busy after the barrier, so it will see the
        // guard and take the lock instead.
        let r = f(unsafe { &mut *self.lane.get() });
        if self.owned {
            self.guarded.store(false, Ordering::Release);
        }
        r
    }
}
