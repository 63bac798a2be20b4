//! A user operation on a derived datatype in MPI_Reduce, MPI_Allreduce and their nonblocking
//! forms. weft may cut a reduction into chunks of basic elements, which would split the
//! derived items a user function expects whole, so the items travel whole instead and are
//! reduced locally in rank order (x0 op (x1 op (... op x(n-1)))), the order MPI-4.1 §6.9.1
//! defines for a non-commutative operation. Reduce gathers the items at the root
//! (MPI_Igather), allreduce at every rank (MPI_Iallgather: one collective, so nothing waits
//! for a second one to be started), and the ranks that gathered reduce once the items have
//! arrived. The user function sees the items in their own layout.
//!
//! It runs as a compound request (compound.rs): the gather is its one part and the
//! reduction its final step, so the start call returns at once and the test and wait calls
//! finish it (under MPI_THREAD_MULTIPLE without holding the lock between polls); the
//! blocking forms start it and wait. Depends on icoll.rs's gathers and compound.rs.

use crate::compound::{self, Then};
use crate::consts::*;
use crate::error::{err, R};
use crate::state::{handle_index, state, State, K_OP};
use std::os::raw::{c_int, c_void};

/// Starts the reduction of `count` items of `dt` by user operation `op` over `comm` into
/// `recv` (at `root`, or at every rank for `None`) as request `*req`.
///
/// # Safety
/// MPI's contract for the buffers: `send` (or `recv` for MPI_IN_PLACE) holds `count` items
/// of `dt`, `recv` receives them (at the root, or everywhere for allreduce), and both live
/// until the request completes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn start(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    root: Option<c_int>,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    let c = state(func)?.comm(comm)?.comm.clone();
    let root = match root {
        Some(r) => Some(crate::coll::root_of(&c, r)? as c_int),
        None => None,
    };
    // Taken now: an operation freed while the request is pending still reduces it.
    let f = handle_index(K_OP, op)
        .and_then(|i| state(func).ok()?.ops.get(i))
        .copied()
        .ok_or_else(|| err(MPI_ERR_OP, format!("operation handle {op:#x} is not valid")))?;
    let count = c_int::try_from(count)
        .map_err(|_| err(MPI_ERR_COUNT, format!("count {count} does not fit an int")))?;
    let n = c.size() as c_int;
    let gathers = root.is_none_or(|r| c.rank() as c_int == r);
    if in_place(send) && !gathers {
        return Err(err(
            MPI_ERR_BUFFER,
            "MPI_IN_PLACE as sendbuf is only allowed at the root",
        ));
    }
    let map = crate::dtype::map_of(dt)?;
    let block = count as i64 * map.extent();
    let span = if count == 0 {
        0
    } else {
        (n as i64 - 1) * block + (count as i64 - 1) * map.extent() + map.true_extent()
    };
    // Every rank's items, laid out as a user buffer of n * count items of dt.
    let mut all = vec![0u8; if gathers { span.max(0) as usize } else { 0 }];
    let shift = -(map.true_lb() as isize);
    let base = all.as_mut_ptr().wrapping_offset(shift) as *mut c_void;
    let src = if in_place(send) {
        recv as *const c_void
    } else {
        send
    };
    let mut part = MPI_REQUEST_NULL;
    // SAFETY: the caller's buffers by MPI's contract; `all` holds n blocks where it
    // receives and moves into the final step, which the request keeps until the gather has
    // completed (its heap block stays put).
    unsafe {
        match root {
            Some(r) => crate::icoll::start_igather(
                func, src, count, dt, base, count, dt, r, comm, &mut part,
            ),
            None => crate::icoll::start_iallgather(
                func, src, count, dt, base, count, dt, comm, &mut part,
            ),
        }
    }
    .map_err(|e| {
        err(
            e.class,
            format!("{func}: gathering the items failed: {}", e.message),
        )
    })?;
    let recv = recv as usize;
    let then: Then = Box::new(move |_: &mut State| {
        if !gathers {
            return Ok(());
        }
        let base = all.as_mut_ptr().wrapping_offset(shift);
        let at = |i: c_int| base.wrapping_offset((i as i64 * block) as isize) as *mut c_void;
        // acc = x(n-1); acc = x(i) op acc for i = n-2 .. 0: inout is the later block.
        for i in (0..n - 1).rev() {
            // SAFETY: both blocks hold `count` items of `dt` (the gather has completed).
            unsafe { f.call(at(i), at(n - 1), count as i64, dt) };
        }
        crate::coll::typed_copy(at(n - 1), recv as *mut c_void, count as i64, dt)
    });
    compound::file(state(func)?, comm, vec![part], Some(then), req)
}

/// The blocking form of [`start`]: starts it and waits for it.
///
/// # Safety
/// As [`start`], the buffers until this returns.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn blocking(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    root: Option<c_int>,
    comm: Handle,
) -> R<()> {
    let mut req = MPI_REQUEST_NULL;
    // SAFETY: the caller's contract.
    unsafe { start(func, send, recv, count, dt, op, root, comm, &mut req)? };
    crate::p2p::wait_own(&mut req).map_err(|e| {
        err(
            e.class,
            format!("{func}: the reduction failed: {}", e.message),
        )
    })
}

fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}
