//! `libshmem`: the OpenSHMEM 1.5 C interface of weft (and the deprecated 1.3/1.4 names that
//! programs still call), plus weft's synchronisation engine as `weft/sync.h`.
//!
//! Thin by design: argument checks and address translation live in `weft::rma`, waiting
//! words in `weft::sync`, collectives in `weft::Comm`. Data movement never takes a lock: the
//! symmetric heap is shared by every thread, so each initiating thread stores directly. The
//! runtime itself (`Weft`, communicators) is not thread-safe and sits behind one mutex that
//! only collectives, allocation and team calls take.
//!
//! Every exported routine (and its profiling name `pshmem_*`) is written by `build.rs` from
//! tables of C prototypes into `exports.rs`: the per-type ones call the generic helpers of this
//! module, the untyped ones the functions of `api.rs` of the same name.
//!
//! Errors are fatal, as in OpenSHMEM: the message (naming the call, PE and address) goes to
//! stderr and the job is aborted. Must not be depended on by the runtime.

#![allow(clippy::missing_safety_doc)]

/// The exported C entry points, written by `build.rs` (see the crate docs).
#[allow(
    clippy::unnecessary_cast,
    clippy::too_many_arguments,
    unused_unsafe,
    clippy::missing_safety_doc
)]
mod exports {
    use crate::*;
    use std::ffi::{c_char, c_long, c_void};
    include!(concat!(env!("OUT_DIR"), "/exports.rs"));
}

pub use exports::EXPORTED_ROUTINES;

/// C's `long double` as the RMA routines move it: 16 opaque bytes.
pub type LongDoubleBytes = [u8; 16];

/// `char` of the platform as a reduction element (signed on x86-64, unsigned on AArch64).
pub(crate) const CHAR_KIND: TypeKind = if (std::ffi::c_char::MIN as i32) < 0 {
    TypeKind::I8
} else {
    TypeKind::U8
};

/// `shmem_team_config_t` (OpenSHMEM 1.5 §9.4.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// Contexts the program expects to create from the team.
    pub num_contexts: c_int,
}

/// `SHMEM_TEAM_NUM_CONTEXTS`: the `num_contexts` field of a config mask.
pub const SHMEM_TEAM_NUM_CONTEXTS: std::ffi::c_long = 1;
/// `SHMEM_MALLOC_ATOMICS_REMOTE`: a `shmem_malloc_with_hints` hint.
pub const SHMEM_MALLOC_ATOMICS_REMOTE: std::ffi::c_long = 1;
/// `SHMEM_MALLOC_SIGNAL_REMOTE`: a `shmem_malloc_with_hints` hint.
pub const SHMEM_MALLOC_SIGNAL_REMOTE: std::ffi::c_long = 2;
/// `SHMEM_CTX_SERIALIZED`: a context option.
pub const SHMEM_CTX_SERIALIZED: std::ffi::c_long = 1;
/// `SHMEM_CTX_PRIVATE`: a context option.
pub const SHMEM_CTX_PRIVATE: std::ffi::c_long = 2;
/// `SHMEM_CTX_NOSTORE`: a context option.
pub const SHMEM_CTX_NOSTORE: std::ffi::c_long = 4;

/// Moves the program's globals into a shared file before `main`, so the PEs of a node reach
/// them like the symmetric heap (see `weft::rma::statics`). The loader runs the functions of
/// `.init_array` when it loads libshmem, before the program's `main` and before any thread
/// of the program exists.
#[used]
#[link_section = ".init_array"]
pub(crate) static SHARE_GLOBALS_AT_LOAD: extern "C" fn() = share_globals_at_load;

extern "C" fn share_globals_at_load() {
    // The knobs as weft reads them at init; a malformed one is left for shmem_init to report.
    let Ok((values, _)) = weft_core::knob::KnobValues::read_env(&weft::knob_tables()) else {
        return;
    };
    weft::rma::statics::share_at_load(|name| values.text(name));
}

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use weft::coll::TypeKind;
use weft::rma::net::Amo;
use weft::rma::SymmetricHeap;
use weft::sync::{JobSync, SyncEngine, SyncOp};
use weft::{Comm, Error, ErrorKind, Op, Result, Weft};

/// A team handle as C sees it (`shmem_team_t`): 1 is `SHMEM_TEAM_WORLD`, 2
/// `SHMEM_TEAM_SHARED`, larger values index teams made by splits, 0 is invalid.
pub type ShmemTeam = usize;
/// A context handle (`shmem_ctx_t`); contexts share the direct data path, see `shmem_ctx_create`.
pub type ShmemCtx = usize;

struct Runtime {
    weft: Weft,
    /// Index 0 = SHMEM_TEAM_WORLD, 1 = SHMEM_TEAM_SHARED, then split teams (None once
    /// destroyed, or on PEs outside the team).
    teams: Vec<Option<Team>>,
    /// The job-wide synchronisation engine of `weft/sync.h`'s `weft_sync_job_*` (its own
    /// node table, so job-wide and node-wide addresses never meet).
    job: JobSync,
}

#[derive(Clone)]
struct Team {
    comm: Comm,
    /// World PE of each team member, in team order.
    pes: Arc<[u32]>,
    /// The configuration it was created with (`shmem_team_get_config`).
    config: TeamConfig,
}

/// The runtime behind a mutex. `Weft` holds `Rc`s and is not `Send`: every use happens with
/// the mutex held and no `Rc` is ever cloned out of it, so moving it between threads is safe.
struct Cell(Option<Runtime>);
// SAFETY: see `Cell`: all access is serialised by RUNTIME's mutex and nothing escapes.
unsafe impl Send for Cell {}

static RUNTIME: Mutex<Cell> = Mutex::new(Cell(None));
static HEAP: OnceLock<SymmetricHeap> = OnceLock::new();
static SYNC: OnceLock<SyncEngine> = OnceLock::new();
/// Whether every PE is on this node (then barriers use the synchronisation engine).
static ONE_NODE: OnceLock<bool> = OnceLock::new();
/// Slots of the active-set barrier words across nodes.
const ACTIVE_SLOTS: usize = 64;
/// Address of those words in this PE's heap (set only when PEs span several nodes).
static ACTIVE_WORDS: OnceLock<u64> = OnceLock::new();

/// Address of this PE's word in its heap where an active-set `collect32/64` publishes how
/// many bytes it contributes (a PE is in one collective at a time, so one word does).
static COLLECT_WORD: OnceLock<u64> = OnceLock::new();

const TAG_BARRIER_ALL: u64 = 0x5eed_0000_0000_0001;
const TAG_ACTIVE_SET: u64 = 0x5eed_0001_0000_0000;

fn runtime() -> MutexGuard<'static, Cell> {
    RUNTIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Prints `e` and ends the job (OpenSHMEM's fatal error).
fn fatal(e: Error) -> ! {
    let message = format!("weft shmem: {e}");
    if let Ok(mut g) = RUNTIME.try_lock() {
        if let Some(rt) = g.0.take() {
            rt.weft.abort(1, &message);
        }
    }
    weft_core::diag!("{message}");
    std::process::exit(1)
}

fn ok<T>(r: Result<T>) -> T {
    r.unwrap_or_else(|e| fatal(e))
}

fn heap() -> &'static SymmetricHeap {
    HEAP.get().unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            "an OpenSHMEM call before shmem_init",
        ))
    })
}

fn engine() -> &'static SyncEngine {
    SYNC.get().unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            "a weft_sync call before shmem_init",
        ))
    })
}

fn pe_u32(pe: c_int, call: &str) -> u32 {
    let n = heap().npes();
    if pe < 0 || pe as u32 >= n {
        fatal(Error::new(
            ErrorKind::InvalidRank,
            format!(
                "{call}: PE {pe} out of range 0..{n} (calling PE {})",
                heap().pe()
            ),
        ));
    }
    pe as u32
}

fn bytes_of(nelems: usize, elem_bytes: usize, call: &str) -> usize {
    nelems.checked_mul(elem_bytes).unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidCount,
            format!("{call}: {nelems} elements of {elem_bytes} bytes overflow"),
        ))
    })
}

/// A context made by `shmem_ctx_create` or `shmem_team_create_ctx`. Its C handle
/// (`shmem_ctx_t`) is its address; `SHMEM_CTX_DEFAULT` is 1 and `SHMEM_CTX_INVALID` 0.
pub(crate) struct Context {
    /// The runtime's context id (its own lanes to other nodes' PEs).
    pub(crate) id: u64,
    /// The team it was created from (`SHMEM_TEAM_WORLD` for `shmem_ctx_create`).
    pub(crate) team: ShmemTeam,
    /// World PE of each member of that team when it is not the world: the PE numbers of
    /// the context's operations are relative to its team.
    pub(crate) pes: Option<Arc<[u32]>>,
}

/// The C handle of the default context.
pub(crate) const CTX_DEFAULT: ShmemCtx = 1;

/// The context behind a C handle other than `SHMEM_CTX_DEFAULT` (fatal for
/// `SHMEM_CTX_INVALID`).
pub(crate) fn context(ctx: ShmemCtx, call: &str) -> &'static Context {
    if ctx == 0 {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call}: SHMEM_CTX_INVALID is not a context"),
        ));
    }
    // SAFETY: handles other than 0 and 1 are addresses of leaked Boxes made by
    // shmem_ctx_create and freed only by shmem_ctx_destroy; using a destroyed or made-up
    // handle is erroneous in OpenSHMEM (undefined behaviour).
    unsafe { &*(ctx as *const Context) }
}

/// The runtime context id and the world PE of an operation on `ctx` to `pe` (a PE number of
/// the context's team).
#[inline]
pub(crate) fn route(ctx: ShmemCtx, pe: c_int, call: &str) -> (u64, u32) {
    if ctx == CTX_DEFAULT {
        return (0, pe_u32(pe, call));
    }
    let c = context(ctx, call);
    match &c.pes {
        None => (c.id, pe_u32(pe, call)),
        Some(pes) => match usize::try_from(pe).ok().and_then(|i| pes.get(i)) {
            Some(&w) => (c.id, w),
            None => fatal(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "{call}: PE {pe} out of range 0..{} of the context's team (calling PE {})",
                    pes.len(),
                    heap().pe()
                ),
            )),
        },
    }
}

/// The runtime context id of `ctx` (for operations without a PE).
pub(crate) fn ctx_id(ctx: ShmemCtx, call: &str) -> u64 {
    if ctx == CTX_DEFAULT {
        0
    } else {
        context(ctx, call).id
    }
}

/// Contiguous put of `nelems` elements (every typed and sized put lands here).
pub(crate) unsafe fn put_elems(
    ctx: ShmemCtx,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    elem_bytes: usize,
    pe: c_int,
    call: &str,
) {
    let len = bytes_of(nelems, elem_bytes, call);
    if len == 0 {
        return;
    }
    let (id, pe) = route(ctx, pe, call);
    // SAFETY: the caller promises `source` is readable for nelems elements (OpenSHMEM API).
    let src = unsafe { std::slice::from_raw_parts(source, len) };
    ok(heap()
        .put_ctx(id, pe, dest as u64, src)
        .map_err(|e| e.context(call)));
}

/// Contiguous get of `nelems` elements.
pub(crate) unsafe fn get_elems(
    ctx: ShmemCtx,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    elem_bytes: usize,
    pe: c_int,
    call: &str,
) {
    let len = bytes_of(nelems, elem_bytes, call);
    if len == 0 {
        return;
    }
    let (id, pe) = route(ctx, pe, call);
    // SAFETY: the caller promises `dest` is writable for nelems elements.
    let dst = unsafe { std::slice::from_raw_parts_mut(dest, len) };
    ok(heap()
        .get_ctx(id, pe, source as u64, dst)
        .map_err(|e| e.context(call)));
}

/// Strided put: element i goes from `source + i*sst` to `dest + i*dst` (strides in elements).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iput_elems(
    ctx: ShmemCtx,
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    elem_bytes: usize,
    pe: c_int,
    call: &str,
) {
    for i in 0..nelems as isize {
        let d = dest.wrapping_offset(i * dst * elem_bytes as isize);
        let s = source.wrapping_offset(i * sst * elem_bytes as isize);
        // SAFETY: as put_elems, for one element at the strided position.
        unsafe { put_elems(ctx, d, s, 1, elem_bytes, pe, call) };
    }
}

/// Strided get.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iget_elems(
    ctx: ShmemCtx,
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    elem_bytes: usize,
    pe: c_int,
    call: &str,
) {
    for i in 0..nelems as isize {
        let d = dest.wrapping_offset(i * dst * elem_bytes as isize);
        let s = source.wrapping_offset(i * sst * elem_bytes as isize);
        // SAFETY: as get_elems, for one element at the strided position.
        unsafe { get_elems(ctx, d, s, 1, elem_bytes, pe, call) };
    }
}

/// An atomic on the `width`-byte word at `dest` on `pe` (a CPU atomic on the mapped heap
/// of a same-node PE, the target service's CPU atomic on another node's); returns the old
/// value (0 when `fetch` is false and the PE is on another node: the update is queued and
/// completes at quiet, like a put).
#[allow(clippy::too_many_arguments)]
pub(crate) fn amo(
    ctx: ShmemCtx,
    dest: *const u8,
    pe: c_int,
    call: &str,
    width: u8,
    op: Amo,
    a: u64,
    b: u64,
    fetch: bool,
) -> u64 {
    let (id, pe) = route(ctx, pe, call);
    ok(heap()
        .atomic(id, pe, dest as u64, width, op, a, b, fetch)
        .map_err(|e| e.context(call)))
}

/// A word `wait_until` can watch: loaded atomically, compared as its C type.
pub(crate) trait Word: Copy + PartialOrd {
    /// Loads the word at `p` atomically.
    unsafe fn load(p: *const Self) -> Self;
}

macro_rules! word {
    ($($t:ty => $a:ty),*) => {$(
        impl Word for $t {
            unsafe fn load(p: *const Self) -> Self {
                // SAFETY: the caller passes a valid, aligned pointer to a symmetric variable
                // that other PEs update with stores or atomics of the same size.
                unsafe { <$a>::from_ptr(p as *mut $t).load(SeqCst) }
            }
        }
    )*};
}
word!(i16 => std::sync::atomic::AtomicI16, u16 => std::sync::atomic::AtomicU16,
    i32 => std::sync::atomic::AtomicI32, u32 => std::sync::atomic::AtomicU32,
    i64 => std::sync::atomic::AtomicI64, u64 => std::sync::atomic::AtomicU64,
    isize => std::sync::atomic::AtomicIsize, usize => std::sync::atomic::AtomicUsize);

/// The `SHMEM_CMP_*` comparisons of shmem.h: the one place Rust code (and the code
/// `scripts/gen_api.py` writes) takes them from; a test checks shmem.h defines the same.
pub(crate) mod cmp {
    use std::ffi::c_int;
    pub(crate) const SHMEM_CMP_EQ: c_int = 0;
    pub(crate) const SHMEM_CMP_NE: c_int = 1;
    pub(crate) const SHMEM_CMP_GT: c_int = 2;
    pub(crate) const SHMEM_CMP_GE: c_int = 3;
    pub(crate) const SHMEM_CMP_LT: c_int = 4;
    pub(crate) const SHMEM_CMP_LE: c_int = 5;
    /// Each with its name in shmem.h.
    #[cfg(test)]
    pub(crate) const ALL: [(&str, c_int); 6] = [
        ("SHMEM_CMP_EQ", SHMEM_CMP_EQ),
        ("SHMEM_CMP_NE", SHMEM_CMP_NE),
        ("SHMEM_CMP_GT", SHMEM_CMP_GT),
        ("SHMEM_CMP_GE", SHMEM_CMP_GE),
        ("SHMEM_CMP_LT", SHMEM_CMP_LT),
        ("SHMEM_CMP_LE", SHMEM_CMP_LE),
    ];
}

/// Compares `a cmp b` for a `SHMEM_CMP_*` value `cmp`.
fn compare<T: Word>(a: T, cmp: c_int, b: T, call: &str) -> bool {
    use cmp::*;
    match cmp {
        SHMEM_CMP_EQ => a == b,
        SHMEM_CMP_NE => a != b,
        SHMEM_CMP_GT => a > b,
        SHMEM_CMP_GE => a >= b,
        SHMEM_CMP_LT => a < b,
        SHMEM_CMP_LE => a <= b,
        _ => fatal(Error::new(
            ErrorKind::InvalidOp,
            format!("{call}: comparison {cmp} is not one of SHMEM_CMP_EQ..SHMEM_CMP_LE (0..=5)"),
        )),
    }
}

fn check_ptr<T>(p: *const T, call: &str) {
    if p.is_null() || !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call}: variable address {p:?} is null or misaligned"),
        ));
    }
}

/// Spins, then yields: another PE's store is what ends the wait, and on an oversubscribed
/// node that PE may need this core.
fn backoff(round: &mut u32) {
    *round += 1;
    if *round < 2000 {
        std::hint::spin_loop();
    } else if *round < 4000 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// Sends what this thread's lanes to other nodes hold: the PE is about to wait for a word
/// that another PE may only update in answer to those puts.
fn flush_before_wait(call: &str) {
    ok(heap().flush().map_err(|e| e.context(call)));
}

pub(crate) unsafe fn wait_until<T: Word>(ivar: *const T, cmp: c_int, value: T, call: &str) {
    check_ptr(ivar, call);
    flush_before_wait(call);
    let mut round = 0;
    // SAFETY: checked non-null and aligned; the caller's symmetric variable.
    while !compare(unsafe { T::load(ivar) }, cmp, value, call) {
        backoff(&mut round);
    }
}

pub(crate) unsafe fn test<T: Word>(ivar: *const T, cmp: c_int, value: T, call: &str) -> bool {
    check_ptr(ivar, call);
    // SAFETY: as in wait_until.
    compare(unsafe { T::load(ivar) }, cmp, value, call)
}

/// The comparison values of a set wait or test: one for every variable, or one each (the
/// `_vector` forms).
#[derive(Clone, Copy)]
pub(crate) enum Values<T> {
    One(T),
    Each(*const T),
}

impl<T: Word> Values<T> {
    /// The value variable `i` is compared with.
    ///
    /// # Safety
    /// With `Each`, the pointer holds more than `i` elements.
    unsafe fn at(self, i: usize) -> T {
        match self {
            Values::One(v) => v,
            // SAFETY: the caller's contract.
            Values::Each(p) => unsafe { *p.add(i) },
        }
    }

    fn check(self, nelems: usize, call: &str) {
        if let Values::Each(p) = self {
            if nelems > 0 {
                check_ptr(p, call);
            }
        }
    }
}

/// Which members of a set `wait_set` waits for.
pub(crate) enum WaitSet {
    All,
    Any,
}

std::thread_local! {
    /// Where this thread's next `_any` scan starts: one past the index it last returned, so
    /// a variable that stays satisfied does not hide the others from a program that waits
    /// again (OpenSHMEM leaves the choice among satisfied variables open; lowest-first would
    /// starve the rest).
    static ANY_START: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Scans the variables not excluded by `status`: how many were considered and satisfied,
/// and (with `Any`) one satisfied index, searched from this thread's rotating start.
unsafe fn scan_set<T: Word>(
    ivars: *const T,
    nelems: usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
    set: &WaitSet,
    call: &str,
) -> (usize, Option<usize>, usize) {
    let (mut considered, mut found, mut satisfied) = (0, None, 0);
    let start = match set {
        WaitSet::Any if nelems > 0 => ANY_START.with(|c| c.get()) % nelems,
        _ => 0,
    };
    for k in 0..nelems {
        let i = (start + k) % nelems;
        // SAFETY: status (when given), ivars and values have nelems elements (OpenSHMEM API).
        if !status.is_null() && unsafe { *status.add(i) } != 0 {
            continue;
        }
        considered += 1;
        // SAFETY: ivars has nelems elements and i < nelems (the caller's contract, as above);
        // the caller checked it is non-null and aligned (`check_ptr`).
        let ivar = unsafe { T::load(ivars.add(i)) };
        // SAFETY: a value per element (`Each`) has nelems of them, and i < nelems.
        let value = unsafe { values.at(i) };
        if compare(ivar, cmp, value, call) {
            satisfied += 1;
            if found.is_none() {
                found = Some(i);
                if let WaitSet::Any = set {
                    break;
                }
            }
        }
    }
    if let (WaitSet::Any, Some(i)) = (set, found) {
        ANY_START.with(|c| c.set(i + 1));
    }
    (considered, found, satisfied)
}

/// `wait_until_all/any` (`block`) and `test_all/any`: with `All`, 1 when every considered
/// variable satisfies the comparison (waiting for it when blocking), else 0; with `Any`, the
/// index of a satisfied variable, or `SIZE_MAX` when none is (or none is considered).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn wait_set<T: Word>(
    ivars: *const T,
    nelems: usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
    set: WaitSet,
    block: bool,
    call: &str,
) -> usize {
    if nelems > 0 {
        check_ptr(ivars, call);
    }
    values.check(nelems, call);
    if block {
        flush_before_wait(call);
    }
    let mut round = 0;
    loop {
        // SAFETY: forwarded caller contract.
        let (considered, found, satisfied) =
            unsafe { scan_set(ivars, nelems, status, cmp, values, &set, call) };
        match set {
            WaitSet::All if satisfied == considered => return 1,
            WaitSet::All if !block => return 0,
            WaitSet::Any if considered == 0 => return usize::MAX,
            WaitSet::Any if found.is_some() || !block => return found.unwrap_or(usize::MAX),
            _ => backoff(&mut round),
        }
    }
}

/// `wait_until_some` (`block`) and `test_some`: the indices of every satisfied variable go to
/// `indices`; returns how many (waits until at least one when blocking).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn wait_some<T: Word>(
    ivars: *const T,
    nelems: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
    block: bool,
    call: &str,
) -> usize {
    if nelems > 0 {
        check_ptr(ivars, call);
        check_ptr(indices as *const usize, call);
    }
    values.check(nelems, call);
    if block {
        flush_before_wait(call);
    }
    let mut round = 0;
    loop {
        let mut found = 0;
        let mut considered = 0;
        for i in 0..nelems {
            // SAFETY: status (when given), ivars, values and indices have nelems elements.
            if !status.is_null() && unsafe { *status.add(i) } != 0 {
                continue;
            }
            considered += 1;
            // SAFETY: ivars has nelems elements and i < nelems (the caller's contract, as
            // above); the caller checked it is non-null and aligned (`check_ptr`).
            let ivar = unsafe { T::load(ivars.add(i)) };
            // SAFETY: a value per element (`Each`) has nelems of them, and i < nelems.
            let value = unsafe { values.at(i) };
            if compare(ivar, cmp, value, call) {
                // SAFETY: found < nelems.
                unsafe { *indices.add(found) = i };
                found += 1;
            }
        }
        if found > 0 || !block || considered == 0 {
            return found;
        }
        backoff(&mut round);
    }
}

/// What a team is, without its communicator (whose `Rc`s must stay behind the runtime's
/// lock).
pub(crate) struct TeamInfo {
    /// World PE of each member, in team order.
    pub(crate) pes: Arc<[u32]>,
    /// This PE's number in the team.
    pub(crate) rank: u32,
    pub(crate) config: TeamConfig,
}

/// The team behind a handle, if it is valid on this PE.
pub(crate) fn team_of(team: ShmemTeam) -> Option<TeamInfo> {
    let g = runtime();
    let rt = g.0.as_ref()?;
    let t = team
        .checked_sub(1)
        .and_then(|i| rt.teams.get(i))?
        .as_ref()?;
    Some(TeamInfo {
        pes: t.pes.clone(),
        rank: t.comm.rank(),
        config: t.config,
    })
}

fn with_team<R>(team: ShmemTeam, call: &str, f: impl FnOnce(&Team) -> Result<R>) -> R {
    let g = runtime();
    let rt = g.0.as_ref().unwrap_or_else(|| {
        drop_and_fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call} before shmem_init"),
        ))
    });
    let t = team
        .checked_sub(1)
        .and_then(|i| rt.teams.get(i))
        .and_then(|t| t.clone());
    let Some(t) = t else {
        drop(g);
        fatal(Error::new(
            ErrorKind::InvalidComm,
            format!(
                "{call}: team handle {team} is invalid on PE {}",
                heap().pe()
            ),
        ));
    };
    match f(&t) {
        Ok(r) => r,
        Err(e) => {
            drop(t);
            drop(g);
            fatal(e.context(call))
        }
    }
}

/// Runs `f` on the job-wide synchronisation engine (with the runtime's lock held: job-wide
/// rounds are for processes, one call per process and round).
fn with_job<R>(call: &str, f: impl FnOnce(&JobSync) -> Result<R>) -> R {
    let g = runtime();
    let rt = g.0.as_ref().unwrap_or_else(|| {
        drop_and_fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call} before shmem_init"),
        ))
    });
    match f(&rt.job) {
        Ok(r) => r,
        Err(e) => {
            drop(g);
            fatal(e.context(call))
        }
    }
}

fn drop_and_fatal(e: Error) -> ! {
    weft_core::diag!("weft shmem: {e}");
    std::process::exit(1)
}

pub(crate) unsafe fn team_reduce(
    team: ShmemTeam,
    dest: *mut u8,
    source: *const u8,
    nreduce: usize,
    kind: TypeKind,
    op: &Op,
    call: &str,
) -> c_int {
    let len = bytes_of(nreduce, kind.size_bytes(), call);
    // SAFETY: source has nreduce elements (API contract); copied first because OpenSHMEM lets
    // dest and source be the same array.
    let src = unsafe { std::slice::from_raw_parts(source, len) }.to_vec();
    // SAFETY: dest has nreduce elements.
    let dst = unsafe { std::slice::from_raw_parts_mut(dest, len) };
    with_team(team, call, |t| t.comm.allreduce_bytes(&src, dst, kind, op));
    0
}

/// Checks the strides of an `alltoalls` call (OpenSHMEM: both must be at least 1).
/// Checks the strides of an `alltoalls` that moves `elems` elements of `elem` bytes in all
/// (PEs times nelems): both at least 1, and the strided spans of source and dest, `((elems -
/// 1) * stride + 1) * elem` bytes, representable, so no offset computed from them wraps.
fn check_strides(dst: isize, sst: isize, elems: usize, elem: usize, call: &str) {
    if dst < 1 || sst < 1 {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{call}: strides dst={dst} sst={sst} on PE {}: both must be at least 1",
                heap().pe()
            ),
        ));
    }
    let span = |stride: isize| {
        elems
            .saturating_sub(1)
            .checked_mul(stride as usize)
            .and_then(|x| x.checked_add(1))
            .and_then(|x| x.checked_mul(elem))
            .filter(|&x| x <= isize::MAX as usize)
    };
    if span(dst).is_none() || span(sst).is_none() {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{call}: strides dst={dst} sst={sst} over {elems} elements of {elem} bytes on PE {} \
                 span more than the address space",
                heap().pe()
            ),
        ));
    }
}

/// Team `alltoalls` (OpenSHMEM 1.5 §9.9.8): element `k` of the block for team PE `j` is
/// `source[(j * nelems + k) * sst]`; it lands at `dest[(i * nelems + k) * dst]` of PE `j`,
/// where `i` is the sender. Packed into contiguous blocks, exchanged with weft's alltoall,
/// unpacked.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoalls_elems(
    team: ShmemTeam,
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    elem_bytes: usize,
    call: &str,
) -> c_int {
    with_team(team, call, |t| {
        let n = t.comm.size() as usize;
        check_strides(dst, sst, n.saturating_mul(nelems), elem_bytes, call);
        let block = bytes_of(nelems, elem_bytes, call);
        let mut packed = vec![0u8; block * n];
        for (i, e) in packed.chunks_exact_mut(elem_bytes).enumerate() {
            // SAFETY: source holds (n * nelems - 1) * sst + 1 elements (API contract).
            let s = unsafe { source.add(i * sst as usize * elem_bytes) };
            // SAFETY: s points at one readable element.
            e.copy_from_slice(unsafe { std::slice::from_raw_parts(s, elem_bytes) });
        }
        let mut recv = vec![0u8; block * n];
        t.comm.alltoall(&packed, &mut recv)?;
        for (i, e) in recv.chunks_exact(elem_bytes).enumerate() {
            // SAFETY: dest holds (n * nelems - 1) * dst + 1 elements (API contract).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    e.as_ptr(),
                    dest.add(i * dst as usize * elem_bytes),
                    elem_bytes,
                )
            };
        }
        Ok(())
    });
    0
}

/// Members (world PEs) of an active set, or a fatal error naming the bad triplet.
fn active_set(pe_start: c_int, log_stride: c_int, size: c_int, call: &str) -> Vec<u32> {
    let n = heap().npes() as i64;
    let stride = 1i64
        .checked_shl(log_stride.max(0) as u32)
        .unwrap_or(i64::MAX);
    let last = pe_start as i64 + stride.saturating_mul(size as i64 - 1);
    if pe_start < 0 || !(0..31).contains(&log_stride) || size < 1 || last >= n {
        fatal(Error::new(
            ErrorKind::InvalidRank,
            format!("{call}: active set PE_start={pe_start} logPE_stride={log_stride} PE_size={size} does not fit {n} PEs"),
        ));
    }
    (0..size as i64)
        .map(|i| (pe_start as i64 + i * stride) as u32)
        .collect()
}

/// Barrier of an active set through the node's synchronisation engine (all PEs on one node).
fn active_barrier(set: &[u32], call: &str) {
    ok(heap().quiet_all().map_err(|e| e.context(call)));
    active_sync(set, call);
}

/// The members of an active set meet (no quiet): the synchronisation engine on one node,
/// counter words across nodes.
fn active_sync(set: &[u32], call: &str) {
    let tag = TAG_ACTIVE_SET
        ^ ((set[0] as u64) << 32)
        ^ ((set.len() as u64) << 8)
        ^ set.get(1).map_or(0, |p| (p - set[0]) as u64);
    if let Some(&words) = ACTIVE_WORDS.get() {
        return remote_barrier(words, tag, set, call);
    }
    ok(engine()
        .barrier(tag, set.len() as u32)
        .map_err(|e| e.context(call)));
}

/// Active-set barrier across nodes: a counter and a generation word on the set's first PE
/// (slot chosen by the set's tag), updated with atomics that work on every PE. A PE reads
/// the generation, then counts itself in; the last to arrive resets the counter and bumps
/// the generation, which releases the others. Two different active sets with the same first
/// PE that hash to the same slot must not be in a barrier at the same time.
fn remote_barrier(words: u64, tag: u64, set: &[u32], call: &str) {
    let root = set[0];
    let slot = (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % ACTIVE_SLOTS;
    let count = words + (slot * 16) as u64;
    let generation = count + 8;
    let amo = |addr: u64, op: Amo, a: u64| {
        ok(heap()
            .atomic(0, root, addr, 8, op, a, 0, true)
            .map_err(|e| e.context(call)))
    };
    let g = amo(generation, Amo::Fetch, 0);
    if amo(count, Amo::Add, 1) + 1 == set.len() as u64 {
        amo(count, Amo::Set, 0);
        amo(generation, Amo::Add, 1);
        return;
    }
    let mut round = 0;
    while amo(generation, Amo::Fetch, 0) == g {
        backoff(&mut round);
    }
}

/// Deprecated (1.4) active-set reduction: every member reads each member's `source` in set
/// order and combines them with weft's kernels (so every member gets the same bits), between
/// barriers that keep the sources alive and `dest` (which may alias `source`) untouched until
/// all have read.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn active_reduce(
    dest: *mut u8,
    source: *const u8,
    nreduce: c_int,
    pe_start: c_int,
    log_stride: c_int,
    pe_size: c_int,
    kind: TypeKind,
    op: &Op,
    call: &str,
) {
    let set = active_set(pe_start, log_stride, pe_size, call);
    let bytes = bytes_of(nreduce.max(0) as usize, kind.size_bytes(), call);
    if let Err(e) = op.check(kind) {
        fatal(e.context(call));
    }
    active_barrier(&set, call);
    // u128 words: aligned for every element type (the long double kernels need 16).
    let words = bytes.div_ceil(16);
    let mut acc = vec![0u128; words];
    let mut other = vec![0u128; words];
    let view = |v: &mut Vec<u128>| {
        // SAFETY: a u128 vector viewed as its first `bytes` bytes, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, bytes) }
    };
    for (i, &pe) in set.iter().enumerate() {
        let buf = if i == 0 {
            view(&mut acc)
        } else {
            view(&mut other)
        };
        ok(heap()
            .get(pe, source as u64, buf)
            .map_err(|e| e.context(call)));
        if i > 0 {
            // Lower set members' values come first (`a` of the kernel), as in weft's reduce.
            let a: &[u8] = view(&mut acc);
            let a = a.to_vec();
            let b = view(&mut other);
            ok(op.combine(kind, &a, b).map_err(|e| e.context(call)));
            view(&mut acc).copy_from_slice(b);
        }
    }
    active_barrier(&set, call);
    if bytes > 0 {
        // SAFETY: dest has nreduce elements (API contract).
        unsafe { std::ptr::copy_nonoverlapping(view(&mut acc).as_ptr(), dest, bytes) };
    }
    active_barrier(&set, call);
}

mod api;
pub use api::*;

#[cfg(test)]
mod tests {
    /// shmem.h's `#define NAME VALUE` lines, by name.
    fn header_defines() -> std::collections::HashMap<String, String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/shmem.h");
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                (w.next()? == "#define").then_some(())?;
                Some((w.next()?.to_string(), w.next()?.to_string()))
            })
            .collect()
    }

    #[test]
    fn comparison_constants_match_shmem_h() {
        let defs = header_defines();
        for (name, value) in super::cmp::ALL {
            assert_eq!(
                defs.get(name).map(String::as_str),
                Some(value.to_string().as_str()),
                "{name} in include/shmem.h"
            );
            // The deprecated spelling stays an alias of the 1.5 one.
            assert_eq!(
                defs.get(&format!("_{name}")).map(String::as_str),
                Some(name),
                "_{name}"
            );
        }
    }
}
