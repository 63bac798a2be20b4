//! One-sided communication (MPI-4.1 ch. 12): window handles over `weft::rma::win`.
//!
//! This file translates: window handles to weft windows, MPI groups to window ranks,
//! datatypes and buffers to type maps and byte views, operation handles to accumulate
//! operations, weft errors to MPI classes through the window's error handler. Window
//! attributes (the predefined MPI_WIN_BASE, _SIZE, _DISP_UNIT, _CREATE_FLAVOR, _MODEL and
//! user keyvals numbered apart from communicator and datatype keyvals), names, info hints
//! and error handlers live here; everything that moves data or synchronises is weft's.
//! The request-based calls (MPI_Rput, ...) return a request that is already complete: weft
//! completes a put locally and a get or accumulate entirely before it returns.

use crate::consts::*;
use crate::dtype::{predefined_map, put, user_view};
use crate::env::{c_str, errhandler_fn, info_entries, info_insert};
use crate::error::{err, fatal, raise, write_c_string, MpiError, R};
use crate::state::{
    handle_index, make_handle, state, state_opt, Keyval, ReqEntry, State, K_INFO, K_TYPE,
};
use std::borrow::Cow;
use std::os::raw::{c_char, c_int, c_void};
use weft::coll::Op;
use weft::dtype::TypeMap;
use weft::rma::win::{AccOp, Flavor, LockType, Origin, OriginMut, TargetSpec, Window};

/// Handle kind of windows (see state.rs).
pub const K_WIN: usize = 9;

/// Window keyvals are `WIN_KEYVAL_BASE + index` (communicator keyvals start at 4096, type
/// keyvals at 2^24).
const WIN_KEYVAL_BASE: c_int = 2 << 24;

/// MPI_Win_copy_attr_function is never called (windows are not duplicated);
/// MPI_Win_delete_attr_function is.
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// The values the predefined attributes point at (C gets pointers to them, so they live
/// in a box as long as the window).
struct AttrValues {
    size: isize,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

/// A window's entry: the weft window and its C-side companions.
pub struct WinEntry {
    win: Window,
    errhandler: Handle,
    name: String,
    /// Info hints the program set (MPI_Win_create's info, MPI_Win_set_info).
    info: Vec<(String, String)>,
    /// User attributes: keyval and value.
    attrs: Vec<(c_int, usize)>,
    values: Box<AttrValues>,
}

/// The process's window state, kept in [`State`].
#[derive(Default)]
pub struct Windows {
    table: crate::state::Table<WinEntry>,
    keyvals: Vec<(Keyval, bool)>,
    endpoint: weft::rma::win::Endpoint,
}

fn bad_win(h: Handle) -> MpiError {
    if h == MPI_WIN_NULL {
        err(MPI_ERR_WIN, "window is MPI_WIN_NULL")
    } else {
        err(
            MPI_ERR_WIN,
            format!("window handle {h:#x} is not a valid window (freed or never created)"),
        )
    }
}

fn entry(s: &State, h: Handle) -> R<&WinEntry> {
    handle_index(K_WIN, h)
        .and_then(|i| s.wins.table.get(i))
        .ok_or_else(|| bad_win(h))
}

fn entry_mut(s: &mut State, h: Handle) -> R<&mut WinEntry> {
    handle_index(K_WIN, h)
        .and_then(|i| s.wins.table.get_mut(i))
        .ok_or_else(|| bad_win(h))
}

/// Reports `e` from `func` on window `win` through the window's error handler (world's
/// when `win` is not a window) and returns the class for C.
fn raise_win(win: Handle, func: &str, e: MpiError) -> c_int {
    let Some((h, rank)) =
        state_opt().and_then(|s| entry(s, win).ok().map(|w| (w.errhandler, s.world_rank())))
    else {
        return raise(MPI_COMM_WORLD, func, e);
    };
    match h {
        MPI_ERRORS_RETURN => e.class,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => fatal(func, rank, e),
        user => match errhandler_fn(user) {
            Some(f) => {
                let (mut w, mut code) = (win, e.class);
                // SAFETY: the program registered `f` with MPI_Win_create_errhandler, whose
                // signature this call follows (the variadic tail is empty).
                unsafe { f(&mut w, &mut code) };
                e.class
            }
            None => fatal(func, rank, e),
        },
    }
}

fn finish_win(win: Handle, func: &str, r: R<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_win(win, func, e),
    }
}

/// First handle of the predefined datatypes' map table (MPI_DATATYPE_NULL; every
/// predefined datatype of the standard ABI lies below it + `PREDEFINED_SPAN`).
const PREDEFINED_FIRST: Handle = MPI_DATATYPE_NULL;
const PREDEFINED_SPAN: usize = 0x100;

/// The type maps of the predefined datatypes, built at first use: a call on predefined
/// types borrows its maps instead of building them (no allocation on the call's path).
static PREDEFINED_MAPS: std::sync::LazyLock<Vec<Option<TypeMap>>> =
    std::sync::LazyLock::new(|| {
        (0..PREDEFINED_SPAN)
            .map(|i| predefined_map(PREDEFINED_FIRST + i))
            .collect()
    });

/// The map of predefined datatype `dt`, borrowed from the table.
fn predefined_ref(dt: Handle) -> Option<&'static TypeMap> {
    PREDEFINED_MAPS
        .get(dt.wrapping_sub(PREDEFINED_FIRST))
        .and_then(Option::as_ref)
}

/// The type map of committed datatype `dt` (borrowed for a predefined one).
fn committed_map(dt: Handle) -> R<Cow<'static, TypeMap>> {
    if let Some(m) = predefined_ref(dt) {
        return Ok(Cow::Borrowed(m));
    }
    let s = state("datatype")?;
    match handle_index(K_TYPE, dt).and_then(|i| s.types.get(i)) {
        Some(d) if !d.committed => Err(err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} was not committed (MPI_Type_commit)"),
        )),
        Some(d) => Ok(Cow::Owned((*d.map).clone())),
        None => Err(err(
            MPI_ERR_TYPE,
            format!("datatype handle {dt:#x} is not a valid datatype"),
        )),
    }
}

fn count_of(n: i64, what: &str) -> R<u64> {
    u64::try_from(n).map_err(|_| err(MPI_ERR_COUNT, format!("{what} {n} is negative")))
}

/// The accumulate operation of handle `op` (predefined operations only, MPI-4.1 §12.3.4),
/// checked against predefined datatype `dt` where the standard's table applies and there
/// are elements to combine (`count` above 0: MPICH accepts, e.g., MPI_SUM on MPI_BYTE for no
/// elements, and programs rely on it).
fn acc_op(op: Handle, dt: Handle, count: i64) -> R<AccOp> {
    let f = match op {
        MPI_REPLACE => return Ok(AccOp::Replace),
        MPI_NO_OP => return Ok(AccOp::NoOp),
        MPI_SUM => Op::Sum,
        MPI_PROD => Op::Prod,
        MPI_MIN => Op::Min,
        MPI_MAX => Op::Max,
        MPI_LAND => Op::Land,
        MPI_LOR => Op::Lor,
        MPI_LXOR => Op::Lxor,
        MPI_BAND => Op::Band,
        MPI_BOR => Op::Bor,
        MPI_BXOR => Op::Bxor,
        MPI_MINLOC => Op::MinLoc,
        MPI_MAXLOC => Op::MaxLoc,
        _ => {
            return Err(err(
                MPI_ERR_OP,
                format!(
                    "operation {op:#x}: one-sided accumulates take predefined operations only (MPI-4.1 §12.3.4)"
                ),
            ))
        }
    };
    if count > 0 {
        crate::dtype::check_op(op, dt)?;
        // A derived type built from MPI_CHAR combines as MPI_CHAR does: refused with the
        // standard's strict table (WEFT_CHAR_REDUCTIONS=0), as the predefined one is above.
        if crate::dtype::predefined(dt).is_none()
            && !crate::dtype::CHAR_REDUCTIONS.load(std::sync::atomic::Ordering::Relaxed)
            && committed_map(dt)?.kinds() == weft::dtype::Kinds::One(weft::dtype::BasicKind::Char)
        {
            return Err(err(
                MPI_ERR_OP,
                format!(
                    "{} is not defined on datatype {dt:#x}: it is built from MPI_CHAR, a character type (MPI-4.1 §6.9.2; WEFT_CHAR_REDUCTIONS=0)",
                    crate::dtype::op_name(op).unwrap_or("the operation")
                ),
            ));
        }
    }
    Ok(AccOp::Op(f))
}

fn lock_type(t: c_int) -> R<LockType> {
    match t {
        MPI_LOCK_EXCLUSIVE => Ok(LockType::Exclusive),
        MPI_LOCK_SHARED => Ok(LockType::Shared),
        t => Err(err(
            MPI_ERR_LOCKTYPE,
            format!("lock type {t} is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED"),
        )),
    }
}

fn assertion(a: c_int) -> R<u32> {
    if a & !MPI_MODE_RMA_ALL != 0 {
        return Err(err(
            MPI_ERR_ASSERT,
            format!("assertion {a:#x} has bits that are no MPI_MODE_* of synchronisation calls"),
        ));
    }
    Ok(a as u32)
}

/// Window ranks of the members of `group` (world ranks) in `win`'s group.
fn window_ranks(s: &State, win: &Window, group: Handle) -> R<Vec<u32>> {
    let g = s.group(group)?;
    let members = win.comm().members();
    g.iter()
        .map(|w| {
            members
                .iter()
                .position(|m| m == w)
                .map(|p| p as u32)
                .ok_or_else(|| {
                    err(
                        MPI_ERR_GROUP,
                        format!("world rank {w} of the group is not a member of the window"),
                    )
                })
        })
        .collect()
}

/// The info hints a new window was given (the valid keys only; MPI_INFO_NULL gives none).
fn info_of(info: Handle) -> R<Vec<(String, String)>> {
    if info == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    if handle_index(K_INFO, info).is_none() && info != MPI_INFO_ENV {
        return Err(err(
            MPI_ERR_INFO,
            format!("info handle {info:#x} is not valid"),
        ));
    }
    info_entries(info)
}

fn hint(info: &[(String, String)], key: &str) -> bool {
    info.iter().any(|(k, v)| k == key && v.trim() == "true")
}

fn add_window(s: &mut State, win: Window, info: Vec<(String, String)>) -> Handle {
    let flavor = match win.flavor() {
        Flavor::Create => MPI_WIN_FLAVOR_CREATE,
        Flavor::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
        Flavor::Shared => MPI_WIN_FLAVOR_SHARED,
        Flavor::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
    };
    let values = Box::new(AttrValues {
        size: win.size_bytes() as isize,
        disp_unit: win.disp_unit() as c_int,
        flavor,
        model: MPI_WIN_UNIFIED,
    });
    let i = s.wins.table.insert(WinEntry {
        win,
        errhandler: MPI_ERRORS_ARE_FATAL,
        name: String::new(),
        info,
        attrs: Vec::new(),
        values,
    });
    make_handle(K_WIN, i)
}

fn check_size(size: isize, disp_unit: isize) -> R<(usize, u32)> {
    if size < 0 {
        return Err(err(MPI_ERR_SIZE, format!("size {size} is negative")));
    }
    if disp_unit <= 0 || disp_unit > u32::MAX as isize {
        return Err(err(
            MPI_ERR_DISP,
            format!("displacement unit {disp_unit}: it must be positive (and fit 32 bits)"),
        ));
    }
    Ok((size as usize, disp_unit as u32))
}

fn create(
    base: *mut c_void,
    size: isize,
    disp_unit: isize,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> R<()> {
    let (bytes, unit) = check_size(size, disp_unit)?;
    if base.is_null() && bytes > 0 {
        return Err(err(
            MPI_ERR_BASE,
            format!("base is NULL but size is {bytes}"),
        ));
    }
    let hints = info_of(info)?;
    let (weft, ep, c) = creation("MPI_Win_create", comm)?;
    // SAFETY: MPI's contract: the memory stays valid until MPI_Win_free.
    let w = unsafe {
        Window::create(
            weft,
            ep,
            &c,
            base as *mut u8,
            bytes,
            unit,
            &mut crate::threads::steps_wait,
        )?
    };
    let h = add_window(state("MPI_Win_create")?, w, hints);
    put!(win, h)
}

/// What a window creation on `comm` needs: the runtime, the one-sided endpoint and the
/// communicator. The creation waits for the other members by
/// [`crate::threads::steps_wait`], which under MPI_THREAD_MULTIPLE lets other threads in:
/// the communicator is this call's own clone, and the runtime and the endpoint are only read
/// (their changes are behind their own locks and cells) and never move from init to
/// finalize, which no thread calls while another is inside MPI.
fn creation(
    func: &str,
    comm: Handle,
) -> R<(
    &'static weft::Weft,
    &'static weft::rma::win::Endpoint,
    weft::Comm,
)> {
    let s: &'static State = state(func)?;
    let c = s.comm(comm)?.comm.clone();
    Ok((&s.weft, &s.wins.endpoint, c))
}

fn allocate(
    size: isize,
    disp_unit: isize,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
    shared: bool,
) -> R<()> {
    let (bytes, unit) = check_size(size, disp_unit)?;
    if baseptr.is_null() || win.is_null() {
        return Err(err(MPI_ERR_ARG, "baseptr or win is NULL"));
    }
    let hints = info_of(info)?;
    let (weft, ep, c) = creation("MPI_Win_allocate", comm)?;
    let wait = &mut crate::threads::steps_wait;
    let w = if shared {
        let noncontig = hint(&hints, "alloc_shared_noncontig");
        Window::allocate_shared(weft, ep, &c, bytes, unit, noncontig, wait)?
    } else {
        Window::allocate(weft, ep, &c, bytes, unit, wait)?
    };
    let base = w.base();
    let h = add_window(state("MPI_Win_allocate")?, w, hints);
    put!(baseptr as *mut *mut c_void, base as *mut c_void)?;
    put!(win, h)
}

/// MPI_Win_create (MPI-4.1 §12.2.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: isize,
    disp_unit: c_int,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = create(base, size, disp_unit as isize, info, comm, win);
    crate::error::finish(comm, "MPI_Win_create", r)
}

/// MPI_Win_create_c (MPI-4.1 §12.2.1, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_c(
    base: *mut c_void,
    size: isize,
    disp_unit: isize,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = create(base, size, disp_unit, info, comm, win);
    crate::error::finish(comm, "MPI_Win_create_c", r)
}

/// MPI_Win_allocate (MPI-4.1 §12.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(
    size: isize,
    disp_unit: c_int,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = allocate(size, disp_unit as isize, info, comm, baseptr, win, false);
    crate::error::finish(comm, "MPI_Win_allocate", r)
}

/// MPI_Win_allocate_c (MPI-4.1 §12.2.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_c(
    size: isize,
    disp_unit: isize,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = allocate(size, disp_unit, info, comm, baseptr, win, false);
    crate::error::finish(comm, "MPI_Win_allocate_c", r)
}

/// MPI_Win_allocate_shared (MPI-4.1 §12.2.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(
    size: isize,
    disp_unit: c_int,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = allocate(size, disp_unit as isize, info, comm, baseptr, win, true);
    crate::error::finish(comm, "MPI_Win_allocate_shared", r)
}

/// MPI_Win_allocate_shared_c (MPI-4.1 §12.2.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared_c(
    size: isize,
    disp_unit: isize,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = allocate(size, disp_unit, info, comm, baseptr, win, true);
    crate::error::finish(comm, "MPI_Win_allocate_shared_c", r)
}

/// MPI_Win_create_dynamic (MPI-4.1 §12.2.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let hints = info_of(info)?;
        if win.is_null() {
            return Err(err(MPI_ERR_ARG, "win is NULL"));
        }
        let (weft, ep, c) = creation("MPI_Win_create_dynamic", comm)?;
        let w = Window::create_dynamic(weft, ep, &c, &mut crate::threads::steps_wait)?;
        let h = add_window(state("MPI_Win_create_dynamic")?, w, hints);
        put!(win, h)
    })();
    crate::error::finish(comm, "MPI_Win_create_dynamic", r)
}

fn shared_query(
    win: Handle,
    rank: c_int,
    size: *mut isize,
    disp_unit: &mut dyn FnMut(u32) -> R<()>,
    baseptr: *mut c_void,
) -> R<()> {
    let s = state("MPI_Win_shared_query")?;
    let w = &entry(s, win)?.win;
    let rank = match rank {
        MPI_PROC_NULL => w.first_with_memory(),
        r if r >= 0 => Some(r as u32),
        r => {
            return Err(err(
                MPI_ERR_RANK,
                format!("rank {r} is negative and not MPI_PROC_NULL"),
            ))
        }
    };
    let found = match rank {
        Some(r) => w.shared_query(r)?,
        None => None,
    };
    let (p, bytes, unit) = found.unwrap_or((std::ptr::null_mut(), 0, 0));
    put!(size, bytes as isize)?;
    disp_unit(unit)?;
    put!(baseptr as *mut *mut c_void, p as *mut c_void)
}

/// MPI_Win_shared_query (MPI-4.1 §12.2.3): for windows of every flavor but dynamic (MPI
/// 4.1), the memory of members this process can load and store (size 0 and NULL for the
/// others).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(
    win: Handle,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = shared_query(
        win,
        rank,
        size,
        &mut |u| put!(disp_unit, u as c_int),
        baseptr,
    );
    finish_win(win, "MPI_Win_shared_query", r)
}

/// MPI_Win_shared_query_c (MPI-4.1 §12.2.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query_c(
    win: Handle,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut isize,
    baseptr: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = shared_query(
        win,
        rank,
        size,
        &mut |u| put!(disp_unit, u as isize),
        baseptr,
    );
    finish_win(win, "MPI_Win_shared_query_c", r)
}

/// MPI_Win_attach (MPI-4.1 §12.2.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: Handle, base: *mut c_void, size: isize) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if size < 0 {
            return Err(err(MPI_ERR_SIZE, format!("size {size} is negative")));
        }
        if base.is_null() && size > 0 {
            return Err(err(MPI_ERR_BASE, "base is NULL"));
        }
        let s = state("MPI_Win_attach")?;
        // SAFETY: MPI's contract: the memory stays valid until detached.
        unsafe { entry(s, win)?.win.attach(base as *mut u8, size as usize)? };
        Ok(())
    })();
    finish_win(win, "MPI_Win_attach", r)
}

/// MPI_Win_detach (MPI-4.1 §12.2.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(win: Handle, base: *const c_void) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Win_detach").and_then(|s| Ok(entry(s, win)?.win.detach(base as *mut u8)?));
    finish_win(win, "MPI_Win_detach", r)
}

/// Runs the delete callback of window attribute `k` (value `v`).
fn run_delete(s: &State, win: Handle, k: c_int, v: usize) -> R<()> {
    let kv = win_keyval(s, k, false)?;
    if kv.delete != 0 {
        // SAFETY: registered by the program as an MPI_Win_delete_attr_function.
        let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete) };
        // SAFETY: the program's callback, called as the standard specifies.
        let rc = unsafe { f(win, k, v as *mut c_void, kv.extra as *mut c_void) };
        if rc != MPI_SUCCESS {
            return Err(err(
                rc,
                format!("delete callback of window keyval {k} returned {rc}"),
            ));
        }
    }
    Ok(())
}

/// MPI_Win_free (MPI-4.1 §12.2.5): deletes the attributes, then frees collectively.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let h = if win.is_null() {
        MPI_WIN_NULL
    } else {
        // SAFETY: non-null and readable (the caller's contract).
        unsafe { *win }
    };
    let r = (|| {
        complete_released("MPI_Win_free", h, None)?;
        let s = state("MPI_Win_free")?;
        let attrs = entry(s, h)?.attrs.clone();
        for (k, v) in attrs {
            run_delete(s, h, k, v)?;
            entry_mut(s, h)?.attrs.retain(|(x, _)| *x != k);
        }
        let i = handle_index(K_WIN, h).ok_or_else(|| bad_win(h))?;
        let e = s.wins.table.remove(i).ok_or_else(|| bad_win(h))?;
        if !crate::threads::multiple() {
            e.win.free()?;
            return put!(win, MPI_WIN_NULL);
        }
        // Under MPI_THREAD_MULTIPLE the wait for the other members gives the lock back
        // (crate::threads::wait_released); the window left the table above and is this
        // call's alone.
        let mut barrier = e.win.free_start()?;
        let mut outcome = None;
        crate::threads::wait_released(|| -> R<bool> {
            match barrier.test() {
                Ok(false) => Ok(false),
                Ok(true) => {
                    outcome = Some(Ok(()));
                    Ok(true)
                }
                Err(x) => {
                    outcome = Some(Err(x));
                    Ok(true)
                }
            }
        })?;
        drop(barrier);
        e.win
            .free_end(outcome.expect("the wait returned once the barrier was done"))?;
        put!(win, MPI_WIN_NULL)
    })();
    match r {
        Ok(()) => MPI_SUCCESS,
        // The entry is gone once the free started: errors go to the world's handler.
        Err(e) if handle_index(K_WIN, h).is_some() => raise(MPI_COMM_WORLD, "MPI_Win_free", e),
        Err(e) => raise_win(h, "MPI_Win_free", e),
    }
}

/// MPI_Win_get_group (MPI-4.1 §12.2.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(win: Handle, group: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Win_get_group")?;
        let m = entry(s, win)?.win.comm().members().to_vec();
        let g = s.add_group(m);
        put!(group, g)
    })();
    finish_win(win, "MPI_Win_get_group", r)
}

/// MPI_Win_set_name (MPI-4.1 §7.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: Handle, name: *const c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: a NUL-terminated string (the caller's contract).
        let n = unsafe { c_str(name, "win_name")? };
        entry_mut(state("MPI_Win_set_name")?, win)?.name = n;
        Ok(())
    })();
    finish_win(win, "MPI_Win_set_name", r)
}

/// MPI_Win_get_name (MPI-4.1 §7.8): MPI_WIN_NULL's name is "MPI_WIN_NULL".
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(
    win: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if name.is_null() || len.is_null() {
            return Err(err(MPI_ERR_ARG, "win_name or resultlen is NULL"));
        }
        let text = if win == MPI_WIN_NULL {
            "MPI_WIN_NULL".to_string()
        } else {
            entry(state("MPI_Win_get_name")?, win)?.name.clone()
        };
        // SAFETY: `name` holds MPI_MAX_OBJECT_NAME bytes (the caller's contract).
        unsafe { write_c_string(&text, name, MPI_MAX_OBJECT_NAME, len) };
        Ok(())
    })();
    finish_win(win, "MPI_Win_get_name", r)
}

/// MPI_Win_set_info (MPI-4.1 §12.2.7): hints replace those of the same key.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(win: Handle, info: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let add = info_of(info)?;
        let e = entry_mut(state("MPI_Win_set_info")?, win)?;
        for (k, v) in add {
            match e.info.iter_mut().find(|(x, _)| *x == k) {
                Some(kv) => kv.1 = v,
                None => e.info.push((k, v)),
            }
        }
        Ok(())
    })();
    finish_win(win, "MPI_Win_set_info", r)
}

/// MPI_Win_get_info (MPI-4.1 §12.2.7): a new info object with the hints in use — weft's
/// defaults for the standard's keys, and what the program set.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: Handle, info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let e = entry(state("MPI_Win_get_info")?, win)?;
        let mut kv: Vec<(String, String)> = [
            ("no_locks", "false"),
            ("accumulate_ordering", "rar,raw,war,waw"),
            ("accumulate_ops", "same_op_no_op"),
            ("same_size", "false"),
            ("same_disp_unit", "false"),
            ("mpi_accumulate_granularity", "0"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if e.win.flavor() == Flavor::Shared {
            kv.push(("alloc_shared_noncontig".into(), "false".into()));
        }
        for (k, v) in &e.info {
            match kv.iter_mut().find(|(x, _)| x == k) {
                Some(p) => p.1.clone_from(v),
                None => kv.push((k.clone(), v.clone())),
            }
        }
        put!(info, info_insert(kv))
    })();
    finish_win(win, "MPI_Win_get_info", r)
}

fn win_keyval(s: &State, k: c_int, live: bool) -> R<Keyval> {
    let entry = k
        .checked_sub(WIN_KEYVAL_BASE)
        .filter(|i| *i >= 0)
        .and_then(|i| s.wins.keyvals.get(i as usize));
    match entry {
        Some(&(kv, freed)) if !(live && freed) => Ok(kv),
        Some(_) => Err(err(MPI_ERR_KEYVAL, format!("window keyval {k} was freed"))),
        None => Err(err(
            MPI_ERR_KEYVAL,
            format!("keyval {k} is not a window keyval (MPI_Win_create_keyval)"),
        )),
    }
}

/// MPI_Win_create_keyval (MPI-4.1 §7.7.3). The copy function is never called: windows are
/// not duplicated.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if keyval.is_null() {
            return Err(err(MPI_ERR_ARG, "win_keyval is NULL"));
        }
        let s = state("MPI_Win_create_keyval")?;
        let i = s.wins.keyvals.len() as c_int;
        s.wins.keyvals.push((
            Keyval {
                copy: copy_fn,
                delete: delete_fn,
                extra: extra_state as usize,
            },
            false,
        ));
        put!(keyval, WIN_KEYVAL_BASE + i)
    })();
    crate::error::finish(MPI_COMM_WORLD, "MPI_Win_create_keyval", r)
}

/// MPI_Win_free_keyval (MPI-4.1 §7.7.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(keyval: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if keyval.is_null() {
            return Err(err(MPI_ERR_ARG, "win_keyval is NULL"));
        }
        // SAFETY: non-null.
        let k = unsafe { *keyval };
        let s = state("MPI_Win_free_keyval")?;
        win_keyval(s, k, false)?;
        s.wins.keyvals[(k - WIN_KEYVAL_BASE) as usize].1 = true;
        put!(keyval, 0)
    })();
    crate::error::finish(MPI_COMM_WORLD, "MPI_Win_free_keyval", r)
}

/// MPI_Win_set_attr (MPI-4.1 §7.7.3): replacing a value runs the delete callback on the old
/// one first.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_attr(win: Handle, k: c_int, value: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Win_set_attr")?;
        win_keyval(s, k, true)?;
        let old = entry(s, win)?
            .attrs
            .iter()
            .find(|(x, _)| *x == k)
            .map(|&(_, v)| v);
        if let Some(v) = old {
            run_delete(s, win, k, v)?;
        }
        let e = entry_mut(s, win)?;
        match e.attrs.iter_mut().find(|(x, _)| *x == k) {
            Some(a) => a.1 = value as usize,
            None => e.attrs.push((k, value as usize)),
        }
        Ok(())
    })();
    finish_win(win, "MPI_Win_set_attr", r)
}

/// MPI_Win_get_attr (MPI-4.1 §7.7.3, §12.2.6): MPI_WIN_BASE gives the base address itself,
/// MPI_WIN_SIZE a pointer to an MPI_Aint, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR and
/// MPI_WIN_MODEL pointers to ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: Handle,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Win_get_attr")?;
        let e = entry(s, win)?;
        let v: Option<usize> = match k {
            MPI_WIN_BASE => Some(e.win.base() as usize),
            MPI_WIN_SIZE => Some(&e.values.size as *const isize as usize),
            MPI_WIN_DISP_UNIT => Some(&e.values.disp_unit as *const c_int as usize),
            MPI_WIN_CREATE_FLAVOR => Some(&e.values.flavor as *const c_int as usize),
            MPI_WIN_MODEL => Some(&e.values.model as *const c_int as usize),
            k => {
                win_keyval(s, k, false)?;
                e.attrs.iter().find(|(x, _)| *x == k).map(|&(_, v)| v)
            }
        };
        if let Some(v) = v {
            put!(value as *mut usize, v)?;
        }
        put!(flag, v.is_some() as c_int)
    })();
    finish_win(win, "MPI_Win_get_attr", r)
}

/// MPI_Win_delete_attr (MPI-4.1 §7.7.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_delete_attr(win: Handle, k: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Win_delete_attr")?;
        win_keyval(s, k, false)?;
        let v = entry(s, win)?
            .attrs
            .iter()
            .find(|(x, _)| *x == k)
            .map(|&(_, v)| v);
        let Some(v) = v else {
            return Err(err(
                MPI_ERR_KEYVAL,
                format!("window keyval {k} is not set on window {win:#x}"),
            ));
        };
        run_delete(s, win, k, v)?;
        entry_mut(s, win)?.attrs.retain(|(x, _)| *x != k);
        Ok(())
    })();
    finish_win(win, "MPI_Win_delete_attr", r)
}

/// MPI_Win_create_errhandler (MPI-4.1 §9.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    f: Option<crate::state::ErrFn>,
    errhandler: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // The same table as communicator handlers: the function types differ only in the
    // handle they are given.
    // SAFETY: forwarded caller contract.
    unsafe { crate::env::comm_create_errhandler_as("MPI_Win_create_errhandler", f, errhandler) }
}

/// MPI_Win_set_errhandler (MPI-4.1 §9.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_errhandler(win: Handle, errhandler: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Win_set_errhandler")?;
        crate::env::valid_errhandler(s, errhandler)?;
        entry_mut(s, win)?.errhandler = errhandler;
        Ok(())
    })();
    finish_win(win, "MPI_Win_set_errhandler", r)
}

/// MPI_Win_get_errhandler (MPI-4.1 §9.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(win: Handle, errhandler: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r =
        state("MPI_Win_get_errhandler").and_then(|s| put!(errhandler, entry(s, win)?.errhandler));
    finish_win(win, "MPI_Win_get_errhandler", r)
}

/// MPI_Win_call_errhandler (MPI-4.1 §9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(win: Handle, errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    if let Err(e) = state("MPI_Win_call_errhandler").and_then(|s| entry(s, win).map(|_| ())) {
        return raise(MPI_COMM_WORLD, "MPI_Win_call_errhandler", e);
    }
    raise_win(
        win,
        "MPI_Win_call_errhandler",
        err(
            errorcode,
            format!("error {errorcode} raised by the program"),
        ),
    );
    MPI_SUCCESS
}

// ------------------------------------------------------------------- data movement

/// The window and a view of a read-only origin buffer for a call.
struct Call<'a> {
    win: &'a Window,
}

fn call(func: &str, win: Handle) -> R<Call<'static>> {
    let s = state(func)?;
    let e = entry(s, win)?;
    // SAFETY: the entry lives in the state until MPI_Win_free, which cannot run during
    // this call (MPI calls on one window are not concurrent with its free).
    let win: &'static Window = unsafe { &*(&e.win as *const Window) };
    Ok(Call { win })
}

/// Under MPI_THREAD_MULTIPLE, completes this process's operations to window rank `target`
/// (`None`: to every member) at their targets with the lock given back
/// ([`crate::threads::released`]: the completion holds no reference into the state and
/// waits for other nodes' one-sided services only), so that the flush, unlock, complete,
/// fence or free that follows finds them done. Below MPI_THREAD_MULTIPLE that call does it.
fn complete_released(func: &str, win: Handle, target: Option<u32>) -> R<()> {
    if !crate::threads::multiple() {
        return Ok(());
    }
    let done = call(func, win)?.win.completion(target)?;
    Ok(crate::threads::released(|| done.wait())?)
}

/// The window rank of `rank`, or None for MPI_PROC_NULL (the call does nothing).
fn target_rank(w: &Window, rank: c_int) -> R<Option<u32>> {
    if rank == MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.comm().size();
    if rank < 0 || rank as u32 >= n {
        return Err(err(
            MPI_ERR_RANK,
            format!("target rank {rank} is not a window rank (0..{n})"),
        ));
    }
    Ok(Some(rank as u32))
}

/// A read-only origin buffer as weft's view: the maps, the slice and its origin index.
struct OriginBuf {
    map: Cow<'static, TypeMap>,
    data: &'static [u8],
    origin: usize,
    count: u64,
}

fn origin_buf(buf: *const c_void, count: i64, dt: Handle, what: &str) -> R<OriginBuf> {
    let count = count_of(count, what)?;
    let map = committed_map(dt)?;
    // SAFETY: MPI's contract: `count` items of `dt` at `buf` are readable.
    let (data, origin, shifted) = unsafe { user_view(&map, buf, count)? };
    Ok(OriginBuf {
        map: shifted.map_or(map, Cow::Owned),
        data,
        origin,
        count,
    })
}

fn origin_buf_mut(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    what: &str,
) -> R<(Cow<'static, TypeMap>, &'static mut [u8], usize, u64)> {
    let count = count_of(count, what)?;
    let map = committed_map(dt)?;
    // SAFETY: MPI's contract: `count` items of `dt` at `buf` are writable.
    let (data, origin, shifted) = unsafe { user_view(&map, buf, count)? };
    Ok((shifted.map_or(map, Cow::Owned), data, origin, count))
}

impl OriginBuf {
    fn view(&self) -> Origin<'_> {
        Origin {
            data: self.data,
            origin: self.origin,
            map: &self.map,
            count: self.count,
        }
    }
}

/// A completed request for the request-based calls.
fn done_request(w: &Window, request: *mut Handle) -> R<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let s = state("request")?;
    let raw = weft::raw::RawRequest::completed(w.comm());
    let h = s.add_req(ReqEntry::started(raw, false, MPI_COMM_WORLD));
    put!(request, h)
}

/// The bytes of a call whose origin and target are `count` items of one predefined
/// contiguous datatype `dt` on both sides (the same handle and count), when the direct
/// calls take it: a positive count whose bytes fit, a buffer that is not NULL, a target
/// that is not MPI_PROC_NULL. `None` sends the call to the checked path.
#[inline]
fn direct_bytes(
    buf: *const c_void,
    ocount: i64,
    otype: Handle,
    tcount: i64,
    ttype: Handle,
    rank: c_int,
) -> Option<usize> {
    if otype != ttype || ocount != tcount || ocount <= 0 || buf.is_null() || rank < 0 {
        return None;
    }
    usize::try_from(ocount)
        .ok()?
        .checked_mul(crate::fast::element_bytes(otype)?)
        .filter(|&n| n <= isize::MAX as usize)
}

/// The element kind and operation of an accumulate with `op` on predefined datatype `dt`
/// whose memory is its elements, for the direct calls: a predefined operation defined on
/// the type from the fast path's table (one lookup), else MPI_REPLACE and MPI_NO_OP (and
/// what the table leaves to the checked path) checked as the general path does. `None`
/// sends the call to the general path.
#[inline]
fn direct_op(dt: Handle, op: Handle) -> R<Option<(weft::coll::TypeKind, AccOp)>> {
    if let Some((_, kind, f)) = crate::fast::reducible(dt, op) {
        return Ok(Some((kind, AccOp::Op(f.clone()))));
    }
    let Some((kind, 1)) = predefined_ref(dt).and_then(TypeMap::reduction) else {
        return Ok(None);
    };
    Ok(Some((kind, acc_op(op, dt, 1)?)))
}

#[allow(clippy::too_many_arguments)]
fn put_any(
    func: &str,
    obuf: *const c_void,
    ocount: i64,
    otype: Handle,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: Handle,
    win: Handle,
    request: Option<*mut Handle>,
) -> R<()> {
    let c = call(func, win)?;
    if let Some(n) = direct_bytes(obuf, ocount, otype, tcount, ttype, rank) {
        // SAFETY: MPI's contract: `ocount` items of `otype` (contiguous, `n` bytes) at `obuf`
        // are readable.
        let data = unsafe { std::slice::from_raw_parts(obuf as *const u8, n) };
        if c.win.put_direct(data, rank as u32, disp as i64) {
            return match request {
                Some(r) => done_request(c.win, r),
                None => Ok(()),
            };
        }
    }
    let o = origin_buf(obuf, ocount, otype, "origin_count")?;
    let tmap = committed_map(ttype)?;
    let tcount = count_of(tcount, "target_count")?;
    if let Some(t) = target_rank(c.win, rank)? {
        c.win.put(
            o.view(),
            TargetSpec {
                rank: t,
                disp: disp as i64,
                map: &tmap,
                count: tcount,
            },
        )?;
    }
    match request {
        Some(r) => done_request(c.win, r),
        None => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn get_any(
    func: &str,
    obuf: *mut c_void,
    ocount: i64,
    otype: Handle,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: Handle,
    win: Handle,
    request: Option<*mut Handle>,
) -> R<()> {
    let c = call(func, win)?;
    if let Some(n) = direct_bytes(obuf, ocount, otype, tcount, ttype, rank) {
        // SAFETY: MPI's contract: `ocount` items of `otype` (contiguous, `n` bytes) at `obuf`
        // are writable.
        let out = unsafe { std::slice::from_raw_parts_mut(obuf as *mut u8, n) };
        if c.win.get_direct(out, rank as u32, disp as i64) {
            return match request {
                Some(r) => done_request(c.win, r),
                None => Ok(()),
            };
        }
    }
    let (omap, data, origin, count) = origin_buf_mut(obuf, ocount, otype, "origin_count")?;
    let tmap = committed_map(ttype)?;
    let tcount = count_of(tcount, "target_count")?;
    if let Some(t) = target_rank(c.win, rank)? {
        c.win.get(
            OriginMut {
                data,
                origin,
                map: &omap,
                count,
            },
            TargetSpec {
                rank: t,
                disp: disp as i64,
                map: &tmap,
                count: tcount,
            },
        )?;
    }
    match request {
        Some(r) => done_request(c.win, r),
        None => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn acc_any(
    func: &str,
    obuf: *const c_void,
    ocount: i64,
    otype: Handle,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: Handle,
    op: Handle,
    win: Handle,
    request: Option<*mut Handle>,
) -> R<()> {
    let c = call(func, win)?;
    if let Some(n) = direct_bytes(obuf, ocount, otype, tcount, ttype, rank) {
        if let Some((kind, f)) = direct_op(otype, op)? {
            // SAFETY: MPI's contract: `ocount` items of `otype` (contiguous, `n` bytes) at
            // `obuf` are readable.
            let data = unsafe { std::slice::from_raw_parts(obuf as *const u8, n) };
            if c.win
                .accumulate_direct(kind, &f, data, None, rank as u32, disp as i64)
            {
                return match request {
                    Some(r) => done_request(c.win, r),
                    None => Ok(()),
                };
            }
        }
    }
    let o = origin_buf(obuf, ocount, otype, "origin_count")?;
    let tmap = committed_map(ttype)?;
    let tcount = count_of(tcount, "target_count")?;
    let f = acc_op(op, otype, ocount)?;
    if let Some(t) = target_rank(c.win, rank)? {
        c.win.accumulate(
            o.view(),
            TargetSpec {
                rank: t,
                disp: disp as i64,
                map: &tmap,
                count: tcount,
            },
            &f,
        )?;
    }
    match request {
        Some(r) => done_request(c.win, r),
        None => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn get_acc_any(
    func: &str,
    obuf: *const c_void,
    ocount: i64,
    otype: Handle,
    rbuf: *mut c_void,
    rcount: i64,
    rtype: Handle,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: Handle,
    op: Handle,
    win: Handle,
    request: Option<*mut Handle>,
) -> R<()> {
    let c = call(func, win)?;
    let f = if op == MPI_NO_OP {
        acc_op(op, rtype, rcount)?
    } else {
        acc_op(op, otype, ocount)?
    };
    // MPI_NO_OP ignores the origin arguments (they may be anything).
    let o = if f.is_no_op() {
        None
    } else {
        Some(origin_buf(obuf, ocount, otype, "origin_count")?)
    };
    let (rmap, data, origin, count) = origin_buf_mut(rbuf, rcount, rtype, "result_count")?;
    let tmap = committed_map(ttype)?;
    let tcount = count_of(tcount, "target_count")?;
    if let Some(t) = target_rank(c.win, rank)? {
        c.win.get_accumulate(
            o.as_ref().map(OriginBuf::view),
            OriginMut {
                data,
                origin,
                map: &rmap,
                count,
            },
            TargetSpec {
                rank: t,
                disp: disp as i64,
                map: &tmap,
                count: tcount,
            },
            &f,
        )?;
    }
    match request {
        Some(r) => done_request(c.win, r),
        None => Ok(()),
    }
}

macro_rules! put_get_forms {
    ($($name:ident, $any:ident, $buf:ty, $count:ty $(, $req:ident)?;)*) => {$(
        /// MPI-4.1 §12.3 (MPI_Put/MPI_Get and their request-based and large-count forms).
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            obuf: $buf,
            ocount: $count,
            otype: Handle,
            rank: c_int,
            disp: isize,
            tcount: $count,
            ttype: Handle,
            win: Handle,
            $($req: *mut Handle,)?
        ) -> c_int {
            let _entered = crate::threads::enter();
            let request: Option<*mut Handle> = None $(.or(Some($req)))?;
            let r = $any(
                stringify!($name),
                obuf,
                ocount as i64,
                otype,
                rank,
                disp,
                tcount as i64,
                ttype,
                win,
                request,
            );
            finish_win(win, stringify!($name), r)
        }
    )*};
}

put_get_forms! {
    MPI_Put, put_any, *const c_void, c_int;
    MPI_Put_c, put_any, *const c_void, i64;
    MPI_Rput, put_any, *const c_void, c_int, request;
    MPI_Rput_c, put_any, *const c_void, i64, request;
    MPI_Get, get_any, *mut c_void, c_int;
    MPI_Get_c, get_any, *mut c_void, i64;
    MPI_Rget, get_any, *mut c_void, c_int, request;
    MPI_Rget_c, get_any, *mut c_void, i64, request;
}

macro_rules! acc_forms {
    ($($name:ident, $count:ty $(, $req:ident)?;)*) => {$(
        /// MPI-4.1 §12.3.4 (MPI_Accumulate and its request-based and large-count forms).
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            obuf: *const c_void,
            ocount: $count,
            otype: Handle,
            rank: c_int,
            disp: isize,
            tcount: $count,
            ttype: Handle,
            op: Handle,
            win: Handle,
            $($req: *mut Handle,)?
        ) -> c_int {
            let _entered = crate::threads::enter();
            let request: Option<*mut Handle> = None $(.or(Some($req)))?;
            let r = acc_any(
                stringify!($name),
                obuf,
                ocount as i64,
                otype,
                rank,
                disp,
                tcount as i64,
                ttype,
                op,
                win,
                request,
            );
            finish_win(win, stringify!($name), r)
        }
    )*};
}

acc_forms! {
    MPI_Accumulate, c_int;
    MPI_Accumulate_c, i64;
    MPI_Raccumulate, c_int, request;
    MPI_Raccumulate_c, i64, request;
}

macro_rules! get_acc_forms {
    ($($name:ident, $count:ty $(, $req:ident)?;)*) => {$(
        /// MPI-4.1 §12.3.4 (MPI_Get_accumulate and its request-based and large-count
        /// forms).
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            obuf: *const c_void,
            ocount: $count,
            otype: Handle,
            rbuf: *mut c_void,
            rcount: $count,
            rtype: Handle,
            rank: c_int,
            disp: isize,
            tcount: $count,
            ttype: Handle,
            op: Handle,
            win: Handle,
            $($req: *mut Handle,)?
        ) -> c_int {
            let _entered = crate::threads::enter();
            let request: Option<*mut Handle> = None $(.or(Some($req)))?;
            let r = get_acc_any(
                stringify!($name),
                obuf,
                ocount as i64,
                otype,
                rbuf,
                rcount as i64,
                rtype,
                rank,
                disp,
                tcount as i64,
                ttype,
                op,
                win,
                request,
            );
            finish_win(win, stringify!($name), r)
        }
    )*};
}

get_acc_forms! {
    MPI_Get_accumulate, c_int;
    MPI_Get_accumulate_c, i64;
    MPI_Rget_accumulate, c_int, request;
    MPI_Rget_accumulate_c, i64, request;
}

/// A predefined datatype's map for the single-element calls.
fn element_map(dt: Handle, what: &str) -> R<&'static TypeMap> {
    predefined_ref(dt).ok_or_else(|| {
        err(
            MPI_ERR_TYPE,
            format!("{what} takes a predefined datatype; {dt:#x} is not one"),
        )
    })
}

/// MPI_Fetch_and_op (MPI-4.1 §12.3.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    obuf: *const c_void,
    rbuf: *mut c_void,
    dt: Handle,
    rank: c_int,
    disp: isize,
    op: Handle,
    win: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let c = call("MPI_Fetch_and_op", win)?;
        // The direct call: a predefined element that is its bytes, on a mapped target.
        // MPI_NO_OP reads no origin (it may be NULL): zeros of the element's length stand in.
        let zeros = [0u8; 32];
        if let (true, Some((kind, f))) = (rank >= 0 && !rbuf.is_null(), direct_op(dt, op)?) {
            let n = kind.size_bytes();
            if n <= zeros.len() && (f.is_no_op() || !obuf.is_null()) {
                // SAFETY: MPI's contract: one element at each buffer (the origin is not read
                // for MPI_NO_OP).
                let (o, res) = unsafe {
                    (
                        if f.is_no_op() {
                            &zeros[..n]
                        } else {
                            std::slice::from_raw_parts(obuf as *const u8, n)
                        },
                        std::slice::from_raw_parts_mut(rbuf as *mut u8, n),
                    )
                };
                if c.win
                    .accumulate_direct(kind, &f, o, Some(res), rank as u32, disp as i64)
                {
                    return Ok(());
                }
            }
        }
        let map = element_map(dt, "MPI_Fetch_and_op")?;
        let f = acc_op(op, dt, 1)?;
        let Some(t) = target_rank(c.win, rank)? else {
            return Ok(());
        };
        // The bytes one element spans in memory: more than its size for the padded pairs
        // (MPI_SHORT_INT: 6 bytes of data over 8).
        let n = map.footprint(1)?.map_or(0, |(_, hi)| hi as usize);
        if rbuf.is_null() || (!f.is_no_op() && obuf.is_null()) {
            return Err(err(MPI_ERR_BUFFER, "origin or result buffer is NULL"));
        }
        // SAFETY: MPI's contract: one element at each buffer (the origin is not read for
        // MPI_NO_OP).
        let (o, res) = unsafe {
            (
                if f.is_no_op() {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(obuf as *const u8, n)
                },
                std::slice::from_raw_parts_mut(rbuf as *mut u8, n),
            )
        };
        Ok(c.win.fetch_and_op(o, res, map, t, disp as i64, &f)?)
    })();
    finish_win(win, "MPI_Fetch_and_op", r)
}

/// MPI_Compare_and_swap (MPI-4.1 §12.3.4): on C integer, Fortran integer, logical,
/// multi-language and byte types.
#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    obuf: *const c_void,
    cbuf: *const c_void,
    rbuf: *mut c_void,
    dt: Handle,
    rank: c_int,
    disp: isize,
    win: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        use crate::dtype::OpClass;
        let c = call("MPI_Compare_and_swap", win)?;
        let map = element_map(dt, "MPI_Compare_and_swap")?;
        match crate::dtype::op_class(dt) {
            Some(
                OpClass::CInteger
                | OpClass::FortranInteger
                | OpClass::Logical
                | OpClass::MultiLanguage
                | OpClass::Byte,
            ) => {}
            _ => {
                return Err(err(
                    MPI_ERR_TYPE,
                    format!(
                        "MPI_Compare_and_swap on {}: only integer, logical, byte and multi-language types (MPI-4.1 §12.3.4)",
                        crate::dtype::predefined_name(dt)
                    ),
                ))
            }
        }
        let Some(t) = target_rank(c.win, rank)? else {
            return Ok(());
        };
        if obuf.is_null() || cbuf.is_null() || rbuf.is_null() {
            return Err(err(MPI_ERR_BUFFER, "a buffer is NULL"));
        }
        let n = map.size_bytes() as usize;
        // SAFETY: MPI's contract: one element at each buffer.
        let (o, cmp, res) = unsafe {
            (
                std::slice::from_raw_parts(obuf as *const u8, n),
                std::slice::from_raw_parts(cbuf as *const u8, n),
                std::slice::from_raw_parts_mut(rbuf as *mut u8, n),
            )
        };
        Ok(c.win.compare_and_swap(o, cmp, res, map, t, disp as i64)?)
    })();
    finish_win(win, "MPI_Compare_and_swap", r)
}

// ------------------------------------------------------------------- synchronisation

/// MPI_Win_fence (MPI-4.1 §12.5.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let a = assertion(assert)?;
        if !crate::threads::multiple() {
            return Ok(call("MPI_Win_fence", win)?.win.fence(a)?);
        }
        // Under MPI_THREAD_MULTIPLE the waits for this process's operations and for the
        // other members give the lock back (crate::threads::released, wait_released); each
        // poll finds the window again by its handle.
        complete_released("MPI_Win_fence", win, None)?;
        let mut w = call("MPI_Win_fence", win)?.win.fence_start(a)?;
        crate::threads::wait_released(|| -> R<bool> {
            Ok(call("MPI_Win_fence", win)?.win.fence_test(&mut w)?)
        })?;
        call("MPI_Win_fence", win)?.win.fence_end(a);
        Ok(())
    })();
    finish_win(win, "MPI_Win_fence", r)
}

/// MPI_Win_post (MPI-4.1 §12.5.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_post(group: Handle, assert: c_int, win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let a = assertion(assert)?;
        let c = call("MPI_Win_post", win)?;
        let g = window_ranks(state("MPI_Win_post")?, c.win, group)?;
        Ok(c.win.post(&g, a)?)
    })();
    finish_win(win, "MPI_Win_post", r)
}

/// MPI_Win_start (MPI-4.1 §12.5.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_start(group: Handle, assert: c_int, win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let a = assertion(assert)?;
        let c = call("MPI_Win_start", win)?;
        let g = window_ranks(state("MPI_Win_start")?, c.win, group)?;
        if !crate::threads::multiple() {
            return Ok(c.win.start(&g, a)?);
        }
        // Under MPI_THREAD_MULTIPLE the wait for the targets' posts gives the lock back
        // (crate::threads::wait_released); each poll finds the window again by its handle.
        let mut w = c.win.start_begin(&g, a)?;
        crate::threads::wait_released(|| -> R<bool> {
            Ok(call("MPI_Win_start", win)?.win.start_test(&mut w)?)
        })?;
        call("MPI_Win_start", win)?.win.start_end(w);
        Ok(())
    })();
    finish_win(win, "MPI_Win_start", r)
}

/// MPI_Win_complete (MPI-4.1 §12.5.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_complete(win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = complete_released("MPI_Win_complete", win, None)
        .and_then(|()| call("MPI_Win_complete", win))
        .and_then(|c| Ok(c.win.complete()?));
    finish_win(win, "MPI_Win_complete", r)
}

/// MPI_Win_wait (MPI-4.1 §12.5.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_wait(win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = if crate::threads::multiple() {
        // Under MPI_THREAD_MULTIPLE: MPI_Win_test's polls with the lock given back between
        // them (crate::threads::wait_released); each finds the window again by its handle.
        crate::threads::wait_released(|| -> R<bool> { Ok(call("MPI_Win_wait", win)?.win.test()?) })
    } else {
        call("MPI_Win_wait", win).and_then(|c| Ok(c.win.wait()?))
    };
    finish_win(win, "MPI_Win_wait", r)
}

/// MPI_Win_test (MPI-4.1 §12.5.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(win: Handle, flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if flag.is_null() {
            return Err(err(MPI_ERR_ARG, "flag is NULL"));
        }
        let done = call("MPI_Win_test", win)?.win.test()?;
        put!(flag, done as c_int)
    })();
    finish_win(win, "MPI_Win_test", r)
}

/// MPI_Win_lock (MPI-4.1 §12.5.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(
    lock: c_int,
    rank: c_int,
    assert: c_int,
    win: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let kind = lock_type(lock)?;
        let a = assertion(assert)?;
        let c = call("MPI_Win_lock", win)?;
        let Some(t) = target_rank(c.win, rank)? else {
            return Ok(());
        };
        if !crate::threads::multiple() {
            return Ok(c.win.lock(kind, t, a)?);
        }
        // Under MPI_THREAD_MULTIPLE the wait for another holder (maybe another thread of
        // this process) gives the lock back (crate::threads::wait_released); each attempt
        // finds the window again by its handle.
        let take = c.win.lock_begin(t, a)?;
        if take {
            crate::threads::wait_released(|| -> R<bool> {
                Ok(call("MPI_Win_lock", win)?.win.lock_attempt(kind, t)?)
            })?;
        }
        call("MPI_Win_lock", win)?.win.lock_end(kind, t, take);
        Ok(())
    })();
    finish_win(win, "MPI_Win_lock", r)
}

/// MPI_Win_unlock (MPI-4.1 §12.5.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let Some(t) = target_rank(call("MPI_Win_unlock", win)?.win, rank)? else {
            return Ok(());
        };
        complete_released("MPI_Win_unlock", win, Some(t))?;
        Ok(call("MPI_Win_unlock", win)?.win.unlock(t)?)
    })();
    finish_win(win, "MPI_Win_unlock", r)
}

/// MPI_Win_lock_all (MPI-4.1 §12.5.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let a = assertion(assert)?;
        let c = call("MPI_Win_lock_all", win)?;
        if !crate::threads::multiple() {
            return Ok(c.win.lock_all(a)?);
        }
        // Under MPI_THREAD_MULTIPLE as MPI_Win_lock does.
        let take = c.win.lock_all_begin(a)?;
        if take {
            let mut next = 0;
            crate::threads::wait_released(|| -> R<bool> {
                Ok(call("MPI_Win_lock_all", win)?
                    .win
                    .lock_all_attempt(&mut next)?)
            })?;
        }
        call("MPI_Win_lock_all", win)?.win.lock_all_end(take);
        Ok(())
    })();
    finish_win(win, "MPI_Win_lock_all", r)
}

/// MPI_Win_unlock_all (MPI-4.1 §12.5.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = complete_released("MPI_Win_unlock_all", win, None)
        .and_then(|()| call("MPI_Win_unlock_all", win))
        .and_then(|c| Ok(c.win.unlock_all()?));
    finish_win(win, "MPI_Win_unlock_all", r)
}

macro_rules! flush_forms {
    ($($name:ident;)*) => {$(
        /// MPI-4.1 §12.5.4 (MPI_Win_flush and MPI_Win_flush_local: a put's origin buffer
        /// is reusable when the put returns, so both complete the same operations).
        #[no_mangle]
        pub unsafe extern "C" fn $name(rank: c_int, win: Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = (|| {
                let w = call(stringify!($name), win)?.win;
                let Some(t) = target_rank(w, rank)? else {
                    return Ok(());
                };
                if !crate::threads::multiple() {
                    // One lookup: nothing else runs between it and the flush.
                    return Ok(w.flush(t)?);
                }
                complete_released(stringify!($name), win, Some(t))?;
                // Looked up again: while the lock was given back, another thread's window
                // creation may have moved the table's entries.
                Ok(call(stringify!($name), win)?.win.flush(t)?)
            })();
            finish_win(win, stringify!($name), r)
        }
    )*};
}

flush_forms! {
    MPI_Win_flush;
    MPI_Win_flush_local;
}

macro_rules! flush_all_forms {
    ($($name:ident;)*) => {$(
        /// MPI-4.1 §12.5.4 (MPI_Win_flush_all and MPI_Win_flush_local_all).
        #[no_mangle]
        pub unsafe extern "C" fn $name(win: Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = complete_released(stringify!($name), win, None)
                .and_then(|()| call(stringify!($name), win))
                .and_then(|c| Ok(c.win.flush_all()?));
            finish_win(win, stringify!($name), r)
        }
    )*};
}

flush_all_forms! {
    MPI_Win_flush_all;
    MPI_Win_flush_local_all;
}

/// MPI_Win_sync (MPI-4.1 §12.5.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_sync(win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = call("MPI_Win_sync", win).map(|c| c.win.sync());
    finish_win(win, "MPI_Win_sync", r)
}

// ------------------------------------------------------------------- handles

/// MPI_Win_toint (MPI 5.0 ABI): MPI_WIN_NULL keeps its value.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_toint(win: Handle) -> c_int {
    let _entered = crate::threads::enter();
    crate::misc::handle_to_int(win)
}

/// MPI_Win_fromint (MPI 5.0 ABI), the inverse of MPI_Win_toint.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fromint(v: c_int) -> Handle {
    let _entered = crate::threads::enter();
    crate::misc::handle_from_int(K_WIN, v)
}
