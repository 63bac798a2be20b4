//! MPI-IO data access (MPI-4.1 §14.4): reads and writes at explicit offsets, at the
//! individual and the shared file pointer, independent and collective, blocking,
//! nonblocking (MPI_File_i*: generalized requests, so every completion call works on them)
//! and split collective (`_begin`/`_end`), with their large-count (`_c`) forms.
//!
//! Each call stages the user's data as the file's bytes (`Staged`: the buffer itself for
//! a contiguous type in a native view, else packed, or converted for "external32" and
//! registered representations), hands them to `weft::io`, and for a read delivers them to
//! the user's buffer once they are in. Statuses count bytes of the user's datatype
//! (MPI_Get_count); a read that meets the end of the file counts what it read.

use crate::consts::*;
use crate::datarep::{converts, file_bytes, from_file, to_file, Rep};
use crate::error::{err, MpiError, R};
use crate::file::{entry, entry_mut, file_err, finish_file, Split, MPI_ERR_IO};
use crate::p2p::{empty_status, store, MpiStatus};
use crate::state::{state, State};
use std::os::raw::{c_int, c_void};
use weft::io::IoRequest;

/// Which position an access starts at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ptr {
    /// An explicit offset, in etypes.
    At(i64),
    /// The individual file pointer.
    Own,
    /// The shared file pointer.
    Shared,
    /// The shared file pointer, ranks in order (collective).
    Ordered,
}

/// How the call completes.
#[derive(Clone, Copy)]
enum Mode {
    /// Blocking, with this status.
    Block(*mut MpiStatus),
    /// Nonblocking, with this request.
    Start(*mut Handle),
    /// A split collective's begin.
    Begin,
}

/// What a read owes the user's buffer once the file's bytes are in.
enum Deliver {
    Nothing,
    Unpack(crate::stage::Incoming),
    Convert {
        rep: Rep,
        buf: usize,
        count: u64,
        dt: Handle,
    },
}

/// The file's bytes of one access and what to do with them after.
pub(crate) struct Staged {
    ptr: *mut u8,
    bytes: usize,
    /// The memory `ptr` points into when it is not the user's buffer.
    keep: Option<Vec<u8>>,
    deliver: Deliver,
    /// Bytes of one item in memory (packed) and in the file.
    native_item: u64,
    file_item: u64,
    write: bool,
}

impl Staged {
    /// `count` items of `dt` at `buf` for writing (`write`) or reading in representation
    /// `rep`.
    fn new(
        s: &State,
        rep: Rep,
        write: bool,
        buf: *const c_void,
        count: i64,
        dt: Handle,
    ) -> R<Staged> {
        if count < 0 {
            return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
        }
        let n = count as u64;
        // Checks the datatype (valid, committed) first.
        crate::dtype::layout(dt)?;
        let native_item = crate::dtype::map_of(dt)?.size_bytes();
        let file_item = file_bytes(s, rep, 1, dt)?;
        let mut st = Staged {
            ptr: std::ptr::null_mut(),
            bytes: 0,
            keep: None,
            deliver: Deliver::Nothing,
            native_item,
            file_item,
            write,
        };
        if converts(s, rep, write) {
            if write {
                let v = to_file(s, rep, buf, n, dt)?;
                st.bytes = v.len();
                st.keep = Some(v);
            } else {
                st.bytes = file_bytes(s, rep, n, dt)? as usize;
                st.keep = Some(vec![0u8; st.bytes]);
                st.deliver = Deliver::Convert {
                    rep,
                    buf: buf as usize,
                    count: n,
                    dt,
                };
            }
            st.ptr = st.keep.as_mut().expect("staged").as_mut_ptr();
        } else if write {
            let o = crate::stage::outgoing(buf, count, dt)?;
            st.ptr = o.ptr as *mut u8;
            st.bytes = o.bytes;
            st.keep = o.keep;
        } else {
            let i = crate::stage::incoming(buf as *mut c_void, count, dt, false)?;
            st.ptr = i.ptr;
            st.bytes = i.bytes;
            if i.unpack.is_some() {
                st.deliver = Deliver::Unpack(i);
            }
        }
        if st.bytes > 0 && st.ptr.is_null() {
            return Err(err(
                MPI_ERR_BUFFER,
                format!("buffer is NULL for {count} items"),
            ));
        }
        Ok(st)
    }

    /// The file's bytes for a write.
    fn data(&self) -> &'static [u8] {
        if self.bytes == 0 {
            return &[];
        }
        // SAFETY: `ptr` is the user's buffer (valid until the access completes, by the
        // MPI calling contract) or `keep`, which lives as long as `self`, and the access
        // is finished before either goes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// The file's bytes for a read.
    fn data_mut(&mut self) -> &'static mut [u8] {
        if self.bytes == 0 {
            return &mut [];
        }
        // SAFETY: as in `data`; only the access writes them meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }

    /// Delivers what a read brought (`moved` file bytes); the bytes of the user's
    /// datatype the status counts.
    fn finish(self, moved: u64) -> R<u64> {
        let Staged {
            keep,
            deliver,
            native_item,
            file_item,
            write,
            ..
        } = self;
        if !write {
            match deliver {
                Deliver::Nothing => {}
                Deliver::Unpack(i) => i.finish_received(moved as usize)?,
                Deliver::Convert {
                    rep,
                    buf,
                    count,
                    dt,
                } => {
                    let s = state("file read")?;
                    let mut k = keep.unwrap_or_default();
                    from_file(s, rep, &mut k, buf as *mut c_void, count, dt)?;
                }
            }
        }
        Ok(if file_item == native_item || file_item == 0 {
            moved
        } else {
            let (items, rest) = (moved / file_item, moved % file_item);
            items * native_item + rest.min(native_item)
        })
    }
}

fn status_of(status: *mut MpiStatus, bytes: u64) {
    let mut st = empty_status();
    st.set_bytes(bytes);
    store(status, st);
}

/// The error of an access that does not cover whole etypes.
fn check_etypes(bytes: usize, etype: u64, func: &str) -> R<()> {
    if etype > 0 && !(bytes as u64).is_multiple_of(etype) {
        return Err(err(
            MPI_ERR_IO,
            format!(
                "{func}: {bytes} bytes are not a whole number of the view's {etype}-byte etypes"
            ),
        ));
    }
    Ok(())
}

/// A nonblocking access's state, behind its generalized request.
struct FileReq {
    req: Option<IoRequest<'static>>,
    staged: Option<Staged>,
    outcome: Option<Result<u64, MpiError>>,
}

impl FileReq {
    /// Delivers once the access is done (the first query, or the release of a request
    /// the program freed).
    fn settle(&mut self) {
        if self.outcome.is_some() {
            return;
        }
        let Some(req) = self.req.take() else {
            return;
        };
        let moved = req.wait().map_err(file_err);
        let staged = self.staged.take();
        self.outcome = Some(moved.and_then(|m| match staged {
            Some(st) => st.finish(m),
            None => Ok(m),
        }));
    }
}

unsafe extern "C" fn req_query(extra: *mut c_void, status: *mut MpiStatus) -> c_int {
    // SAFETY: `extra` is the FileReq this module made for the request.
    let r = unsafe { &mut *(extra as *mut FileReq) };
    r.settle();
    match r.outcome.as_ref().expect("settled") {
        Ok(n) => {
            if !status.is_null() {
                // SAFETY: the greq layer passes a valid status.
                unsafe { (*status).set_bytes(*n) };
            }
            MPI_SUCCESS
        }
        Err(e) => e.class,
    }
}

unsafe extern "C" fn req_free(extra: *mut c_void) -> c_int {
    // SAFETY: made by Box::into_raw in `start`; freed once (the greq layer's contract).
    let mut r = unsafe { Box::from_raw(extra as *mut FileReq) };
    // A request the program freed while active still delivers its data.
    if r.req.as_ref().is_some_and(|q| q.is_done()) {
        r.settle();
    }
    MPI_SUCCESS
}

unsafe extern "C" fn req_cancel(_extra: *mut c_void, _complete: c_int) -> c_int {
    // File accesses in flight are not cancelled (MPI-4.1 §3.8.4 lets cancel fail to
    // cancel): the request completes normally.
    MPI_SUCCESS
}

/// A generalized request for a started access made by `func`.
fn start_request(
    func: &'static str,
    req: IoRequest<'static>,
    staged: Staged,
    out: *mut Handle,
) -> R<()> {
    if out.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let boxed = Box::into_raw(Box::new(FileReq {
        req: Some(req),
        staged: Some(staged),
        outcome: None,
    }));
    let mut h = MPI_REQUEST_NULL;
    // SAFETY: the callbacks match the greq function types; `boxed` is theirs to free.
    let rc = unsafe {
        crate::greq::grequest_start_as(
            func,
            Some(req_query),
            Some(req_free),
            Some(req_cancel),
            boxed as *mut c_void,
            &mut h,
        )
    };
    if rc != MPI_SUCCESS {
        // SAFETY: not handed to the greq layer.
        drop(unsafe { Box::from_raw(boxed) });
        return Err(err(rc, "could not start the request"));
    }
    // SAFETY: the greq layer holds `boxed` until free_fn, which cannot run before the
    // request is complete, which the hook below marks.
    let fr = unsafe { &mut *boxed };
    fr.req
        .as_mut()
        .expect("set above")
        .on_complete(Box::new(move || {
            // Wherever the access completes, the request's completion holds the MPI lock
            // (as the exported MPI_Grequest_complete does).
            let _entered = crate::threads::enter();
            // SAFETY: `h` is this access's live generalized request.
            unsafe { crate::greq::grequest_complete_as(func, h) };
        }));
    // SAFETY: writable by the MPI calling contract (checked non-null).
    unsafe { *out = h };
    Ok(())
}

/// Erases a request's lifetime: the buffers it borrows are the user's (valid until
/// completion by the MPI calling contract) or the staged copy its request owns.
fn erase(r: IoRequest<'_>) -> IoRequest<'static> {
    // SAFETY: only the lifetime parameter changes; see above.
    unsafe { std::mem::transmute::<IoRequest<'_>, IoRequest<'static>>(r) }
}

/// One data access call.
#[allow(clippy::too_many_arguments)]
fn access(
    func: &'static str,
    fh: Handle,
    buf: *const c_void,
    count: i64,
    dt: Handle,
    write: bool,
    ptr: Ptr,
    collective: bool,
    mode: Mode,
) -> R<()> {
    let s = state(func)?;
    let e = entry(s, fh)?;
    if e.split.is_some() && (collective || matches!(mode, Mode::Begin)) {
        return Err(err(
            MPI_ERR_OTHER,
            format!(
                "{func}: a split collective is in progress on this file; finish it with its \
                 _end call first"
            ),
        ));
    }
    let rep = e.rep;
    let etype = e.file.view().etype_bytes();
    if let Ptr::At(o) = ptr {
        if o < 0 {
            return Err(err(MPI_ERR_ARG, format!("{func}: offset {o} is negative")));
        }
    }
    let mut st = Staged::new(s, rep, write, buf, count, dt)?;
    check_etypes(st.bytes, etype, func)?;
    // Found by crate::file::waiting_file: the ordered accesses wait for the other ranks
    // (crate::threads::steps_wait), and the collective ones under MPI_THREAD_MULTIPLE.
    let f = crate::file::waiting_file(func, fh)?;
    let at = |o: i64| o as u64;
    match mode {
        Mode::Block(status)
            if collective && crate::threads::multiple() && matches!(ptr, Ptr::At(_) | Ptr::Own) =>
        {
            // Under MPI_THREAD_MULTIPLE a blocking collective access starts its nonblocking
            // twin (the same exchanges) and polls it with the lock given back
            // (crate::threads::wait_released): the request and the staged bytes are this
            // call's own, and the file is found again by its handle afterwards.
            // SAFETY: the request is finished (or dropped, which waits) before `st`, whose
            // bytes it reads or writes, goes.
            let mut req = unsafe {
                match (ptr, write) {
                    (Ptr::At(o), false) => f.iread_at_all(at(o), st.data_mut()),
                    (Ptr::At(o), true) => f.iwrite_at_all(at(o), st.data()),
                    (_, false) => f.iread_all(st.data_mut()),
                    (_, true) => f.iwrite_all(st.data()),
                }
            }
            .map_err(file_err)?;
            let mut moved = None;
            crate::threads::wait_released(|| -> R<bool> {
                moved = req.test().map_err(file_err)?;
                Ok(moved.is_some())
            })?;
            let moved = moved.expect("the wait returned once the access finished");
            let asked = st.bytes as u64;
            if matches!(ptr, Ptr::Own) && !write && moved < asked {
                // As MPI_File_read_all: the pointer moves by what was read.
                entry_mut(state(func)?, fh)?.file.unread(asked - moved);
            }
            let n = st.finish(moved)?;
            status_of(status, n);
            Ok(())
        }
        Mode::Block(status) => {
            let moved = match (ptr, collective, write) {
                (Ptr::At(o), false, false) => f.read_at(at(o), st.data_mut()),
                (Ptr::At(o), false, true) => f.write_at(at(o), st.data()),
                (Ptr::At(o), true, false) => f.read_at_all(at(o), st.data_mut()),
                (Ptr::At(o), true, true) => f.write_at_all(at(o), st.data()),
                (Ptr::Own, false, false) => f.read(st.data_mut()),
                (Ptr::Own, false, true) => f.write(st.data()),
                (Ptr::Own, true, false) => f.read_all(st.data_mut()),
                (Ptr::Own, true, true) => f.write_all(st.data()),
                (Ptr::Shared, _, false) => f.read_shared(st.data_mut()),
                (Ptr::Shared, _, true) => f.write_shared(st.data()),
                (Ptr::Ordered, _, false) => {
                    f.read_ordered(st.data_mut(), &mut crate::threads::steps_wait)
                }
                (Ptr::Ordered, _, true) => {
                    f.write_ordered(st.data(), &mut crate::threads::steps_wait)
                }
            }
            .map_err(file_err)?;
            let n = st.finish(moved)?;
            status_of(status, n);
            Ok(())
        }
        Mode::Start(_) | Mode::Begin => {
            // SAFETY: the request lives in a generalized request or the file's split slot
            // with the staged bytes it points into, and is finished before they go.
            let r = unsafe {
                match (ptr, collective, write) {
                    (Ptr::At(o), false, false) => f.iread_at(at(o), st.data_mut()),
                    (Ptr::At(o), false, true) => f.iwrite_at(at(o), st.data()),
                    (Ptr::At(o), true, false) => f.iread_at_all(at(o), st.data_mut()),
                    (Ptr::At(o), true, true) => f.iwrite_at_all(at(o), st.data()),
                    (Ptr::Own, false, false) => f.iread(st.data_mut()),
                    (Ptr::Own, false, true) => f.iwrite(st.data()),
                    (Ptr::Own, true, false) => f.iread_all(st.data_mut()),
                    (Ptr::Own, true, true) => f.iwrite_all(st.data()),
                    (Ptr::Shared, _, false) => f.iread_shared(st.data_mut()),
                    (Ptr::Shared, _, true) => f.iwrite_shared(st.data()),
                    (Ptr::Ordered, _, false) => {
                        f.iread_ordered(st.data_mut(), &mut crate::threads::steps_wait)
                    }
                    (Ptr::Ordered, _, true) => {
                        f.iwrite_ordered(st.data(), &mut crate::threads::steps_wait)
                    }
                }
            }
            .map_err(file_err)?;
            let r = erase(r);
            match mode {
                Mode::Start(out) => start_request(func, r, st, out),
                _ => {
                    entry_mut(state(func)?, fh)?.split = Some(Split {
                        what: func,
                        buf: buf as usize,
                        req: r,
                        staged: st,
                    });
                    Ok(())
                }
            }
        }
    }
}

/// A split collective's end: waits for the access its begin started.
fn end(
    func: &'static str,
    begin: &'static str,
    fh: Handle,
    buf: *const c_void,
    status: *mut MpiStatus,
) -> R<()> {
    let s = state(func)?;
    let e = entry_mut(s, fh)?;
    match &e.split {
        None => {
            return Err(err(
                MPI_ERR_OTHER,
                format!("{func}: no split collective was begun on this file"),
            ))
        }
        Some(sp) if sp.what != begin => {
            return Err(err(
                MPI_ERR_OTHER,
                format!("{func}: the split collective in progress is {}", sp.what),
            ))
        }
        Some(sp) if sp.buf != buf as usize => {
            return Err(err(
                MPI_ERR_BUFFER,
                format!("{func}: buf differs from the one given to {begin}"),
            ))
        }
        Some(_) => {}
    }
    let sp = e.split.take().expect("checked");
    let moved = sp.req.wait().map_err(file_err)?;
    let n = sp.staged.finish(moved)?;
    status_of(status, n);
    Ok(())
}

/// Generates the blocking, nonblocking and split forms of one kind of access, each in an
/// `int` and an MPI_Count (`_c`) count form.
macro_rules! blocking {
    ($($name:ident, $name_c:ident, $write:expr, $coll:expr, at;)*) => {$(
        /// A blocking file access at an explicit offset (MPI-4.1 §14.4.2).
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, dt: Handle, status: *mut MpiStatus) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name), fh, buf, count as i64, dt, $write, Ptr::At(offset), $coll, Mode::Block(status));
            finish_file(fh, stringify!($name), r)
        }
        /// The large-count form.
        #[no_mangle]
        pub unsafe extern "C" fn $name_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, dt: Handle, status: *mut MpiStatus) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name_c), fh, buf, count, dt, $write, Ptr::At(offset), $coll, Mode::Block(status));
            finish_file(fh, stringify!($name_c), r)
        }
    )*};
}

macro_rules! blocking_ptr {
    ($($name:ident, $name_c:ident, $write:expr, $coll:expr, $ptr:expr;)*) => {$(
        /// A blocking file access at a file pointer (MPI-4.1 §14.4.3-4).
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: Handle, buf: *mut c_void, count: c_int, dt: Handle, status: *mut MpiStatus) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name), fh, buf, count as i64, dt, $write, $ptr, $coll, Mode::Block(status));
            finish_file(fh, stringify!($name), r)
        }
        /// The large-count form.
        #[no_mangle]
        pub unsafe extern "C" fn $name_c(fh: Handle, buf: *mut c_void, count: i64, dt: Handle, status: *mut MpiStatus) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name_c), fh, buf, count, dt, $write, $ptr, $coll, Mode::Block(status));
            finish_file(fh, stringify!($name_c), r)
        }
    )*};
}

macro_rules! nonblocking {
    ($($name:ident, $name_c:ident, $write:expr, $coll:expr, at;)*) => {$(
        /// A nonblocking file access at an explicit offset (MPI-4.1 §14.4.2).
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, dt: Handle, request: *mut Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name), fh, buf, count as i64, dt, $write, Ptr::At(offset), $coll, Mode::Start(request));
            finish_file(fh, stringify!($name), r)
        }
        /// The large-count form.
        #[no_mangle]
        pub unsafe extern "C" fn $name_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, dt: Handle, request: *mut Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name_c), fh, buf, count, dt, $write, Ptr::At(offset), $coll, Mode::Start(request));
            finish_file(fh, stringify!($name_c), r)
        }
    )*};
}

macro_rules! nonblocking_ptr {
    ($($name:ident, $name_c:ident, $write:expr, $coll:expr, $ptr:expr;)*) => {$(
        /// A nonblocking file access at a file pointer (MPI-4.1 §14.4.3-4).
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: Handle, buf: *mut c_void, count: c_int, dt: Handle, request: *mut Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name), fh, buf, count as i64, dt, $write, $ptr, $coll, Mode::Start(request));
            finish_file(fh, stringify!($name), r)
        }
        /// The large-count form.
        #[no_mangle]
        pub unsafe extern "C" fn $name_c(fh: Handle, buf: *mut c_void, count: i64, dt: Handle, request: *mut Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($name_c), fh, buf, count, dt, $write, $ptr, $coll, Mode::Start(request));
            finish_file(fh, stringify!($name_c), r)
        }
    )*};
}

macro_rules! split_at {
    ($($begin:ident, $begin_c:ident, $end:ident, $write:expr;)*) => {$(
        /// A split collective's begin at an explicit offset (MPI-4.1 §14.4.5).
        #[no_mangle]
        pub unsafe extern "C" fn $begin(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, dt: Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($begin), fh, buf, count as i64, dt, $write, Ptr::At(offset), true, Mode::Begin);
            finish_file(fh, stringify!($begin), r)
        }
        /// The large-count form (its end is the same call).
        #[no_mangle]
        pub unsafe extern "C" fn $begin_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, dt: Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($begin), fh, buf, count, dt, $write, Ptr::At(offset), true, Mode::Begin);
            finish_file(fh, stringify!($begin_c), r)
        }
        /// A split collective's end (MPI-4.1 §14.4.5).
        #[no_mangle]
        pub unsafe extern "C" fn $end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int {
            let _entered = crate::threads::enter();
            let r = end(stringify!($end), stringify!($begin), fh, buf, status);
            finish_file(fh, stringify!($end), r)
        }
    )*};
}

macro_rules! split_ptr {
    ($($begin:ident, $begin_c:ident, $end:ident, $write:expr, $ptr:expr;)*) => {$(
        /// A split collective's begin at a file pointer (MPI-4.1 §14.4.5).
        #[no_mangle]
        pub unsafe extern "C" fn $begin(fh: Handle, buf: *mut c_void, count: c_int, dt: Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($begin), fh, buf, count as i64, dt, $write, $ptr, true, Mode::Begin);
            finish_file(fh, stringify!($begin), r)
        }
        /// The large-count form (its end is the same call).
        #[no_mangle]
        pub unsafe extern "C" fn $begin_c(fh: Handle, buf: *mut c_void, count: i64, dt: Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = access(stringify!($begin), fh, buf, count, dt, $write, $ptr, true, Mode::Begin);
            finish_file(fh, stringify!($begin_c), r)
        }
        /// A split collective's end (MPI-4.1 §14.4.5).
        #[no_mangle]
        pub unsafe extern "C" fn $end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int {
            let _entered = crate::threads::enter();
            let r = end(stringify!($end), stringify!($begin), fh, buf, status);
            finish_file(fh, stringify!($end), r)
        }
    )*};
}

blocking! {
    MPI_File_read_at, MPI_File_read_at_c, false, false, at;
    MPI_File_write_at, MPI_File_write_at_c, true, false, at;
    MPI_File_read_at_all, MPI_File_read_at_all_c, false, true, at;
    MPI_File_write_at_all, MPI_File_write_at_all_c, true, true, at;
}

blocking_ptr! {
    MPI_File_read, MPI_File_read_c, false, false, Ptr::Own;
    MPI_File_write, MPI_File_write_c, true, false, Ptr::Own;
    MPI_File_read_all, MPI_File_read_all_c, false, true, Ptr::Own;
    MPI_File_write_all, MPI_File_write_all_c, true, true, Ptr::Own;
    MPI_File_read_shared, MPI_File_read_shared_c, false, false, Ptr::Shared;
    MPI_File_write_shared, MPI_File_write_shared_c, true, false, Ptr::Shared;
    MPI_File_read_ordered, MPI_File_read_ordered_c, false, true, Ptr::Ordered;
    MPI_File_write_ordered, MPI_File_write_ordered_c, true, true, Ptr::Ordered;
}

nonblocking! {
    MPI_File_iread_at, MPI_File_iread_at_c, false, false, at;
    MPI_File_iwrite_at, MPI_File_iwrite_at_c, true, false, at;
    MPI_File_iread_at_all, MPI_File_iread_at_all_c, false, true, at;
    MPI_File_iwrite_at_all, MPI_File_iwrite_at_all_c, true, true, at;
}

nonblocking_ptr! {
    MPI_File_iread, MPI_File_iread_c, false, false, Ptr::Own;
    MPI_File_iwrite, MPI_File_iwrite_c, true, false, Ptr::Own;
    MPI_File_iread_all, MPI_File_iread_all_c, false, true, Ptr::Own;
    MPI_File_iwrite_all, MPI_File_iwrite_all_c, true, true, Ptr::Own;
    MPI_File_iread_shared, MPI_File_iread_shared_c, false, false, Ptr::Shared;
    MPI_File_iwrite_shared, MPI_File_iwrite_shared_c, true, false, Ptr::Shared;
}

split_at! {
    MPI_File_read_at_all_begin, MPI_File_read_at_all_begin_c, MPI_File_read_at_all_end, false;
    MPI_File_write_at_all_begin, MPI_File_write_at_all_begin_c, MPI_File_write_at_all_end, true;
}

split_ptr! {
    MPI_File_read_all_begin, MPI_File_read_all_begin_c, MPI_File_read_all_end, false, Ptr::Own;
    MPI_File_write_all_begin, MPI_File_write_all_begin_c, MPI_File_write_all_end, true, Ptr::Own;
    MPI_File_read_ordered_begin, MPI_File_read_ordered_begin_c, MPI_File_read_ordered_end, false, Ptr::Ordered;
    MPI_File_write_ordered_begin, MPI_File_write_ordered_begin_c, MPI_File_write_ordered_end, true, Ptr::Ordered;
}
