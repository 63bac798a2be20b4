//! Canonical packing (MPI-4.1 §5.2.2): MPI_Pack_external, MPI_Unpack_external and
//! MPI_Pack_external_size with their large-count forms, for the one data representation the
//! standard defines, "external32" (§14.5.2): every element big-endian, IEEE formats, the
//! standard's sizes (MPI_LONG and MPI_UNSIGNED_LONG take 4 bytes there, so a value outside
//! 32 bits is refused with MPI_ERR_CONVERSION). The data is packed natively by weft's type
//! map, then each element of the type signature (contents.rs) is converted in place order.
//! Not converted yet: long double types (external32 uses IEEE quad precision, x86-64's
//! `long double` is the 80-bit x87 format): MPI_ERR_UNSUPPORTED_OPERATION.
//! Depends on dtype.rs and contents.rs.

use crate::consts::*;
use crate::dtype::{map_of, predefined, predefined_name, put, user_view};
use crate::error::{err, finish, R};
use std::os::raw::{c_char, c_int, c_void};

/// MPI_ERR_CONVERSION and MPI_ERR_UNSUPPORTED_DATAREP (mpi.h of the standard ABI).
const MPI_ERR_CONVERSION: c_int = 25;
const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 54;

/// Most runs of predefined types a signature may have (a struct repeated by a vector can
/// make many); beyond, the call is refused rather than allocating without bound.
const SIGNATURE_RUNS_LIMIT: usize = 1 << 20;

/// How one part of a predefined element converts.
#[derive(Clone, Copy, Debug)]
enum Conv {
    /// `n` bytes in both forms, byte order reversed (1 byte: copied).
    Swap(usize),
    /// A native 8-byte integer stored in 4 bytes (MPI_LONG, MPI_UNSIGNED_LONG).
    Narrow { signed: bool },
}

impl Conv {
    fn native(self) -> usize {
        match self {
            Conv::Swap(n) => n,
            Conv::Narrow { .. } => 8,
        }
    }
    fn external(self) -> usize {
        match self {
            Conv::Swap(n) => n,
            Conv::Narrow { .. } => 4,
        }
    }
}

/// The parts of predefined datatype `h` in its packed form, in order.
fn parts(h: Handle) -> R<Vec<Conv>> {
    use Conv::*;
    let size = predefined(h)
        .ok_or_else(|| err(MPI_ERR_INTERN, format!("{h:#x} is not predefined")))?
        .0;
    Ok(match h {
        0x20a => vec![Narrow { signed: true }],  // LONG
        0x20e => vec![Narrow { signed: false }], // UNSIGNED_LONG
        0x220 | 0x224 | 0x225 | 0x22d => {
            return Err(err(
                MPI_ERR_UNSUPPORTED_OPERATION,
                format!(
                    "{}: external32 stores long double as IEEE quad precision; converting \
                     x86-64's 80-bit format is not implemented",
                    predefined_name(h)
                ),
            ))
        }
        // Value-index pairs: the value, then an int.
        0x228 => vec![Swap(4), Swap(4)],
        0x229 => vec![Swap(8), Swap(4)],
        0x22a => vec![Narrow { signed: true }, Swap(4)],
        0x22b | 0x232 => vec![Swap(4), Swap(4)],
        0x22c => vec![Swap(2), Swap(4)],
        0x230 => vec![Swap(4), Swap(4)],
        0x231 => vec![Swap(8), Swap(8)],
        // Complex types: real and imaginary parts.
        0x212 | 0x213 | 0x21b | 0x2db | 0x216 | 0x217 | 0x21d | 0x2e3 | 0x2d3 | 0x2eb => {
            vec![Swap(size / 2), Swap(size / 2)]
        }
        _ => vec![Swap(size)],
    })
}

/// A signature with each predefined type's parts: (parts, copies) runs.
type Plan = Vec<(Vec<Conv>, u64)>;

fn plan(dt: Handle) -> R<Plan> {
    crate::contents::signature(dt, SIGNATURE_RUNS_LIMIT)?
        .into_iter()
        .map(|(h, n)| Ok((parts(h)?, n)))
        .collect()
}

/// External32 bytes of one item.
fn item_bytes(plan: &Plan) -> u64 {
    plan.iter()
        .map(|(p, n)| p.iter().map(|c| c.external() as u64).sum::<u64>() * n)
        .sum()
}

fn check_datarep(datarep: *const c_char) -> R<()> {
    // SAFETY: a NUL-terminated string (the caller's contract).
    let rep = unsafe { crate::env::c_str(datarep, "datarep")? };
    if rep != "external32" {
        return Err(err(
            MPI_ERR_UNSUPPORTED_DATAREP,
            format!("datarep \"{rep}\": the only representation is \"external32\""),
        ));
    }
    Ok(())
}

/// External32 bytes of `count` items of `dt`.
fn external_size(datarep: *const c_char, count: i64, dt: Handle) -> R<u64> {
    check_datarep(datarep)?;
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("incount {count} is negative")));
    }
    let p = plan(dt)?;
    item_bytes(&p)
        .checked_mul(count as u64)
        .ok_or_else(|| crate::dtype::count_overflow(count, item_bytes(&p) as usize))
}

/// Converts `count` items from native packed form `native` to external32 `ext`.
fn to_external(plan: &Plan, count: u64, native: &[u8], ext: &mut [u8]) -> R<()> {
    let (mut i, mut o) = (0usize, 0usize);
    for _ in 0..count {
        for (parts, n) in plan {
            for _ in 0..*n {
                for &c in parts {
                    let src = &native[i..i + c.native()];
                    let dst = &mut ext[o..o + c.external()];
                    match c {
                        Conv::Swap(_) => {
                            for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
                                *d = *s;
                            }
                        }
                        Conv::Narrow { signed } => {
                            let raw = <[u8; 8]>::try_from(src).expect("8 bytes");
                            let v = i64::from_ne_bytes(raw);
                            let fits = if signed {
                                i32::try_from(v).is_ok()
                            } else {
                                u32::try_from(v as u64).is_ok()
                            };
                            if !fits {
                                return Err(err(
                                    MPI_ERR_CONVERSION,
                                    format!(
                                        "{} does not fit in external32's 4-byte {}",
                                        if signed {
                                            v.to_string()
                                        } else {
                                            (v as u64).to_string()
                                        },
                                        if signed {
                                            "MPI_LONG"
                                        } else {
                                            "MPI_UNSIGNED_LONG"
                                        }
                                    ),
                                ));
                            }
                            dst.copy_from_slice(&(v as u32).to_be_bytes());
                        }
                    }
                    i += c.native();
                    o += c.external();
                }
            }
        }
    }
    Ok(())
}

/// Converts `count` items from external32 `ext` to native packed form `native`.
fn from_external(plan: &Plan, count: u64, ext: &[u8], native: &mut [u8]) {
    let (mut i, mut o) = (0usize, 0usize);
    for _ in 0..count {
        for (parts, n) in plan {
            for _ in 0..*n {
                for &c in parts {
                    let src = &ext[o..o + c.external()];
                    let dst = &mut native[i..i + c.native()];
                    match c {
                        Conv::Swap(_) => {
                            for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
                                *d = *s;
                            }
                        }
                        Conv::Narrow { signed } => {
                            let raw = <[u8; 4]>::try_from(src).expect("4 bytes");
                            let v = if signed {
                                i32::from_be_bytes(raw) as i64
                            } else {
                                u32::from_be_bytes(raw) as i64
                            };
                            dst.copy_from_slice(&v.to_ne_bytes());
                        }
                    }
                    i += c.native();
                    o += c.external();
                }
            }
        }
    }
}

/// The shared body of MPI_Pack_external(_c): returns the new position.
unsafe fn pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    count: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    pos: i64,
) -> R<i64> {
    let n = external_size(datarep, count, dt)?;
    if pos < 0 || (pos as u64).saturating_add(n) > outsize.max(0) as u64 {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("packing {n} bytes at position {pos} overflows outsize {outsize}"),
        ));
    }
    if n == 0 {
        return Ok(pos);
    }
    if outbuf.is_null() {
        return Err(err(MPI_ERR_BUFFER, "outbuf is NULL"));
    }
    let map = map_of(dt)?;
    let mut native = vec![0u8; map.packed_bytes(count as u64)? as usize];
    if !native.is_empty() {
        // SAFETY: the caller's buffer covers the footprint of `count` items.
        let (src, origin, shifted) = unsafe { user_view(&map, inbuf, count as u64)? };
        shifted
            .as_ref()
            .unwrap_or(&map)
            .pack(src, origin, count as u64, &mut native)?;
    }
    // SAFETY: `outsize` bytes from `outbuf`, checked above to hold `pos + n`.
    let out = unsafe {
        std::slice::from_raw_parts_mut((outbuf as *mut u8).add(pos as usize), n as usize)
    };
    to_external(&plan(dt)?, count as u64, &native, out)?;
    Ok(pos + n as i64)
}

/// The shared body of MPI_Unpack_external(_c): returns the new position.
unsafe fn unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    pos: i64,
    outbuf: *mut c_void,
    count: i64,
    dt: Handle,
) -> R<i64> {
    let n = external_size(datarep, count, dt)?;
    if pos < 0 || (pos as u64).saturating_add(n) > insize.max(0) as u64 {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("unpacking {n} bytes at position {pos} overruns insize {insize}"),
        ));
    }
    if n == 0 {
        return Ok(pos);
    }
    if inbuf.is_null() {
        return Err(err(MPI_ERR_BUFFER, "inbuf is NULL"));
    }
    let map = map_of(dt)?;
    let mut native = vec![0u8; map.packed_bytes(count as u64)? as usize];
    // SAFETY: `insize` bytes from `inbuf`, checked above to hold `pos + n`.
    let ext =
        unsafe { std::slice::from_raw_parts((inbuf as *const u8).add(pos as usize), n as usize) };
    from_external(&plan(dt)?, count as u64, ext, &mut native);
    if !native.is_empty() {
        // SAFETY: the caller's buffer covers the footprint of `count` items.
        let (dst, origin, shifted) = unsafe { user_view(&map, outbuf, count as u64)? };
        shifted
            .as_ref()
            .unwrap_or(&map)
            .unpack(&native, dst, origin, count as u64)?;
    }
    Ok(pos + n as i64)
}

fn read_pos<T: Copy + Into<i64>>(p: *const T) -> R<i64> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, "position is NULL"));
    }
    // SAFETY: non-null, readable.
    Ok(unsafe { *p }.into())
}

/// MPI_Pack_external_size (MPI-4.1 §5.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    dt: Handle,
    size: *mut isize,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = external_size(datarep, incount as i64, dt).and_then(|n| put!(size, n as isize));
    finish(MPI_COMM_WORLD, "MPI_Pack_external_size", r)
}

/// MPI_Pack_external_size_c (MPI-4.1 §5.2.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size_c(
    datarep: *const c_char,
    incount: i64,
    dt: Handle,
    size: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = external_size(datarep, incount, dt).and_then(|n| put!(size, n as i64));
    finish(MPI_COMM_WORLD, "MPI_Pack_external_size_c", r)
}

/// MPI_Pack_external (MPI-4.1 §5.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: isize,
    position: *mut isize,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let pos = read_pos(position as *const i64)?;
        // SAFETY: forwarded caller contract.
        let p = unsafe {
            pack_external(
                datarep,
                inbuf,
                incount as i64,
                dt,
                outbuf,
                outsize as i64,
                pos,
            )?
        };
        put!(position, p as isize)
    })();
    finish(MPI_COMM_WORLD, "MPI_Pack_external", r)
}

/// MPI_Pack_external_c (MPI-4.1 §5.2.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let pos = read_pos(position)?;
        // SAFETY: forwarded caller contract.
        let p = unsafe { pack_external(datarep, inbuf, incount, dt, outbuf, outsize, pos)? };
        put!(position, p)
    })();
    finish(MPI_COMM_WORLD, "MPI_Pack_external_c", r)
}

/// MPI_Unpack_external (MPI-4.1 §5.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: isize,
    position: *mut isize,
    outbuf: *mut c_void,
    outcount: c_int,
    dt: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let pos = read_pos(position as *const i64)?;
        // SAFETY: forwarded caller contract.
        let p = unsafe {
            unpack_external(
                datarep,
                inbuf,
                insize as i64,
                pos,
                outbuf,
                outcount as i64,
                dt,
            )?
        };
        put!(position, p as isize)
    })();
    finish(MPI_COMM_WORLD, "MPI_Unpack_external", r)
}

/// MPI_Unpack_external_c (MPI-4.1 §5.2.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    dt: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let pos = read_pos(position)?;
        // SAFETY: forwarded caller contract.
        let p = unsafe { unpack_external(datarep, inbuf, insize, pos, outbuf, outcount, dt)? };
        put!(position, p)
    })();
    finish(MPI_COMM_WORLD, "MPI_Unpack_external", r)
}

/// Bytes predefined datatype `h` takes in external32 (file views in "external32").
pub(crate) fn external32_element_bytes(h: Handle) -> R<u64> {
    Ok(parts(h)?.iter().map(|c| c.external() as u64).sum())
}

/// External32 bytes of one item of `dt`.
pub(crate) fn external32_item_bytes(dt: Handle) -> R<u64> {
    Ok(item_bytes(&plan(dt)?))
}

/// `count` items of `dt` in native packed form, converted to external32.
pub(crate) fn native_to_external32(dt: Handle, count: u64, native: &[u8]) -> R<Vec<u8>> {
    let p = plan(dt)?;
    let n = item_bytes(&p)
        .checked_mul(count)
        .ok_or_else(|| crate::dtype::count_overflow(count, item_bytes(&p) as usize))?;
    let mut ext = vec![0u8; n as usize];
    to_external(&p, count, native, &mut ext)?;
    Ok(ext)
}

/// `count` items of `dt` in external32, converted to native packed form.
pub(crate) fn external32_to_native(dt: Handle, count: u64, ext: &[u8], native: &mut [u8]) -> R<()> {
    from_external(&plan(dt)?, count, ext, native);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_become_big_endian_with_the_standard_sizes() {
        let plan: Plan = vec![(parts(0x209).unwrap(), 2), (parts(0x20a).unwrap(), 1)];
        assert_eq!(item_bytes(&plan), 12);
        let mut native = Vec::new();
        native.extend(1i32.to_ne_bytes());
        native.extend((-2i32).to_ne_bytes());
        native.extend((-3i64).to_ne_bytes());
        let mut ext = vec![0u8; 12];
        to_external(&plan, 1, &native, &mut ext).unwrap();
        assert_eq!(ext, [0, 0, 0, 1, 255, 255, 255, 254, 255, 255, 255, 253]);
        let mut back = vec![0u8; native.len()];
        from_external(&plan, 1, &ext, &mut back);
        assert_eq!(back, native);
        native[8..].copy_from_slice(&(1i64 << 40).to_ne_bytes());
        let e = to_external(&plan, 1, &native, &mut ext).unwrap_err();
        assert_eq!(e.class, MPI_ERR_CONVERSION, "{}", e.message);
        assert_eq!(
            parts(0x220).unwrap_err().class,
            MPI_ERR_UNSUPPORTED_OPERATION
        );
    }
}
