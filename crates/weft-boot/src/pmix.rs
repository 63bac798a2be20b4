//! The PMIx client: `libpmix` (Debian's `libpmix2`) loaded with `dlopen` when a PMIx
//! launcher (Slurm `--mpi=pmix`, Open MPI's `mpirun`) started the rank, so weft runs where
//! the library is absent as long as nobody asks for PMIx.
//!
//! Only the few declarations weft needs are written here, by hand, from the PMIx standard
//! and checked against the installed headers (`pmix_common.h` of PMIx 4; the test
//! `pmix_layout_matches_the_installed_headers` compiles a C program against them): the
//! process name `pmix_proc_t`, the value `pmix_value_t` (a 16-bit type tag and a 24-byte
//! union), the directive `pmix_info_t`, and `PMIx_Init`, `PMIx_Put`, `PMIx_Commit`,
//! `PMIx_Fence`, `PMIx_Get`, `PMIx_Abort`, `PMIx_Finalize`, `PMIx_Resolve_nodes`,
//! `PMIx_Resolve_peers`.
//!
//! Start-up takes rank and namespace from `PMIx_Init`, the size from `PMIX_JOB_SIZE`, the
//! node of every rank from the job's node list (`PMIx_Resolve_nodes`, `PMIx_Resolve_peers`)
//! or else each rank's `PMIX_NODEID`, and checks them against `PMIX_RANK`,
//! `PMIX_LOCAL_RANK` and `PMIX_LOCAL_SIZE`. A fence asks the server to collect the data
//! (`PMIX_COLLECT_DATA`), so the gets after it are answered from this process's copy.
//! This is the one module of the crate with `unsafe`: every FFI call is bounded to the
//! types above.

use crate::boot::{Backend, Boot, JobInfo};
use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use weft_core::{Error, ErrorKind, Result};

/// The library loaded when `WEFT_PMIX_LIBRARY` does not name another.
pub const DEFAULT_LIBRARY: &str = "libpmix.so.2";

const MAX_NSLEN: usize = 255;
const MAX_KEYLEN: usize = 511;
const RANK_WILDCARD: u32 = u32::MAX - 1;

// Data types (pmix_common.h).
const T_BOOL: u16 = 1;
const T_STRING: u16 = 3;
const T_SIZE: u16 = 4;
const T_INT: u16 = 6;
const T_INT8: u16 = 7;
const T_INT16: u16 = 8;
const T_INT32: u16 = 9;
const T_INT64: u16 = 10;
const T_UINT: u16 = 11;
const T_UINT8: u16 = 12;
const T_UINT16: u16 = 13;
const T_UINT32: u16 = 14;
const T_UINT64: u16 = 15;
const T_BYTE_OBJECT: u16 = 27;
const T_PROC_RANK: u16 = 40;

/// `PMIX_GLOBAL`: share with every process of the job.
const SCOPE_GLOBAL: u8 = 3;
const SUCCESS: c_int = 0;

/// `pmix_proc_t`: a namespace and a rank.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Proc {
    nspace: [c_char; MAX_NSLEN + 1],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// The union of `pmix_value_t`, with the members weft reads; `_envar` gives it the size of
/// its largest member (`pmix_envar_t`: two pointers and a char).
#[repr(C)]
#[derive(Clone, Copy)]
union Data {
    flag: bool,
    uint8: u8,
    uint16: u16,
    uint32: u32,
    uint64: u64,
    int8: i8,
    int16: i16,
    int32: i32,
    int64: i64,
    integer: c_int,
    uint: u32,
    size: usize,
    rank: u32,
    string: *mut c_char,
    bo: ByteObject,
    _envar: [usize; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Value {
    kind: u16,
    data: Data,
}

/// `pmix_info_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Info {
    key: [c_char; MAX_KEYLEN + 1],
    flags: u32,
    value: Value,
}

impl Info {
    fn new(key: &CStr, value: Value) -> Info {
        let mut k = [0 as c_char; MAX_KEYLEN + 1];
        for (d, &s) in k.iter_mut().zip(key.to_bytes()) {
            *d = s as c_char;
        }
        Info {
            key: k,
            flags: 0,
            value,
        }
    }
}

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut Proc, usize) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
type ValueDestructFn = unsafe extern "C" fn(*mut Value);
type VersionFn = unsafe extern "C" fn() -> *const c_char;
type ResolveNodesFn = unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> c_int;
type ResolvePeersFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *mut *mut Proc, *mut usize) -> c_int;

/// The entry points, resolved once from the loaded library (which is never unloaded: its
/// threads outlive any caller).
struct Api {
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    abort: AbortFn,
    error_string: ErrorStringFn,
    value_destruct: Option<ValueDestructFn>,
    version: VersionFn,
    resolve_nodes: ResolveNodesFn,
    resolve_peers: ResolvePeersFn,
    path: String,
}

/// The loaded library; a failed load is not remembered (a later call may name another).
static API: Mutex<Option<&'static Api>> = Mutex::new(None);
/// `PMIx_Init` succeeded in this process (it is called at most once).
static INITIALIZED: AtomicBool = AtomicBool::new(false);

fn load(library: &str) -> std::result::Result<Api, String> {
    // SAFETY: loading a shared library runs its constructors; libpmix's are the library's
    // own initialisation. RTLD_GLOBAL lets the components it loads find its symbols.
    let lib = unsafe { Library::open(Some(library), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| e.to_string())?;
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            // SAFETY: the symbol is declared with the signature of pmix.h (PMIx 4).
            let s = unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{library}: {e}"))?;
            *s
        }};
    }
    let api = Api {
        init: sym!("PMIx_Init", InitFn),
        finalize: sym!("PMIx_Finalize", FinalizeFn),
        put: sym!("PMIx_Put", PutFn),
        commit: sym!("PMIx_Commit", CommitFn),
        fence: sym!("PMIx_Fence", FenceFn),
        get: sym!("PMIx_Get", GetFn),
        abort: sym!("PMIx_Abort", AbortFn),
        error_string: sym!("PMIx_Error_string", ErrorStringFn),
        // SAFETY: as above; PMIx 3 has it only as a macro, so it may be missing.
        value_destruct: unsafe { lib.get::<ValueDestructFn>(b"PMIx_Value_destruct\0") }
            .ok()
            .map(|s| *s),
        version: sym!("PMIx_Get_version", VersionFn),
        resolve_nodes: sym!("PMIx_Resolve_nodes", ResolveNodesFn),
        resolve_peers: sym!("PMIx_Resolve_peers", ResolvePeersFn),
        path: library.to_owned(),
    };
    // The library stays loaded for the life of the process.
    std::mem::forget(lib);
    Ok(api)
}

/// Loads `library` once per process (the first that loads stays); the error names the
/// library and what failed.
fn api(library: &str) -> std::result::Result<&'static Api, String> {
    let mut loaded = API.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(a) = *loaded {
        return Ok(a);
    }
    let a: &'static Api = Box::leak(Box::new(load(library)?));
    *loaded = Some(a);
    Ok(a)
}

/// Whether `library` can be loaded (for `weft info`; loads it once, calls nothing).
pub fn library_status(library: &str) -> std::result::Result<String, String> {
    // SAFETY: as in `load`; nothing from the library is called but its version string.
    let a = api(library)?;
    // SAFETY: PMIx_Get_version returns a static NUL-terminated string.
    let v = unsafe { CStr::from_ptr((a.version)()) };
    Ok(format!("{} ({})", a.path, v.to_string_lossy()))
}

/// The sizes and offsets of the declarations above, named as in `pmix_common.h`, so a test
/// can compare them with what a C compiler makes of the installed headers.
#[doc(hidden)]
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("sizeof(pmix_proc_t)", size_of::<Proc>()),
        ("offsetof(pmix_proc_t, rank)", offset_of!(Proc, rank)),
        ("sizeof(pmix_byte_object_t)", size_of::<ByteObject>()),
        ("sizeof(pmix_value_t)", size_of::<Value>()),
        ("offsetof(pmix_value_t, data)", offset_of!(Value, data)),
        ("sizeof(pmix_info_t)", size_of::<Info>()),
        ("offsetof(pmix_info_t, flags)", offset_of!(Info, flags)),
        ("offsetof(pmix_info_t, value)", offset_of!(Info, value)),
        ("PMIX_MAX_NSLEN", MAX_NSLEN),
        ("PMIX_MAX_KEYLEN", MAX_KEYLEN),
        ("PMIX_RANK_WILDCARD", RANK_WILDCARD as usize),
        ("PMIX_BOOL", T_BOOL as usize),
        ("PMIX_STRING", T_STRING as usize),
        ("PMIX_SIZE", T_SIZE as usize),
        ("PMIX_INT", T_INT as usize),
        ("PMIX_UINT16", T_UINT16 as usize),
        ("PMIX_UINT32", T_UINT32 as usize),
        ("PMIX_UINT64", T_UINT64 as usize),
        ("PMIX_BYTE_OBJECT", T_BYTE_OBJECT as usize),
        ("PMIX_PROC_RANK", T_PROC_RANK as usize),
        ("PMIX_GLOBAL", SCOPE_GLOBAL as usize),
    ]
}

/// A rank's PMIx session.
pub struct Pmix {
    api: &'static Api,
    me: Proc,
    job: JobInfo,
    finalized: AtomicBool,
}

impl Pmix {
    /// Initialises the PMIx client named by the environment (`var` looks variables up),
    /// loading `library`. `timeout` bounds the start-up queries.
    pub fn connect(
        var: &dyn Fn(&str) -> Option<String>,
        library: &str,
        timeout: Duration,
    ) -> Result<Pmix> {
        if var("PMIX_NAMESPACE").is_none_or(|n| n.trim().is_empty()) {
            // Without a server PMIx would start this process as a job of its own.
            return Err(Error::new(
                ErrorKind::Config,
                "PMIx: PMIX_NAMESPACE is not set, so no PMIx launcher started this rank (srun --mpi=pmix, mpirun)",
            ));
        }
        let api = api(library).map_err(|e| {
            let seen: Vec<String> = ["PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4"]
                .iter()
                .filter_map(|n| var(n).map(|v| format!("{n}={v}")))
                .collect();
            Error::new(
                ErrorKind::Config,
                format!(
                    "a PMIx launcher started this rank ({}) but {library} cannot be loaded: {e}; install libpmix2 or set WEFT_PMIX_LIBRARY to the library's path",
                    seen.join(" ")
                ),
            )
        })?;
        if INITIALIZED.swap(true, Ordering::AcqRel) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "PMIx: this process already initialised (and finalized) PMIx; under a PMIx launcher a process inits once",
            ));
        }
        let mut me = Proc {
            nspace: [0; MAX_NSLEN + 1],
            rank: 0,
        };
        // SAFETY: `me` is a valid pmix_proc_t to fill; no info array.
        let rc = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
        if rc != SUCCESS {
            INITIALIZED.store(false, Ordering::Release);
            return Err(status_error(api, rc, "PMIx_Init"));
        }
        let mut p = Pmix {
            api,
            me,
            job: JobInfo {
                rank: me.rank,
                size: 0,
                launcher_job: nspace_text(&me),
                node_of: None,
            },
            finalized: AtomicBool::new(false),
        };
        p.describe(var, timeout).inspect_err(|_| {
            // A rank that cannot run tells the server it is leaving.
            let _ = p.finalize_now();
        })?;
        Ok(p)
    }

    fn describe(&mut self, var: &dyn Fn(&str) -> Option<String>, timeout: Duration) -> Result<()> {
        let ns = nspace_text(&self.me);
        if let Some(env_ns) = var("PMIX_NAMESPACE") {
            if env_ns != ns {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("PMIx_Init says namespace {ns:?} but PMIX_NAMESPACE={env_ns:?}: the launcher's sources disagree"),
                ));
            }
        }
        if let Some(env_rank) = var("PMIX_RANK") {
            if env_rank.trim().parse::<u32>().ok() != Some(self.me.rank) {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "PMIx_Init says rank {} but PMIX_RANK={env_rank:?}: the launcher's sources disagree",
                        self.me.rank
                    ),
                ));
            }
        }
        let wildcard = Proc {
            rank: RANK_WILDCARD,
            ..self.me
        };
        let size = self.get_uint(&wildcard, c"pmix.job.size", timeout)?;
        let size = u32::try_from(size).map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!("PMIx job size {size} is too large"),
            )
        })?;
        self.job.size = size;
        if self.me.rank >= size {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "PMIx: rank {} of a job of {size}: the rank must be below the size",
                    self.me.rank
                ),
            ));
        }
        let node_of = match self.resolve_node_map(size) {
            Some(map) => map,
            None => {
                // Without the job's node list, every rank's PMIX_NODEID.
                let mut v = Vec::with_capacity(size as usize);
                for r in 0..size {
                    let p = Proc { rank: r, ..self.me };
                    v.push(self.get_uint(&p, c"pmix.nodeid", timeout)? as u32);
                }
                v
            }
        };
        let mine = node_of[self.me.rank as usize];
        let local: Vec<u32> = (0..size).filter(|&r| node_of[r as usize] == mine).collect();
        let my_local = local.iter().position(|&r| r == self.me.rank).unwrap_or(0) as u64;
        let lrank = self.get_uint(&self.me, c"pmix.lrank", timeout)?;
        let lsize = self
            .get_uint(&self.me, c"pmix.local.size", timeout)
            .or_else(|_| self.get_uint(&wildcard, c"pmix.local.size", timeout))?;
        if lsize != local.len() as u64 || lrank != my_local {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "PMIx: rank {} has local rank {lrank} of {lsize} but the node ids put it at {my_local} of {}: the launcher's sources disagree",
                    self.me.rank,
                    local.len()
                ),
            ));
        }
        self.job.node_of = Some(node_of);
        Ok(())
    }

    /// The node of every rank from the job's node list (`PMIx_Resolve_nodes`) and each
    /// node's ranks (`PMIx_Resolve_peers`): job-level data every rank holds alike (Slurm
    /// gives remote ranks no `PMIX_NODEID`). `None` when the server cannot say, or what it
    /// says does not place every rank exactly once.
    fn resolve_node_map(&self, size: u32) -> Option<Vec<u32>> {
        let mut list: *mut c_char = std::ptr::null_mut();
        // SAFETY: the namespace is NUL-terminated; PMIx writes a malloc'ed string to `list`.
        let rc = unsafe { (self.api.resolve_nodes)(self.me.nspace.as_ptr(), &mut list) };
        if rc != SUCCESS || list.is_null() {
            return None;
        }
        // SAFETY: PMIx returned a NUL-terminated string we now own.
        let nodes = unsafe {
            let text = CStr::from_ptr(list).to_string_lossy().into_owned();
            libc::free(list as *mut libc::c_void);
            text
        };
        let mut node_of = vec![u32::MAX; size as usize];
        for (index, node) in nodes.split(',').filter(|n| !n.is_empty()).enumerate() {
            let name = CString::new(node).ok()?;
            let mut procs: *mut Proc = std::ptr::null_mut();
            let mut n: usize = 0;
            // SAFETY: valid strings; PMIx writes a malloc'ed array of `n` procs.
            let rc = unsafe {
                (self.api.resolve_peers)(name.as_ptr(), self.me.nspace.as_ptr(), &mut procs, &mut n)
            };
            if rc != SUCCESS {
                return None;
            }
            let ranks: Vec<u32> = if procs.is_null() {
                Vec::new()
            } else {
                // SAFETY: PMIx returned `n` procs at `procs`, which we free after copying.
                unsafe {
                    let v = std::slice::from_raw_parts(procs, n)
                        .iter()
                        .map(|p| p.rank)
                        .collect();
                    libc::free(procs as *mut libc::c_void);
                    v
                }
            };
            for r in ranks {
                let slot = node_of.get_mut(r as usize)?;
                if *slot != u32::MAX {
                    return None;
                }
                *slot = index as u32;
            }
        }
        node_of.iter().all(|&n| n != u32::MAX).then_some(node_of)
    }

    /// Fetches an integer attribute of `proc`.
    fn get_uint(&self, proc: &Proc, key: &CStr, timeout: Duration) -> Result<u64> {
        let v = self.get_value(proc, key, timeout)?;
        let out = match v.kind() {
            Some(n) => Ok(n),
            None => Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "PMIx: {} of rank {} has data type {}, not an integer",
                    key.to_string_lossy(),
                    proc.rank,
                    v.raw().kind
                ),
            )),
        };
        drop(v);
        out
    }

    /// `PMIx_Get` with a timeout; the value is released when the guard drops.
    fn get_value(&self, proc: &Proc, key: &CStr, timeout: Duration) -> Result<ValueGuard> {
        let info = [Info::new(
            c"pmix.timeout",
            Value {
                kind: T_INT,
                data: Data {
                    integer: timeout.as_secs().clamp(1, i32::MAX as u64) as c_int,
                },
            },
        )];
        let mut out: *mut Value = std::ptr::null_mut();
        // SAFETY: proc and key are valid for the call; info is a valid array of one; PMIx
        // writes a newly allocated value into `out` on success.
        let rc = unsafe { (self.api.get)(proc, key.as_ptr(), info.as_ptr(), info.len(), &mut out) };
        if rc != SUCCESS || out.is_null() {
            return Err(status_error(
                self.api,
                rc,
                &format!("PMIx_Get {} of rank {}", key.to_string_lossy(), proc.rank),
            ));
        }
        Ok(ValueGuard {
            api: self.api,
            v: out,
        })
    }

    fn finalize_now(&self) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // SAFETY: no info array.
        let rc = unsafe { (self.api.finalize)(std::ptr::null(), 0) };
        if rc != SUCCESS {
            return Err(status_error(self.api, rc, "PMIx_Finalize"));
        }
        Ok(())
    }

    fn key(key: &str) -> Result<CString> {
        let k = format!("weft:{key}");
        if k.len() > MAX_KEYLEN {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("PMIx key {k:?} is longer than {MAX_KEYLEN} bytes"),
            ));
        }
        CString::new(k).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("PMIx key {key:?} has a NUL"),
            )
        })
    }
}

/// A value PMIx allocated for us; freed like `PMIX_VALUE_RELEASE` does.
struct ValueGuard {
    api: &'static Api,
    v: *mut Value,
}

impl ValueGuard {
    fn raw(&self) -> Value {
        // SAFETY: `v` points to a value PMIx returned and we have not freed.
        unsafe { *self.v }
    }

    /// The value as an unsigned integer, when it is one.
    fn kind(&self) -> Option<u64> {
        let v = self.raw();
        // SAFETY: each arm reads the union member the type tag names.
        unsafe {
            Some(match v.kind {
                T_BOOL => v.data.flag as u64,
                T_UINT8 => v.data.uint8 as u64,
                T_UINT16 => v.data.uint16 as u64,
                T_UINT32 => v.data.uint32 as u64,
                T_UINT64 => v.data.uint64,
                T_UINT => v.data.uint as u64,
                T_SIZE => v.data.size as u64,
                T_PROC_RANK => v.data.rank as u64,
                T_INT8 => u64::try_from(v.data.int8).ok()?,
                T_INT16 => u64::try_from(v.data.int16).ok()?,
                T_INT32 => u64::try_from(v.data.int32).ok()?,
                T_INT64 => u64::try_from(v.data.int64).ok()?,
                T_INT => u64::try_from(v.data.integer).ok()?,
                _ => return None,
            })
        }
    }

    /// The value's bytes, when it is a byte object or a string.
    fn bytes(&self) -> Option<Vec<u8>> {
        let v = self.raw();
        // SAFETY: the tag says which member is live; PMIx owns `size` bytes at `bytes`
        // (or a NUL-terminated string).
        unsafe {
            match v.kind {
                T_BYTE_OBJECT if v.data.bo.bytes.is_null() => Some(Vec::new()),
                T_BYTE_OBJECT => Some(
                    std::slice::from_raw_parts(v.data.bo.bytes as *const u8, v.data.bo.size)
                        .to_vec(),
                ),
                T_STRING if !v.data.string.is_null() => {
                    Some(CStr::from_ptr(v.data.string).to_bytes().to_vec())
                }
                _ => None,
            }
        }
    }
}

impl Drop for ValueGuard {
    fn drop(&mut self) {
        // SAFETY: `v` was allocated by PMIx with malloc; its contents are released by
        // PMIx_Value_destruct when the library has it, else by hand for the two kinds that
        // own memory (what PMIx 3's macro does for them).
        unsafe {
            match self.api.value_destruct {
                Some(d) => d(self.v),
                None => {
                    let v = *self.v;
                    match v.kind {
                        T_BYTE_OBJECT => libc::free(v.data.bo.bytes as *mut libc::c_void),
                        T_STRING => libc::free(v.data.string as *mut libc::c_void),
                        _ => {}
                    }
                }
            }
            libc::free(self.v as *mut libc::c_void);
        }
    }
}

fn nspace_text(p: &Proc) -> String {
    let bytes: Vec<u8> = p
        .nspace
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn status_error(api: &Api, rc: c_int, what: &str) -> Error {
    // SAFETY: PMIx_Error_string returns a static NUL-terminated string for any status.
    let text = unsafe {
        let p = (api.error_string)(rc);
        if p.is_null() {
            String::from("unknown status")
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let kind = match rc {
        -24 => ErrorKind::Timeout,
        _ => ErrorKind::Protocol,
    };
    Error::new(kind, format!("{what} failed: {text} ({rc})"))
}

impl Boot for Pmix {
    fn backend(&self) -> Backend {
        Backend::Pmix
    }

    fn job(&self) -> &JobInfo {
        &self.job
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        let k = Self::key(key)?;
        let mut v = Value {
            kind: T_BYTE_OBJECT,
            data: Data {
                bo: ByteObject {
                    bytes: value.as_ptr() as *mut c_char,
                    size: value.len(),
                },
            },
        };
        // SAFETY: PMIx_Put copies the value (the standard says the caller keeps ownership);
        // the key is NUL-terminated.
        let rc = unsafe { (self.api.put)(SCOPE_GLOBAL, k.as_ptr(), &mut v) };
        if rc != SUCCESS {
            return Err(status_error(self.api, rc, &format!("PMIx_Put {key:?}")));
        }
        // SAFETY: no arguments.
        let rc = unsafe { (self.api.commit)() };
        if rc != SUCCESS {
            return Err(status_error(self.api, rc, "PMIx_Commit"));
        }
        Ok(())
    }

    fn fence(&self, timeout: Duration) -> Result<()> {
        let info = [
            Info::new(
                c"pmix.collect",
                Value {
                    kind: T_BOOL,
                    data: Data { flag: true },
                },
            ),
            Info::new(
                c"pmix.timeout",
                Value {
                    kind: T_INT,
                    data: Data {
                        integer: timeout.as_secs().clamp(1, i32::MAX as u64) as c_int,
                    },
                },
            ),
        ];
        // SAFETY: no process list means the whole namespace; info is a valid array.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, info.as_ptr(), info.len()) };
        if rc != SUCCESS {
            return Err(status_error(
                self.api,
                rc,
                &format!("rank {}: PMIx_Fence", self.me.rank),
            ));
        }
        Ok(())
    }

    fn get(&self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        let k = Self::key(key)?;
        let p = Proc { rank, ..self.me };
        let v = self.get_value(&p, &k, timeout)?;
        v.bytes().ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "PMIx: rank {rank}'s {key:?} has data type {}, not bytes",
                    v.raw().kind
                ),
            )
        })
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        let msg = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: no process list means this process's whole namespace.
        let rc = unsafe { (self.api.abort)(code, msg.as_ptr(), std::ptr::null_mut(), 0) };
        if rc != SUCCESS {
            return Err(status_error(self.api, rc, "PMIx_Abort"));
        }
        Ok(())
    }

    fn finalize(&self, timeout: Duration) -> Result<()> {
        self.fence(timeout)?;
        self.finalize_now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_clear_error_naming_it_and_the_variables() {
        let vars = |n: &str| match n {
            "PMIX_NAMESPACE" => Some("slurm.pmix.7.0".to_owned()),
            "PMIX_RANK" => Some("3".to_owned()),
            _ => None,
        };
        let e = match Pmix::connect(
            &vars,
            "/nonexistent/libpmix-weft-test.so.2",
            Duration::from_secs(1),
        ) {
            Ok(_) => panic!("connected through a library that does not exist"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), ErrorKind::Config);
        let m = e.message();
        assert!(
            m.contains("/nonexistent/libpmix-weft-test.so.2 cannot be loaded"),
            "{m}"
        );
        assert!(
            m.contains("PMIX_NAMESPACE=slurm.pmix.7.0 PMIX_RANK=3"),
            "{m}"
        );
        assert!(m.contains("WEFT_PMIX_LIBRARY"), "{m}");
        assert!(!m.contains('\n'), "one line: {m}");
    }

    #[test]
    fn layouts_have_the_sizes_of_pmix_4() {
        assert_eq!(std::mem::size_of::<Proc>(), 260);
        assert_eq!(std::mem::size_of::<Data>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 32);
        assert_eq!(std::mem::size_of::<Info>(), 552);
        assert_eq!(std::mem::offset_of!(Info, value), 520);
        assert_eq!(std::mem::offset_of!(Value, data), 8);
    }
}
