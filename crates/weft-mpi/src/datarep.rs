//! Data representations of files (MPI-4.1 §14.5): "native" and "internal" (the memory's
//! bytes as they are: weft's internal representation is native), "external32" (big-endian,
//! the standard's sizes: `external.rs` converts) and representations the program registers
//! with MPI_Register_datarep (its conversion functions and file extents). A view in a
//! representation other than native has its etype and filetype rebuilt with the file's
//! element sizes (`contents::rebuild`), so offsets and strides count file bytes; data is
//! converted between the user's buffer and the file's bytes around each access.

use crate::consts::*;
use crate::dtype::{map_of, predefined, predefined_name};
use crate::env::c_str;
use crate::error::{err, R};
use crate::file::{MPI_ERR_CONVERSION, MPI_ERR_DUP_DATAREP, MPI_ERR_UNSUPPORTED_DATAREP};
use crate::state::{state, State};
use std::os::raw::{c_char, c_int, c_void};
use weft::dtype::{BasicKind, TypeMap};

/// A file's data representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rep {
    Native,
    Internal,
    External32,
    /// Index of a registered representation.
    User(usize),
}

/// MPI_Datarep_conversion_function (count as `int`).
pub type ConvFn =
    unsafe extern "C" fn(*mut c_void, Handle, c_int, *mut c_void, i64, *mut c_void) -> c_int;
/// MPI_Datarep_conversion_function_c (count as MPI_Count).
pub type ConvFnC =
    unsafe extern "C" fn(*mut c_void, Handle, i64, *mut c_void, i64, *mut c_void) -> c_int;
/// MPI_Datarep_extent_function.
pub type ExtentFn = unsafe extern "C" fn(Handle, *mut isize, *mut c_void) -> c_int;

/// A conversion function of either count width (or none: MPI_CONVERSION_FN_NULL).
#[derive(Clone, Copy)]
pub enum Conv {
    Null,
    Int(ConvFn),
    Large(ConvFnC),
}

/// A registered representation.
pub struct UserRep {
    pub name: String,
    pub read: Conv,
    pub write: Conv,
    pub extent: ExtentFn,
    pub extra: usize,
}

/// The representation named `name` (MPI_ERR_UNSUPPORTED_DATAREP if there is none).
pub(crate) fn by_name(s: &State, name: &str) -> R<Rep> {
    match name {
        "native" => Ok(Rep::Native),
        "internal" => Ok(Rep::Internal),
        "external32" => Ok(Rep::External32),
        _ => s
            .files
            .reps
            .iter()
            .position(|r| r.name == name)
            .map(Rep::User)
            .ok_or_else(|| {
                err(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    format!(
                        "data representation \"{name}\" is neither native, internal, \
                         external32 nor registered (MPI_Register_datarep)"
                    ),
                )
            }),
    }
}

fn user(s: &State, i: usize) -> R<&UserRep> {
    s.files
        .reps
        .get(i)
        .ok_or_else(|| err(MPI_ERR_INTERN, format!("no registered representation {i}")))
}

/// Bytes predefined type `h` takes in representation `rep`.
fn element_bytes(s: &State, rep: Rep, h: Handle) -> R<u64> {
    match rep {
        Rep::Native | Rep::Internal => Ok(predefined(h).map_or(0, |p| p.0 as u64)),
        Rep::External32 => crate::external::external32_element_bytes(h).map_err(|e| {
            if e.class == MPI_ERR_UNSUPPORTED_OPERATION {
                err(MPI_ERR_UNSUPPORTED_DATAREP, e.message)
            } else {
                e
            }
        }),
        Rep::User(i) => {
            let u = user(s, i)?;
            let mut x: isize = 0;
            // SAFETY: the program registered `extent` with MPI_Register_datarep; `x` is
            // writable.
            let rc = unsafe { (u.extent)(h, &mut x, u.extra as *mut c_void) };
            if rc != MPI_SUCCESS {
                return Err(err(
                    rc,
                    format!(
                        "the file extent function of \"{}\" returned {rc} for {}",
                        u.name,
                        predefined_name(h)
                    ),
                ));
            }
            u64::try_from(x).map_err(|_| {
                err(
                    MPI_ERR_CONVERSION,
                    format!(
                        "the file extent function of \"{}\" gave {x} bytes for {}",
                        u.name,
                        predefined_name(h)
                    ),
                )
            })
        }
    }
}

/// Datatype `dt` as laid out in a file of representation `rep` (its map for native).
pub(crate) fn file_map(s: &State, rep: Rep, dt: Handle) -> R<TypeMap> {
    if matches!(rep, Rep::Native | Rep::Internal) {
        return map_of(dt);
    }
    let leaf = |h: Handle| -> R<TypeMap> {
        let n = element_bytes(s, rep, h)?;
        Ok(TypeMap::contiguous(
            n as i64,
            &TypeMap::basic(BasicKind::Byte),
        )?)
    };
    crate::contents::rebuild(dt, &leaf)
}

/// File bytes of `count` items of `dt`.
pub(crate) fn file_bytes(s: &State, rep: Rep, count: u64, dt: Handle) -> R<u64> {
    let per = match rep {
        Rep::Native | Rep::Internal => map_of(dt)?.size_bytes(),
        Rep::External32 => crate::external::external32_item_bytes(dt)?,
        Rep::User(_) => file_map(s, rep, dt)?.size_bytes(),
    };
    per.checked_mul(count)
        .ok_or_else(|| crate::dtype::count_overflow(count, per as usize))
}

/// Calls a conversion function on `count` items.
fn call(
    conv: Conv,
    name: &str,
    user: *mut c_void,
    dt: Handle,
    count: u64,
    file: *mut u8,
    extra: usize,
) -> R<()> {
    let rc = match conv {
        Conv::Null => return Ok(()),
        Conv::Int(f) => {
            let n = c_int::try_from(count).map_err(|_| {
                err(
                    MPI_ERR_CONVERSION,
                    format!("{count} items do not fit the int count of \"{name}\"'s function"),
                )
            })?;
            // SAFETY: the program registered `f`; the buffers hold `count` items.
            unsafe { f(user, dt, n, file as *mut c_void, 0, extra as *mut c_void) }
        }
        // SAFETY: as above.
        Conv::Large(f) => unsafe {
            f(
                user,
                dt,
                count as i64,
                file as *mut c_void,
                0,
                extra as *mut c_void,
            )
        },
    };
    if rc != MPI_SUCCESS {
        return Err(err(
            rc,
            format!("the conversion function of data representation \"{name}\" returned {rc}"),
        ));
    }
    Ok(())
}

/// Whether a registered representation converts in this direction (else the data moves
/// as packed native bytes).
pub(crate) fn converts(s: &State, rep: Rep, write: bool) -> bool {
    match rep {
        Rep::Native | Rep::Internal => false,
        Rep::External32 => true,
        Rep::User(i) => s
            .files
            .reps
            .get(i)
            .is_some_and(|u| !matches!(if write { u.write } else { u.read }, Conv::Null)),
    }
}

/// The file bytes of `count` items of `dt` at `buf` (a representation that converts).
pub(crate) fn to_file(
    s: &State,
    rep: Rep,
    buf: *const c_void,
    count: u64,
    dt: Handle,
) -> R<Vec<u8>> {
    match rep {
        Rep::External32 => {
            let native = pack(buf, count, dt)?;
            crate::external::native_to_external32(dt, count, &native)
        }
        Rep::User(i) => {
            let u = user(s, i)?;
            let mut out = vec![0u8; file_bytes(s, rep, count, dt)? as usize];
            call(
                u.write,
                &u.name,
                buf as *mut c_void,
                dt,
                count,
                out.as_mut_ptr(),
                u.extra,
            )?;
            Ok(out)
        }
        _ => pack(buf, count, dt),
    }
}

/// Delivers file bytes `file` (of `count` items of `dt`) into `buf`.
pub(crate) fn from_file(
    s: &State,
    rep: Rep,
    file: &mut [u8],
    buf: *mut c_void,
    count: u64,
    dt: Handle,
) -> R<()> {
    match rep {
        Rep::External32 => {
            let map = map_of(dt)?;
            let mut native = vec![0u8; map.packed_bytes(count)? as usize];
            crate::external::external32_to_native(dt, count, file, &mut native)?;
            unpack(&native, buf, count, dt)
        }
        Rep::User(i) => {
            let u = user(s, i)?;
            call(u.read, &u.name, buf, dt, count, file.as_mut_ptr(), u.extra)
        }
        _ => unpack(file, buf, count, dt),
    }
}

fn pack(buf: *const c_void, count: u64, dt: Handle) -> R<Vec<u8>> {
    let map = map_of(dt)?;
    let mut out = vec![0u8; map.packed_bytes(count)? as usize];
    if !out.is_empty() {
        // SAFETY: the caller's buffer covers `count` items (the MPI calling contract).
        let (src, origin, shifted) = unsafe { crate::dtype::user_view(&map, buf, count)? };
        shifted
            .as_ref()
            .unwrap_or(&map)
            .pack(src, origin, count, &mut out)?;
    }
    Ok(out)
}

fn unpack(packed: &[u8], buf: *mut c_void, count: u64, dt: Handle) -> R<()> {
    if packed.is_empty() {
        return Ok(());
    }
    let map = map_of(dt)?;
    // SAFETY: as in `pack`.
    let (dst, origin, shifted) = unsafe { crate::dtype::user_view(&map, buf, count)? };
    shifted
        .as_ref()
        .unwrap_or(&map)
        .unpack(packed, dst, origin, count)?;
    Ok(())
}

fn register(
    name: *const c_char,
    read: Conv,
    write: Conv,
    extent: Option<ExtentFn>,
    extra: *mut c_void,
) -> R<()> {
    let s = state("MPI_Register_datarep")?;
    // SAFETY: a NUL-terminated string (the caller's contract).
    let name = unsafe { c_str(name, "datarep")? };
    if name.is_empty() || name.len() >= crate::file::MPI_MAX_DATAREP_STRING {
        return Err(err(
            MPI_ERR_ARG,
            format!("datarep name \"{name}\": 1 to 127 characters"),
        ));
    }
    if matches!(name.as_str(), "native" | "internal" | "external32")
        || s.files.reps.iter().any(|r| r.name == name)
    {
        return Err(err(
            MPI_ERR_DUP_DATAREP,
            format!("data representation \"{name}\" is already defined"),
        ));
    }
    let extent = extent.ok_or_else(|| err(MPI_ERR_ARG, "dtype_file_extent_fn is NULL"))?;
    s.files.reps.push(UserRep {
        name,
        read,
        write,
        extent,
        extra: extra as usize,
    });
    Ok(())
}

/// MPI_Register_datarep (MPI-4.1 §14.5.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: Option<ConvFn>,
    write_conversion_fn: Option<ConvFn>,
    dtype_file_extent_fn: Option<ExtentFn>,
    extra_state: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let c = |f: Option<ConvFn>| f.map_or(Conv::Null, Conv::Int);
    let r = register(
        datarep,
        c(read_conversion_fn),
        c(write_conversion_fn),
        dtype_file_extent_fn,
        extra_state,
    );
    crate::file::finish_file(crate::file::MPI_FILE_NULL, "MPI_Register_datarep", r)
}

/// MPI_Register_datarep_c (MPI-4.1 §14.5.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: Option<ConvFnC>,
    write_conversion_fn: Option<ConvFnC>,
    dtype_file_extent_fn: Option<ExtentFn>,
    extra_state: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let c = |f: Option<ConvFnC>| f.map_or(Conv::Null, Conv::Large);
    let r = register(
        datarep,
        c(read_conversion_fn),
        c(write_conversion_fn),
        dtype_file_extent_fn,
        extra_state,
    );
    crate::file::finish_file(crate::file::MPI_FILE_NULL, "MPI_Register_datarep_c", r)
}
