//! Applying accumulate operations to a target's elements (MPI-4.1 §12.3.4): element by
//! element, each element atomic with respect to every other accumulate on it.
//!
//! Two ways, chosen per window and element so that every process that touches an element
//! picks the same one: a CPU atomic on the element (compare-exchange loops, or `fetch_add`
//! and friends where they exist) when the target's memory is mapped by every local process
//! (allocated and shared windows) and the element is 1, 2, 4 or 8 bytes and aligned; else
//! the target's accumulate lock, a spin lock in its control block taken by local origins,
//! by the target itself and by its one-sided service thread for origins on other nodes.
//! Depends on the reduction kernels of [`crate::coll`]; no communication.

use crate::coll::{Op, TypeKind};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

/// What an accumulate does to each target element.
#[derive(Clone, Debug)]
pub enum AccOp {
    /// `target = origin` (MPI_REPLACE).
    Replace,
    /// Leaves the target as it is (MPI_NO_OP, for fetching only).
    NoOp,
    /// `target = origin op target` with a predefined operation.
    Op(Op),
}

impl AccOp {
    /// A number naming the operation on the wire.
    pub(crate) fn code(&self) -> u8 {
        match self {
            AccOp::Replace => 100,
            AccOp::NoOp => 101,
            AccOp::Op(op) => op.predefined_code().unwrap_or(255),
        }
    }

    /// The operation [`AccOp::code`] names.
    pub(crate) fn from_code(code: u8) -> Option<AccOp> {
        match code {
            100 => Some(AccOp::Replace),
            101 => Some(AccOp::NoOp),
            c => Op::from_predefined_code(c).map(AccOp::Op),
        }
    }

    /// Whether the operation leaves the target unchanged.
    pub fn is_no_op(&self) -> bool {
        matches!(self, AccOp::NoOp)
    }
}

/// Holds a target's accumulate lock for its lifetime.
pub(crate) struct AccGuard<'a>(&'a AtomicU32);

impl<'a> AccGuard<'a> {
    /// Takes the lock word `lock` (0 free, 1 held), spinning: holders only copy and reduce
    /// a few elements.
    pub(crate) fn take(lock: &'a AtomicU32) -> AccGuard<'a> {
        let mut spins = 0u32;
        while lock
            .compare_exchange_weak(0, 1, SeqCst, std::sync::atomic::Ordering::Relaxed)
            .is_err()
        {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                // The holder may be a process that lost its core: let it run.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        AccGuard(lock)
    }
}

impl Drop for AccGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, SeqCst);
    }
}

/// Whether an element of `bytes` at `addr` takes a CPU atomic on a window with hardware
/// atomics (`hw`).
#[inline]
pub(crate) fn atomic_element(hw: bool, bytes: usize, addr: usize) -> bool {
    hw && matches!(bytes, 1 | 2 | 4 | 8) && addr.is_multiple_of(bytes)
}

/// `target[i] = origin[i] op target[i]` for the elements of `kind` at `target` (as many as
/// `origin` holds); the old elements go to `old` (as long as `origin`) when given. Elements
/// the hardware updates atomically ([`atomic_element`]) are; the others are updated under
/// `lock`.
///
/// # Safety
/// `target` must be valid for reads and writes of `origin.len()` bytes, and every other
/// access to those bytes that should be atomic must go through this function (or the
/// lock) with the same `hw`.
pub(crate) unsafe fn apply(
    kind: TypeKind,
    op: &AccOp,
    target: *mut u8,
    origin: &[u8],
    old: Option<&mut [u8]>,
    hw: bool,
    lock: &AtomicU32,
) {
    let size = kind.size_bytes();
    if origin.is_empty() {
        return;
    }
    if atomic_element(hw, size, target as usize) {
        let mut old = old;
        for (i, o) in origin.chunks_exact(size).enumerate() {
            let at = i * size;
            // SAFETY: inside the caller's range; aligned (target is, and size divides at).
            let prev = unsafe { atomic_one(kind, op, target.add(at), o) };
            if let Some(old) = old.as_deref_mut() {
                old[at..at + size].copy_from_slice(&prev[..size]);
            }
        }
        return;
    }
    let _g = AccGuard::take(lock);
    // SAFETY: the caller's range; the lock keeps other accumulates out.
    unsafe { apply_locked(kind, op, target, origin, old) };
}

/// [`apply`] with the lock already held (or no other process able to reach the bytes: a
/// local copy of another process's elements).
///
/// # Safety
/// `target` valid for reads and writes of `origin.len()` bytes, not changed by anyone else
/// meanwhile.
pub(crate) unsafe fn apply_locked(
    kind: TypeKind,
    op: &AccOp,
    target: *mut u8,
    origin: &[u8],
    old: Option<&mut [u8]>,
) {
    // SAFETY: the caller's contract.
    let t = unsafe { std::slice::from_raw_parts_mut(target, origin.len()) };
    if let Some(old) = old {
        old.copy_from_slice(t);
    }
    match op {
        AccOp::NoOp => {}
        AccOp::Replace => t.copy_from_slice(origin),
        AccOp::Op(op) => {
            // The kernels want elements aligned for their type: the target need not be.
            let esize = kind.size_bytes();
            if (target as usize).is_multiple_of(kind.align_bytes())
                && (origin.as_ptr() as usize).is_multiple_of(kind.align_bytes())
            {
                op.apply(kind, origin, t);
            } else {
                let mut a = [0u64; 4];
                let mut b = [0u64; 4];
                for (o, x) in origin.chunks_exact(esize).zip(t.chunks_exact_mut(esize)) {
                    let ab: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut a)[..esize];
                    ab.copy_from_slice(o);
                    let bb: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut b)[..esize];
                    bb.copy_from_slice(x);
                    op.apply(
                        kind,
                        &bytemuck::cast_slice(&a)[..esize],
                        &mut bytemuck::cast_slice_mut(&mut b)[..esize],
                    );
                    x.copy_from_slice(&bytemuck::cast_slice(&b)[..esize]);
                }
            }
        }
    }
}

/// One element updated with a CPU atomic; returns its old bytes (the first `size`).
///
/// # Safety
/// `p` valid, aligned for the element's size (1, 2, 4 or 8).
unsafe fn atomic_one(kind: TypeKind, op: &AccOp, p: *mut u8, origin: &[u8]) -> [u8; 8] {
    macro_rules! width {
        ($atomic:ty, $int:ty, $n:literal) => {{
            // SAFETY: the caller's contract (valid, aligned); every concurrent access to the
            // element is atomic (the module's rule).
            let a = unsafe { <$atomic>::from_ptr(p as *mut $int) };
            let o = <$int>::from_ne_bytes(origin.try_into().expect("element bytes"));
            let prev = match op {
                AccOp::NoOp => a.load(SeqCst),
                AccOp::Replace => a.swap(o, SeqCst),
                AccOp::Op(Op::Sum) if kind.is_integer() => a.fetch_add(o, SeqCst),
                AccOp::Op(Op::Band) if kind.is_integer() => a.fetch_and(o, SeqCst),
                AccOp::Op(Op::Bor) if kind.is_integer() => a.fetch_or(o, SeqCst),
                AccOp::Op(Op::Bxor) if kind.is_integer() => a.fetch_xor(o, SeqCst),
                AccOp::Op(f) => {
                    let mut cur = a.load(SeqCst);
                    loop {
                        let mut b = cur.to_ne_bytes();
                        // Copies of the two elements, aligned on the stack.
                        let ob = o.to_ne_bytes();
                        f.apply(kind, &ob, &mut b);
                        let new = <$int>::from_ne_bytes(b);
                        match a.compare_exchange_weak(cur, new, SeqCst, SeqCst) {
                            Ok(_) => break cur,
                            Err(x) => cur = x,
                        }
                    }
                }
            };
            let mut out = [0u8; 8];
            out[..$n].copy_from_slice(&prev.to_ne_bytes());
            out
        }};
    }
    match kind.size_bytes() {
        1 => width!(AtomicU8, u8, 1),
        2 => width!(AtomicU16, u16, 2),
        4 => width!(AtomicU32, u32, 4),
        _ => width!(AtomicU64, u64, 8),
    }
}

/// Compare-and-swap of the `compare.len()`-byte element at `target`: stores `new` when the
/// element equals `compare`; the old element goes to `old`. A CPU atomic under the rule of
/// [`atomic_element`], else under `lock`.
///
/// # Safety
/// `target` valid for `compare.len()` bytes; the module's rule for concurrent accesses.
pub(crate) unsafe fn compare_swap(
    target: *mut u8,
    compare: &[u8],
    new: &[u8],
    old: &mut [u8],
    hw: bool,
    lock: &AtomicU32,
) {
    let n = compare.len();
    if atomic_element(hw, n, target as usize) {
        macro_rules! width {
            ($atomic:ty, $int:ty) => {{
                // SAFETY: valid and aligned (atomic_element), all accesses atomic.
                let a = unsafe { <$atomic>::from_ptr(target as *mut $int) };
                let c = <$int>::from_ne_bytes(compare.try_into().expect("element bytes"));
                let v = <$int>::from_ne_bytes(new.try_into().expect("element bytes"));
                let prev = a
                    .compare_exchange(c, v, SeqCst, SeqCst)
                    .unwrap_or_else(|x| x);
                old.copy_from_slice(&prev.to_ne_bytes());
            }};
        }
        match n {
            1 => width!(AtomicU8, u8),
            2 => width!(AtomicU16, u16),
            4 => width!(AtomicU32, u32),
            _ => width!(AtomicU64, u64),
        }
        return;
    }
    let _g = AccGuard::take(lock);
    // SAFETY: the caller's range, under the lock.
    let t = unsafe { std::slice::from_raw_parts_mut(target, n) };
    old.copy_from_slice(t);
    if t == compare {
        t.copy_from_slice(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for op in [
            AccOp::Replace,
            AccOp::NoOp,
            AccOp::Op(Op::Sum),
            AccOp::Op(Op::MaxLoc),
        ] {
            let back = AccOp::from_code(op.code()).unwrap();
            assert_eq!(back.code(), op.code());
        }
        assert!(AccOp::from_code(77).is_none());
        for k in TypeKind::ALL {
            assert_eq!(TypeKind::from_code(k.code()), Some(k));
        }
    }

    #[test]
    fn atomic_and_locked_paths_agree() {
        let lock = AtomicU32::new(0);
        for hw in [true, false] {
            let mut t = [5i64, -3, 7];
            let o = [2i64, 10, -1];
            let mut old = [0u8; 24];
            // SAFETY: `t` is valid for 24 bytes and only this thread touches it.
            unsafe {
                apply(
                    TypeKind::I64,
                    &AccOp::Op(Op::Sum),
                    t.as_mut_ptr() as *mut u8,
                    bytemuck::cast_slice(&o),
                    Some(&mut old),
                    hw,
                    &lock,
                )
            };
            assert_eq!(t, [7, 7, 6]);
            assert_eq!(bytemuck::cast_slice::<u8, i64>(&old), &[5, -3, 7]);
            let mut f = [1.5f64, 2.0];
            // SAFETY: as above.
            unsafe {
                apply(
                    TypeKind::F64,
                    &AccOp::Op(Op::Max),
                    f.as_mut_ptr() as *mut u8,
                    bytemuck::cast_slice(&[3.0f64, -1.0]),
                    None,
                    hw,
                    &lock,
                )
            };
            assert_eq!(f, [3.0, 2.0]);
            let mut w = [9u32];
            let mut prev = [0u8; 4];
            // SAFETY: as above.
            unsafe {
                compare_swap(
                    w.as_mut_ptr() as *mut u8,
                    &9u32.to_ne_bytes(),
                    &4u32.to_ne_bytes(),
                    &mut prev,
                    hw,
                    &lock,
                )
            };
            assert_eq!((w[0], u32::from_ne_bytes(prev)), (4, 9));
        }
        assert_eq!(lock.load(SeqCst), 0);
    }

    #[test]
    fn threads_adding_lose_nothing() {
        let lock = AtomicU32::new(0);
        for hw in [true, false] {
            let mut cell = [0.0f64; 1];
            let p = cell.as_mut_ptr() as usize;
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| {
                        for _ in 0..2000 {
                            // SAFETY: every access to the element goes through apply.
                            unsafe {
                                apply(
                                    TypeKind::F64,
                                    &AccOp::Op(Op::Sum),
                                    p as *mut u8,
                                    &1.0f64.to_ne_bytes(),
                                    None,
                                    hw,
                                    &lock,
                                )
                            };
                        }
                    });
                }
            });
            assert_eq!(cell[0], 8000.0);
        }
    }
}
