//! MPI sessions (MPI-4.1 §11.3): session handles, their process sets, info and error
//! handlers. A session shares weft's start with the world model (`env::start`): the first
//! of MPI_Init and MPI_Session_init starts weft, and weft ends when MPI_Finalize has run (or
//! MPI_Init never did) and the last session is finalized. weft's start and end are
//! collective over the job, so every rank must open and close its sessions alike (what
//! MPI's examples do). The process sets are `mpi://WORLD` and `mpi://SELF` (names compared
//! without regard to case). Depends on env.rs (start, stop, info objects, error handlers)
//! and the state.

use crate::consts::*;
use crate::dtype::put;
use crate::env::{
    c_str, errhandler_exists, errhandler_fn, info_insert, start, stop, thread_level_name,
};
use crate::error::{err, fatal, raise, write_c_string, MpiError, R};
use crate::state::{handle_index, make_handle, state, state_opt, ErrFn, Table};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

/// MPI_ERR_SESSION of the standard ABI.
pub const MPI_ERR_SESSION: c_int = 60;
/// MPI_SESSION_NULL of the standard ABI.
pub const MPI_SESSION_NULL: Handle = 0x120;

/// Handle kind of sessions (the state's kinds stop below 16).
pub(crate) const K_SESSION: usize = 19;

/// The process sets, in the order MPI_Session_get_nth_pset numbers them.
const PSETS: &[&str] = &["mpi://WORLD", "mpi://SELF"];

/// An open session: its error handler and the info it was started with (plus the thread
/// level it got).
struct Session {
    errhandler: Handle,
    info: Vec<(String, String)>,
}

static SESSIONS: Mutex<Table<Session>> = Mutex::new(Table::new());
static OPEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn sessions() -> MutexGuard<'static, Table<Session>> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sessions initialized and not finalized yet.
pub fn open_sessions() -> usize {
    OPEN.load(Ordering::Acquire)
}

fn bad_session(h: Handle) -> MpiError {
    if h == MPI_SESSION_NULL {
        err(MPI_ERR_SESSION, "session is MPI_SESSION_NULL")
    } else {
        err(
            MPI_ERR_SESSION,
            format!("session handle {h:#x} is not a valid session (finalized or never made)"),
        )
    }
}

/// Checks that `h` is a live session (MPI_ERR_SESSION otherwise).
pub(crate) fn check(h: Handle) -> R<()> {
    errhandler_of(h).map(|_| ())
}

/// The error handler of session `h`, or MPI_ERR_SESSION.
fn errhandler_of(h: Handle) -> R<Handle> {
    handle_index(K_SESSION, h)
        .and_then(|i| sessions().get(i).map(|s| s.errhandler))
        .ok_or_else(|| bad_session(h))
}

/// Reports `e`, raised by `func` on `session`, through the session's error handler (the
/// MPI_COMM_SELF or initial handler when `session` is not one, MPI-4.1 §9.3) and returns the
/// class to give C.
fn raise_on(session: Handle, func: &str, e: MpiError) -> c_int {
    match errhandler_of(session) {
        Ok(h) => raise_via(h, session, func, e),
        Err(_) => raise(MPI_COMM_SELF, func, e),
    }
}

/// Reports `e` through error handler `h` of `session` (also when weft has stopped: a user
/// handler made while no state existed, or moved out by the last finalize, is still found).
fn raise_via(h: Handle, session: Handle, func: &str, e: MpiError) -> c_int {
    match h {
        MPI_ERRORS_RETURN => e.class,
        _ => {
            let user: Option<ErrFn> = errhandler_fn(h);
            match user {
                Some(f) => {
                    let mut sh = session;
                    let mut code = e.class;
                    // SAFETY: the program registered `f` with MPI_Session_create_errhandler
                    // (or the communicator form, of the same signature); the variadic tail
                    // is empty.
                    unsafe { f(&mut sh, &mut code) };
                    e.class
                }
                None => fatal(func, state_opt().map_or(0, |s| s.world_rank()), e),
            }
        }
    }
}

fn done(session: Handle, func: &str, r: R<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_on(session, func, e),
    }
}

fn thread_level_of(name: &str) -> Option<c_int> {
    match name.trim() {
        "MPI_THREAD_SINGLE" => Some(MPI_THREAD_SINGLE),
        "MPI_THREAD_FUNNELED" => Some(MPI_THREAD_FUNNELED),
        "MPI_THREAD_SERIALIZED" => Some(MPI_THREAD_SERIALIZED),
        "MPI_THREAD_MULTIPLE" => Some(MPI_THREAD_MULTIPLE),
        _ => None,
    }
}

/// The keys and values of info `h` (MPI_INFO_NULL: none).
fn info_entries(h: Handle) -> R<Vec<(String, String)>> {
    if h == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    crate::env::info_entries(h)
}

/// MPI_Session_init (MPI-4.1 §11.3.1): starts weft unless MPI_Init or another session did.
/// The info key `thread_level` asks for a thread level; the session's info says which one it
/// got (as with MPI_Init_thread).
///
/// # Safety
/// `session` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(
    info: Handle,
    errhandler: Handle,
    session: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if session.is_null() {
            return Err(err(MPI_ERR_ARG, "session is NULL"));
        }
        if !errhandler_exists(errhandler) {
            return Err(err(
                MPI_ERR_ERRHANDLER,
                format!("error handler {errhandler:#x} is not valid"),
            ));
        }
        let mut kv = info_entries(info)?;
        let wanted = match kv.iter().find(|(k, _)| k == "thread_level") {
            Some((_, v)) => thread_level_of(v).ok_or_else(|| {
                err(
                    MPI_ERR_INFO_VALUE,
                    format!("thread_level {v:?} is not one of MPI_THREAD_SINGLE/FUNNELED/SERIALIZED/MULTIPLE"),
                )
            })?,
            None => MPI_THREAD_SERIALIZED,
        };
        let got = start(wanted)?;
        kv.retain(|(k, _)| k != "thread_level");
        kv.push(("thread_level".into(), thread_level_name(got).into()));
        let i = sessions().insert(Session {
            errhandler,
            info: kv,
        });
        OPEN.fetch_add(1, Ordering::AcqRel);
        put!(session, make_handle(K_SESSION, i))
    })();
    match r {
        Ok(()) => MPI_SUCCESS,
        // No session exists yet: the initial error handler (MPI-4.1 §9.3).
        Err(e) => raise(MPI_COMM_SELF, "MPI_Session_init", e),
    }
}

/// MPI_Session_finalize (MPI-4.1 §11.3.1): the last session, once the world model is not in
/// use (never initialized or finalized), ends weft (collective over the job).
///
/// # Safety
/// `session` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    if session.is_null() {
        return raise(
            MPI_COMM_SELF,
            "MPI_Session_finalize",
            err(MPI_ERR_ARG, "session is NULL"),
        );
    }
    // SAFETY: checked non-null.
    let h = unsafe { *session };
    let errh = match errhandler_of(h) {
        Ok(errh) => errh,
        Err(e) => return raise(MPI_COMM_SELF, "MPI_Session_finalize", e),
    };
    // The session ends here even if stopping weft fails below: its error handler, taken
    // above, still reports that failure.
    if let Some(i) = handle_index(K_SESSION, h) {
        sessions().remove(i);
    }
    OPEN.fetch_sub(1, Ordering::AcqRel);
    // SAFETY: checked non-null.
    unsafe { *session = MPI_SESSION_NULL };
    let world_in_use = crate::state::INITIALIZED.load(Ordering::Acquire)
        && !crate::state::FINALIZED.load(Ordering::Acquire);
    let r = if open_sessions() == 0 && !world_in_use {
        stop()
    } else {
        Ok(())
    };
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_via(errh, h, "MPI_Session_finalize", e),
    }
}

/// MPI_Session_get_num_psets (MPI-4.1 §11.3.2): `mpi://WORLD` and `mpi://SELF`.
///
/// # Safety
/// `npset_names` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(
    session: Handle,
    _info: Handle,
    npset_names: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = errhandler_of(session).and_then(|_| put!(npset_names, PSETS.len() as c_int));
    done(session, "MPI_Session_get_num_psets", r)
}

/// MPI_Session_get_nth_pset (MPI-4.1 §11.3.2): with `*pset_len` 0 only the length (NUL
/// included) is returned; otherwise at most `*pset_len` bytes, NUL included, are copied and
/// `*pset_len` is set to the name's length plus one.
///
/// # Safety
/// `pset_len` readable and writable; `pset_name` writable for `*pset_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    session: Handle,
    _info: Handle,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        errhandler_of(session)?;
        let name = usize::try_from(n)
            .ok()
            .and_then(|i| PSETS.get(i))
            .ok_or_else(|| {
                err(
                    MPI_ERR_ARG,
                    format!("n = {n} but there are {} process sets", PSETS.len()),
                )
            })?;
        if pset_len.is_null() {
            return Err(err(MPI_ERR_ARG, "pset_len is NULL"));
        }
        // SAFETY: pset_len readable and writable; pset_name holds *pset_len bytes.
        unsafe {
            let cap = (*pset_len).max(0) as usize;
            if cap > 0 && !pset_name.is_null() {
                write_c_string(name, pset_name, cap, std::ptr::null_mut());
            }
            *pset_len = name.len() as c_int + 1;
        }
        Ok(())
    })();
    done(session, "MPI_Session_get_nth_pset", r)
}

/// The world ranks of process set `name`, or MPI_ERR_ARG naming the known sets.
fn pset_members(name: &str) -> R<Vec<u32>> {
    let s = state("MPI_Group_from_session_pset")?;
    if name.eq_ignore_ascii_case(PSETS[0]) {
        Ok((0..s.weft.world().size()).collect())
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok(vec![s.world_rank()])
    } else {
        Err(err(
            MPI_ERR_ARG,
            format!("process set {name:?} is unknown (weft has mpi://WORLD and mpi://SELF)"),
        ))
    }
}

/// MPI_Session_get_pset_info (MPI-4.1 §11.3.2): a new info object with `mpi_size`.
///
/// # Safety
/// `pset_name` NUL-terminated; `info` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    session: Handle,
    pset_name: *const c_char,
    info: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        errhandler_of(session)?;
        // SAFETY: forwarded caller contract.
        let name = unsafe { c_str(pset_name, "pset_name")? };
        let n = pset_members(&name)?.len();
        put!(info, info_insert(vec![("mpi_size".into(), n.to_string())]))
    })();
    done(session, "MPI_Session_get_pset_info", r)
}

/// MPI_Session_get_info (MPI-4.1 §11.3.1): a new info object with the keys the session was
/// started with and `thread_level`, the level it got.
///
/// # Safety
/// `info_used` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(session: Handle, info_used: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let kv = handle_index(K_SESSION, session)
            .and_then(|i| sessions().get(i).map(|s| s.info.clone()))
            .ok_or_else(|| bad_session(session))?;
        put!(info_used, info_insert(kv))
    })();
    done(session, "MPI_Session_get_info", r)
}

/// MPI_Group_from_session_pset (MPI-4.1 §11.3.2): the group of `mpi://WORLD` (every rank)
/// or `mpi://SELF` (this one); another name is MPI_ERR_ARG.
///
/// # Safety
/// `pset_name` NUL-terminated; `newgroup` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    session: Handle,
    pset_name: *const c_char,
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        errhandler_of(session)?;
        // SAFETY: forwarded caller contract.
        let name = unsafe { c_str(pset_name, "pset_name")? };
        let g = pset_members(&name)?;
        if newgroup.is_null() {
            return Err(err(MPI_ERR_ARG, "newgroup is NULL"));
        }
        let s = state("MPI_Group_from_session_pset")?;
        let h = s.add_group(g);
        s.bsend.group_from_session(h, session);
        put!(newgroup, h)
    })();
    done(session, "MPI_Group_from_session_pset", r)
}

/// MPI_Session_create_errhandler (MPI-4.1 §9.3.4): callable before any session exists.
///
/// # Safety
/// `errhandler` writable; `f` a valid function.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_create_errhandler(
    f: Option<ErrFn>,
    errhandler: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let f = f.ok_or_else(|| err(MPI_ERR_ARG, "function is NULL"))?;
        put!(errhandler, crate::env::errhandler_insert(f))
    })();
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(MPI_COMM_SELF, "MPI_Session_create_errhandler", e),
    }
}

/// MPI_Session_set_errhandler (MPI-4.1 §9.3.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_set_errhandler(session: Handle, errhandler: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        errhandler_of(session)?;
        if !errhandler_exists(errhandler) {
            return Err(err(
                MPI_ERR_ERRHANDLER,
                format!("error handler {errhandler:#x} is not valid"),
            ));
        }
        let i = handle_index(K_SESSION, session).ok_or_else(|| bad_session(session))?;
        sessions()
            .get_mut(i)
            .map(|e| e.errhandler = errhandler)
            .ok_or_else(|| bad_session(session))
    })();
    done(session, "MPI_Session_set_errhandler", r)
}

/// MPI_Session_get_errhandler (MPI-4.1 §9.3.4).
///
/// # Safety
/// `errhandler` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_errhandler(
    session: Handle,
    errhandler: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = errhandler_of(session).and_then(|h| put!(errhandler, h));
    done(session, "MPI_Session_get_errhandler", r)
}

/// MPI_Session_call_errhandler (MPI-4.1 §9.5): calls the session's error handler with
/// `errorcode`; returns MPI_SUCCESS when the handler returns.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_call_errhandler(session: Handle, errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    if let Err(e) = errhandler_of(session) {
        return raise(MPI_COMM_SELF, "MPI_Session_call_errhandler", e);
    }
    raise_on(
        session,
        "MPI_Session_call_errhandler",
        err(
            errorcode,
            format!("error {errorcode} raised by the program"),
        ),
    );
    MPI_SUCCESS
}
