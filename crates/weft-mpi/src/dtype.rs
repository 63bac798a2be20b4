//! Datatypes (MPI-4.1 chapter 5): the predefined C and Fortran types of the standard ABI
//! with their sizes and reduction kinds, contiguous derived types, and the size, extent,
//! name, address and pack/unpack queries. Types with holes (vector, indexed, struct,
//! subarray) wait for weft's type maps and report MPI_ERR_UNSUPPORTED_OPERATION.

use crate::consts::*;
use crate::error::{err, finish, write_c_string, R};
use crate::state::{handle_index, make_handle, state, Derived, K_TYPE};
use std::os::raw::{c_char, c_int, c_void};
use weft::coll::TypeKind;

/// Size in bytes and reduction kind of a predefined datatype (LP64 sizes).
#[inline]
pub fn predefined(h: Handle) -> Option<(usize, Option<TypeKind>)> {
    use TypeKind::*;
    Some(match h {
        0x201..=0x203 => (8, Some(I64)), // AINT, COUNT, OFFSET
        0x207 => (1, None),              // PACKED
        0x208 => (2, Some(I16)),         // SHORT
        0x209 => (4, Some(I32)),         // INT
        0x20a | 0x20b => (8, Some(I64)), // LONG, LONG_LONG
        0x20c => (2, Some(U16)),
        0x20d => (4, Some(U32)),
        0x20e | 0x20f => (8, Some(U64)),
        0x210 => (4, Some(F32)),
        0x212 | 0x213 => (8, None), // float complex
        0x214 => (8, Some(F64)),
        0x216 | 0x217 => (16, None),            // double complex
        0x218 | 0x219 => (4, Some(I32)),        // LOGICAL, INTEGER
        0x21a => (4, Some(F32)),                // REAL
        0x21b => (8, None),                     // COMPLEX
        0x21c => (8, Some(F64)),                // DOUBLE_PRECISION
        0x21d => (16, None),                    // DOUBLE_COMPLEX
        0x21e => (1, None),                     // CHARACTER
        0x220 => (16, None),                    // LONG_DOUBLE
        0x224 | 0x225 => (32, None),            // long double complex
        0x228 => (8, Some(F32I32)),             // FLOAT_INT
        0x229 => (16, Some(F64I32)),            // DOUBLE_INT
        0x22a => (16, Some(I64I32)),            // LONG_INT
        0x22b => (8, Some(I32I32)),             // 2INT
        0x22c => (8, None),                     // SHORT_INT
        0x22d => (32, None),                    // LONG_DOUBLE_INT
        0x230 => (8, None),                     // 2REAL
        0x231 => (16, None),                    // 2DOUBLE_PRECISION
        0x232 => (8, Some(I32I32)),             // 2INTEGER
        0x238 | 0x239 => (1, Some(U8)),         // C_BOOL, CXX_BOOL
        0x23c => (4, None),                     // WCHAR
        0x240 | 0x244 => (1, Some(I8)),         // INT8_T, SIGNED_CHAR
        0x243 => (1, Some(I8)),                 // CHAR
        0x241 | 0x245 | 0x247 => (1, Some(U8)), // UINT8_T, UNSIGNED_CHAR, BYTE
        0x248 => (2, Some(I16)),
        0x249 => (2, Some(U16)),
        0x250 => (4, Some(I32)),
        0x251 => (4, Some(U32)),
        0x258 => (8, Some(I64)),
        0x259 => (8, Some(U64)),
        0x2c0 | 0x2c1 => (1, Some(I8)),  // LOGICAL1, INTEGER1
        0x2c8 | 0x2c9 => (2, Some(I16)), // LOGICAL2, INTEGER2
        0x2ca => (2, None),              // REAL2
        0x2d0 | 0x2d1 => (4, Some(I32)),
        0x2d2 => (4, Some(F32)),
        0x2d3 => (4, None),
        0x2d8 | 0x2d9 => (8, Some(I64)),
        0x2da => (8, Some(F64)),
        0x2db => (8, None),
        0x2e0 | 0x2e1 => (16, None),
        0x2e2 => (16, None),
        0x2e3 => (16, None),
        0x2eb => (32, None),
        _ => return None,
    })
}

/// The standard name of a predefined type, for MPI_Type_get_name.
fn predefined_name(h: Handle) -> &'static str {
    match h {
        0x201 => "MPI_AINT",
        0x202 => "MPI_COUNT",
        0x203 => "MPI_OFFSET",
        0x207 => "MPI_PACKED",
        0x208 => "MPI_SHORT",
        0x209 => "MPI_INT",
        0x20a => "MPI_LONG",
        0x20b => "MPI_LONG_LONG",
        0x20c => "MPI_UNSIGNED_SHORT",
        0x20d => "MPI_UNSIGNED",
        0x20e => "MPI_UNSIGNED_LONG",
        0x20f => "MPI_UNSIGNED_LONG_LONG",
        0x210 => "MPI_FLOAT",
        0x214 => "MPI_DOUBLE",
        0x220 => "MPI_LONG_DOUBLE",
        0x228 => "MPI_FLOAT_INT",
        0x229 => "MPI_DOUBLE_INT",
        0x22a => "MPI_LONG_INT",
        0x22b => "MPI_2INT",
        0x238 => "MPI_C_BOOL",
        0x23c => "MPI_WCHAR",
        0x240 => "MPI_INT8_T",
        0x241 => "MPI_UINT8_T",
        0x243 => "MPI_CHAR",
        0x244 => "MPI_SIGNED_CHAR",
        0x245 => "MPI_UNSIGNED_CHAR",
        0x247 => "MPI_BYTE",
        0x248 => "MPI_INT16_T",
        0x249 => "MPI_UINT16_T",
        0x250 => "MPI_INT32_T",
        0x251 => "MPI_UINT32_T",
        0x258 => "MPI_INT64_T",
        0x259 => "MPI_UINT64_T",
        _ => "",
    }
}

/// Bytes of `count` elements of `dt`, checking the count.
#[inline]
pub fn bytes_of(count: i64, dt: Handle) -> R<(usize, Option<TypeKind>)> {
    let s = state("datatype")?;
    let (size, kind) = s.dtype(dt)?;
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    Ok((size * count as usize, kind))
}

/// Writes the result of `f` to C through `out`.
macro_rules! put {
    ($out:expr, $v:expr) => {
        if $out.is_null() {
            Err(err(MPI_ERR_ARG, "an output argument is NULL"))
        } else {
            // SAFETY: non-null and writable by the MPI calling contract.
            unsafe { *$out = $v };
            Ok(())
        }
    };
}
pub(crate) use put;

/// MPI_Type_size (MPI-4.1 §5.1.5).
///
/// # Safety
/// `size` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(dt: Handle, size: *mut c_int) -> c_int {
    let r = (|| {
        let (n, _) = type_any(dt)?;
        put!(size, n as c_int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_size", r)
}

/// MPI_Type_size_c (MPI-4.1 §5.1.5, large count).
///
/// # Safety
/// `size` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_c(dt: Handle, size: *mut i64) -> c_int {
    let r = (|| {
        let (n, _) = type_any(dt)?;
        put!(size, n as i64)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_size_c", r)
}

/// Size and kind of any valid datatype, committed or not (queries allow uncommitted ones).
fn type_any(dt: Handle) -> R<(usize, Option<TypeKind>)> {
    let s = state("datatype")?;
    if let Some(t) = predefined(dt) {
        return Ok(t);
    }
    handle_index(K_TYPE, dt)
        .and_then(|i| s.types.get(i))
        .map(|d| (d.size, d.kind))
        .ok_or_else(|| {
            err(
                MPI_ERR_TYPE,
                format!("datatype handle {dt:#x} is not valid"),
            )
        })
}

/// MPI_Type_get_extent (MPI-4.1 §5.1.7): contiguous types have lower bound 0.
///
/// # Safety
/// `lb` and `extent` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    let r = (|| {
        let (n, _) = type_any(dt)?;
        put!(lb, 0)?;
        put!(extent, n as isize)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_extent", r)
}

/// MPI_Type_get_true_extent (MPI-4.1 §5.1.8).
///
/// # Safety
/// `lb` and `extent` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    // SAFETY: same contract; contiguous types have no holes, so the true extent is the extent.
    unsafe { MPI_Type_get_extent(dt, lb, extent) }
}

/// MPI_Type_contiguous (MPI-4.1 §5.1.2).
///
/// # Safety
/// `newtype` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(
    count: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let r = (|| {
        if count < 0 {
            return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
        }
        let (size, kind) = type_any(old)?;
        let s = state("MPI_Type_contiguous")?;
        let idx = s.types.insert(Derived {
            size: size * count as usize,
            kind,
            base: old,
            committed: false,
            name: String::new(),
        });
        put!(newtype, make_handle(K_TYPE, idx))
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_contiguous", r)
}

/// MPI_Type_dup (MPI-4.1 §5.1.2 / §7.7).
///
/// # Safety
/// `newtype` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(old: Handle, newtype: *mut Handle) -> c_int {
    // SAFETY: same contract; a dup of a type is one contiguous copy of it, committed alike.
    let rc = unsafe { MPI_Type_contiguous(1, old, newtype) };
    if rc == MPI_SUCCESS {
        if let (Ok(s), Some(i)) = (
            state("MPI_Type_dup"),
            handle_index(K_TYPE, unsafe { *newtype }),
        ) {
            if let Some(d) = s.types.get_mut(i) {
                d.committed = true;
            }
        }
    }
    rc
}

/// MPI_Type_commit (MPI-4.1 §5.1.9).
///
/// # Safety
/// `dt` must point to a datatype handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(dt: *mut Handle) -> c_int {
    let r = (|| {
        if dt.is_null() {
            return Err(err(MPI_ERR_ARG, "datatype pointer is NULL"));
        }
        // SAFETY: non-null, readable.
        let h = unsafe { *dt };
        if predefined(h).is_some() {
            return Ok(());
        }
        let s = state("MPI_Type_commit")?;
        match handle_index(K_TYPE, h).and_then(|i| s.types.get_mut(i)) {
            Some(d) => {
                d.committed = true;
                Ok(())
            }
            None => Err(err(
                MPI_ERR_TYPE,
                format!("datatype handle {h:#x} is not valid"),
            )),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_commit", r)
}

/// MPI_Type_free (MPI-4.1 §5.1.9).
///
/// # Safety
/// `dt` must point to a datatype handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(dt: *mut Handle) -> c_int {
    let r = (|| {
        if dt.is_null() {
            return Err(err(MPI_ERR_ARG, "datatype pointer is NULL"));
        }
        // SAFETY: non-null, readable and writable.
        let h = unsafe { *dt };
        let s = state("MPI_Type_free")?;
        match handle_index(K_TYPE, h).and_then(|i| s.types.remove(i)) {
            Some(_) => {
                // SAFETY: as above.
                unsafe { *dt = MPI_DATATYPE_NULL };
                Ok(())
            }
            None => Err(err(
                MPI_ERR_TYPE,
                format!("datatype {h:#x} is predefined or not valid and cannot be freed"),
            )),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_free", r)
}

/// MPI_Type_get_name (MPI-4.1 §7.8).
///
/// # Safety
/// `name` must hold MPI_MAX_OBJECT_NAME bytes; `len` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(
    dt: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    let r = (|| {
        type_any(dt)?;
        let s = state("MPI_Type_get_name")?;
        let text = match handle_index(K_TYPE, dt).and_then(|i| s.types.get(i)) {
            Some(d) => d.name.clone(),
            None => predefined_name(dt).to_string(),
        };
        // SAFETY: forwarded caller contract.
        unsafe { write_c_string(&text, name, MPI_MAX_OBJECT_NAME, len) };
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_name", r)
}

/// MPI_Type_set_name (MPI-4.1 §7.8).
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(dt: Handle, name: *const c_char) -> c_int {
    let r = (|| {
        let text = unsafe { crate::env::c_str(name, "name")? };
        let s = state("MPI_Type_set_name")?;
        match handle_index(K_TYPE, dt).and_then(|i| s.types.get_mut(i)) {
            Some(d) => {
                d.name = text;
                Ok(())
            }
            None => Err(err(
                MPI_ERR_TYPE,
                format!("datatype {dt:#x} cannot be renamed"),
            )),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_set_name", r)
}

/// MPI_Get_address (MPI-4.1 §5.1.5).
///
/// # Safety
/// `address` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut isize) -> c_int {
    let r = put!(address, location as isize);
    finish(MPI_COMM_WORLD, "MPI_Get_address", r)
}

/// MPI_Pack_size (MPI-4.1 §5.2).
///
/// # Safety
/// `size` must be writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(
    count: c_int,
    dt: Handle,
    comm: Handle,
    size: *mut c_int,
) -> c_int {
    let r = (|| {
        state("MPI_Pack_size")?.comm(comm)?;
        let (n, _) = bytes_of(count as i64, dt)?;
        put!(size, n as c_int)
    })();
    finish(comm, "MPI_Pack_size", r)
}

/// MPI_Pack (MPI-4.1 §5.2): appends `count` elements at `*position` of `outbuf`.
///
/// # Safety
/// Buffers must be valid for the sizes given; `position` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    count: c_int,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: Handle,
) -> c_int {
    let r = (|| {
        state("MPI_Pack")?.comm(comm)?;
        let (n, _) = bytes_of(count as i64, dt)?;
        if position.is_null() {
            return Err(err(MPI_ERR_ARG, "position is NULL"));
        }
        // SAFETY: non-null.
        let pos = unsafe { *position };
        if pos < 0 || pos as usize + n > outsize.max(0) as usize {
            return Err(err(
                MPI_ERR_TRUNCATE,
                format!("packing {n} bytes at position {pos} overflows outsize {outsize}"),
            ));
        }
        if n > 0 {
            // SAFETY: inbuf holds n bytes and outbuf outsize bytes (the caller's contract).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    inbuf as *const u8,
                    (outbuf as *mut u8).add(pos as usize),
                    n,
                );
                *position = pos + n as c_int;
            }
        }
        Ok(())
    })();
    finish(comm, "MPI_Pack", r)
}

/// MPI_Unpack (MPI-4.1 §5.2).
///
/// # Safety
/// Buffers must be valid for the sizes given; `position` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    comm: Handle,
) -> c_int {
    let r = (|| {
        state("MPI_Unpack")?.comm(comm)?;
        let (n, _) = bytes_of(count as i64, dt)?;
        if position.is_null() {
            return Err(err(MPI_ERR_ARG, "position is NULL"));
        }
        // SAFETY: non-null.
        let pos = unsafe { *position };
        if pos < 0 || pos as usize + n > insize.max(0) as usize {
            return Err(err(
                MPI_ERR_TRUNCATE,
                format!("unpacking {n} bytes at position {pos} overruns insize {insize}"),
            ));
        }
        if n > 0 {
            // SAFETY: inbuf holds insize bytes and outbuf n bytes (the caller's contract).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (inbuf as *const u8).add(pos as usize),
                    outbuf as *mut u8,
                    n,
                );
                *position = pos + n as c_int;
            }
        }
        Ok(())
    })();
    finish(comm, "MPI_Unpack", r)
}
