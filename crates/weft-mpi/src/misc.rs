//! Smaller parts of the standard: handle conversion to and from `int` (MPI 5.0 ABI,
//! `MPI_*_toint` / `MPI_*_fromint`, and the message handle's Fortran conversion), status
//! setters (MPI-4.1 §13.3), communicator info hints
//! (§7.4.4), MPI_Comm_create_group (§7.4.2) and MPI_Pcontrol (§15.2.4).

use crate::consts::*;
use crate::dtype::{map_of, put};
use crate::error::{err, finish, R};
use crate::p2p::MpiStatus;
use crate::state::{
    handle_index, make_handle, state, K_COMM, K_ERRH, K_GROUP, K_INFO, K_MSG, K_OP, K_REQ, K_TYPE,
};
use std::os::raw::c_int;

/// Handles below this are the standard's predefined constants and convert as themselves.
const PREDEFINED_LIMIT: usize = 0x1000;

fn to_int(h: Handle) -> c_int {
    if h < PREDEFINED_LIMIT {
        return h as c_int;
    }
    // Created handles: kind in the high byte, index below 2^24.
    (((h >> 32) << 24) | (h & 0xff_ffff)) as c_int
}

fn from_int(kind: usize, v: c_int) -> Handle {
    let v = v as u32 as usize;
    if v < PREDEFINED_LIMIT {
        return v;
    }
    if v >> 24 != kind {
        // Not one of ours: a handle no table holds, so any use reports it as invalid.
        return make_handle(kind, 0xffff_ffff);
    }
    make_handle(kind, v & 0xff_ffff)
}

/// A handle as the `int` of the MPI 5.0 ABI's `_toint` functions.
pub(crate) fn handle_to_int(h: Handle) -> c_int {
    to_int(h)
}

/// The handle of kind `kind` an `int` of [`handle_to_int`] names.
pub(crate) fn handle_from_int(kind: usize, v: c_int) -> Handle {
    from_int(kind, v)
}

macro_rules! conversions {
    ($($to:ident, $from:ident, $kind:expr;)*) => {$(
        /// Handle to int (MPI 5.0 ABI): predefined handles keep their value.
        #[no_mangle]
        pub unsafe extern "C" fn $to(h: Handle) -> c_int {
            let _entered = crate::threads::enter();
            to_int(h)
        }

        /// Int to handle (MPI 5.0 ABI), the inverse of the `_toint` function.
        #[no_mangle]
        pub unsafe extern "C" fn $from(v: c_int) -> Handle {
            let _entered = crate::threads::enter();
            from_int($kind, v)
        }
    )*};
}

conversions! {
    MPI_Comm_toint, MPI_Comm_fromint, K_COMM;
    MPI_Group_toint, MPI_Group_fromint, K_GROUP;
    MPI_Request_toint, MPI_Request_fromint, K_REQ;
    MPI_Type_toint, MPI_Type_fromint, K_TYPE;
    MPI_Op_toint, MPI_Op_fromint, K_OP;
    MPI_Info_toint, MPI_Info_fromint, K_INFO;
    MPI_Errhandler_toint, MPI_Errhandler_fromint, K_ERRH;
    MPI_Message_toint, MPI_Message_fromint, K_MSG;
    MPI_Session_toint, MPI_Session_fromint, crate::session::K_SESSION;
    MPI_File_toint, MPI_File_fromint, crate::file::K_FILE;
}

/// MPI_Message_c2f (MPI-4.1 §19.3.4): a message handle as a Fortran integer (MPI_Fint is
/// `int`), the same value as MPI_Message_toint. Programs check that the conversion exists
/// under both names (MPICH's mprobe test).
#[no_mangle]
pub unsafe extern "C" fn MPI_Message_c2f(h: Handle) -> c_int {
    let _entered = crate::threads::enter();
    to_int(h)
}

/// MPI_Message_f2c (MPI-4.1 §19.3.4): the inverse of MPI_Message_c2f.
#[no_mangle]
pub unsafe extern "C" fn MPI_Message_f2c(v: c_int) -> Handle {
    let _entered = crate::threads::enter();
    from_int(K_MSG, v)
}

/// The profiling name of MPI_Message_c2f (MPI-4.1 §15.2).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Message_c2f(h: Handle) -> c_int {
    let _entered = crate::threads::enter();
    to_int(h)
}

/// The profiling name of MPI_Message_f2c (MPI-4.1 §15.2).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Message_f2c(v: c_int) -> Handle {
    let _entered = crate::threads::enter();
    from_int(K_MSG, v)
}

fn status_mut<'a>(status: *mut MpiStatus) -> R<&'a mut MpiStatus> {
    if status.is_null() {
        return Err(err(MPI_ERR_ARG, "status is NULL"));
    }
    // SAFETY: non-null status pointers are writable by the MPI calling contract.
    Ok(unsafe { &mut *status })
}

/// MPI_Status_set_elements (MPI-4.1 §13.3): the status then reports `count` elements.
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements(
    status: *mut MpiStatus,
    dt: Handle,
    count: c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = set_elements(status, dt, count as i64);
    finish(MPI_COMM_WORLD, "MPI_Status_set_elements", r)
}

/// MPI_Status_set_elements_c (MPI-4.1 §13.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_c(
    status: *mut MpiStatus,
    dt: Handle,
    count: i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = set_elements(status, dt, count);
    finish(MPI_COMM_WORLD, "MPI_Status_set_elements_c", r)
}

fn set_elements(status: *mut MpiStatus, dt: Handle, count: i64) -> R<()> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    let map = map_of(dt)?;
    let per = map.elements_per_item().max(1);
    // Whole items where possible, so MPI_Get_count agrees; the bytes of `count` basic elements.
    let bytes = map.size_bytes() * (count as u64) / per;
    status_mut(status)?.set_bytes(bytes);
    Ok(())
}

/// MPI_Status_set_cancelled (MPI-4.1 §13.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status).map(|s| s.cancelled = (flag != 0) as c_int);
    finish(MPI_COMM_WORLD, "MPI_Status_set_cancelled", r)
}

/// MPI_Status_set_source (MPI 5.0 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_source(status: *mut MpiStatus, source: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status).map(|s| s.source = source);
    finish(MPI_COMM_WORLD, "MPI_Status_set_source", r)
}

/// MPI_Status_set_tag (MPI 5.0 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_tag(status: *mut MpiStatus, tag: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status).map(|s| s.tag = tag);
    finish(MPI_COMM_WORLD, "MPI_Status_set_tag", r)
}

/// MPI_Status_set_error (MPI 5.0 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_error(status: *mut MpiStatus, error: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status).map(|s| s.error = error);
    finish(MPI_COMM_WORLD, "MPI_Status_set_error", r)
}

/// MPI_Comm_set_info (MPI-4.1 §7.4.4): hints are validated and, as the standard allows,
/// none changes weft's behaviour.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_info(comm: Handle, info: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Comm_set_info").and_then(|s| {
        s.comm(comm)?;
        s.check_info_or_null(info)
    });
    finish(comm, "MPI_Comm_set_info", r)
}

/// MPI_Comm_get_info (MPI-4.1 §7.4.4): a new info object of the hints in use (none).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: Handle, info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    if let Err(e) = state("MPI_Comm_get_info").and_then(|s| s.comm(comm).map(|_| ())) {
        return finish(comm, "MPI_Comm_get_info", Err(e));
    }
    // SAFETY: forwarded caller contract.
    unsafe { crate::env::info_create_as("MPI_Comm_get_info", info) }
}

/// MPI_Comm_create_group (MPI-4.1 §7.4.2): collective over the group's members only.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(
    comm: Handle,
    group: Handle,
    tag: c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_create_group")?;
        if tag < 0 {
            return Err(err(MPI_ERR_TAG, format!("tag {tag} is negative")));
        }
        let g = s.group(group)?.to_vec();
        let me = s.world_rank();
        if !g.contains(&me) {
            return put!(newcomm, MPI_COMM_NULL);
        }
        let c = crate::comm::group_of("MPI_Comm_create_group", Some(comm), &g, tag)?;
        let h = state("MPI_Comm_create_group")?.add_comm(c);
        put!(newcomm, h)
    })();
    finish(comm, "MPI_Comm_create_group", r)
}

/// MPI_Pcontrol (MPI-4.1 §15.2.4): weft has no profiling levels to switch, which the
/// standard allows ("the effect is implementation dependent").
#[no_mangle]
pub unsafe extern "C" fn MPI_Pcontrol(_level: c_int) -> c_int {
    let _entered = crate::threads::enter();
    MPI_SUCCESS
}

/// The MPI-3 `_x` calls (MPI-4.1 §19.1.2 keeps them; MPI_Count is `int64_t` in the ABI):
/// each is its large-count `_c` twin under the older name.
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut MpiStatus,
    dt: Handle,
    count: i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = set_elements(status, dt, count);
    finish(MPI_COMM_WORLD, "MPI_Status_set_elements_x", r)
}

/// MPI_Get_elements_x (MPI-4.1 §5.1.11): as MPI_Get_elements_c.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { crate::p2p::get_elements_c_as("MPI_Get_elements_x", status, dt, count) }
}

/// MPI_Type_size_x (MPI-4.1 §5.1.5): as MPI_Type_size_c.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(dt: Handle, size: *mut i64) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { crate::dtype::type_size_c_as("MPI_Type_size_x", dt, size) }
}

/// MPI_Type_get_extent_x (MPI-4.1 §5.1.7): as MPI_Type_get_extent_c.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_x(
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { crate::dtype::type_get_extent_c_as("MPI_Type_get_extent_x", dt, lb, extent) }
}

/// MPI_Type_get_true_extent_x (MPI-4.1 §5.1.8): as MPI_Type_get_true_extent_c.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { crate::dtype::type_get_true_extent_c_as("MPI_Type_get_true_extent_x", dt, lb, extent) }
}

/// MPI_Status_get_source (MPI 5.0 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_get_source(
    status: *const MpiStatus,
    source: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status as *mut MpiStatus).and_then(|s| put!(source, s.source));
    finish(MPI_COMM_WORLD, "MPI_Status_get_source", r)
}

/// MPI_Status_get_tag (MPI 5.0 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_get_tag(status: *const MpiStatus, tag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status as *mut MpiStatus).and_then(|s| put!(tag, s.tag));
    finish(MPI_COMM_WORLD, "MPI_Status_get_tag", r)
}

/// MPI_Status_get_error (MPI 5.0 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_get_error(
    status: *const MpiStatus,
    error: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = status_mut(status as *mut MpiStatus).and_then(|s| put!(error, s.error));
    finish(MPI_COMM_WORLD, "MPI_Status_get_error", r)
}

/// Whether request `h` is MPI_REQUEST_NULL or an inactive persistent request (these count
/// as complete with an empty status and take no part in "any"/"some" completion).
fn request_inactive(h: Handle) -> R<bool> {
    if h == MPI_REQUEST_NULL {
        return Ok(true);
    }
    let s = state("MPI_Request_get_status")?;
    match handle_index(K_REQ, h) {
        Some(i) if s.reqs.get(i).is_some() => Ok(s.req_inactive(i)),
        _ => Err(err(MPI_ERR_REQUEST, format!("request {h:#x} is not valid"))),
    }
}

/// The requests of an array argument, refusing a NULL array with entries.
fn request_array<'a>(count: c_int, reqs: *const Handle) -> R<&'a [Handle]> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    if count == 0 {
        return Ok(&[]);
    }
    if reqs.is_null() {
        return Err(err(MPI_ERR_ARG, "array_of_requests is NULL"));
    }
    // SAFETY: the array holds `count` requests (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(reqs, count as usize) })
}

/// MPI_Request_get_status on one request: its flag, with `status` filled when set. The
/// error handler has already run when this fails.
fn peek(func: &str, h: Handle, status: *mut MpiStatus) -> Result<bool, c_int> {
    let mut flag = 0;
    // SAFETY: valid pointers; MPI_Request_get_status checks the handle.
    let rc = unsafe { crate::p2p::request_get_status_as(func, h, &mut flag, status) };
    if rc != MPI_SUCCESS {
        return Err(rc);
    }
    Ok(flag != 0)
}

/// MPI_Request_get_status_all (MPI 5.0 §3.7.3): whether every request is complete, without
/// completing any; the statuses are written only when all are.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_all(
    count: c_int,
    reqs: *const Handle,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    let reqs = match request_array(count, reqs).and_then(|r| {
        if flag.is_null() {
            Err(err(MPI_ERR_ARG, "flag is NULL"))
        } else {
            Ok(r)
        }
    }) {
        Ok(r) => r,
        Err(e) => return finish(MPI_COMM_WORLD, "MPI_Request_get_status_all", Err(e)),
    };
    let mut scratch = vec![MpiStatus::default(); reqs.len()];
    for (i, &h) in reqs.iter().enumerate() {
        match peek("MPI_Request_get_status_all", h, &mut scratch[i]) {
            Ok(true) => {}
            Ok(false) => {
                // SAFETY: checked non-null above.
                unsafe { *flag = 0 };
                return MPI_SUCCESS;
            }
            Err(rc) => return rc,
        }
    }
    if !statuses.is_null() {
        for (i, st) in scratch.into_iter().enumerate() {
            // SAFETY: the status array holds `count` entries (the caller's contract).
            unsafe { *statuses.add(i) = st };
        }
    }
    // SAFETY: checked non-null above.
    unsafe { *flag = 1 };
    MPI_SUCCESS
}

/// MPI_Request_get_status_any (MPI 5.0 §3.7.3): the first complete active request, without
/// completing it; with no active request, flag is true and index MPI_UNDEFINED.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    reqs: *const Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    const NAME: &str = "MPI_Request_get_status_any";
    let reqs = match request_array(count, reqs).and_then(|r| {
        if flag.is_null() || index.is_null() {
            Err(err(MPI_ERR_ARG, "index or flag is NULL"))
        } else {
            Ok(r)
        }
    }) {
        Ok(r) => r,
        Err(e) => return finish(MPI_COMM_WORLD, NAME, Err(e)),
    };
    let mut active = 0;
    for (i, &h) in reqs.iter().enumerate() {
        match request_inactive(h) {
            Ok(true) => continue,
            Ok(false) => active += 1,
            Err(e) => return finish(MPI_COMM_WORLD, NAME, Err(e)),
        }
        let mut st = MpiStatus::default();
        match peek("MPI_Request_get_status_any", h, &mut st) {
            Ok(true) => {
                crate::p2p::store(status, st);
                // SAFETY: checked non-null above.
                unsafe { (*index, *flag) = (i as c_int, 1) };
                return MPI_SUCCESS;
            }
            Ok(false) => {}
            Err(rc) => return rc,
        }
    }
    if active == 0 && !status.is_null() {
        // The empty status of MPI-4.1 §3.7.3, its error field included (as MPICH writes it).
        // SAFETY: non-null status pointers are writable by the MPI calling contract.
        unsafe { *status = crate::p2p::empty_status() };
    }
    // SAFETY: checked non-null above.
    unsafe { (*index, *flag) = (MPI_UNDEFINED, (active == 0) as c_int) };
    MPI_SUCCESS
}

/// MPI_Request_get_status_some (MPI 5.0 §3.7.3): the complete active requests, without
/// completing them; with no active request, outcount is MPI_UNDEFINED.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    reqs: *const Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    const NAME: &str = "MPI_Request_get_status_some";
    let reqs = match request_array(incount, reqs).and_then(|r| {
        if outcount.is_null() || (incount > 0 && indices.is_null()) {
            Err(err(MPI_ERR_ARG, "outcount or array_of_indices is NULL"))
        } else {
            Ok(r)
        }
    }) {
        Ok(r) => r,
        Err(e) => return finish(MPI_COMM_WORLD, NAME, Err(e)),
    };
    let (mut active, mut done) = (0, 0usize);
    for (i, &h) in reqs.iter().enumerate() {
        match request_inactive(h) {
            Ok(true) => continue,
            Ok(false) => active += 1,
            Err(e) => return finish(MPI_COMM_WORLD, NAME, Err(e)),
        }
        let mut st = MpiStatus::default();
        match peek("MPI_Request_get_status_some", h, &mut st) {
            Ok(true) => {
                // SAFETY: the arrays hold `incount` entries (the caller's contract).
                unsafe {
                    *indices.add(done) = i as c_int;
                    if !statuses.is_null() {
                        *statuses.add(done) = st;
                    }
                }
                done += 1;
            }
            Ok(false) => {}
            Err(rc) => return rc,
        }
    }
    let n = if active == 0 {
        MPI_UNDEFINED
    } else {
        done as c_int
    };
    // SAFETY: checked non-null above.
    unsafe { *outcount = n };
    MPI_SUCCESS
}
