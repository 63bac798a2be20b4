//! The MPI tool information interface (MPI-4.1 chapter 15): control variables, their
//! enumerations and categories. weft's control variables are its knobs (weft-core's knob
//! registry, `weft info --knobs`): each knob is one cvar with its type, help text and the value
//! this process read. Knobs are read once at start, so every cvar is read-only
//! (MPI_T_SCOPE_READONLY) and a write is refused with MPI_T_ERR_CVAR_SET_NEVER. Each knob
//! table (runtime, collectives, ...) is a category. One performance variable,
//! `weft_idle_yields` (a read-only continuous counter in the runtime category), counts the
//! times the progress engine gave its CPU away while waiting (weft's `Weft::idle_yields`);
//! it is readable while MPI runs. weft has no event types or event sources: their counts are
//! 0 and their indices are invalid.
//!
//! The interface works before MPI_Init and after MPI_Finalize (MPI-4.1 §15.3.4): while MPI is
//! running the values are those weft read at MPI_Init; otherwise they are read from the
//! environment the way MPI_Init reads them. MPI_T functions return their error codes and never
//! call an error handler (MPI-4.1 §15.3.10). Depends on weft's knob tables and the state.

use crate::consts::*;
use crate::state::{handle_index, make_handle, state_opt, Table};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use weft_core::knob::{Knob, KnobKind, KnobValues};

// The MPI_T return codes of the MPI 5.0 standard ABI.
pub const MPI_T_ERR_CANNOT_INIT: c_int = 1001;
pub const MPI_T_ERR_NOT_ACCESSIBLE: c_int = 1002;
pub const MPI_T_ERR_NOT_INITIALIZED: c_int = 1003;
pub const MPI_T_ERR_NOT_SUPPORTED: c_int = 1004;
pub const MPI_T_ERR_MEMORY: c_int = 1005;
pub const MPI_T_ERR_INVALID: c_int = 1006;
pub const MPI_T_ERR_INVALID_INDEX: c_int = 1007;
pub const MPI_T_ERR_INVALID_ITEM: c_int = 1008;
pub const MPI_T_ERR_INVALID_SESSION: c_int = 1009;
pub const MPI_T_ERR_INVALID_HANDLE: c_int = 1010;
pub const MPI_T_ERR_INVALID_NAME: c_int = 1011;
pub const MPI_T_ERR_OUT_OF_HANDLES: c_int = 1012;
pub const MPI_T_ERR_OUT_OF_SESSIONS: c_int = 1013;
pub const MPI_T_ERR_CVAR_SET_NOT_NOW: c_int = 1014;
pub const MPI_T_ERR_CVAR_SET_NEVER: c_int = 1015;
pub const MPI_T_ERR_PVAR_NO_WRITE: c_int = 1016;
pub const MPI_T_ERR_PVAR_NO_STARTSTOP: c_int = 1017;
pub const MPI_T_ERR_PVAR_NO_ATOMIC: c_int = 1018;

// Constants of mpi.h's MPI_T enumeration.
pub const MPI_T_VERBOSITY_USER_BASIC: c_int = 0x09;
pub const MPI_T_VERBOSITY_TUNER_BASIC: c_int = 0x11;
pub const MPI_T_BIND_NO_OBJECT: c_int = 1;
pub const MPI_T_SCOPE_READONLY: c_int = 2;
pub const MPI_T_PVAR_CLASS_COUNTER: c_int = 7;
/// MPI_T_PVAR_ALL_HANDLES of mpi.h.
const PVAR_ALL_HANDLES: Handle = 1;

/// Datatypes of the cvars (mpi.h): MPI_INT, MPI_UNSIGNED_LONG_LONG, MPI_DOUBLE, MPI_CHAR.
const DT_INT: Handle = 0x209;
const DT_ULL: Handle = 0x20f;
const DT_DOUBLE: Handle = 0x214;
const DT_CHAR: Handle = 0x243;

/// Handle kinds of this module (the state's kinds stop below 16).
const K_CVAR: usize = 16;
const K_ENUM: usize = 17;
const K_PVAR_SESSION: usize = 18;
const K_PVAR: usize = 20;

/// The one performance variable: its name and description (index 0, category 0).
const PVAR_NAME: &str = "weft_idle_yields";
const PVAR_DESC: &str = "times this rank's progress engine gave its CPU away (sched_yield) while \
    waiting with nothing to do since MPI_Init (see WEFT_YIELD); readable while MPI runs";

/// The counter's current value, or MPI_T_ERR_NOT_ACCESSIBLE while MPI is not running.
fn pvar_value() -> Result<u64, c_int> {
    state_opt()
        .map(|s| s.weft.idle_yields())
        .ok_or(MPI_T_ERR_NOT_ACCESSIBLE)
}

/// The categories: one per knob table, as weft names them (`weft::knob_groups`).
fn categories() -> &'static [weft::KnobGroup] {
    static GROUPS: OnceLock<Vec<weft::KnobGroup>> = OnceLock::new();
    GROUPS.get_or_init(weft::knob_groups)
}

/// One cvar: its knob and its category.
struct Cvar {
    knob: Knob,
    category: usize,
}

/// Every knob once, table by table: the cvar index is the position here (fixed for the life
/// of the process, as MPI-4.1 §15.3.6 requires).
fn cvars() -> &'static [Cvar] {
    static CVARS: OnceLock<Vec<Cvar>> = OnceLock::new();
    CVARS.get_or_init(|| {
        let mut v: Vec<Cvar> = Vec::new();
        for (category, group) in categories().iter().enumerate() {
            for k in group.knobs {
                if !v.iter().any(|c| c.knob.name == k.name) {
                    v.push(Cvar { knob: *k, category });
                }
            }
        }
        v
    })
}

/// The knob values: weft's while MPI runs, otherwise read from the environment (once).
fn values() -> Result<&'static KnobValues, c_int> {
    if let Some(s) = state_opt() {
        return Ok(&s.weft.config().values);
    }
    static OUTSIDE: OnceLock<Option<KnobValues>> = OnceLock::new();
    OUTSIDE
        .get_or_init(|| {
            // Unknown variables are warned about by MPI_Init; a malformed value is the same
            // error MPI_Init would report.
            KnobValues::read_env(&weft::knob_tables())
                .ok()
                .map(|(v, _)| v)
        })
        .as_ref()
        .ok_or(MPI_T_ERR_NOT_ACCESSIBLE)
}

/// A cvar's value as its MPI datatype stores it.
enum Value {
    Int(c_int),
    Ull(u64),
    Double(f64),
    Text(String),
}

/// Knobs whose value no tool may read: the job secret proves membership of the job, and
/// tools print cvars (MPI_T reads it as empty text).
const HIDDEN: &[&str] = &["WEFT_JOB_SECRET"];

fn value_of(c: &Cvar) -> Result<Value, c_int> {
    let v = values()?;
    let name = c.knob.name;
    if HIDDEN.contains(&name) {
        return Ok(Value::Text(String::new()));
    }
    Ok(match c.knob.kind {
        KnobKind::Bool => Value::Int(v.bool(name) as c_int),
        KnobKind::Uint => Value::Ull(v.uint(name).unwrap_or(0)),
        KnobKind::Bytes => Value::Ull(v.bytes(name).unwrap_or(0)),
        KnobKind::Float => Value::Double(v.float(name).unwrap_or(0.0)),
        KnobKind::Text => Value::Text(v.text(name).unwrap_or_default()),
        KnobKind::Choice(words) => {
            let t = v.text(name).unwrap_or_default();
            Value::Int(
                words
                    .iter()
                    .position(|w| *w == t.trim())
                    .map_or(-1, |i| i as c_int),
            )
        }
    })
}

fn datatype_of(k: &Knob) -> Handle {
    match k.kind {
        KnobKind::Bool | KnobKind::Choice(_) => DT_INT,
        KnobKind::Uint | KnobKind::Bytes => DT_ULL,
        KnobKind::Float => DT_DOUBLE,
        KnobKind::Text => DT_CHAR,
    }
}

fn description_of(k: &Knob) -> String {
    let unset = match k.kind {
        KnobKind::Uint | KnobKind::Bytes | KnobKind::Float if k.default.is_empty() => {
            " [unset: reads 0]"
        }
        KnobKind::Bytes => " [bytes]",
        _ => "",
    };
    let hidden = if HIDDEN.contains(&k.name) {
        " [value hidden: reads empty]"
    } else {
        ""
    };
    format!(
        "{}{unset}{hidden} (environment variable {})",
        k.help, k.name
    )
}

// ------------------------------------------------------------------- init and handles

/// Stores through an output pointer the program must pass: NULL is a bad parameter
/// (MPI_T_ERR_INVALID). For optional outputs, [`out`].
///
/// # Safety
/// `p` is NULL or valid for a write of a `T`.
unsafe fn out_required<T>(p: *mut T, v: T) -> Result<(), c_int> {
    if p.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    // SAFETY: non-null, and writable by the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// MPI_T_init_thread calls not yet matched by MPI_T_finalize.
static INIT_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Allocated cvar handles: the cvar index and the count given at allocation.
static CVAR_HANDLES: Mutex<Table<(usize, c_int)>> = Mutex::new(Table::new());
/// Performance-variable sessions.
static PVAR_SESSIONS: Mutex<Table<()>> = Mutex::new(Table::new());
/// Allocated pvar handles: the session index and the counter's value at the last reset
/// (reads report the growth since).
static PVAR_HANDLES: Mutex<Table<(usize, u64)>> = Mutex::new(Table::new());

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs an MPI_T body: MPI_T_ERR_NOT_INITIALIZED outside MPI_T_init_thread/finalize, else
/// the body's code.
fn t(body: impl FnOnce() -> Result<(), c_int>) -> c_int {
    if INIT_COUNT.load(Ordering::Acquire) == 0 {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    match body() {
        Ok(()) => MPI_SUCCESS,
        Err(code) => code,
    }
}

/// Stores through an output pointer that the program may pass as NULL (ignored).
///
/// # Safety
/// `p` must be null or writable.
unsafe fn out<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-null and writable (the caller's contract).
        unsafe { p.write(v) };
    }
}

/// Copies `text` the MPI_T way (MPI-4.1 §15.3.3): with a buffer and `*len > 0`, at most
/// `*len - 1` bytes and a NUL, and `*len` becomes the bytes stored plus one; otherwise only
/// `*len` is set, to the full length plus one.
///
/// # Safety
/// `len` null or readable and writable; `buf` null or writable for `*len` bytes.
unsafe fn out_string(text: &str, buf: *mut c_char, len: *mut c_int) {
    if len.is_null() {
        return;
    }
    // SAFETY: len readable and writable (the caller's contract).
    unsafe {
        if buf.is_null() || *len <= 0 {
            *len = text.len() as c_int + 1;
        } else {
            let cap = *len as usize;
            crate::error::write_c_string(text, buf, cap, len);
            *len += 1;
        }
    }
}

/// A C string argument, or MPI_T_ERR_INVALID_NAME.
///
/// # Safety
/// `p` null or NUL-terminated.
unsafe fn name_arg(p: *const c_char) -> Result<String, c_int> {
    if p.is_null() {
        return Err(MPI_T_ERR_INVALID_NAME);
    }
    // SAFETY: NUL-terminated (the caller's contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn cvar_at(index: c_int) -> Result<&'static Cvar, c_int> {
    usize::try_from(index)
        .ok()
        .and_then(|i| cvars().get(i))
        .ok_or(MPI_T_ERR_INVALID_INDEX)
}

fn category_at(index: c_int) -> Result<usize, c_int> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < categories().len())
        .ok_or(MPI_T_ERR_INVALID_INDEX)
}

/// MPI_T_init_thread (MPI-4.1 §15.3.4): may be called any number of times, before MPI_Init
/// and after MPI_Finalize; provides at most MPI_THREAD_SERIALIZED, like MPI_Init_thread.
///
/// # Safety
/// `provided` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    if provided.is_null() {
        return MPI_T_ERR_INVALID;
    }
    let level = match required {
        MPI_THREAD_SINGLE | MPI_THREAD_FUNNELED | MPI_THREAD_SERIALIZED | MPI_THREAD_MULTIPLE => {
            required.min(MPI_THREAD_SERIALIZED)
        }
        _ => return MPI_T_ERR_INVALID,
    };
    // SAFETY: checked non-null; writable by the caller's contract.
    unsafe { *provided = level };
    INIT_COUNT.fetch_add(1, Ordering::AcqRel);
    MPI_SUCCESS
}

/// MPI_T_finalize (MPI-4.1 §15.3.4): the last matching call frees every cvar handle and
/// pvar session.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_finalize() -> c_int {
    let _entered = crate::threads::enter();
    let r = INIT_COUNT.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    match r {
        Err(_) => MPI_T_ERR_NOT_INITIALIZED,
        Ok(1) => {
            *lock(&CVAR_HANDLES) = Table::new();
            *lock(&PVAR_SESSIONS) = Table::new();
            *lock(&PVAR_HANDLES) = Table::new();
            MPI_SUCCESS
        }
        Ok(_) => MPI_SUCCESS,
    }
}

// ------------------------------------------------------------------- control variables

/// MPI_T_cvar_get_num (MPI-4.1 §15.3.6): one cvar per knob.
///
/// # Safety
/// `num_cvar` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: `num_cvar` is writable or NULL (the caller's contract).
        unsafe { out_required(num_cvar, cvars().len() as c_int) }
    })
}

/// MPI_T_cvar_get_info (MPI-4.1 §15.3.6): the knob's name, type and help; every output may
/// be NULL.
///
/// # Safety
/// Each pointer null or writable (strings: `*len` bytes).
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut Handle,
    enumtype: *mut Handle,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let c = cvar_at(cvar_index)?;
        let k = &c.knob;
        let level = if categories()[c.category].outside_runtime {
            MPI_T_VERBOSITY_USER_BASIC
        } else {
            MPI_T_VERBOSITY_TUNER_BASIC
        };
        let e = match k.kind {
            KnobKind::Choice(_) => make_handle(K_ENUM, cvar_index as usize),
            _ => 0, // MPI_T_ENUM_NULL
        };
        // SAFETY: forwarded caller contract.
        unsafe {
            out_string(k.name, name, name_len);
            out(verbosity, level);
            out(datatype, datatype_of(k));
            out(enumtype, e);
            out_string(&description_of(k), desc, desc_len);
            out(bind, MPI_T_BIND_NO_OBJECT);
            out(scope, MPI_T_SCOPE_READONLY);
        }
        Ok(())
    })
}

/// MPI_T_cvar_get_index (MPI-4.1 §15.3.6): by the knob's name (`WEFT_...`).
///
/// # Safety
/// `name` NUL-terminated; `cvar_index` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_index(
    name: *const c_char,
    cvar_index: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: forwarded caller contract.
        let n = unsafe { name_arg(name)? };
        let i = cvars()
            .iter()
            .position(|c| c.knob.name == n)
            .ok_or(MPI_T_ERR_INVALID_NAME)?;
        // SAFETY: `cvar_index` is writable or NULL (the caller's contract).
        unsafe { out_required(cvar_index, i as c_int) }
    })
}

/// The number of elements of a cvar's value (text: its bytes and the NUL).
fn count_of(c: &Cvar) -> Result<c_int, c_int> {
    Ok(match value_of(c)? {
        Value::Text(s) => s.len() as c_int + 1,
        _ => 1,
    })
}

/// MPI_T_cvar_handle_alloc (MPI-4.1 §15.3.6): cvars bind to no object, so `obj_handle` is
/// ignored.
///
/// # Safety
/// `handle` and `count` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(
    cvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut Handle,
    count: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let c = cvar_at(cvar_index)?;
        if handle.is_null() || count.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let n = count_of(c)?;
        let i = lock(&CVAR_HANDLES).insert((cvar_index as usize, n));
        // SAFETY: checked non-null.
        unsafe {
            *handle = make_handle(K_CVAR, i);
            *count = n;
        }
        Ok(())
    })
}

/// MPI_T_cvar_handle_free (MPI-4.1 §15.3.6): sets the handle to MPI_T_CVAR_HANDLE_NULL.
///
/// # Safety
/// `handle` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_free(handle: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        if handle.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        // SAFETY: checked non-null.
        let h = unsafe { *handle };
        handle_index(K_CVAR, h)
            .and_then(|i| lock(&CVAR_HANDLES).remove(i))
            .ok_or(MPI_T_ERR_INVALID_HANDLE)?;
        // SAFETY: checked non-null.
        unsafe { *handle = 0 };
        Ok(())
    })
}

fn cvar_handle(h: Handle) -> Result<(usize, c_int), c_int> {
    handle_index(K_CVAR, h)
        .and_then(|i| lock(&CVAR_HANDLES).get(i).copied())
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// MPI_T_cvar_read (MPI-4.1 §15.3.6): `buf` holds the count given at allocation (text is
/// cut to it, NUL included).
///
/// # Safety
/// `buf` writable for the handle's count of its datatype.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_read(handle: Handle, buf: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let (index, count) = cvar_handle(handle)?;
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let c = &cvars()[index];
        // SAFETY: buf holds `count` elements of the cvar's datatype (the caller's contract).
        unsafe {
            match value_of(c)? {
                Value::Int(v) => *(buf as *mut c_int) = v,
                Value::Ull(v) => *(buf as *mut u64) = v,
                Value::Double(v) => *(buf as *mut f64) = v,
                Value::Text(s) => crate::error::write_c_string(
                    &s,
                    buf as *mut c_char,
                    count.max(1) as usize,
                    std::ptr::null_mut(),
                ),
            }
        }
        Ok(())
    })
}

/// MPI_T_cvar_write (MPI-4.1 §15.3.6): weft reads its knobs once at start, so no cvar can be
/// set: MPI_T_ERR_CVAR_SET_NEVER for every valid handle.
///
/// # Safety
/// No memory is accessed.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_write(handle: Handle, _buf: *const c_void) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        cvar_handle(handle)?;
        Err(MPI_T_ERR_CVAR_SET_NEVER)
    })
}

// ------------------------------------------------------------------- enumerations

fn enum_words(e: Handle) -> Result<(&'static Knob, &'static [&'static str]), c_int> {
    let i = handle_index(K_ENUM, e).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
    match cvars().get(i).map(|c| &c.knob) {
        Some(
            k @ Knob {
                kind: KnobKind::Choice(words),
                ..
            },
        ) => Ok((k, words)),
        _ => Err(MPI_T_ERR_INVALID_HANDLE),
    }
}

/// MPI_T_enum_get_info (MPI-4.1 §15.3.5): a choice knob's words; the enumeration is named
/// after the knob.
///
/// # Safety
/// `num` writable; `name` writable for `*name_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_info(
    enumtype: Handle,
    num: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let (k, words) = enum_words(enumtype)?;
        // SAFETY: forwarded caller contract.
        unsafe {
            out(num, words.len() as c_int);
            out_string(k.name, name, name_len);
        }
        Ok(())
    })
}

/// MPI_T_enum_get_item (MPI-4.1 §15.3.5): item `index` is the word the cvar reads as
/// `index`.
///
/// # Safety
/// `value` writable; `name` writable for `*name_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_item(
    enumtype: Handle,
    index: c_int,
    value: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let (_, words) = enum_words(enumtype)?;
        let w = usize::try_from(index)
            .ok()
            .and_then(|i| words.get(i))
            .ok_or(MPI_T_ERR_INVALID_INDEX)?;
        // SAFETY: forwarded caller contract.
        unsafe {
            out(value, index);
            out_string(w, name, name_len);
        }
        Ok(())
    })
}

// ------------------------------------------------------------------- categories

/// MPI_T_category_get_num (MPI-4.1 §15.3.9): one category per knob table.
///
/// # Safety
/// `num_cat` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: `num_cat` is writable or NULL (the caller's contract).
        unsafe { out_required(num_cat, categories().len() as c_int) }
    })
}

fn cvars_of(cat: usize) -> impl Iterator<Item = usize> {
    cvars()
        .iter()
        .enumerate()
        .filter(move |(_, c)| c.category == cat)
        .map(|(i, _)| i)
}

/// MPI_T_category_get_info (MPI-4.1 §15.3.9): categories hold cvars only (no pvars, no
/// subcategories).
///
/// # Safety
/// Each pointer null or writable (strings: `*len` bytes).
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let cat = category_at(cat_index)?;
        let (n, d) = (categories()[cat].name, categories()[cat].about);
        // SAFETY: forwarded caller contract.
        unsafe {
            out_string(n, name, name_len);
            out_string(d, desc, desc_len);
            out(num_cvars, cvars_of(cat).count() as c_int);
            out(num_pvars, (cat == 0) as c_int);
            out(num_categories, 0);
        }
        Ok(())
    })
}

/// MPI_T_category_get_index (MPI-4.1 §15.3.9).
///
/// # Safety
/// `name` NUL-terminated; `cat_index` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_index(
    name: *const c_char,
    cat_index: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: forwarded caller contract.
        let n = unsafe { name_arg(name)? };
        let i = categories()
            .iter()
            .position(|g| g.name == n)
            .ok_or(MPI_T_ERR_INVALID_NAME)?;
        // SAFETY: `cat_index` is writable or NULL (the caller's contract).
        unsafe { out_required(cat_index, i as c_int) }
    })
}

/// Writes at most `len` indices into `indices`.
///
/// # Safety
/// `indices` writable for `len` ints.
unsafe fn out_indices(it: impl Iterator<Item = usize>, len: c_int, indices: *mut c_int) {
    if len <= 0 || indices.is_null() {
        return;
    }
    for (j, i) in it.take(len as usize).enumerate() {
        // SAFETY: j < len; indices writable for len ints.
        unsafe { *indices.add(j) = i as c_int };
    }
}

/// MPI_T_category_get_cvars (MPI-4.1 §15.3.9).
///
/// # Safety
/// `indices` writable for `len` ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_cvars(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let cat = category_at(cat_index)?;
        // SAFETY: forwarded caller contract.
        unsafe { out_indices(cvars_of(cat), len, indices) };
        Ok(())
    })
}

/// MPI_T_category_get_pvars (MPI-4.1 §15.3.9): the runtime category holds the pvar.
///
/// # Safety
/// `indices` writable for `len` ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_pvars(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let cat = category_at(cat_index)?;
        // SAFETY: forwarded caller contract.
        unsafe { out_indices((cat == 0).then_some(0).into_iter(), len, indices) };
        Ok(())
    })
}

/// MPI_T_category_get_categories (MPI-4.1 §15.3.9): the categories are flat.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_categories(
    cat_index: c_int,
    _len: c_int,
    _indices: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| category_at(cat_index).map(|_| ()))
}

/// MPI_T_category_get_num_events (MPI-4.1 §15.3.9): weft has no event types.
///
/// # Safety
/// `num_events` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num_events(
    cat_index: c_int,
    num_events: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        category_at(cat_index)?;
        // SAFETY: forwarded caller contract.
        unsafe { out(num_events, 0) };
        Ok(())
    })
}

/// MPI_T_category_get_events (MPI-4.1 §15.3.9): weft has no event types.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_events(
    cat_index: c_int,
    _len: c_int,
    _indices: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| category_at(cat_index).map(|_| ()))
}

/// MPI_T_category_changed (MPI-4.1 §15.3.9): the categories never change, so the number
/// stays 0.
///
/// # Safety
/// `update_number` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_changed(update_number: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: `update_number` is writable or NULL (the caller's contract).
        unsafe { out_required(update_number, 0) }
    })
}

// ------------------------------------------------------------------- performance variables,
// event types (none) and sources (none).

/// MPI_T_pvar_get_num (MPI-4.1 §15.3.7): one, `weft_idle_yields`.
///
/// # Safety
/// `num_pvar` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: `num_pvar` is writable or NULL (the caller's contract).
        unsafe { out_required(num_pvar, 1) }
    })
}

fn pvar_at(index: c_int) -> Result<(), c_int> {
    if index == 0 {
        Ok(())
    } else {
        Err(MPI_T_ERR_INVALID_INDEX)
    }
}

/// MPI_T_pvar_get_info (MPI-4.1 §15.3.7): a read-only, continuous, non-atomic counter of
/// MPI_UNSIGNED_LONG_LONG bound to no object; every output may be NULL.
///
/// # Safety
/// Each pointer null or writable (strings: `*len` bytes).
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut Handle,
    enumtype: *mut Handle,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        pvar_at(pvar_index)?;
        // SAFETY: forwarded caller contract.
        unsafe {
            out_string(PVAR_NAME, name, name_len);
            out(verbosity, MPI_T_VERBOSITY_TUNER_BASIC);
            out(var_class, MPI_T_PVAR_CLASS_COUNTER);
            out(datatype, DT_ULL);
            out(enumtype, 0);
            out_string(PVAR_DESC, desc, desc_len);
            out(bind, MPI_T_BIND_NO_OBJECT);
            out(readonly, 1);
            out(continuous, 1);
            out(atomic, 0);
        }
        Ok(())
    })
}

/// MPI_T_pvar_get_index (MPI-4.1 §15.3.7): by name and class.
///
/// # Safety
/// `name` NUL-terminated; `pvar_index` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_index(
    name: *const c_char,
    var_class: c_int,
    pvar_index: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: forwarded caller contract.
        let n = unsafe { name_arg(name)? };
        if n != PVAR_NAME || var_class != MPI_T_PVAR_CLASS_COUNTER {
            return Err(MPI_T_ERR_INVALID_NAME);
        }
        // SAFETY: `pvar_index` is writable or NULL (the caller's contract).
        unsafe { out_required(pvar_index, 0) }
    })
}

/// MPI_T_pvar_session_create (MPI-4.1 §15.3.7).
///
/// # Safety
/// `pe_session` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_create(pe_session: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        if pe_session.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let i = lock(&PVAR_SESSIONS).insert(());
        // SAFETY: checked non-null.
        unsafe { *pe_session = make_handle(K_PVAR_SESSION, i) };
        Ok(())
    })
}

/// MPI_T_pvar_session_free (MPI-4.1 §15.3.7): frees the session's handles and sets it to
/// MPI_T_PVAR_SESSION_NULL.
///
/// # Safety
/// `pe_session` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_free(pe_session: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        if pe_session.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        // SAFETY: checked non-null.
        let h = unsafe { *pe_session };
        let si = handle_index(K_PVAR_SESSION, h).ok_or(MPI_T_ERR_INVALID_SESSION)?;
        lock(&PVAR_SESSIONS)
            .remove(si)
            .ok_or(MPI_T_ERR_INVALID_SESSION)?;
        let mut handles = lock(&PVAR_HANDLES);
        let mine: Vec<usize> = (0..handles.slot_count())
            .filter(|&i| handles.get(i).is_some_and(|(s, _)| *s == si))
            .collect();
        for i in mine {
            handles.remove(i);
        }
        // SAFETY: checked non-null.
        unsafe { *pe_session = 0 };
        Ok(())
    })
}

fn pvar_session(h: Handle) -> Result<usize, c_int> {
    handle_index(K_PVAR_SESSION, h)
        .filter(|&i| lock(&PVAR_SESSIONS).get(i).is_some())
        .ok_or(MPI_T_ERR_INVALID_SESSION)
}

/// The table index of pvar handle `h` of session `pe_session`.
fn pvar_handle(pe_session: Handle, h: Handle) -> Result<usize, c_int> {
    let si = pvar_session(pe_session)?;
    handle_index(K_PVAR, h)
        .filter(|&i| lock(&PVAR_HANDLES).get(i).is_some_and(|(s, _)| *s == si))
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// MPI_T_pvar_handle_alloc (MPI-4.1 §15.3.7): the counter binds to no object (`obj_handle`
/// is ignored) and has one element; while MPI is not running it is not accessible.
///
/// # Safety
/// `handle` and `count` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_alloc(
    pe_session: Handle,
    pvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut Handle,
    count: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let si = pvar_session(pe_session)?;
        pvar_at(pvar_index)?;
        if handle.is_null() || count.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let base = pvar_value()?;
        let i = lock(&PVAR_HANDLES).insert((si, base));
        // SAFETY: checked non-null.
        unsafe {
            *handle = make_handle(K_PVAR, i);
            *count = 1;
        }
        Ok(())
    })
}

/// MPI_T_pvar_handle_free (MPI-4.1 §15.3.7): sets the handle to MPI_T_PVAR_HANDLE_NULL.
///
/// # Safety
/// `handle` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_free(pe_session: Handle, handle: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        if handle.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        // SAFETY: checked non-null.
        let i = pvar_handle(pe_session, unsafe { *handle })?;
        lock(&PVAR_HANDLES).remove(i);
        // SAFETY: checked non-null.
        unsafe { *handle = 0 };
        Ok(())
    })
}

/// Start and stop: the counter is continuous, so a single handle refuses with
/// MPI_T_ERR_PVAR_NO_STARTSTOP and MPI_T_PVAR_ALL_HANDLES has nothing to do.
fn startstop(pe_session: Handle, handle: Handle) -> c_int {
    t(|| {
        if handle == PVAR_ALL_HANDLES {
            return pvar_session(pe_session).map(|_| ());
        }
        pvar_handle(pe_session, handle)?;
        Err(MPI_T_ERR_PVAR_NO_STARTSTOP)
    })
}

/// MPI_T_pvar_start (MPI-4.1 §15.3.7): the counter always runs.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_start(pe_session: Handle, handle: Handle) -> c_int {
    let _entered = crate::threads::enter();
    startstop(pe_session, handle)
}

/// MPI_T_pvar_stop (MPI-4.1 §15.3.7): the counter always runs.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_stop(pe_session: Handle, handle: Handle) -> c_int {
    let _entered = crate::threads::enter();
    startstop(pe_session, handle)
}

/// Reads the handle's count since its allocation or last reset into `buf`, and resets it
/// when `reset`.
///
/// # Safety
/// `buf` null or writable for one `unsigned long long`.
unsafe fn read_pvar(pe_session: Handle, handle: Handle, buf: *mut c_void, reset: bool) -> c_int {
    t(|| {
        let i = pvar_handle(pe_session, handle)?;
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let now = pvar_value()?;
        let mut handles = lock(&PVAR_HANDLES);
        let entry = handles.get_mut(i).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
        // A new weft instance (a session after MPI_Finalize) counts from 0 again.
        let v = now.checked_sub(entry.1).unwrap_or(now);
        if reset {
            entry.1 = now;
        }
        // SAFETY: buf holds one unsigned long long (the caller's contract).
        unsafe { *(buf as *mut u64) = v };
        Ok(())
    })
}

/// MPI_T_pvar_read (MPI-4.1 §15.3.7): the yields since the handle's allocation or last
/// reset.
///
/// # Safety
/// `buf` writable for one `unsigned long long`.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_read(
    pe_session: Handle,
    handle: Handle,
    buf: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { read_pvar(pe_session, handle, buf, false) }
}

/// MPI_T_pvar_readreset (MPI-4.1 §15.3.7).
///
/// # Safety
/// `buf` writable for one `unsigned long long`.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_readreset(
    pe_session: Handle,
    handle: Handle,
    buf: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { read_pvar(pe_session, handle, buf, true) }
}

/// MPI_T_pvar_reset (MPI-4.1 §15.3.7): the handle (or every handle of the session) counts
/// from 0 again.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_reset(pe_session: Handle, handle: Handle) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        let si = pvar_session(pe_session)?;
        let now = pvar_value()?;
        let mut handles = lock(&PVAR_HANDLES);
        if handle == PVAR_ALL_HANDLES {
            for i in 0..handles.slot_count() {
                if let Some(e) = handles.get_mut(i).filter(|e| e.0 == si) {
                    e.1 = now;
                }
            }
            return Ok(());
        }
        drop(handles);
        let i = pvar_handle(pe_session, handle)?;
        if let Some(e) = lock(&PVAR_HANDLES).get_mut(i) {
            e.1 = now;
        }
        Ok(())
    })
}

/// MPI_T_pvar_write (MPI-4.1 §15.3.7): the counter is read-only.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_write(
    pe_session: Handle,
    handle: Handle,
    _buf: *const c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        pvar_handle(pe_session, handle)?;
        Err(MPI_T_ERR_PVAR_NO_WRITE)
    })
}

/// MPI_T_source_get_num (MPI-4.1 §15.3.8): weft has no event sources.
///
/// # Safety
/// `num_sources` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: `num_sources` is writable or NULL (the caller's contract).
        unsafe { out_required(num_sources, 0) }
    })
}

/// MPI_T_source_get_info (MPI-4.1 §15.3.8): no index is valid.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_info(
    _source_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _ordering: *mut c_int,
    _ticks_per_second: *mut i64,
    _max_ticks: *mut i64,
    _info: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| Err(MPI_T_ERR_INVALID_INDEX))
}

/// MPI_T_source_get_timestamp (MPI-4.1 §15.3.8): no index is valid.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_timestamp(
    _source_index: c_int,
    _timestamp: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| Err(MPI_T_ERR_INVALID_INDEX))
}

/// MPI_T_event_get_num (MPI-4.1 §15.3.8): weft has no event types.
///
/// # Safety
/// `num_events` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    t(|| {
        // SAFETY: `num_events` is writable or NULL (the caller's contract).
        unsafe { out_required(num_events, 0) }
    })
}

/// MPI_T_event_get_index (MPI-4.1 §15.3.8): no name is valid.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_index(
    _name: *const c_char,
    _event_index: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| Err(MPI_T_ERR_INVALID_NAME))
}

/// MPI_T_event_get_info (MPI-4.1 §15.3.8): no index is valid.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_info(
    _event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut Handle,
    _array_of_displacements: *mut isize,
    _num_elements: *mut c_int,
    _enumtype: *mut Handle,
    _info: *mut Handle,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| Err(MPI_T_ERR_INVALID_INDEX))
}

/// MPI_T_event_handle_alloc (MPI-4.1 §15.3.8): no index is valid.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_alloc(
    _event_index: c_int,
    _obj_handle: *mut c_void,
    _info: Handle,
    _event_registration: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    t(|| Err(MPI_T_ERR_INVALID_INDEX))
}

/// The calls on event registrations and instances: weft has no event types, so neither can
/// exist and every handle is invalid.
fn no_event_handle() -> c_int {
    t(|| Err(MPI_T_ERR_INVALID_HANDLE))
}

/// MPI_T_event_handle_free (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_free(
    _event_registration: Handle,
    _user_data: *mut c_void,
    _free_cb_function: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_handle_get_info (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_get_info(
    _event_registration: Handle,
    _info_used: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_handle_set_info (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_set_info(
    _event_registration: Handle,
    _info: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_register_callback (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_register_callback(
    _event_registration: Handle,
    _cb_safety: c_int,
    _info: Handle,
    _user_data: *mut c_void,
    _event_cb_function: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_callback_get_info (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_callback_get_info(
    _event_registration: Handle,
    _cb_safety: c_int,
    _info_used: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_callback_set_info (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_callback_set_info(
    _event_registration: Handle,
    _cb_safety: c_int,
    _info: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_set_dropped_handler (MPI-4.1 §15.3.8): no registration exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_set_dropped_handler(
    _event_registration: Handle,
    _dropped_cb_function: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_read (MPI-4.1 §15.3.8): no event instance exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_read(
    _event_instance: Handle,
    _element_index: c_int,
    _buffer: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_copy (MPI-4.1 §15.3.8): no event instance exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_copy(_event_instance: Handle, _buffer: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_get_timestamp (MPI-4.1 §15.3.8): no event instance exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_timestamp(
    _event_instance: Handle,
    _event_timestamp: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

/// MPI_T_event_get_source (MPI-4.1 §15.3.8): no event instance exists.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_source(
    _event_instance: Handle,
    _source_index: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    no_event_handle()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_have_distinct_names_and_hold_their_tables_knobs() {
        let groups = categories();
        let mut names: Vec<_> = groups.iter().map(|g| g.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), groups.len(), "a category name twice");
        assert!(groups
            .iter()
            .all(|g| g.name.starts_with("weft_") && !g.about.is_empty()));
        // Every cvar sits in the category of the first table that declares its knob.
        for c in cvars() {
            let first = groups
                .iter()
                .position(|g| g.knobs.iter().any(|k| k.name == c.knob.name));
            assert_eq!(first, Some(c.category), "{}", c.knob.name);
        }
        let runtime = groups
            .iter()
            .position(|g| g.name == "weft_runtime")
            .unwrap();
        assert!(!groups[runtime].outside_runtime);
        assert!(groups.iter().any(|g| g.outside_runtime));
        assert!(cvars()
            .iter()
            .any(|c| c.knob.name == "WEFT_SHM_EAGER_BYTES"));
        let mut names: Vec<_> = cvars().iter().map(|c| c.knob.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a knob listed twice");
    }

    #[test]
    fn strings_follow_the_mpi_t_convention() {
        let mut len: c_int = 0;
        // SAFETY: a null buffer with length 0 asks for the length only.
        unsafe { out_string("abcd", std::ptr::null_mut(), &mut len) };
        assert_eq!(len, 5);
        let mut buf = [0 as c_char; 3];
        len = 3;
        // SAFETY: buf holds 3 bytes.
        unsafe { out_string("abcd", buf.as_mut_ptr(), &mut len) };
        assert_eq!(len, 3);
        assert_eq!(buf, [b'a' as c_char, b'b' as c_char, 0]);
    }
}
