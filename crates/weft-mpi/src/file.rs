//! MPI-IO handles (MPI-4.1 chapter 14): the file table, MPI_File_open/close/delete, sizes,
//! sync, the access mode, group and info, views (set_view/get_view/get_type_extent),
//! positions and seeks, atomicity and the file error handlers. The data accesses are in
//! `file_data.rs`, the data representations in `datarep.rs`; `weft::io` does the work.
//!
//! Errors on a file go to its error handler, which starts as the handler of MPI_FILE_NULL
//! (MPI_ERRORS_RETURN until the program sets another); errors of MPI_File_open and
//! MPI_File_delete, and of calls given no valid file, go to MPI_FILE_NULL's handler.

use crate::consts::*;
use crate::datarep::Rep;
use crate::dtype::{map_of, predefined, put};
use crate::env::{c_str, errhandler_fn, info_entries, info_insert, valid_errhandler};
use crate::error::{err, fatal, MpiError, R};
use crate::state::{handle_index, make_handle, state, state_opt, State, Table, K_TYPE};
use std::os::raw::{c_char, c_int};
use std::path::PathBuf;
use weft::io::{Disp, File, OpenMode, Whence};

/// Handle kind of files (see state.rs).
pub const K_FILE: usize = 10;
/// MPI_FILE_NULL of the standard ABI.
pub const MPI_FILE_NULL: Handle = 0x118;

// Error classes of files (mpi.h of the standard ABI).
pub const MPI_ERR_ACCESS: c_int = 20;
pub const MPI_ERR_AMODE: c_int = 21;
pub const MPI_ERR_BAD_FILE: c_int = 23;
pub const MPI_ERR_CONVERSION: c_int = 25;
pub const MPI_ERR_DUP_DATAREP: c_int = 27;
pub const MPI_ERR_FILE_EXISTS: c_int = 28;
pub const MPI_ERR_FILE_IN_USE: c_int = 29;
pub const MPI_ERR_FILE: c_int = 30;
pub const MPI_ERR_IO: c_int = 35;
pub const MPI_ERR_NOT_SAME: c_int = 40;
pub const MPI_ERR_NO_SPACE: c_int = 41;
pub const MPI_ERR_NO_SUCH_FILE: c_int = 42;
pub const MPI_ERR_QUOTA: c_int = 44;
pub const MPI_ERR_READ_ONLY: c_int = 45;
pub const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 54;

// Access modes.
const MPI_MODE_APPEND: c_int = 1;
const MPI_MODE_CREATE: c_int = 2;
const MPI_MODE_DELETE_ON_CLOSE: c_int = 4;
const MPI_MODE_EXCL: c_int = 8;
const MPI_MODE_RDONLY: c_int = 16;
const MPI_MODE_RDWR: c_int = 32;
const MPI_MODE_SEQUENTIAL: c_int = 64;
const MPI_MODE_UNIQUE_OPEN: c_int = 128;
const MPI_MODE_WRONLY: c_int = 256;
const MODE_BITS: c_int = 511;

// Seek origins.
const MPI_SEEK_CUR: c_int = 401;
const MPI_SEEK_END: c_int = 402;
const MPI_SEEK_SET: c_int = 403;

/// MPI_DISPLACEMENT_CURRENT.
const MPI_DISPLACEMENT_CURRENT: i64 = -1;
/// MPI_MAX_DATAREP_STRING.
pub const MPI_MAX_DATAREP_STRING: usize = 128;

/// A split collective in progress on a file (MPI-4.1 §14.4.5: one at a time per file).
pub(crate) struct Split {
    /// Which kind (`read_all`, `write_at_all`, ...), which the end call must match.
    pub what: &'static str,
    /// The buffer the begin call named, which the end call must name too.
    pub buf: usize,
    pub req: weft::io::IoRequest<'static>,
    pub staged: crate::file_data::Staged,
}

/// A file's entry: the weft file and its C-side companions.
pub struct FileEntry {
    /// Boxed: it stays in place when the table grows (see [`waiting_file`]).
    pub(crate) file: Box<File>,
    /// The communicator it was opened on (for MPI_File_get_group).
    pub(crate) group: Vec<u32>,
    pub(crate) errhandler: Handle,
    /// The hints the program gave (open, set_view, set_info), in order, last value wins.
    pub(crate) hints: Vec<(String, String)>,
    /// The view's types as the program gave them (derived ones duplicated, so they
    /// outlive the program's handles) and its data representation.
    pub(crate) etype: Handle,
    pub(crate) filetype: Handle,
    pub(crate) rep: Rep,
    pub(crate) split: Option<Split>,
}

/// The process's files, kept in [`State`].
pub struct Files {
    pub(crate) table: Table<FileEntry>,
    /// The handler of MPI_FILE_NULL: for open, delete and new files.
    pub(crate) null_errhandler: Handle,
    /// Data representations registered with MPI_Register_datarep.
    pub(crate) reps: Vec<crate::datarep::UserRep>,
}

impl Default for Files {
    fn default() -> Self {
        Files {
            table: Table::new(),
            null_errhandler: MPI_ERRORS_RETURN,
            reps: Vec::new(),
        }
    }
}

/// A weft error of a file operation as an MPI error: an operating-system failure is
/// MPI_ERR_IO here (elsewhere MPI_ERR_OTHER).
pub(crate) fn file_err(e: weft::Error) -> MpiError {
    let io = e.kind() == weft::ErrorKind::Io;
    let mut m = MpiError::from(e);
    if io {
        m.class = MPI_ERR_IO;
    }
    m
}

fn bad_file(h: Handle) -> MpiError {
    if h == MPI_FILE_NULL {
        err(MPI_ERR_FILE, "file is MPI_FILE_NULL")
    } else {
        err(
            MPI_ERR_FILE,
            format!("file handle {h:#x} is not a valid file (closed or never opened)"),
        )
    }
}

pub(crate) fn entry(s: &State, h: Handle) -> R<&FileEntry> {
    handle_index(K_FILE, h)
        .and_then(|i| s.files.table.get(i))
        .ok_or_else(|| bad_file(h))
}

pub(crate) fn entry_mut(s: &mut State, h: Handle) -> R<&mut FileEntry> {
    handle_index(K_FILE, h)
        .and_then(|i| s.files.table.get_mut(i))
        .ok_or_else(|| bad_file(h))
}

/// Reports `e` from `func` on file `fh` through the file's error handler (MPI_FILE_NULL's
/// when `fh` is not an open file) and returns the class for C.
pub(crate) fn raise_file(fh: Handle, func: &str, e: MpiError) -> c_int {
    let Some(s) = state_opt() else {
        fatal(func, 0, e)
    };
    let (h, target) = match entry(s, fh) {
        Ok(f) => (f.errhandler, fh),
        Err(_) => (s.files.null_errhandler, MPI_FILE_NULL),
    };
    let rank = s.world_rank();
    match h {
        MPI_ERRORS_RETURN => e.class,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => fatal(func, rank, e),
        user => match errhandler_fn(user) {
            Some(f) => {
                let (mut t, mut code) = (target, e.class);
                // SAFETY: the program registered `f` with MPI_File_create_errhandler, whose
                // signature this call follows (the variadic tail is empty).
                unsafe { f(&mut t, &mut code) };
                e.class
            }
            None => fatal(func, rank, e),
        },
    }
}

/// Finishes a file call: 0, or the file error handler's verdict.
pub(crate) fn finish_file(fh: Handle, func: &str, r: R<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_file(fh, func, e),
    }
}

/// The weft file of handle `fh`, and the call's context.
pub(crate) fn file_mut(s: &mut State, fh: Handle) -> R<&mut File> {
    let e = entry_mut(s, fh)?;
    if e.split.is_some() {
        // Allowed in MPI between begin and end only for non-collective calls on other
        // files; on this file only the matching end (checked there).
    }
    Ok(&mut e.file)
}

/// The weft file of handle `fh` for a collective call that waits for the other ranks by
/// [`crate::threads::steps_wait`], which lets other threads in under MPI_THREAD_MULTIPLE:
/// the file is boxed in its entry, so it stays where it is when the table changes
/// meanwhile, and it goes only with MPI_File_close, which the program may not make while
/// another call on the file is in progress (MPI-4.1 §11.6.2: the program orders the calls
/// its threads make on one file handle). Call with no other reference into the state held.
pub(crate) fn waiting_file(func: &str, fh: Handle) -> R<&'static mut File> {
    let f: *mut File = &mut *entry_mut(state(func)?, fh)?.file;
    // SAFETY: see above: the box outlives the call and no other reference to it is live.
    Ok(unsafe { &mut *f })
}

/// The access mode bits as weft's mode (checked: MPI_ERR_AMODE).
fn open_mode(amode: c_int) -> R<OpenMode> {
    if amode & !MODE_BITS != 0 {
        return Err(err(
            MPI_ERR_AMODE,
            format!("amode {amode:#x} has bits that are not MPI_MODE_* flags"),
        ));
    }
    let rw = [MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY]
        .iter()
        .filter(|&&m| amode & m != 0)
        .count();
    if rw != 1 {
        return Err(err(
            MPI_ERR_AMODE,
            format!(
                "amode {amode:#x} must hold exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR \
                 and MPI_MODE_WRONLY"
            ),
        ));
    }
    let m = OpenMode {
        read: amode & (MPI_MODE_RDONLY | MPI_MODE_RDWR) != 0,
        write: amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR) != 0,
        create: amode & MPI_MODE_CREATE != 0,
        exclusive: amode & MPI_MODE_EXCL != 0,
        delete_on_close: amode & MPI_MODE_DELETE_ON_CLOSE != 0,
        unique_open: amode & MPI_MODE_UNIQUE_OPEN != 0,
        sequential: amode & MPI_MODE_SEQUENTIAL != 0,
        append: amode & MPI_MODE_APPEND != 0,
    };
    m.check().map_err(file_err)?;
    Ok(m)
}

fn amode_of(m: OpenMode) -> c_int {
    let mut a = match (m.read, m.write) {
        (true, true) => MPI_MODE_RDWR,
        (false, true) => MPI_MODE_WRONLY,
        _ => MPI_MODE_RDONLY,
    };
    for (on, bit) in [
        (m.create, MPI_MODE_CREATE),
        (m.exclusive, MPI_MODE_EXCL),
        (m.delete_on_close, MPI_MODE_DELETE_ON_CLOSE),
        (m.unique_open, MPI_MODE_UNIQUE_OPEN),
        (m.sequential, MPI_MODE_SEQUENTIAL),
        (m.append, MPI_MODE_APPEND),
    ] {
        if on {
            a |= bit;
        }
    }
    a
}

/// A file name as the program gave it; a `prefix:` of ROMIO's file-system names
/// (`ufs:`, `nfs:`, ...) is taken off, as MPI-4.1 §14.2.1 lets implementations do.
fn file_path(name: *const c_char) -> R<PathBuf> {
    // SAFETY: a NUL-terminated string (the caller's contract).
    let n = unsafe { c_str(name, "filename")? };
    if n.is_empty() {
        return Err(err(MPI_ERR_BAD_FILE, "filename is empty"));
    }
    let n = match n.split_once(':') {
        Some((p, rest))
            if !rest.is_empty()
                && matches!(
                    p,
                    "ufs"
                        | "nfs"
                        | "lustre"
                        | "gpfs"
                        | "pvfs2"
                        | "xfs"
                        | "panfs"
                        | "daos"
                        | "testfs"
                        | "file"
                ) =>
        {
            rest.to_string()
        }
        _ => n,
    };
    Ok(PathBuf::from(n))
}

fn hints_of(info: Handle) -> R<Vec<(String, String)>> {
    if info == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    info_entries(info)
}

/// Merges `more` into `hints` (a key given again takes the new value).
fn merge(hints: &mut Vec<(String, String)>, more: &[(String, String)]) {
    for (k, v) in more {
        match hints.iter_mut().find(|(x, _)| x == k) {
            Some(e) => e.1 = v.clone(),
            None => hints.push((k.clone(), v.clone())),
        }
    }
}

/// MPI_File_open (MPI-4.1 §14.2.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_open(
    comm: Handle,
    filename: *const c_char,
    amode: c_int,
    info: Handle,
    fh: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // The open waits for the other ranks by crate::threads::steps_wait, which under
        // MPI_THREAD_MULTIPLE lets other threads in: the communicator is this call's own
        // clone, and the runtime's configuration is only read and never moves from init to
        // finalize (which no thread calls while another is inside MPI).
        let s: &'static crate::state::State = state("MPI_File_open")?;
        if fh.is_null() {
            return Err(err(MPI_ERR_ARG, "fh is NULL"));
        }
        let c = s.comm(comm)?;
        if c.inter.is_some() {
            return Err(err(
                MPI_ERR_COMM,
                "MPI_File_open takes an intracommunicator",
            ));
        }
        let wc = c.comm.clone();
        let path = file_path(filename)?;
        let mode = open_mode(amode)?;
        let hints = hints_of(info)?;
        let values = &s.weft.config().values;
        let f = File::open(
            &wc,
            &path,
            mode,
            &hints,
            values,
            &mut crate::threads::steps_wait,
        )
        .map_err(file_err)?;
        let group = wc.members().to_vec();
        let s = state("MPI_File_open")?;
        let errhandler = s.files.null_errhandler;
        let i = s.files.table.insert(FileEntry {
            file: Box::new(f),
            group,
            errhandler,
            hints,
            etype: MPI_BYTE,
            filetype: MPI_BYTE,
            rep: Rep::Native,
            split: None,
        });
        put!(fh, make_handle(K_FILE, i))
    })();
    finish_file(MPI_FILE_NULL, "MPI_File_open", r)
}

/// Frees a view type this library duplicated (for `func`).
fn drop_type(func: &str, h: Handle) {
    if predefined(h).is_none() && handle_index(K_TYPE, h).is_some() {
        let mut t = h;
        // SAFETY: `t` is a handle this library made with MPI_Type_dup.
        unsafe { crate::dtype::type_free_as(func, &mut t) };
    }
}

/// MPI_File_close (MPI-4.1 §14.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_close(fh: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    if fh.is_null() {
        return raise_file(
            MPI_FILE_NULL,
            "MPI_File_close",
            err(MPI_ERR_ARG, "fh is NULL"),
        );
    }
    // SAFETY: non-null, readable and writable by the MPI calling contract.
    let h = unsafe { *fh };
    let r = (|| {
        let s = state("MPI_File_close")?;
        if entry(s, h)?.split.is_some() {
            return Err(err(
                MPI_ERR_OTHER,
                "MPI_File_close: a split collective is still in progress on the file (call \
                 its _end first)",
            ));
        }
        let i = handle_index(K_FILE, h).ok_or_else(|| bad_file(h))?;
        let e = s.files.table.remove(i).ok_or_else(|| bad_file(h))?;
        drop_type("MPI_File_close", e.etype);
        drop_type("MPI_File_close", e.filetype);
        // SAFETY: as above.
        unsafe { *fh = MPI_FILE_NULL };
        // The entry left the table above: the file is this call's alone while the barriers
        // wait (crate::threads::steps_wait lets other threads in under
        // MPI_THREAD_MULTIPLE).
        let file = *e.file;
        file.close(&mut crate::threads::steps_wait)
            .map_err(file_err)
    })();
    // The handle is gone: errors go to MPI_FILE_NULL's handler.
    finish_file(MPI_FILE_NULL, "MPI_File_close", r)
}

/// MPI_File_delete (MPI-4.1 §14.2.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_delete(filename: *const c_char, info: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        state("MPI_File_delete")?;
        hints_of(info)?;
        let p = file_path(filename)?;
        weft::io::delete(&p).map_err(file_err)
    })();
    finish_file(MPI_FILE_NULL, "MPI_File_delete", r)
}

fn offset_arg(v: i64, what: &str) -> R<u64> {
    u64::try_from(v).map_err(|_| err(MPI_ERR_ARG, format!("{what} {v} is negative")))
}

/// MPI_File_set_size (MPI-4.1 §14.2.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_size(fh: Handle, size: i64) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let n = offset_arg(size, "size")?;
        waiting_file("MPI_File_set_size", fh)?
            .set_size(n, &mut crate::threads::steps_wait)
            .map_err(file_err)
    })();
    finish_file(fh, "MPI_File_set_size", r)
}

/// MPI_File_preallocate (MPI-4.1 §14.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_preallocate(fh: Handle, size: i64) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let n = offset_arg(size, "size")?;
        waiting_file("MPI_File_preallocate", fh)?
            .preallocate(n, &mut crate::threads::steps_wait)
            .map_err(file_err)
    })();
    finish_file(fh, "MPI_File_preallocate", r)
}

/// MPI_File_get_size (MPI-4.1 §14.2.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_size(fh: Handle, size: *mut i64) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_size")?;
        let n = entry(s, fh)?.file.size().map_err(file_err)?;
        put!(size, n as i64)
    })();
    finish_file(fh, "MPI_File_get_size", r)
}

/// MPI_File_get_group (MPI-4.1 §14.2.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_group(fh: Handle, group: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_group")?;
        let g = entry(s, fh)?.group.clone();
        let h = s.add_group(g);
        put!(group, h)
    })();
    finish_file(fh, "MPI_File_get_group", r)
}

/// MPI_File_get_amode (MPI-4.1 §14.2.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_amode(fh: Handle, amode: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_amode")?;
        put!(amode, amode_of(entry(s, fh)?.file.mode()))
    })();
    finish_file(fh, "MPI_File_get_amode", r)
}

/// MPI_File_set_info (MPI-4.1 §14.2.8): hints for the file from now on.
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_info(fh: Handle, info: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_set_info")?;
        let more = hints_of(info)?;
        let e = entry_mut(s, fh)?;
        e.file.apply_hints(&more);
        merge(&mut e.hints, &more);
        Ok(())
    })();
    finish_file(fh, "MPI_File_set_info", r)
}

/// MPI_File_get_info (MPI-4.1 §14.2.8): the hints in use (weft's settings, under the
/// reserved and ROMIO key names) and the other keys the program gave.
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_info(fh: Handle, info_used: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_info")?;
        let e = entry(s, fh)?;
        let mut kv = e.hints.clone();
        merge(&mut kv, &e.file.settings().as_hints());
        merge(
            &mut kv,
            &[(
                "filename".into(),
                e.file.path().to_string_lossy().into_owned(),
            )],
        );
        put!(info_used, info_insert(kv))
    })();
    finish_file(fh, "MPI_File_get_info", r)
}

/// A view type: predefined as it is, a derived one committed and duplicated.
fn keep_type(func: &str, dt: Handle, what: &str) -> R<Handle> {
    if predefined(dt).is_some() {
        return Ok(dt);
    }
    let s = state("MPI_File_set_view")?;
    match handle_index(K_TYPE, dt).and_then(|i| s.types.get(i)) {
        Some(d) if !d.committed => Err(err(
            MPI_ERR_TYPE,
            format!("{what} {dt:#x} was not committed (MPI_Type_commit)"),
        )),
        Some(_) => {
            let mut out = MPI_DATATYPE_NULL;
            // SAFETY: `out` is writable; `dt` is a valid datatype.
            let rc = unsafe { crate::dtype::type_dup_as(func, dt, &mut out) };
            if rc != MPI_SUCCESS {
                return Err(err(rc, format!("duplicating the {what} failed")));
            }
            Ok(out)
        }
        None => Err(err(
            MPI_ERR_TYPE,
            format!("{what} {dt:#x} is not a valid datatype"),
        )),
    }
}

/// MPI_File_set_view (MPI-4.1 §14.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_view(
    fh: Handle,
    disp: i64,
    etype: Handle,
    filetype: Handle,
    datarep: *const c_char,
    info: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_set_view")?;
        if entry(s, fh)?.split.is_some() {
            return Err(err(
                MPI_ERR_OTHER,
                "MPI_File_set_view: a split collective is in progress on the file",
            ));
        }
        // SAFETY: a NUL-terminated string (the caller's contract).
        let rep_name = unsafe { c_str(datarep, "datarep")? };
        let rep = crate::datarep::by_name(s, &rep_name)?;
        let disp = match disp {
            MPI_DISPLACEMENT_CURRENT => Disp::Current,
            d if d < 0 => {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("disp {d} is negative (and not MPI_DISPLACEMENT_CURRENT)"),
                ))
            }
            d => Disp::Bytes(d as u64),
        };
        let more = hints_of(info)?;
        let e_map = crate::datarep::file_map(s, rep, etype)?;
        let f_map = crate::datarep::file_map(s, rep, filetype)?;
        let (ek, fk) = (
            keep_type("MPI_File_set_view", etype, "etype")?,
            keep_type("MPI_File_set_view", filetype, "filetype")?,
        );
        let s = state("MPI_File_set_view")?;
        let e = entry_mut(s, fh)?;
        e.file.apply_hints(&more);
        merge(&mut e.hints, &more);
        let set = waiting_file("MPI_File_set_view", fh)?.set_view(
            disp,
            e_map,
            f_map,
            &rep_name,
            &mut crate::threads::steps_wait,
        );
        if let Err(x) = set {
            drop_type("MPI_File_set_view", ek);
            drop_type("MPI_File_set_view", fk);
            return Err(file_err(x));
        }
        let e = entry_mut(state("MPI_File_set_view")?, fh)?;
        let (old_e, old_f) = (e.etype, e.filetype);
        e.etype = ek;
        e.filetype = fk;
        e.rep = rep;
        drop_type("MPI_File_set_view", old_e);
        drop_type("MPI_File_set_view", old_f);
        Ok(())
    })();
    finish_file(fh, "MPI_File_set_view", r)
}

/// MPI_File_get_view (MPI-4.1 §14.3): derived types come back as new handles the caller
/// frees.
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_view(
    fh: Handle,
    disp: *mut i64,
    etype: *mut Handle,
    filetype: *mut Handle,
    datarep: *mut c_char,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_view")?;
        let e = entry(s, fh)?;
        let (d, et, ft) = (e.file.view().disp(), e.etype, e.filetype);
        let name = e.file.datarep().to_string();
        put!(disp, d as i64)?;
        put!(etype, keep_type("MPI_File_get_view", et, "etype")?)?;
        put!(filetype, keep_type("MPI_File_get_view", ft, "filetype")?)?;
        if datarep.is_null() {
            return Err(err(MPI_ERR_ARG, "datarep is NULL"));
        }
        // SAFETY: the caller's buffer holds MPI_MAX_DATAREP_STRING bytes.
        unsafe {
            crate::error::write_c_string(
                &name,
                datarep,
                MPI_MAX_DATAREP_STRING,
                std::ptr::null_mut(),
            )
        };
        Ok(())
    })();
    finish_file(fh, "MPI_File_get_view", r)
}

/// The extent of `dt` in the file's representation.
fn type_extent(fh: Handle, dt: Handle) -> R<i64> {
    let s = state("MPI_File_get_type_extent")?;
    let rep = entry(s, fh)?.rep;
    match rep {
        Rep::Native | Rep::Internal => Ok(map_of(dt)?.extent()),
        _ => Ok(crate::datarep::file_map(s, rep, dt)?.extent()),
    }
}

/// MPI_File_get_type_extent (MPI-4.1 §14.5.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent(
    fh: Handle,
    dt: Handle,
    extent: *mut isize,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = type_extent(fh, dt).and_then(|x| put!(extent, x as isize));
    finish_file(fh, "MPI_File_get_type_extent", r)
}

/// MPI_File_get_type_extent_c (MPI-4.1 §14.5.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent_c(
    fh: Handle,
    dt: Handle,
    extent: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = type_extent(fh, dt).and_then(|x| put!(extent, x));
    finish_file(fh, "MPI_File_get_type_extent_c", r)
}

/// MPI_File_set_atomicity (MPI-4.1 §14.6.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_atomicity(fh: Handle, flag: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        waiting_file("MPI_File_set_atomicity", fh)?
            .set_atomicity(flag != 0, &mut crate::threads::steps_wait)
            .map_err(file_err)
    })();
    finish_file(fh, "MPI_File_set_atomicity", r)
}

/// MPI_File_get_atomicity (MPI-4.1 §14.6.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_atomicity(fh: Handle, flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_atomicity")?;
        put!(flag, entry(s, fh)?.file.atomicity() as c_int)
    })();
    finish_file(fh, "MPI_File_get_atomicity", r)
}

/// MPI_File_sync (MPI-4.1 §14.6.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_sync(fh: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        waiting_file("MPI_File_sync", fh)?
            .sync(&mut crate::threads::steps_wait)
            .map_err(file_err)
    })();
    finish_file(fh, "MPI_File_sync", r)
}

fn whence_of(w: c_int) -> R<Whence> {
    match w {
        MPI_SEEK_SET => Ok(Whence::Set),
        MPI_SEEK_CUR => Ok(Whence::Current),
        MPI_SEEK_END => Ok(Whence::End),
        _ => Err(err(
            MPI_ERR_ARG,
            format!("whence {w} is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END"),
        )),
    }
}

/// MPI_File_seek (MPI-4.1 §14.4.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_seek(fh: Handle, offset: i64, whence: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let w = whence_of(whence)?;
        let s = state("MPI_File_seek")?;
        file_mut(s, fh)?.seek(offset, w).map_err(file_err)
    })();
    finish_file(fh, "MPI_File_seek", r)
}

/// MPI_File_get_position (MPI-4.1 §14.4.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_position(fh: Handle, offset: *mut i64) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_position")?;
        put!(
            offset,
            entry(s, fh)?.file.position().map_err(file_err)? as i64
        )
    })();
    finish_file(fh, "MPI_File_get_position", r)
}

/// MPI_File_get_byte_offset (MPI-4.1 §14.4.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_byte_offset(
    fh: Handle,
    offset: i64,
    disp: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let o = offset_arg(offset, "offset")?;
        let s = state("MPI_File_get_byte_offset")?;
        put!(
            disp,
            entry(s, fh)?.file.byte_offset(o).map_err(file_err)? as i64
        )
    })();
    finish_file(fh, "MPI_File_get_byte_offset", r)
}

/// MPI_File_seek_shared (MPI-4.1 §14.4.4, collective).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_seek_shared(fh: Handle, offset: i64, whence: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let w = whence_of(whence)?;
        waiting_file("MPI_File_seek_shared", fh)?
            .seek_shared(offset, w, &mut crate::threads::steps_wait)
            .map_err(file_err)
    })();
    finish_file(fh, "MPI_File_seek_shared", r)
}

/// MPI_File_get_position_shared (MPI-4.1 §14.4.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_position_shared(fh: Handle, offset: *mut i64) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_position_shared")?;
        let p = file_mut(s, fh)?.position_shared().map_err(file_err)?;
        put!(offset, p as i64)
    })();
    finish_file(fh, "MPI_File_get_position_shared", r)
}

/// MPI_File_create_errhandler (MPI-4.1 §9.3.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_create_errhandler(
    f: Option<crate::state::ErrFn>,
    errhandler: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract (the same function type as communicators').
    unsafe { crate::env::comm_create_errhandler_as("MPI_File_create_errhandler", f, errhandler) }
}

/// MPI_File_set_errhandler (MPI-4.1 §9.3.4): MPI_FILE_NULL sets the handler of open,
/// delete and newly opened files.
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_errhandler(fh: Handle, errhandler: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_set_errhandler")?;
        valid_errhandler(s, errhandler)?;
        if fh == MPI_FILE_NULL {
            s.files.null_errhandler = errhandler;
            return Ok(());
        }
        entry_mut(s, fh)?.errhandler = errhandler;
        Ok(())
    })();
    finish_file(fh, "MPI_File_set_errhandler", r)
}

/// MPI_File_get_errhandler (MPI-4.1 §9.3.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_errhandler(fh: Handle, errhandler: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_File_get_errhandler")?;
        let h = if fh == MPI_FILE_NULL {
            s.files.null_errhandler
        } else {
            entry(s, fh)?.errhandler
        };
        put!(errhandler, h)
    })();
    finish_file(fh, "MPI_File_get_errhandler", r)
}

/// MPI_File_call_errhandler (MPI-4.1 §9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_File_call_errhandler(fh: Handle, errorcode: c_int) -> c_int {
    let _entered = crate::threads::enter();
    if let Err(e) = state("MPI_File_call_errhandler").and_then(|s| {
        if fh == MPI_FILE_NULL {
            Ok(())
        } else {
            entry(s, fh).map(|_| ())
        }
    }) {
        return raise_file(MPI_FILE_NULL, "MPI_File_call_errhandler", e);
    }
    raise_file(
        fh,
        "MPI_File_call_errhandler",
        err(
            errorcode,
            format!("MPI_File_call_errhandler was called with error code {errorcode}"),
        ),
    );
    MPI_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_modes() {
        let m = open_mode(MPI_MODE_RDWR | MPI_MODE_CREATE).unwrap();
        assert!(m.read && m.write && m.create);
        assert_eq!(amode_of(m), MPI_MODE_RDWR | MPI_MODE_CREATE);
        for bad in [
            0,
            MPI_MODE_RDONLY | MPI_MODE_WRONLY,
            MPI_MODE_RDONLY | MPI_MODE_CREATE,
            MPI_MODE_RDONLY | MPI_MODE_EXCL,
            MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL,
            MPI_MODE_RDWR | 4096,
        ] {
            assert_eq!(open_mode(bad).unwrap_err().class, MPI_ERR_AMODE, "{bad:#x}");
        }
        let w = open_mode(MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_DELETE_ON_CLOSE).unwrap();
        assert_eq!(
            amode_of(w),
            MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_DELETE_ON_CLOSE
        );
    }

    #[test]
    fn file_system_prefixes_are_taken_off() {
        let p = |s: &str| file_path(std::ffi::CString::new(s).unwrap().as_ptr()).unwrap();
        assert_eq!(p("ufs:/tmp/x"), PathBuf::from("/tmp/x"));
        assert_eq!(p("nfs:data"), PathBuf::from("data"));
        assert_eq!(p("a:b"), PathBuf::from("a:b"));
    }
}
