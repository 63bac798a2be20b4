//! Environment management (MPI-4.1 chapter 11), info objects (§10), error handler
//! management (§9.3) and the MPI-5 ABI queries. Depends on the state tables and weft's
//! init and finalize.

use crate::consts::*;
use crate::dtype::put;
use crate::error::{err, finish, raise, write_c_string, R};
use crate::state::{
    handle_index, install, make_handle, state, state_opt, uninstall, CommEntry, ErrFn, State,
    Table, FINALIZED, INITIALIZED, K_ERRH, K_INFO,
};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A Rust string from a C string argument named `what`.
///
/// # Safety
/// `p` must be null or NUL-terminated.
pub unsafe fn c_str(p: *const c_char, what: &str) -> R<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null and NUL-terminated (the caller's contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Starts weft and installs the state when no state exists: MPI_Init and the first
/// MPI_Session_init share one start (the world model and sessions coexist on one weft
/// instance). Info objects and error handlers made before have their tables moved in, so
/// their handles stay valid. Returns the thread level provided for `required`, whoever
/// started weft (see [`provided_level`]).
pub(crate) fn start(required: c_int) -> R<c_int> {
    if let Some(s) = state_opt() {
        return Ok(provided_level(
            required,
            s.weft.config().mpi_thread_multiple,
        ));
    }
    let weft = weft::init()?;
    let provided = provided_level(required, weft.config().mpi_thread_multiple);
    WTIME_ORIGIN_NS.store(monotonic_ns(), Ordering::Relaxed);
    let mut comms = Table::new();
    for (c, name) in [
        (weft.world(), "MPI_COMM_WORLD"),
        (weft.self_comm(), "MPI_COMM_SELF"),
    ] {
        comms.insert(CommEntry {
            comm: c,
            errhandler: MPI_ERRORS_ARE_FATAL,
            name: name.into(),
            cart: None,
            graph: None,
            attrs: Vec::new(),
            inter: None,
            neighbor: None,
        });
    }
    crate::dtype::CHAR_REDUCTIONS.store(
        weft.config().char_reductions,
        std::sync::atomic::Ordering::Relaxed,
    );
    install(State {
        weft,
        comms,
        groups: Table::new(),
        reqs: Table::new(),
        types: Table::new(),
        ops: Table::new(),
        infos: std::mem::take(&mut *loose(&LOOSE_INFOS)),
        errhs: std::mem::take(&mut *loose(&LOOSE_ERRHS)),
        keyvals: Table::new(),
        messages: Table::new(),
        thread_level: provided,
        main_thread: std::thread::current().id(),
        bsend: Default::default(),
        detached: Vec::new(),
        compounds: Default::default(),
        idups: Default::default(),
        files: Default::default(),
        type_names: Default::default(),
        wins: Default::default(),
        spawned: Default::default(),
    });
    if let Some(s) = state_opt() {
        crate::spawn::join_parent(s)?;
    }
    Ok(provided)
}

/// Ends weft once neither the world model nor any session uses it: finishes buffered
/// sends, drops the tables and finalizes weft (which waits for every rank). Info objects
/// and error handlers stay usable: their tables move out of the state.
pub(crate) fn stop() -> R<()> {
    let s = state("MPI_Finalize")?;
    s.bsend.flush_all()?;
    // A freed receive that matched gets its data; one that never matched is withdrawn
    // when dropped (a program that frees a receive no message will match is erroneous).
    crate::p2p::reap_detached(s)?;
    s.detached.clear();
    let s = uninstall().expect("state checked above");
    let State {
        weft,
        comms,
        reqs,
        compounds,
        idups,
        infos,
        errhs,
        wins,
        spawned,
        ..
    } = s;
    *loose(&LOOSE_INFOS) = infos;
    *loose(&LOOSE_ERRHS) = errhs;
    // Requests and communicators hold the engine; drop them before finalize (the
    // requests before the compounds, whose final steps own buffers they may write).
    drop(reqs);
    // Windows the program did not free stop being served before the engine ends.
    drop(wins);
    drop(compounds);
    drop(idups);
    drop(comms);
    spawned.finish()?;
    weft.finalize()?;
    Ok(())
}

/// Info objects while no state exists (before MPI_Init or the first session, after the
/// last finalize): MPI-4.1 §11.4 lets programs use them then.
static LOOSE_INFOS: Mutex<Table<Vec<(String, String)>>> = Mutex::new(Table::new());
/// Error handlers made while no state exists (MPI_Session_create_errhandler before the
/// first MPI_Session_init).
static LOOSE_ERRHS: Mutex<Table<ErrFn>> = Mutex::new(Table::new());

fn loose<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on the table of info objects: the state's, or the loose one.
fn with_infos<T>(f: impl FnOnce(&mut Table<Vec<(String, String)>>) -> T) -> T {
    match state_opt() {
        Some(s) => f(&mut s.infos),
        None => f(&mut loose(&LOOSE_INFOS)),
    }
}

/// Registers an error handler function in the state's table or the loose one.
pub(crate) fn errhandler_insert(f: ErrFn) -> Handle {
    let i = match state_opt() {
        Some(s) => s.errhs.insert(f),
        None => loose(&LOOSE_ERRHS).insert(f),
    };
    make_handle(K_ERRH, i)
}

fn init(func: &str, required: c_int) -> R<c_int> {
    if INITIALIZED.load(Ordering::Acquire) {
        return Err(err(
            MPI_ERR_OTHER,
            format!("{func}: MPI is already initialised"),
        ));
    }
    let provided = start(required)?;
    // Every rank takes the blocking calls' nonblocking twins when any got
    // MPI_THREAD_MULTIPLE (crate::threads::twins): the ranks' collective sequences then match
    // whatever level each asked for. MPI_Init(_thread) is collective over the world.
    let mine = [(provided == MPI_THREAD_MULTIPLE) as u32];
    let mut any = [0u32];
    state(func)?
        .weft
        .world()
        .allreduce(&mine, &mut any, &weft::coll::Op::Max)?;
    if any[0] != 0 {
        crate::threads::take_twins();
    }
    // The world model's level (MPI_Query_thread), also when a session started weft.
    state(func)?.thread_level = provided;
    INITIALIZED.store(true, Ordering::Release);
    Ok(provided)
}

/// The thread level provided for `required`: as asked, up to MPI_THREAD_MULTIPLE unless the
/// `WEFT_MPI_THREAD_MULTIPLE=0` knob caps it (`multiple_allowed` false) at
/// MPI_THREAD_SERIALIZED (no locking: the program orders its calls). Providing
/// MPI_THREAD_MULTIPLE turns on the lock of [`crate::threads`] for every later call; the
/// calling init is the only thread inside MPI then (no other thread may call MPI before an
/// init returns, and under a lower level the program serialises its calls).
fn provided_level(required: c_int, multiple_allowed: bool) -> c_int {
    let most = if multiple_allowed {
        MPI_THREAD_MULTIPLE
    } else {
        MPI_THREAD_SERIALIZED
    };
    let provided = required.clamp(MPI_THREAD_SINGLE, most);
    if provided == MPI_THREAD_MULTIPLE {
        crate::threads::provide_multiple();
    }
    provided
}

/// MPI_Init (MPI-4.1 §11.2.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    let _entered = crate::threads::enter();
    finish(
        MPI_COMM_WORLD,
        "MPI_Init",
        init("MPI_Init", MPI_THREAD_SINGLE).map(|_| ()),
    )
}

/// MPI_Init_thread (MPI-4.1 §11.2.1): provides the level asked for, MPI_THREAD_MULTIPLE
/// included ([`crate::threads`]), unless `WEFT_MPI_THREAD_MULTIPLE=0` caps it at
/// MPI_THREAD_SERIALIZED, and says so.
///
/// # Safety
/// `provided` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = init("MPI_Init_thread", required).and_then(|p| put!(provided, p));
    finish(MPI_COMM_WORLD, "MPI_Init_thread", r)
}

/// MPI_Initialized (MPI-4.1 §11.2.1).
///
/// # Safety
/// `flag` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = put!(flag, INITIALIZED.load(Ordering::Acquire) as c_int);
    finish(MPI_COMM_WORLD, "MPI_Initialized", r)
}

/// MPI_Finalized (MPI-4.1 §11.2.1).
///
/// # Safety
/// `flag` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = put!(flag, FINALIZED.load(Ordering::Acquire) as c_int);
    finish(MPI_COMM_WORLD, "MPI_Finalized", r)
}

/// MPI_Finalize (MPI-4.1 §11.2.2): finishes buffered sends, then waits for every rank.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if FINALIZED.load(Ordering::Acquire) {
            // With a session open the state outlives MPI_Finalize; a second call is still
            // erroneous (MPI-4.1 §11.2.2: once per process).
            return Err(err(MPI_ERR_OTHER, "MPI_Finalize called after MPI_Finalize"));
        }
        let s = state("MPI_Finalize")?;
        // MPI_COMM_SELF is freed first, as if by MPI_Comm_free, so its attributes' delete
        // callbacks run at the very beginning, in the reverse order of their setting
        // (MPI-4.1 §11.2.2): tools use them as an "at exit" hook.
        let keys: Vec<c_int> = s
            .comm(MPI_COMM_SELF)?
            .attrs
            .iter()
            .rev()
            .map(|&(k, _)| k)
            .collect();
        for k in keys {
            let set = s.comm(MPI_COMM_SELF)?.attrs.iter().find(|(x, _)| *x == k);
            if let Some(&(_, v)) = set {
                crate::comm::delete_attr(s, MPI_COMM_SELF, k, v)?;
            }
        }
        FINALIZED.store(true, Ordering::Release);
        // A session still open keeps weft running; its MPI_Session_finalize ends it.
        if crate::session::open_sessions() == 0 {
            stop()?;
        }
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Finalize", r)
}

/// MPI_Query_thread (MPI-4.1 §11.2.1).
///
/// # Safety
/// `provided` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Query_thread").and_then(|s| put!(provided, s.thread_level));
    finish(MPI_COMM_WORLD, "MPI_Query_thread", r)
}

/// MPI_Is_thread_main (MPI-4.1 §11.2.1).
///
/// # Safety
/// `flag` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Is_thread_main").and_then(|s| {
        put!(
            flag,
            (s.main_thread == std::thread::current().id()) as c_int
        )
    });
    finish(MPI_COMM_WORLD, "MPI_Is_thread_main", r)
}

/// MPI_Abort (MPI-4.1 §11.3): ends every rank of the job with `errorcode`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: Handle, errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    match state_opt() {
        Some(s) => s
            .weft
            .abort(errorcode, &format!("MPI_Abort on communicator {comm:#x}")),
        None => std::process::exit(errorcode),
    }
}

/// Where MPI_Wtime counts from: the node's monotonic clock when weft started on this rank
/// (MPI_Init or the first MPI_Session_init), in nanoseconds (0 before).
static WTIME_ORIGIN_NS: AtomicI64 = AtomicI64::new(0);

/// The node's monotonic clock (CLOCK_MONOTONIC, the one `std::time::Instant` reads), in
/// nanoseconds.
#[inline(always)]
#[allow(clippy::unnecessary_cast)] // time_t and c_long are i64 on 64-bit Linux only
fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid place for the result; CLOCK_MONOTONIC always exists on Linux,
    // so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// MPI_Wtime (MPI-4.1 §11.6): seconds since weft started on this rank (MPI_Init or the first
/// MPI_Session_init; before that, on the node's monotonic clock). One clock read and integer
/// arithmetic: the time a program measures between two calls includes the work of each call
/// on one side of its clock read, so every instruction here counts in every measurement
/// (np=4 8 B scatterv in coll_lat's loop: 2 Wtime and 2 clock_gettime around the call take
/// 0.08 of its 0.125 us).
#[no_mangle]
pub unsafe extern "C" fn MPI_Wtime() -> f64 {
    let _entered = crate::threads::enter();
    (monotonic_ns() - WTIME_ORIGIN_NS.load(Ordering::Relaxed)) as f64 * 1e-9
}

/// MPI_Wtick (MPI-4.1 §11.6): the clock counts nanoseconds.
#[no_mangle]
pub unsafe extern "C" fn MPI_Wtick() -> f64 {
    let _entered = crate::threads::enter();
    1e-9
}

/// MPI_Get_processor_name (MPI-4.1 §11.1.1): the rank's node identity.
///
/// # Safety
/// `name` must hold MPI_MAX_PROCESSOR_NAME bytes; `resultlen` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    if name.is_null() || resultlen.is_null() {
        let which = if name.is_null() { "name" } else { "resultlen" };
        return finish(
            MPI_COMM_WORLD,
            "MPI_Get_processor_name",
            Err(err(MPI_ERR_ARG, format!("{which} is NULL"))),
        );
    }
    let r = state("MPI_Get_processor_name").map(|s| {
        // SAFETY: forwarded caller contract.
        unsafe { write_c_string(s.weft.node_id(), name, MPI_MAX_PROCESSOR_NAME, resultlen) }
    });
    finish(MPI_COMM_WORLD, "MPI_Get_processor_name", r)
}

/// MPI_Get_version (MPI-4.1 §11.1.1).
///
/// # Safety
/// Both pointers must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = put!(version, MPI_VERSION).and_then(|_| put!(subversion, MPI_SUBVERSION));
    finish(MPI_COMM_WORLD, "MPI_Get_version", r)
}

/// MPI_Get_library_version (MPI-4.1 §11.1.1).
///
/// # Safety
/// `version` must hold MPI_MAX_LIBRARY_VERSION_STRING bytes; `resultlen` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(
    version: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let text = format!(
        "weft {} (MPI {MPI_VERSION}.{MPI_SUBVERSION} standard ABI {MPI_ABI_VERSION}.{MPI_ABI_SUBVERSION})",
        env!("CARGO_PKG_VERSION")
    );
    // SAFETY: forwarded caller contract.
    unsafe { write_c_string(&text, version, MPI_MAX_LIBRARY_VERSION_STRING, resultlen) };
    MPI_SUCCESS
}

/// MPI_Abi_get_version (MPI-5.0 ABI chapter).
///
/// # Safety
/// Both pointers must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_version(major: *mut c_int, minor: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = put!(major, MPI_ABI_VERSION).and_then(|_| put!(minor, MPI_ABI_SUBVERSION));
    finish(MPI_COMM_WORLD, "MPI_Abi_get_version", r)
}

/// MPI_Abi_get_info (MPI-5.0 ABI chapter): an info object describing the ABI's types.
///
/// # Safety
/// `info` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_info(info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Abi_get_info").and_then(|s| {
        let kv = vec![
            ("mpi_aint_size".to_string(), "8".to_string()),
            ("mpi_count_size".to_string(), "8".to_string()),
            ("mpi_offset_size".to_string(), "8".to_string()),
            ("mpi_fortran_logical_size".to_string(), "4".to_string()),
        ];
        put!(info, make_handle(K_INFO, s.infos.insert(kv)))
    });
    finish(MPI_COMM_WORLD, "MPI_Abi_get_info", r)
}

/// MPI_Alloc_mem (MPI-4.1 §12.2.1): plain heap memory (no special registration needed).
///
/// # Safety
/// `baseptr` must be writable as a `void*`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(size: isize, _info: Handle, baseptr: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if size < 0 {
            return Err(err(MPI_ERR_ARG, format!("size {size} is negative")));
        }
        // SAFETY: malloc of any size; null is checked.
        let p = unsafe { libc::malloc(size.max(1) as usize) };
        if p.is_null() {
            return Err(err(MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes")));
        }
        put!(baseptr as *mut *mut c_void, p)
    })();
    finish(MPI_COMM_WORLD, "MPI_Alloc_mem", r)
}

/// MPI_Free_mem (MPI-4.1 §12.2.1).
///
/// # Safety
/// `base` must come from MPI_Alloc_mem.
#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: allocated by malloc in MPI_Alloc_mem (the caller's contract).
    unsafe { libc::free(base) };
    MPI_SUCCESS
}

// ------------------------------------------------------------------- info objects

/// The table index holding MPI_INFO_ENV's keys, made at its first use (usize::MAX: none).
static INFO_ENV_INDEX: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(usize::MAX);

/// MPI_INFO_ENV's keys (MPI-4.1 §11.2.2): how the process was started (before MPI_Init,
/// the job size the launcher gave).
fn info_env_entries(s: Option<&State>) -> Vec<(String, String)> {
    let args: Vec<String> = std::env::args().collect();
    let mut kv = Vec::new();
    if let Some(cmd) = args.first() {
        kv.push(("command".to_string(), cmd.clone()));
    }
    if args.len() > 1 {
        kv.push(("argv".to_string(), args[1..].join(" ")));
    }
    let size = match s {
        Some(s) => s.weft.world().size().to_string(),
        None => weft_core::knob::KnobValues::read_env(&[weft_core::knob::LAUNCH_VARS])
            .ok()
            .and_then(|(v, _)| v.text("WEFT_SIZE"))
            .unwrap_or_else(|| "1".into()),
    };
    kv.push(("maxprocs".to_string(), size));
    kv.push(("arch".to_string(), std::env::consts::ARCH.to_string()));
    if let Ok(dir) = std::env::current_dir() {
        kv.push(("wdir".to_string(), dir.display().to_string()));
    }
    let level = thread_level_name(s.map_or(MPI_THREAD_SERIALIZED, |s| s.thread_level));
    kv.push(("thread_level".to_string(), level.to_string()));
    kv
}

/// Runs `f` on the keys and values of info object `h` (before MPI_Init too).
fn with_info<T>(h: Handle, f: impl FnOnce(&mut Vec<(String, String)>) -> R<T>) -> R<T> {
    // MPI_INFO_ENV is made on its first use (its entries read the arguments and the
    // working directory: not again on every access).
    let made = || with_infos(|t| t.get(INFO_ENV_INDEX.load(Ordering::Acquire)).is_some());
    let env = (h == MPI_INFO_ENV && !made()).then(|| info_env_entries(state_opt().map(|s| &*s)));
    with_infos(|t| {
        let h = if h == MPI_INFO_ENV {
            let mut i = INFO_ENV_INDEX.load(Ordering::Acquire);
            if let Some(kv) = env {
                i = t.insert(kv);
                INFO_ENV_INDEX.store(i, Ordering::Release);
            }
            make_handle(K_INFO, i)
        } else {
            h
        };
        let kv = handle_index(K_INFO, h)
            .and_then(|i| t.get_mut(i))
            .ok_or_else(|| err(MPI_ERR_INFO, format!("info handle {h:#x} is not valid")))?;
        f(kv)
    })
}

/// Sets `key` to `value` in info object `h` (a call that reports through its info, as
/// MPI_Comm_split_type with MPI_COMM_TYPE_HW_UNGUIDED does).
pub(crate) fn info_set(h: Handle, key: &str, value: &str) -> R<()> {
    with_info(h, |kv| {
        match kv.iter_mut().find(|(a, _)| a == key) {
            Some(e) => e.1 = value.to_string(),
            None => kv.push((key.to_string(), value.to_string())),
        }
        Ok(())
    })
}

/// The keys and values of info object `h` (before MPI_Init too).
pub(crate) fn info_entries(h: Handle) -> R<Vec<(String, String)>> {
    with_info(h, |kv| Ok(kv.clone()))
}

/// Whether `h` is a predefined error handler or one the program made (before MPI_Init too).
pub(crate) fn errhandler_exists(h: Handle) -> bool {
    matches!(
        h,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT | MPI_ERRORS_RETURN
    ) || errhandler_fn(h).is_some()
}

/// The function of user error handler `h`, from the state's table or, while no state
/// exists, the loose one.
pub(crate) fn errhandler_fn(h: Handle) -> Option<ErrFn> {
    let i = handle_index(K_ERRH, h)?;
    match state_opt() {
        Some(s) => s.errhs.get(i).copied(),
        None => loose(&LOOSE_ERRHS).get(i).copied(),
    }
}

/// The name of a thread level, as info values spell it.
pub(crate) fn thread_level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// A new info object holding `kv` (before MPI_Init too).
pub(crate) fn info_insert(kv: Vec<(String, String)>) -> Handle {
    make_handle(K_INFO, with_infos(|t| t.insert(kv)))
}

/// MPI_Info_create (MPI-4.1 §10).
///
/// # Safety
/// `info` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { info_create_as("MPI_Info_create", info) }
}

/// MPI_Info_create's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Info_create's contract.
pub(crate) unsafe fn info_create_as(func: &str, info: *mut Handle) -> c_int {
    let r = (|| {
        if info.is_null() {
            return Err(err(MPI_ERR_ARG, "info is NULL"));
        }
        put!(info, info_insert(Vec::new()))
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Info_create_env (MPI-4.1 §11.2.2): the keys of MPI_INFO_ENV for this process, with
/// `command` and `argv` from the arguments given (when `argc > 0`); callable before MPI_Init
/// and after MPI_Finalize. `thread_level` is left out: it depends on the init call, and the
/// object must describe the process the same way whenever it is made.
///
/// # Safety
/// `argv` null or holding `argc` NUL-terminated strings; `info` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(
    argc: c_int,
    argv: *const *const c_char,
    info: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if info.is_null() {
            return Err(err(MPI_ERR_ARG, "info is NULL"));
        }
        let mut kv = info_env_entries(state_opt().map(|s| &*s));
        kv.retain(|(k, _)| k != "thread_level");
        if argc > 0 && !argv.is_null() {
            let mut args = Vec::new();
            for i in 0..argc as usize {
                // SAFETY: argv holds argc strings (the caller's contract).
                let a = unsafe { *argv.add(i) };
                // SAFETY: each is NUL-terminated or null.
                args.push(unsafe { c_str(a, "argv element")? });
            }
            kv.retain(|(k, _)| k != "command" && k != "argv");
            kv.insert(0, ("command".into(), args[0].clone()));
            if args.len() > 1 {
                kv.insert(1, ("argv".into(), args[1..].join(" ")));
            }
        }
        put!(info, info_insert(kv))
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_create_env", r)
}

/// MPI_Info_set (MPI-4.1 §10).
///
/// # Safety
/// `key` and `value` must be NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(
    info: Handle,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: `key` is null or NUL-terminated (this function's contract), as c_str
        // requires.
        let k = unsafe { c_str(key, "key")? };
        // SAFETY: `value` is null or NUL-terminated (this function's contract), as c_str
        // requires.
        let v = unsafe { c_str(value, "value")? };
        if k.is_empty() || k.len() >= MPI_MAX_INFO_KEY {
            return Err(err(MPI_ERR_INFO_KEY, format!("key of {} bytes", k.len())));
        }
        if v.len() >= MPI_MAX_INFO_VAL {
            return Err(err(
                MPI_ERR_INFO_VALUE,
                format!("value of {} bytes", v.len()),
            ));
        }
        with_info(info, |kv| {
            match kv.iter_mut().find(|(a, _)| *a == k) {
                Some(e) => e.1 = v,
                None => kv.push((k, v)),
            }
            Ok(())
        })
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_set", r)
}

/// MPI_Info_get (MPI-4.1 §10, deprecated form): copies at most `valuelen` bytes.
///
/// # Safety
/// `value` must hold `valuelen + 1` bytes; `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(
    info: Handle,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: `key` is null or NUL-terminated (this function's contract), as c_str
        // requires.
        let k = unsafe { c_str(key, "key")? };
        let found = with_info(info, |kv| Ok(kv.iter().find(|(a, _)| *a == k).cloned()))?;
        match found {
            Some((_, v)) => {
                // SAFETY: value holds valuelen + 1 bytes.
                unsafe {
                    write_c_string(
                        &v,
                        value,
                        valuelen.max(0) as usize + 1,
                        std::ptr::null_mut(),
                    )
                };
                put!(flag, 1)
            }
            None => put!(flag, 0),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_get", r)
}

/// MPI_Info_get_string (MPI-4.1 §10): `buflen` is in-out.
///
/// # Safety
/// `value` must hold `*buflen` bytes; pointers writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_string(
    info: Handle,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: `key` is null or NUL-terminated (this function's contract), as c_str
        // requires.
        let k = unsafe { c_str(key, "key")? };
        if buflen.is_null() {
            return Err(err(MPI_ERR_ARG, "buflen is NULL"));
        }
        let found = with_info(info, |kv| Ok(kv.iter().find(|(a, _)| *a == k).cloned()))?;
        match found {
            Some((_, v)) => {
                // SAFETY: buflen readable and writable; value holds *buflen bytes.
                unsafe {
                    let cap = (*buflen).max(0) as usize;
                    if cap > 0 {
                        write_c_string(&v, value, cap, std::ptr::null_mut());
                    }
                    *buflen = v.len() as c_int + 1;
                }
                put!(flag, 1)
            }
            None => put!(flag, 0),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_get_string", r)
}

/// MPI_Info_get_valuelen (MPI-4.1 §10, deprecated form).
///
/// # Safety
/// Pointers writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    info: Handle,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: `key` is null or NUL-terminated (this function's contract), as c_str
        // requires.
        let k = unsafe { c_str(key, "key")? };
        let found = with_info(info, |kv| Ok(kv.iter().find(|(a, _)| *a == k).cloned()))?;
        match found {
            Some((_, v)) => put!(valuelen, v.len() as c_int).and_then(|_| put!(flag, 1)),
            None => put!(flag, 0),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_get_valuelen", r)
}

/// MPI_Info_get_nkeys (MPI-4.1 §10).
///
/// # Safety
/// `nkeys` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = with_info(info, |kv| Ok(kv.len())).and_then(|n| put!(nkeys, n as c_int));
    finish(MPI_COMM_WORLD, "MPI_Info_get_nkeys", r)
}

/// MPI_Info_get_nthkey (MPI-4.1 §10).
///
/// # Safety
/// `key` must hold MPI_MAX_INFO_KEY bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: Handle, n: c_int, key: *mut c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = with_info(info, |kv| {
        match usize::try_from(n).ok().and_then(|i| kv.get(i)) {
            Some((k, _)) => {
                // SAFETY: key holds MPI_MAX_INFO_KEY bytes.
                unsafe { write_c_string(k, key, MPI_MAX_INFO_KEY, std::ptr::null_mut()) };
                Ok(())
            }
            None => Err(err(
                MPI_ERR_ARG,
                format!("n = {n} but the info has {} keys", kv.len()),
            )),
        }
    });
    finish(MPI_COMM_WORLD, "MPI_Info_get_nthkey", r)
}

/// MPI_Info_delete (MPI-4.1 §10).
///
/// # Safety
/// `key` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: Handle, key: *const c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: `key` is null or NUL-terminated (this function's contract), as c_str
        // requires.
        let k = unsafe { c_str(key, "key")? };
        with_info(info, |kv| match kv.iter().position(|(a, _)| *a == k) {
            Some(i) => {
                kv.remove(i);
                Ok(())
            }
            None => Err(err(MPI_ERR_INFO_NOKEY, format!("key {k:?} is not set"))),
        })
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_delete", r)
}

/// MPI_Info_dup (MPI-4.1 §10).
///
/// # Safety
/// `newinfo` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: Handle, newinfo: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = with_info(info, |kv| Ok(kv.clone())).and_then(|kv| put!(newinfo, info_insert(kv)));
    finish(MPI_COMM_WORLD, "MPI_Info_dup", r)
}

/// MPI_Info_free (MPI-4.1 §10).
///
/// # Safety
/// `info` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if info.is_null() {
            return Err(err(MPI_ERR_ARG, "info pointer is NULL"));
        }
        // SAFETY: non-null.
        let h = unsafe { *info };
        with_infos(|t| handle_index(K_INFO, h).and_then(|i| t.remove(i)))
            .ok_or_else(|| err(MPI_ERR_INFO, format!("info handle {h:#x} is not valid")))?;
        put!(info, MPI_INFO_NULL)
    })();
    finish(MPI_COMM_WORLD, "MPI_Info_free", r)
}

// ------------------------------------------------------------------- error handlers

/// MPI_Comm_create_errhandler (MPI-4.1 §9.3.1).
///
/// # Safety
/// `errhandler` writable; `f` a valid function.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(
    f: Option<ErrFn>,
    errhandler: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_create_errhandler_as("MPI_Comm_create_errhandler", f, errhandler) }
}

/// MPI_Comm_create_errhandler's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_create_errhandler's contract.
pub(crate) unsafe fn comm_create_errhandler_as(
    func: &str,
    f: Option<ErrFn>,
    errhandler: *mut Handle,
) -> c_int {
    let r = (|| {
        let f = f.ok_or_else(|| err(MPI_ERR_ARG, "function is NULL"))?;
        state(func)?;
        put!(errhandler, errhandler_insert(f))
    })();
    finish(MPI_COMM_WORLD, func, r)
}

pub(crate) fn valid_errhandler(s: &State, h: Handle) -> R<()> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT | MPI_ERRORS_RETURN => Ok(()),
        _ if handle_index(K_ERRH, h)
            .and_then(|i| s.errhs.get(i))
            .is_some() =>
        {
            Ok(())
        }
        _ => Err(err(
            MPI_ERR_ERRHANDLER,
            format!("error handler {h:#x} is not valid"),
        )),
    }
}

/// MPI_Comm_set_errhandler (MPI-4.1 §9.3.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_errhandler(comm: Handle, errhandler: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_set_errhandler")?;
        valid_errhandler(s, errhandler)?;
        s.comm_mut(comm)?.errhandler = errhandler;
        Ok(())
    })();
    finish(comm, "MPI_Comm_set_errhandler", r)
}

/// MPI_Comm_get_errhandler (MPI-4.1 §9.3.1).
///
/// # Safety
/// `errhandler` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(comm: Handle, errhandler: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r =
        state("MPI_Comm_get_errhandler").and_then(|s| put!(errhandler, s.comm(comm)?.errhandler));
    finish(comm, "MPI_Comm_get_errhandler", r)
}

/// MPI_Errhandler_free (MPI-4.1 §9.3.4).
///
/// # Safety
/// `errhandler` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errhandler: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if errhandler.is_null() {
            return Err(err(MPI_ERR_ARG, "errhandler pointer is NULL"));
        }
        // SAFETY: non-null.
        let h = unsafe { *errhandler };
        // Before MPI_Init too: session error handlers are made before any session.
        if !errhandler_exists(h) {
            return Err(err(
                MPI_ERR_ERRHANDLER,
                format!("error handler {h:#x} is not valid"),
            ));
        }
        // Communicators keep using a freed user handler until they change it (MPI-4.1
        // §9.3.4), so the function stays in the table.
        put!(errhandler, MPI_ERRHANDLER_NULL)
    })();
    finish(MPI_COMM_WORLD, "MPI_Errhandler_free", r)
}

/// MPI_Comm_call_errhandler (MPI-4.1 §9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(comm: Handle, errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    if let Err(e) = state("MPI_Comm_call_errhandler").and_then(|s| s.comm(comm).map(|_| ())) {
        return raise(comm, "MPI_Comm_call_errhandler", e);
    }
    raise(
        comm,
        "MPI_Comm_call_errhandler",
        err(
            errorcode,
            format!("error {errorcode} raised by the program"),
        ),
    );
    MPI_SUCCESS
}
