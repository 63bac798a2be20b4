//! What the C library knows of Fortran (MPI-4.1 §19.1.9, MPI 5.0 §20.x ABI): the
//! parameterized types of MPI_Type_create_f90_integer/real/complex, and the Fortran ABI
//! description (MPI_Abi_get_fortran_info, MPI_Abi_get/set_fortran_info/booleans).
//!
//! An f90 type is the sized predefined type (INTEGERn, REALn, COMPLEXn) that holds the
//! requested precision and range, under a handle of its own that decodes with the F90
//! combiner and its (p, r) arguments; equal requests return the same handle, which (like a
//! predefined type) is never freed. The Fortran bindings are a layer above this library
//! (crate weft-mpifort, for gfortran); the Fortran type sizes here are gfortran's on x86-64
//! (INTEGER, REAL and LOGICAL 4 bytes, DOUBLE PRECISION 8), which a Fortran layer may restate
//! with MPI_Abi_set_fortran_info. The C side of the handle and status conversions
//! (`MPI_<handle>_c2f`/`_f2c`, `MPI_Status_c2f`, ...) is here too.

use crate::consts::*;
use crate::dtype::{predefined, predefined_map, put};
use crate::error::{err, finish, R};
use crate::state::{make_handle, state, Derived, K_TYPE};
use std::collections::BTreeMap;
use std::os::raw::c_int;
use std::rc::Rc;
use std::sync::Mutex;

/// MPI_COMBINER_F90_REAL, _COMPLEX, _INTEGER (standard ABI).
pub(crate) const COMBINER_F90_REAL: c_int = 113;
pub(crate) const COMBINER_F90_COMPLEX: c_int = 114;
pub(crate) const COMBINER_F90_INTEGER: c_int = 115;
/// Fortran's `p` and `r` left to the implementation (MPI_UNDEFINED).
const UNDEFINED: c_int = MPI_UNDEFINED;

/// The f90 types made so far: (combiner, p, r) → handle, and handle → (combiner, p, r).
#[derive(Default)]
struct F90 {
    by_args: BTreeMap<(c_int, c_int, c_int), Handle>,
    by_handle: BTreeMap<Handle, (c_int, c_int, c_int)>,
}

static F90_TYPES: Mutex<F90> = Mutex::new(F90 {
    by_args: BTreeMap::new(),
    by_handle: BTreeMap::new(),
});

fn f90() -> std::sync::MutexGuard<'static, F90> {
    F90_TYPES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The combiner and integer arguments of an f90 handle (for MPI_Type_get_envelope and
/// _contents): `[r]` for integers, `[p, r]` for reals and complexes.
pub(crate) fn decode(h: Handle) -> Option<(c_int, Vec<i64>)> {
    let (c, p, r) = *f90().by_handle.get(&h)?;
    Some(match c {
        COMBINER_F90_INTEGER => (c, vec![r as i64]),
        _ => (c, vec![p as i64, r as i64]),
    })
}

/// Whether `h` is an f90 type (never freed).
pub(crate) fn is_f90(h: Handle) -> bool {
    f90().by_handle.contains_key(&h)
}

/// The handle for (`combiner`, `p`, `r`) standing for predefined type `base`.
fn f90_handle(combiner: c_int, p: c_int, r: c_int, base: Handle) -> R<Handle> {
    if let Some(&h) = f90().by_args.get(&(combiner, p, r)) {
        return Ok(h);
    }
    let map = predefined_map(base)
        .ok_or_else(|| err(MPI_ERR_INTERN, format!("no map for predefined {base:#x}")))?;
    let s = state("MPI_Type_create_f90")?;
    let name = crate::dtype::predefined_name(base).to_string();
    let h = make_handle(
        K_TYPE,
        s.types.insert(Derived {
            map: Rc::new(map),
            committed: true,
            name,
        }),
    );
    let mut t = f90();
    t.by_args.insert((combiner, p, r), h);
    t.by_handle.insert(h, (combiner, p, r));
    Ok(h)
}

/// The sized REAL type of precision `p` (decimal digits) and exponent range `r`, and its
/// size: REAL4 (6, 37), REAL8 (15, 307), REAL16 (33, 4931), as gfortran's kinds.
fn real_kind(p: c_int, r: c_int) -> R<(Handle, usize)> {
    let p = if p == UNDEFINED { 0 } else { p };
    let r = if r == UNDEFINED { 0 } else { r };
    if p < 0 || r < 0 {
        return Err(err(
            MPI_ERR_ARG,
            format!("precision {p} and range {r}: neither may be negative"),
        ));
    }
    [
        (6, 37, 0x2d2, 4),
        (15, 307, 0x2da, 8),
        (33, 4931, 0x2e2, 16),
    ]
    .iter()
    .find(|&&(mp, mr, _, _)| p <= mp && r <= mr)
    .map(|&(_, _, h, n)| (h, n))
    .ok_or_else(|| {
        err(
            MPI_ERR_ARG,
            format!("no REAL kind has precision {p} and range {r} (at most 33 and 4931)"),
        )
    })
}

/// MPI_Type_create_f90_integer (MPI-4.1 §19.1.9): the INTEGERn holding `r` decimal digits.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let res = (|| {
        let base = match r {
            UNDEFINED => 0x2d1,
            r if (0..=2).contains(&r) => 0x2c1,
            r if (3..=4).contains(&r) => 0x2c9,
            r if (5..=9).contains(&r) => 0x2d1,
            r if (10..=18).contains(&r) => 0x2d9,
            r => {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("no INTEGER kind has range {r} (at most 18 digits)"),
                ))
            }
        };
        put!(
            newtype,
            f90_handle(COMBINER_F90_INTEGER, UNDEFINED, r, base)?
        )
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_f90_integer", res)
}

/// MPI_Type_create_f90_real (MPI-4.1 §19.1.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_real(
    p: c_int,
    r: c_int,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let res = (|| {
        let (base, _) = real_kind(p, r)?;
        put!(newtype, f90_handle(COMBINER_F90_REAL, p, r, base)?)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_f90_real", res)
}

/// MPI_Type_create_f90_complex (MPI-4.1 §19.1.9): two REALs of that kind.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(
    p: c_int,
    r: c_int,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let res = (|| {
        let base = match real_kind(p, r)?.1 {
            4 => 0x2db,
            8 => 0x2e3,
            _ => 0x2eb,
        };
        put!(newtype, f90_handle(COMBINER_F90_COMPLEX, p, r, base)?)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_f90_complex", res)
}

/// The Fortran ABI facts a Fortran layer may restate (MPI_Abi_set_fortran_info).
static FORTRAN_INFO: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
/// (LOGICAL size, true value, false value) a Fortran layer restated.
static BOOLEANS: Mutex<Vec<(c_int, i64, i64)>> = Mutex::new(Vec::new());

/// The sized Fortran types and whether weft has them, for the `mpi_<type>_supported` keys.
const SIZED: &[(&str, Handle)] = &[
    ("logical1", 0x2c0),
    ("logical2", 0x2c8),
    ("logical4", 0x2d0),
    ("logical8", 0x2d8),
    ("logical16", 0x2e0),
    ("integer1", 0x2c1),
    ("integer2", 0x2c9),
    ("integer4", 0x2d1),
    ("integer8", 0x2d9),
    ("integer16", 0x2e1),
    ("real2", 0x2ca),
    ("real4", 0x2d2),
    ("real8", 0x2da),
    ("real16", 0x2e2),
    ("complex4", 0x2d3),
    ("complex8", 0x2db),
    ("complex16", 0x2e3),
    ("complex32", 0x2eb),
    ("double_complex", 0x21d),
];

fn fortran_info() -> Vec<(String, String)> {
    let size = |h: Handle| predefined(h).map_or(0, |(n, _)| n);
    let mut kv: Vec<(String, String)> = vec![
        ("mpi_logical_size".into(), size(0x218).to_string()),
        ("mpi_integer_size".into(), size(0x219).to_string()),
        ("mpi_real_size".into(), size(0x21a).to_string()),
        ("mpi_double_precision_size".into(), size(0x21c).to_string()),
    ];
    for &(name, h) in SIZED {
        let supported = predefined(h).is_some_and(|(n, _)| n > 0);
        kv.push((format!("mpi_{name}_supported"), supported.to_string()));
    }
    let set = FORTRAN_INFO.lock().unwrap_or_else(|p| p.into_inner());
    for (k, v) in set.iter() {
        match kv.iter_mut().find(|(x, _)| x == k) {
            Some(e) => e.1.clone_from(v),
            None => kv.push((k.clone(), v.clone())),
        }
    }
    kv
}

/// MPI_Abi_get_fortran_info (MPI 5.0 ABI): the sizes of the Fortran types and which sized
/// types exist, as a new info object.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_fortran_info(info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = put!(info, crate::env::info_insert(fortran_info()));
    finish(MPI_COMM_WORLD, "MPI_Abi_get_fortran_info", r)
}

/// MPI_Abi_set_fortran_info (MPI 5.0 ABI): a Fortran layer restates its facts; they are
/// what MPI_Abi_get_fortran_info answers from then on.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_set_fortran_info(info: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = crate::env::info_entries(info).map(|kv| {
        let mut set = FORTRAN_INFO.lock().unwrap_or_else(|p| p.into_inner());
        for (k, v) in kv {
            match set.iter_mut().find(|(x, _)| *x == k) {
                Some(e) => e.1 = v,
                None => set.push((k, v)),
            }
        }
    });
    finish(MPI_COMM_WORLD, "MPI_Abi_set_fortran_info", r)
}

fn check_logical_size(n: c_int) -> R<()> {
    if matches!(n, 1 | 2 | 4 | 8 | 16) {
        Ok(())
    } else {
        Err(err(
            MPI_ERR_ARG,
            format!("LOGICAL size {n}: 1, 2, 4, 8 or 16 bytes"),
        ))
    }
}

/// MPI_Abi_get_fortran_booleans (MPI 5.0 ABI): the values of .TRUE. and .FALSE. in a
/// LOGICAL of `logical_size` bytes (gfortran's 1 and 0 unless restated); `is_set` says
/// whether a Fortran layer restated them.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_fortran_booleans(
    logical_size: c_int,
    logical_true: *mut std::os::raw::c_void,
    logical_false: *mut std::os::raw::c_void,
    is_set: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        check_logical_size(logical_size)?;
        let set = BOOLEANS.lock().unwrap_or_else(|p| p.into_inner());
        let found = set.iter().find(|b| b.0 == logical_size).copied();
        let (t, f) = found.map_or((1, 0), |b| (b.1, b.2));
        let n = logical_size as usize;
        for (p, v) in [(logical_true, t), (logical_false, f)] {
            if p.is_null() {
                return Err(err(MPI_ERR_ARG, "an output argument is NULL"));
            }
            let bytes = (v as i128).to_ne_bytes();
            // SAFETY: the caller's buffer holds a LOGICAL of `logical_size` bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p as *mut u8, n) };
        }
        put!(is_set, found.is_some() as c_int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Abi_get_fortran_booleans", r)
}

/// MPI_Abi_set_fortran_booleans (MPI 5.0 ABI).
#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_set_fortran_booleans(
    logical_size: c_int,
    logical_true: *mut std::os::raw::c_void,
    logical_false: *mut std::os::raw::c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        check_logical_size(logical_size)?;
        if logical_true.is_null() || logical_false.is_null() {
            return Err(err(MPI_ERR_ARG, "a value argument is NULL"));
        }
        let n = logical_size as usize;
        let read = |p: *mut std::os::raw::c_void| {
            let mut b = [0u8; 16];
            // SAFETY: the caller's buffer holds a LOGICAL of `logical_size` bytes.
            unsafe { std::ptr::copy_nonoverlapping(p as *const u8, b.as_mut_ptr(), n) };
            i128::from_ne_bytes(b) as i64
        };
        let (t, f) = (read(logical_true), read(logical_false));
        let mut set = BOOLEANS.lock().unwrap_or_else(|p| p.into_inner());
        set.retain(|b| b.0 != logical_size);
        set.push((logical_size, t, f));
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Abi_set_fortran_booleans", r)
}

/// The C handle conversions of MPI-4.1 §19.3.4 (`MPI_<HANDLE>_c2f`/`_f2c`): a Fortran INTEGER
/// handle is the standard ABI's `int` form of the handle (`MPI_<HANDLE>_toint`), so a C
/// library and a Fortran program (weft-mpifort's bindings) agree on it. MPI_Message_c2f/f2c
/// are in `misc.rs`.
macro_rules! fortran_handles {
    ($($c2f:ident, $f2c:ident, $kind:expr;)*) => {$(
        /// A handle as a Fortran INTEGER (MPI-4.1 §19.3.4).
        #[no_mangle]
        pub unsafe extern "C" fn $c2f(h: Handle) -> c_int {
            let _entered = crate::threads::enter();
            crate::misc::handle_to_int(h)
        }

        /// A Fortran INTEGER handle as a C handle (MPI-4.1 §19.3.4).
        #[no_mangle]
        pub unsafe extern "C" fn $f2c(v: c_int) -> Handle {
            let _entered = crate::threads::enter();
            crate::misc::handle_from_int($kind, v)
        }
    )*};
}

fortran_handles! {
    MPI_Comm_c2f, MPI_Comm_f2c, crate::state::K_COMM;
    MPI_Type_c2f, MPI_Type_f2c, K_TYPE;
    MPI_Group_c2f, MPI_Group_f2c, crate::state::K_GROUP;
    MPI_Request_c2f, MPI_Request_f2c, crate::state::K_REQ;
    MPI_Op_c2f, MPI_Op_f2c, crate::state::K_OP;
    MPI_Info_c2f, MPI_Info_f2c, crate::state::K_INFO;
    MPI_Errhandler_c2f, MPI_Errhandler_f2c, crate::state::K_ERRH;
    MPI_Session_c2f, MPI_Session_f2c, crate::session::K_SESSION;
    MPI_File_c2f, MPI_File_f2c, crate::file::K_FILE;
    MPI_Win_c2f, MPI_Win_f2c, crate::win::K_WIN;
}

/// Copies one status between C's MPI_Status and Fortran's INTEGER(MPI_STATUS_SIZE) or
/// TYPE(MPI_Status): all three have the same 8 `int`s (MPI_SOURCE, MPI_TAG, MPI_ERROR first).
fn copy_status(from: *const c_int, to: *mut c_int, name: &str) -> c_int {
    if from.is_null() || to.is_null() {
        return finish(
            MPI_COMM_WORLD,
            name,
            Err::<(), _>(err(MPI_ERR_ARG, "a status argument is NULL")),
        );
    }
    // SAFETY: both point to a status of MPI_F_STATUS_SIZE (8) ints by the calling contract.
    unsafe { std::ptr::copy(from, to, 8) };
    MPI_SUCCESS
}

/// MPI_Status_c2f (MPI-4.1 §19.3.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f(c: *const c_int, f: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    copy_status(c, f, "MPI_Status_c2f")
}

/// MPI_Status_f2c (MPI-4.1 §19.3.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2c(f: *const c_int, c: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    copy_status(f, c, "MPI_Status_f2c")
}

/// MPI_Status_c2f08 (MPI-4.1 §19.3.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f08(c: *const c_int, f08: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    copy_status(c, f08, "MPI_Status_c2f08")
}

/// MPI_Status_f082c (MPI-4.1 §19.3.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f082c(f08: *const c_int, c: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    copy_status(f08, c, "MPI_Status_f082c")
}

/// MPI_Status_f2f08 (MPI-4.1 §19.3.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2f08(f: *const c_int, f08: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    copy_status(f, f08, "MPI_Status_f2f08")
}

/// MPI_Status_f082f (MPI-4.1 §19.3.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f082f(f08: *const c_int, f: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    copy_status(f08, f, "MPI_Status_f082f")
}
