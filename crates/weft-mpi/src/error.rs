//! Errors at the C boundary: weft's `Error` kinds mapped onto MPI error classes, the error
//! handlers (MPI-4.1 §9.3: ERRORS_ARE_FATAL, ERRORS_ABORT, ERRORS_RETURN and user
//! functions), Error_string and Error_class. Depends on the state tables only.

use crate::consts::*;
use crate::state::{state_opt, CommHandler};
use std::os::raw::{c_char, c_int};
use weft::ErrorKind;

/// An MPI error: a class and a message naming the argument and value at fault.
#[derive(Debug, Clone)]
pub struct MpiError {
    /// The MPI error class returned to C.
    pub class: c_int,
    /// What went wrong, for the fatal handler and Error_string.
    pub message: String,
}

/// Result of the C entry points' bodies.
pub type R<T> = Result<T, MpiError>;

/// An error of `class` with `message`.
pub fn err(class: c_int, message: impl Into<String>) -> MpiError {
    MpiError {
        class,
        message: message.into(),
    }
}

impl From<weft::Error> for MpiError {
    fn from(e: weft::Error) -> Self {
        let class = match e.kind() {
            ErrorKind::InvalidRank => MPI_ERR_RANK,
            ErrorKind::InvalidTag => MPI_ERR_TAG,
            ErrorKind::InvalidCount => MPI_ERR_COUNT,
            ErrorKind::InvalidRoot => MPI_ERR_ROOT,
            ErrorKind::InvalidComm => MPI_ERR_COMM,
            ErrorKind::InvalidType => MPI_ERR_TYPE,
            ErrorKind::InvalidOp => MPI_ERR_OP,
            ErrorKind::InvalidRequest => MPI_ERR_REQUEST,
            ErrorKind::InvalidArgument | ErrorKind::Config => MPI_ERR_ARG,
            ErrorKind::Truncate => MPI_ERR_TRUNCATE,
            ErrorKind::PeerDead => MPI_ERR_PROC_ABORTED,
            ErrorKind::Unsupported => MPI_ERR_UNSUPPORTED_OPERATION,
            ErrorKind::Internal => MPI_ERR_INTERN,
            ErrorKind::RmaSync => MPI_ERR_RMA_SYNC,
            ErrorKind::RmaRange => MPI_ERR_RMA_RANGE,
            ErrorKind::RmaAttach => MPI_ERR_RMA_ATTACH,
            ErrorKind::RmaShared => MPI_ERR_RMA_SHARED,
            ErrorKind::RmaFlavor => MPI_ERR_RMA_FLAVOR,
            ErrorKind::LockType => MPI_ERR_LOCKTYPE,
            ErrorKind::FileNotFound => crate::file::MPI_ERR_NO_SUCH_FILE,
            ErrorKind::FileExists => crate::file::MPI_ERR_FILE_EXISTS,
            ErrorKind::FileAccess => crate::file::MPI_ERR_ACCESS,
            ErrorKind::NoSpace => crate::file::MPI_ERR_NO_SPACE,
            ErrorKind::Quota => crate::file::MPI_ERR_QUOTA,
            ErrorKind::ReadOnly => crate::file::MPI_ERR_READ_ONLY,
            ErrorKind::FileInUse => crate::file::MPI_ERR_FILE_IN_USE,
            ErrorKind::BadFile => crate::file::MPI_ERR_BAD_FILE,
            ErrorKind::Amode => crate::file::MPI_ERR_AMODE,
            ErrorKind::NotSame => crate::file::MPI_ERR_NOT_SAME,
            ErrorKind::Port => crate::dynamic::MPI_ERR_PORT,
            ErrorKind::Name => crate::dynamic::MPI_ERR_NAME,
            ErrorKind::Service => crate::dynamic::MPI_ERR_SERVICE,
            _ => MPI_ERR_OTHER,
        };
        MpiError {
            class,
            message: e.to_string(),
        }
    }
}

/// The text of each error class (MPI_Error_string).
pub fn class_text(class: c_int) -> &'static str {
    match class {
        MPI_SUCCESS => "no error",
        MPI_ERR_BUFFER => "invalid buffer pointer",
        MPI_ERR_COUNT => "invalid count argument",
        MPI_ERR_TYPE => "invalid datatype",
        MPI_ERR_TAG => "invalid tag",
        MPI_ERR_COMM => "invalid communicator",
        MPI_ERR_RANK => "invalid rank",
        MPI_ERR_REQUEST => "invalid request",
        MPI_ERR_ROOT => "invalid root",
        MPI_ERR_GROUP => "invalid group",
        MPI_ERR_OP => "invalid operation",
        MPI_ERR_TOPOLOGY => "invalid topology",
        MPI_ERR_DIMS => "invalid dimension argument",
        MPI_ERR_ARG => "invalid argument",
        MPI_ERR_UNKNOWN => "unknown error",
        MPI_ERR_TRUNCATE => "message truncated",
        MPI_ERR_OTHER => "other error",
        MPI_ERR_INTERN => "internal error",
        MPI_ERR_PENDING => "operation pending",
        MPI_ERR_IN_STATUS => "error code is in status",
        MPI_ERR_INFO_KEY => "invalid info key",
        MPI_ERR_INFO_NOKEY => "info key not defined",
        MPI_ERR_INFO_VALUE => "invalid info value",
        MPI_ERR_INFO => "invalid info object",
        MPI_ERR_KEYVAL => "invalid attribute key",
        MPI_ERR_NO_MEM => "out of memory",
        MPI_ERR_UNSUPPORTED_OPERATION => "operation not supported by weft",
        MPI_ERR_PROC_ABORTED => "a peer process aborted",
        MPI_ERR_ERRHANDLER => "invalid error handler",
        MPI_ERR_ABI => "ABI mismatch",
        crate::file::MPI_ERR_ACCESS => "permission denied",
        crate::file::MPI_ERR_AMODE => "invalid access mode",
        crate::file::MPI_ERR_BAD_FILE => "invalid file name",
        crate::file::MPI_ERR_CONVERSION => "data conversion failed",
        crate::file::MPI_ERR_DUP_DATAREP => "data representation already defined",
        crate::file::MPI_ERR_FILE_EXISTS => "file exists",
        crate::file::MPI_ERR_FILE_IN_USE => "file in use",
        crate::file::MPI_ERR_FILE => "invalid file handle",
        crate::file::MPI_ERR_IO => "I/O error",
        crate::file::MPI_ERR_NOT_SAME => "arguments differ between processes",
        crate::file::MPI_ERR_NO_SPACE => "no space left on device",
        crate::file::MPI_ERR_NO_SUCH_FILE => "no such file",
        crate::file::MPI_ERR_QUOTA => "quota exceeded",
        crate::file::MPI_ERR_READ_ONLY => "read-only file or file system",
        crate::file::MPI_ERR_UNSUPPORTED_DATAREP => "unsupported data representation",
        crate::dynamic::MPI_ERR_NAME => "invalid service name",
        crate::dynamic::MPI_ERR_PORT => "invalid port",
        crate::dynamic::MPI_ERR_SERVICE => "service name not published or published twice",
        53 => "cannot spawn processes",
        59 => "value too large to store",
        MPI_ERR_ASSERT => "invalid assertion",
        MPI_ERR_BASE => "invalid base address",
        MPI_ERR_DISP => "invalid displacement",
        MPI_ERR_LOCKTYPE => "invalid lock type",
        MPI_ERR_RMA_ATTACH => "memory cannot be attached to the window",
        MPI_ERR_RMA_CONFLICT => "conflicting accesses to a window",
        MPI_ERR_RMA_RANGE => "access outside the target's window",
        MPI_ERR_RMA_SHARED => "memory cannot be shared",
        MPI_ERR_RMA_SYNC => "wrong synchronisation of one-sided calls",
        MPI_ERR_RMA_FLAVOR => "wrong window flavor for the call",
        MPI_ERR_SIZE => "invalid size",
        MPI_ERR_WIN => "invalid window",
        crate::session::MPI_ERR_SESSION => "invalid session",
        crate::mpit::MPI_T_ERR_NOT_INITIALIZED => "MPI_T is not initialized",
        crate::mpit::MPI_T_ERR_INVALID_INDEX => "invalid MPI_T index",
        crate::mpit::MPI_T_ERR_INVALID_HANDLE => "invalid MPI_T handle",
        crate::mpit::MPI_T_ERR_INVALID_NAME => "invalid MPI_T variable or category name",
        crate::mpit::MPI_T_ERR_INVALID_SESSION => "invalid MPI_T performance session",
        crate::mpit::MPI_T_ERR_CVAR_SET_NEVER => "control variable cannot be set",
        crate::mpit::MPI_T_ERR_NOT_ACCESSIBLE => "MPI_T variable not accessible",
        _ => "",
    }
}

/// Reports `e`, raised by `func` on communicator `comm`, through that communicator's error
/// handler (world's when `comm` is not a valid communicator) and returns the class to give C.
pub fn raise(comm: Handle, func: &str, e: MpiError) -> c_int {
    let (handler, rank) = match state_opt() {
        Some(s) => (s.handler_of(comm), s.world_rank()),
        None => (CommHandler::Fatal, 0),
    };
    match handler {
        CommHandler::Return => e.class,
        CommHandler::User(f) => {
            let mut c = comm;
            let mut code = e.class;
            // SAFETY: the program registered `f` with MPI_Comm_create_errhandler, whose
            // signature this call follows (the variadic tail is empty).
            unsafe { f(&mut c, &mut code) };
            e.class
        }
        CommHandler::Fatal => fatal(func, rank, e),
    }
}

/// The fatal handlers (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT): prints `e` raised by `func`
/// on `rank` and ends the job with the error class as exit code.
pub fn fatal(func: &str, rank: u32, e: MpiError) -> ! {
    let text = dynamic_string(e.class).unwrap_or_else(|| class_text(e.class).into());
    let line = format!(
        "{func} on rank {rank}: {} (MPI error class {}: {text})",
        e.message, e.class,
    );
    match state_opt() {
        Some(s) => s.weft.abort(e.class.max(1), &line),
        None => {
            weft_core::diag!("weft-mpi: {line}");
            std::process::exit(e.class.max(1))
        }
    }
}

/// Reports weft's error `e`, raised by `func` on `comm`, as [`raise`] does. Out of line and
/// cold: the fast path's callers carry only the class they return, and the message is built
/// here, on the error branch.
#[cold]
#[inline(never)]
pub fn raise_weft(comm: Handle, func: &str, e: weft::Error) -> c_int {
    raise(comm, func, e.into())
}

/// Finishes a C entry point: 0 on success, otherwise the error handler's verdict.
#[inline]
pub fn finish(comm: Handle, func: &str, r: R<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(comm, func, e),
    }
}

/// The body of every exported function weft does not implement yet.
pub fn unsupported(func: &str) -> c_int {
    raise(
        MPI_COMM_WORLD,
        func,
        err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{func} is not implemented by weft yet (see `weft info --mpi`)"),
        ),
    )
}

/// [`unsupported`] for a function whose communicator argument is `comm`: reported through
/// that communicator's handler, so a program that set MPI_ERRORS_RETURN on it gets the class.
pub fn unsupported_on(comm: Handle, func: &str) -> c_int {
    raise(
        comm,
        func,
        err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{func} is not implemented by weft yet (see `weft info --mpi`)"),
        ),
    )
}

/// [`unsupported`] for a function whose error handler defaults to MPI_ERRORS_RETURN (the
/// file functions, MPI-4.1 §9.3): returns the class.
pub fn unsupported_returning(_func: &str) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

/// Writes `text` into the C buffer `out` (at most `cap - 1` bytes and a NUL) and its length
/// into `len`.
///
/// # Safety
/// `out` must be writable for `cap` bytes and `len` writable (or null).
pub unsafe fn write_c_string(text: &str, out: *mut c_char, cap: usize, len: *mut c_int) {
    let n = text.len().min(cap.saturating_sub(1));
    if !out.is_null() && cap > 0 {
        // SAFETY: `out` is writable for `cap > n` bytes (the caller's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), out as *mut u8, n);
            *out.add(n) = 0;
        }
    }
    if !len.is_null() {
        // SAFETY: `len` is writable (the caller's contract).
        unsafe { *len = n as c_int };
    }
}

/// MPI_Error_string (MPI-4.1 §9.4).
///
/// # Safety
/// `string` must hold MPI_MAX_ERROR_STRING bytes; `resultlen` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(
    errorcode: c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    if let Some(text) = dynamic_string(errorcode) {
        // SAFETY: forwarded caller contract.
        unsafe { write_c_string(&text, string, MPI_MAX_ERROR_STRING, resultlen) };
        return MPI_SUCCESS;
    }
    let text = class_text(errorcode);
    if text.is_empty() {
        return raise(
            MPI_COMM_WORLD,
            "MPI_Error_string",
            err(
                MPI_ERR_ARG,
                format!("errorcode {errorcode} is not an error class"),
            ),
        );
    }
    // SAFETY: forwarded caller contract.
    unsafe { write_c_string(text, string, MPI_MAX_ERROR_STRING, resultlen) };
    MPI_SUCCESS
}

/// MPI_Error_class (MPI-4.1 §9.4): weft's error codes are the classes themselves.
///
/// # Safety
/// `errorclass` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    if let (Some(class), false) = (dynamic_class(errorcode), errorclass.is_null()) {
        // SAFETY: checked non-null; writable by the caller's contract.
        unsafe { *errorclass = class };
        return MPI_SUCCESS;
    }
    if class_text(errorcode).is_empty() || errorclass.is_null() {
        return raise(
            MPI_COMM_WORLD,
            "MPI_Error_class",
            err(
                MPI_ERR_ARG,
                format!("errorcode {errorcode} is not an error code"),
            ),
        );
    }
    // SAFETY: checked non-null; writable by the caller's contract.
    unsafe { *errorclass = errorcode };
    MPI_SUCCESS
}

// ------------------------------------------------------------------- user error classes

/// Error classes and codes the program added (MPI-4.1 §9.5), numbered above
/// MPI_ERR_LASTCODE from one counter: each value's class (itself for a class) and string.
struct Dynamic {
    /// Value -> (class, string).
    entries: std::collections::BTreeMap<c_int, (c_int, String)>,
    /// The largest value handed out (MPI_LASTUSEDCODE).
    last: c_int,
}

static DYNAMIC: std::sync::Mutex<Dynamic> = std::sync::Mutex::new(Dynamic {
    entries: std::collections::BTreeMap::new(),
    last: MPI_ERR_LASTCODE,
});

fn dynamic() -> std::sync::MutexGuard<'static, Dynamic> {
    DYNAMIC.lock().unwrap_or_else(|p| p.into_inner())
}

/// The class of an added error class or code.
pub fn dynamic_class(code: c_int) -> Option<c_int> {
    dynamic().entries.get(&code).map(|e| e.0)
}

/// The string of an added error class or code (empty until MPI_Add_error_string).
fn dynamic_string(code: c_int) -> Option<String> {
    dynamic().entries.get(&code).map(|e| e.1.clone())
}

/// The largest error code or class in use (the MPI_LASTUSEDCODE attribute's value).
pub fn last_used_code() -> c_int {
    dynamic().last
}

fn add_error(class: Option<c_int>, out: *mut c_int, func: &str) -> c_int {
    if out.is_null() {
        return raise(MPI_COMM_WORLD, func, err(MPI_ERR_ARG, "the output is NULL"));
    }
    let mut d = dynamic();
    if d.last == c_int::MAX {
        drop(d);
        return raise(
            MPI_COMM_WORLD,
            func,
            err(MPI_ERR_OTHER, "no error values left"),
        );
    }
    d.last += 1;
    let v = d.last;
    d.entries.insert(v, (class.unwrap_or(v), String::new()));
    // SAFETY: checked non-null; writable by the caller's contract.
    unsafe { *out = v };
    MPI_SUCCESS
}

/// MPI_Add_error_class (MPI-4.1 §9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    add_error(None, errorclass, "MPI_Add_error_class")
}

/// MPI_Add_error_code (MPI-4.1 §9.5): a new code of `errorclass`, predefined or added.
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let predefined = (MPI_SUCCESS..=MPI_ERR_LASTCODE).contains(&errorclass)
        && !class_text(errorclass).is_empty();
    let added = dynamic_class(errorclass) == Some(errorclass);
    if !predefined && !added {
        return raise(
            MPI_COMM_WORLD,
            "MPI_Add_error_code",
            err(
                MPI_ERR_ARG,
                format!("errorclass {errorclass} is not an error class"),
            ),
        );
    }
    add_error(Some(errorclass), errorcode, "MPI_Add_error_code")
}

/// MPI_Add_error_string (MPI-4.1 §9.5): for added classes and codes only (the predefined
/// ones keep the standard's text).
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: a NUL-terminated string (the caller's contract).
        let text = unsafe { crate::env::c_str(string, "string")? };
        if text.len() >= MPI_MAX_ERROR_STRING {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "the string has {} bytes, MPI_MAX_ERROR_STRING is {MPI_MAX_ERROR_STRING}",
                    text.len()
                ),
            ));
        }
        match dynamic().entries.get_mut(&errorcode) {
            Some(e) => {
                e.1 = text;
                Ok(())
            }
            None => Err(err(
                MPI_ERR_ARG,
                format!("errorcode {errorcode} was not added by MPI_Add_error_class/code"),
            )),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Add_error_string", r)
}

/// MPI_Remove_error_class (MPI-4.1 §9.5): only a class with no codes left.
#[no_mangle]
pub unsafe extern "C" fn MPI_Remove_error_class(errorclass: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let mut d = dynamic();
        if d.entries.get(&errorclass).map(|e| e.0) != Some(errorclass) {
            return Err(err(
                MPI_ERR_ARG,
                format!("{errorclass} is not an added error class"),
            ));
        }
        if d.entries
            .iter()
            .any(|(&v, e)| e.0 == errorclass && v != errorclass)
        {
            return Err(err(
                MPI_ERR_ARG,
                format!("error class {errorclass} still has codes"),
            ));
        }
        if d.entries.get(&errorclass).is_some_and(|e| !e.1.is_empty()) {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "error class {errorclass} still has a string (MPI_Remove_error_string first)"
                ),
            ));
        }
        d.entries.remove(&errorclass);
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Remove_error_class", r)
}

/// MPI_Remove_error_code (MPI-4.1 §9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Remove_error_code(errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let mut d = dynamic();
    let r = match d.entries.get(&errorcode) {
        Some(e) if e.0 != errorcode && !e.1.is_empty() => Err(err(
            MPI_ERR_ARG,
            format!("error code {errorcode} still has a string (MPI_Remove_error_string first)"),
        )),
        Some(e) if e.0 != errorcode => {
            d.entries.remove(&errorcode);
            Ok(())
        }
        _ => Err(err(
            MPI_ERR_ARG,
            format!("{errorcode} is not an added error code"),
        )),
    };
    drop(d);
    finish(MPI_COMM_WORLD, "MPI_Remove_error_code", r)
}

/// MPI_Remove_error_string (MPI-4.1 §9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Remove_error_string(errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = match dynamic().entries.get_mut(&errorcode) {
        Some(e) => {
            e.1.clear();
            Ok(())
        }
        None => Err(err(
            MPI_ERR_ARG,
            format!("{errorcode} is not an added error class or code"),
        )),
    };
    finish(MPI_COMM_WORLD, "MPI_Remove_error_string", r)
}
