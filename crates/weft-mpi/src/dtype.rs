//! Datatypes (MPI-4.1 chapter 5): the predefined C and Fortran types of the standard ABI
//! with their sizes and reduction kinds, derived types on weft's type maps
//! (`weft::dtype::TypeMap`: contiguous, vector, hvector, indexed, hindexed, indexed_block,
//! hindexed_block, struct, resized, subarray, darray, dup), with the MPI-4 large-count
//! (`_c`) constructors over the same i64 cores, their queries, and pack/unpack.
//! Depends on the state tables and weft's type maps; the layout logic is weft's.

use crate::consts::*;
use crate::error::{err, finish, write_c_string, R};
use crate::state::{handle_index, make_handle, state, Derived, K_TYPE};
use std::os::raw::{c_char, c_int, c_void};
use std::rc::Rc;
use weft::coll::TypeKind;
use weft::dtype::{BasicKind, Order, TypeMap};

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
        0x212 | 0x213 => (8, Some(ComplexF32)), // float complex
        0x214 => (8, Some(F64)),
        0x216 | 0x217 => (16, Some(ComplexF64)), // double complex
        0x218 | 0x219 => (4, Some(I32)),         // LOGICAL, INTEGER
        0x21a => (4, Some(F32)),                 // REAL
        0x21b => (8, Some(ComplexF32)),          // COMPLEX
        0x21c => (8, Some(F64)),                 // DOUBLE_PRECISION
        0x21d => (16, Some(ComplexF64)),         // DOUBLE_COMPLEX
        0x21e => (1, None),                      // CHARACTER
        0x220 => (16, Some(LongDouble)),         // LONG_DOUBLE
        0x224 | 0x225 => (32, Some(ComplexLongDouble)), // long double complex
        0x228 => (8, Some(F32I32)),              // FLOAT_INT
        0x229 => (16, Some(F64I32)),             // DOUBLE_INT
        0x22a => (16, Some(I64I32)),             // LONG_INT
        0x22b => (8, Some(I32I32)),              // 2INT
        0x22c => (8, Some(I16I32)),              // SHORT_INT
        0x22d => (32, Some(LongDoubleI32)),      // LONG_DOUBLE_INT
        0x230 => (8, Some(F32F32)),              // 2REAL
        0x231 => (16, Some(F64F64)),             // 2DOUBLE_PRECISION
        0x232 => (8, Some(I32I32)),              // 2INTEGER
        0x238 | 0x239 => (1, Some(U8)),          // C_BOOL, CXX_BOOL
        0x23c => (4, None),                      // WCHAR
        0x240 | 0x244 => (1, Some(I8)),          // INT8_T, SIGNED_CHAR
        0x243 => (1, Some(I8)),                  // CHAR
        0x241 | 0x245 | 0x247 => (1, Some(U8)),  // UINT8_T, UNSIGNED_CHAR, BYTE
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
        0x2db => (8, Some(ComplexF32)), // COMPLEX8
        0x2e0 | 0x2e1 => (16, None),
        0x2e2 => (16, None),
        0x2e3 => (16, Some(ComplexF64)), // COMPLEX16
        0x2eb => (32, None),
        _ => return None,
    })
}

/// The standard name of a predefined type, for MPI_Type_get_name and messages.
pub(crate) fn predefined_name(h: Handle) -> &'static str {
    match h {
        0x201 => "MPI_AINT",
        0x202 => "MPI_COUNT",
        0x203 => "MPI_OFFSET",
        0x207 => "MPI_PACKED",
        0x208 => "MPI_SHORT",
        0x209 => "MPI_INT",
        0x20a => "MPI_LONG",
        // MPI-4.1 Table 3.2 lists MPI_LONG_LONG as the synonym of MPI_LONG_LONG_INT and
        // MPI_C_FLOAT_COMPLEX as that of MPI_C_COMPLEX (one handle each in the ABI).
        0x20b => "MPI_LONG_LONG_INT",
        0x20c => "MPI_UNSIGNED_SHORT",
        0x20d => "MPI_UNSIGNED",
        0x20e => "MPI_UNSIGNED_LONG",
        0x20f => "MPI_UNSIGNED_LONG_LONG",
        0x210 => "MPI_FLOAT",
        0x212 => "MPI_C_COMPLEX",
        0x213 => "MPI_CXX_FLOAT_COMPLEX",
        0x214 => "MPI_DOUBLE",
        0x216 => "MPI_C_DOUBLE_COMPLEX",
        0x217 => "MPI_CXX_DOUBLE_COMPLEX",
        0x218 => "MPI_LOGICAL",
        0x219 => "MPI_INTEGER",
        0x21a => "MPI_REAL",
        0x21b => "MPI_COMPLEX",
        0x21c => "MPI_DOUBLE_PRECISION",
        0x21d => "MPI_DOUBLE_COMPLEX",
        0x21e => "MPI_CHARACTER",
        0x220 => "MPI_LONG_DOUBLE",
        0x224 => "MPI_C_LONG_DOUBLE_COMPLEX",
        0x225 => "MPI_CXX_LONG_DOUBLE_COMPLEX",
        0x228 => "MPI_FLOAT_INT",
        0x229 => "MPI_DOUBLE_INT",
        0x22a => "MPI_LONG_INT",
        0x22b => "MPI_2INT",
        0x22c => "MPI_SHORT_INT",
        0x22d => "MPI_LONG_DOUBLE_INT",
        0x230 => "MPI_2REAL",
        0x231 => "MPI_2DOUBLE_PRECISION",
        0x232 => "MPI_2INTEGER",
        0x238 => "MPI_C_BOOL",
        0x239 => "MPI_CXX_BOOL",
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
        0x2c0 => "MPI_LOGICAL1",
        0x2c1 => "MPI_INTEGER1",
        0x2c8 => "MPI_LOGICAL2",
        0x2c9 => "MPI_INTEGER2",
        0x2ca => "MPI_REAL2",
        0x2d0 => "MPI_LOGICAL4",
        0x2d1 => "MPI_INTEGER4",
        0x2d2 => "MPI_REAL4",
        0x2d3 => "MPI_COMPLEX4",
        0x2d8 => "MPI_LOGICAL8",
        0x2d9 => "MPI_INTEGER8",
        0x2da => "MPI_REAL8",
        0x2db => "MPI_COMPLEX8",
        0x2e0 => "MPI_LOGICAL16",
        0x2e1 => "MPI_INTEGER16",
        0x2e2 => "MPI_REAL16",
        0x2e3 => "MPI_COMPLEX16",
        0x2eb => "MPI_COMPLEX32",
        _ => "",
    }
}

/// The groups of predefined datatypes of MPI-4.1 §6.9.2 (and the pairs of §6.9.4), which
/// say which predefined operations apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// C integer types, including `signed char` and `unsigned char` (not `char`).
    CInteger,
    /// Fortran INTEGER types.
    FortranInteger,
    /// Real floating-point types, C and Fortran.
    Floating,
    /// MPI_LOGICAL and its sized forms, MPI_C_BOOL, MPI_CXX_BOOL.
    Logical,
    /// Complex types, C, C++ and Fortran.
    Complex,
    /// MPI_BYTE.
    Byte,
    /// MPI_AINT, MPI_OFFSET, MPI_COUNT.
    MultiLanguage,
    /// The value-index pairs of MINLOC and MAXLOC.
    Pair,
    /// Text and packed data (MPI_CHAR, MPI_WCHAR, MPI_CHARACTER, MPI_PACKED): no
    /// predefined operation applies.
    None,
}

impl OpClass {
    /// How the standard names the group, for messages.
    fn name(self) -> &'static str {
        match self {
            OpClass::CInteger => "C integer",
            OpClass::FortranInteger => "Fortran integer",
            OpClass::Floating => "floating point",
            OpClass::Logical => "logical",
            OpClass::Complex => "complex",
            OpClass::Byte => "byte",
            OpClass::MultiLanguage => "multi-language",
            OpClass::Pair => "value-index pair",
            OpClass::None => "character or packed",
        }
    }
}

/// Whether MPI_CHAR takes part in reductions as a signed 8-bit integer
/// (`WEFT_CHAR_REDUCTIONS`, read at start; on by default, as MPICH and Open MPI behave).
pub(crate) static CHAR_REDUCTIONS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(true);

/// The group of predefined datatype `h`, or `None` for other handles.
pub fn op_class(h: Handle) -> Option<OpClass> {
    use OpClass as C;
    predefined(h)?;
    Some(match h {
        0x243 if CHAR_REDUCTIONS.load(std::sync::atomic::Ordering::Relaxed) => C::CInteger,
        0x201..=0x203 => C::MultiLanguage,
        0x208..=0x20f | 0x240 | 0x241 | 0x244 | 0x245 | 0x248 | 0x249 | 0x250 | 0x251 => {
            C::CInteger
        }
        0x258 | 0x259 => C::CInteger,
        0x219 | 0x2c1 | 0x2c9 | 0x2d1 | 0x2d9 | 0x2e1 => C::FortranInteger,
        0x210 | 0x214 | 0x220 | 0x21a | 0x21c | 0x2ca | 0x2d2 | 0x2da | 0x2e2 => C::Floating,
        0x218 | 0x238 | 0x239 | 0x2c0 | 0x2c8 | 0x2d0 | 0x2d8 | 0x2e0 => C::Logical,
        0x212 | 0x213 | 0x216 | 0x217 | 0x21b | 0x21d | 0x224 | 0x225 => C::Complex,
        0x2d3 | 0x2db | 0x2e3 | 0x2eb => C::Complex,
        0x247 => C::Byte,
        0x228..=0x22d | 0x230..=0x232 => C::Pair,
        _ => C::None,
    })
}

/// Whether the table of MPI-4.1 §6.9.2 (and §6.9.4 for MINLOC/MAXLOC) allows predefined
/// operation `op` on the datatypes of `class`.
///
/// One deliberate extension: the logical operations also accept the multi-language types
/// (MPI_AINT, MPI_OFFSET, MPI_COUNT), which are C integer types in C. The standard's table
/// leaves them out, but MPICH and Open MPI accept them and MPICH's own test suite
/// (coll/allred) relies on it; the result is the same as for any C integer.
pub fn op_allowed(op: Handle, class: OpClass) -> bool {
    use OpClass as C;
    match op {
        MPI_MAX | MPI_MIN => matches!(
            class,
            C::CInteger | C::FortranInteger | C::Floating | C::MultiLanguage
        ),
        MPI_SUM | MPI_PROD => matches!(
            class,
            C::CInteger | C::FortranInteger | C::Floating | C::Complex | C::MultiLanguage
        ),
        MPI_LAND | MPI_LOR | MPI_LXOR => {
            matches!(class, C::CInteger | C::Logical | C::MultiLanguage)
        }
        MPI_BAND | MPI_BOR | MPI_BXOR => matches!(
            class,
            C::CInteger | C::FortranInteger | C::Byte | C::MultiLanguage
        ),
        MPI_MINLOC | MPI_MAXLOC => class == C::Pair,
        _ => false,
    }
}

/// The name of predefined operation `op`, for messages; `None` for a handle that is no
/// predefined operation (a user operation, or a gap in the table of MPI 5.0 §20.3).
pub(crate) fn op_name(op: Handle) -> Option<&'static str> {
    Some(match op {
        MPI_SUM => "MPI_SUM",
        MPI_PROD => "MPI_PROD",
        MPI_MIN => "MPI_MIN",
        MPI_MAX => "MPI_MAX",
        MPI_LAND => "MPI_LAND",
        MPI_LOR => "MPI_LOR",
        MPI_LXOR => "MPI_LXOR",
        MPI_BAND => "MPI_BAND",
        MPI_BOR => "MPI_BOR",
        MPI_BXOR => "MPI_BXOR",
        MPI_MINLOC => "MPI_MINLOC",
        MPI_MAXLOC => "MPI_MAXLOC",
        MPI_REPLACE => "MPI_REPLACE",
        MPI_NO_OP => "MPI_NO_OP",
        _ => return None,
    })
}

/// Refuses, with MPI_ERR_OP, a predefined operation on a predefined datatype that MPI-4.1
/// §6.9.2 does not define it on (MPI_BAND on MPI_FLOAT, MPI_SUM on MPI_C_BOOL, MPI_MAX on a
/// complex type, any operation on MPI_CHAR, ...). User operations, and derived datatypes
/// (checked by weft against their basic kind), pass.
pub fn check_op(op: Handle, dt: Handle) -> R<()> {
    if !(MPI_SUM..=MPI_NO_OP).contains(&op) {
        return Ok(());
    }
    // Handles between the predefined operations' (0x25-0x27, 0x2b-0x2f, ...) name nothing;
    // whatever the datatype, they are refused as what they are.
    let Some(name) = op_name(op) else {
        return Err(err(
            MPI_ERR_OP,
            format!(
                "operation handle {op:#x} is not an operation: it lies among the predefined                  operations' handles (MPI 5.0 ABI) but names none of them"
            ),
        ));
    };
    let Some(class) = op_class(dt) else {
        return Ok(());
    };
    if op_allowed(op, class) {
        return Ok(());
    }
    let what = match op {
        MPI_REPLACE | MPI_NO_OP => "it is for one-sided accumulate operations only".to_string(),
        _ => format!(
            "{} is a {} type (MPI-4.1 §6.9.2)",
            predefined_name(dt),
            class.name()
        ),
    };
    Err(err(
        MPI_ERR_OP,
        format!("{name} is not defined on {}: {what}", predefined_name(dt)),
    ))
}

/// The type map of a predefined datatype.
pub fn predefined_map(h: Handle) -> Option<TypeMap> {
    use BasicKind as B;
    let (size, kind) = predefined(h)?;
    let basic = |k| Some(TypeMap::basic(k));
    match h {
        0x207 => basic(B::Packed),
        0x247 => basic(B::Byte),
        0x243 => basic(B::Char),
        0x23c => basic(B::Wchar),
        0x238 | 0x239 => basic(B::Bool),
        0x220 => basic(B::LongDouble),
        0x212 | 0x213 | 0x21b => basic(B::ComplexF32),
        0x216 | 0x217 | 0x21d => basic(B::ComplexF64),
        0x224 | 0x225 => basic(B::ComplexLongDouble),
        0x228 => Some(TypeMap::pair(B::F32)),
        0x229 => Some(TypeMap::pair(B::F64)),
        0x22a => Some(TypeMap::pair(B::I64)),
        0x22b | 0x232 => Some(TypeMap::pair(B::I32)),
        0x22c => Some(TypeMap::pair(B::I16)),
        0x22d => Some(TypeMap::pair(B::LongDouble)),
        0x230 => TypeMap::contiguous(2, &TypeMap::basic(B::F32)).ok(),
        0x231 => TypeMap::contiguous(2, &TypeMap::basic(B::F64)).ok(),
        _ => match kind.and_then(BasicKind::from_type_kind) {
            Some(k) => basic(k),
            None => TypeMap::contiguous(size as i64, &TypeMap::basic(B::Byte)).ok(),
        },
    }
}

/// The type map of any valid datatype (committed or not: constructors and queries accept
/// uncommitted ones).
pub fn map_of(dt: Handle) -> R<TypeMap> {
    if let Some(m) = predefined_map(dt) {
        return Ok(m);
    }
    let s = state("datatype")?;
    handle_index(K_TYPE, dt)
        .and_then(|i| s.types.get(i))
        .map(|d| (*d.map).clone())
        .ok_or_else(|| {
            err(
                MPI_ERR_TYPE,
                format!("datatype handle {dt:#x} is not valid"),
            )
        })
}

/// How a committed datatype's data lies in memory.
pub enum Layout {
    /// Items follow each other with no holes from the buffer address: `size` bytes per item.
    Contig { size: usize, kind: Option<TypeKind> },
    /// Anything else: moved by packing and unpacking.
    Map(Rc<TypeMap>),
}

/// Whether predefined `h` is a value-index pair whose C struct has padding (DOUBLE_INT,
/// LONG_INT, SHORT_INT, LONG_DOUBLE_INT): its size (the signature's bytes) is less than its
/// extent, so its raw memory is not its wire form.
#[inline]
fn padded_pair(h: Handle) -> bool {
    matches!(h, 0x229 | 0x22a | 0x22c | 0x22d)
}

/// The layout of committed datatype `dt` for moving data: every type has one wire form,
/// the packed signature, whether used directly or inside a derived type (MPI-4.1 §3.3.1:
/// only type signatures must match), so padded pairs are packed like a struct of the pair.
#[inline]
pub fn layout(dt: Handle) -> R<Layout> {
    if padded_pair(dt) {
        return predefined_map(dt)
            .map(|m| Layout::Map(Rc::new(m)))
            .ok_or_else(|| err(MPI_ERR_INTERN, format!("no type map for pair {dt:#x}")));
    }
    reduction_layout(dt)
}

/// The layout of committed datatype `dt` for reductions: a predefined pair stays in its C
/// memory form, which is what the reduction kernels' pair structs read. Both sides of a
/// reduction use this, so the padded bytes never meet a packed peer.
#[inline]
pub fn reduction_layout(dt: Handle) -> R<Layout> {
    if let Some((size, kind)) = predefined(dt) {
        return Ok(Layout::Contig { size, kind });
    }
    let s = state("datatype")?;
    match handle_index(K_TYPE, dt).and_then(|i| s.types.get(i)) {
        Some(d) if !d.committed => Err(err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} was not committed (MPI_Type_commit)"),
        )),
        Some(d) if d.map.is_contiguous() && d.map.true_lb() == 0 && d.map.lb() == 0 => {
            Ok(Layout::Contig {
                size: d.map.size_bytes() as usize,
                kind: d.map.reduction().map(|(k, _)| k),
            })
        }
        Some(d) => Ok(Layout::Map(Rc::clone(&d.map))),
        None => Err(err(
            MPI_ERR_TYPE,
            format!("datatype handle {dt:#x} is not a valid datatype"),
        )),
    }
}

/// Bytes of `count` items of a datatype laid out without holes, and its reduction kind.
/// Calls that do not stage non-contiguous data yet refuse those types here.
#[inline]
pub fn bytes_of(count: i64, dt: Handle) -> R<(usize, Option<TypeKind>)> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    match reduction_layout(dt)? {
        Layout::Contig { size, kind } => size
            .checked_mul(count as usize)
            .map(|b| (b, kind))
            .ok_or_else(|| count_overflow(count, size)),
        Layout::Map(_) => Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("datatype {dt:#x} has holes; this call takes only contiguous datatypes so far"),
        )),
    }
}

/// The error for `count` items of `size` bytes that do not fit in the address space.
pub fn count_overflow(count: impl std::fmt::Display, size: usize) -> crate::error::MpiError {
    err(
        MPI_ERR_COUNT,
        format!("count {count} of {size}-byte items overflows the address space"),
    )
}

/// Writes a value to a C output argument, or fails with MPI_ERR_ARG when it is NULL.
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

/// Makes a derived datatype of `map`, built from the datatypes `olds` (recorded for
/// MPI_Type_get_contents, with the family of constructor `counts`), and writes its handle to
/// `out`.
fn new_type(map: TypeMap, olds: &[Handle], out: *mut Handle, counts: Counts) -> R<()> {
    if out.is_null() {
        return Err(err(MPI_ERR_ARG, "newtype is NULL"));
    }
    let s = state("datatype constructor")?;
    let idx = s.types.insert(Derived {
        map: Rc::new(map),
        committed: false,
        name: String::new(),
    });
    let h = make_handle(K_TYPE, idx);
    let d = s.types.get(idx).expect("just inserted");
    if let Err(e) = crate::contents::record(h, &d.map, olds, counts) {
        s.types.remove(idx);
        return Err(e);
    }
    put!(out, h)
}

/// Which family of constructor made a datatype: the `int` forms, or the MPI-4 large-count
/// (`_c`) forms, whose arguments MPI_Type_get_contents_c returns as large counts
/// (MPI-4.1 §5.1.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counts {
    Int,
    Large,
}

/// `n` entries of a C array as i64 (counts, block lengths, displacements): MPI_ERR_COUNT
/// for a negative `n`, MPI_ERR_ARG for a NULL array of at least one entry.
fn array<T: Copy>(p: *const T, n: i64, what: &str, conv: impl Fn(T) -> i64) -> R<Vec<i64>> {
    if n < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {n} is negative")));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    let n = usize::try_from(n).map_err(|_| {
        err(
            MPI_ERR_COUNT,
            format!("count {n} exceeds this machine's address space"),
        )
    })?;
    // SAFETY: the array holds `n` entries (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|&x| conv(x))
        .collect())
}

/// `n` C ints as i64, refusing a negative `n` or a NULL array.
fn ints(p: *const c_int, n: c_int, what: &str) -> R<Vec<i64>> {
    array(p, n as i64, what, |x| x as i64)
}

/// `n` MPI_Aint values as i64, refusing a negative `n` or a NULL array.
fn aints(p: *const isize, n: c_int, what: &str) -> R<Vec<i64>> {
    array(p, n as i64, what, |x| x as i64)
}

/// `n` MPI_Count values, refusing a negative `n` or a NULL array.
fn counts(p: *const i64, n: i64, what: &str) -> R<Vec<i64>> {
    array(p, n, what, |x| x)
}

// The constructors' cores: every argument as i64, as weft's type maps take them. The `int`
// forms (MPI-4.1 §5.1.2-5.1.4, §5.1.7) widen their arguments and the large-count `_c` forms
// (MPI-4.1 §5.1.2, large count) pass theirs as they are; both end here. weft refuses negative
// counts and block lengths (MPI_ERR_COUNT) and type maps whose size or bounds overflow.

fn contiguous(count: i64, old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    new_type(TypeMap::contiguous(count, &map_of(old)?)?, &[old], out, c)
}

fn vector(count: i64, bl: i64, stride: i64, old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    let map = TypeMap::vector(count, bl, stride, &map_of(old)?)?;
    new_type(map, &[old], out, c)
}

fn hvector(count: i64, bl: i64, stride: i64, old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    let map = TypeMap::hvector(count, bl, stride, &map_of(old)?)?;
    new_type(map, &[old], out, c)
}

fn indexed(b: &[i64], d: &[i64], old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    new_type(TypeMap::indexed(b, d, &map_of(old)?)?, &[old], out, c)
}

fn hindexed(b: &[i64], d: &[i64], old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    new_type(TypeMap::hindexed(b, d, &map_of(old)?)?, &[old], out, c)
}

fn indexed_block(bl: i64, d: &[i64], old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    new_type(
        TypeMap::indexed_block(bl, d, &map_of(old)?)?,
        &[old],
        out,
        c,
    )
}

fn hindexed_block(bl: i64, d: &[i64], old: Handle, out: *mut Handle, c: Counts) -> R<()> {
    let map = TypeMap::hindexed_block(bl, d, &map_of(old)?)?;
    new_type(map, &[old], out, c)
}

/// The struct core; `types` holds one handle per block (NULL refused when there are any).
fn create_struct(b: &[i64], d: &[i64], types: *const Handle, out: *mut Handle, c: Counts) -> R<()> {
    let handles: Vec<Handle> = if b.is_empty() {
        Vec::new()
    } else if types.is_null() {
        return Err(err(MPI_ERR_ARG, "array_of_types is NULL"));
    } else {
        // SAFETY: the array holds one handle per block (the caller's contract).
        unsafe { std::slice::from_raw_parts(types, b.len()) }.to_vec()
    };
    let maps = handles.iter().map(|&h| map_of(h)).collect::<R<Vec<_>>>()?;
    new_type(TypeMap::create_struct(b, d, &maps)?, &handles, out, c)
}

fn resized(old: Handle, lb: i64, extent: i64, out: *mut Handle, c: Counts) -> R<()> {
    new_type(TypeMap::resized(&map_of(old)?, lb, extent)?, &[old], out, c)
}

/// MPI_ORDER_C or MPI_ORDER_FORTRAN.
fn order_of(order: c_int) -> R<Order> {
    match order {
        12 => Ok(Order::C),
        15 => Ok(Order::Fortran),
        o => Err(err(
            MPI_ERR_ARG,
            format!("order {o} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
        )),
    }
}

#[allow(clippy::too_many_arguments)]
fn subarray(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    order: c_int,
    old: Handle,
    out: *mut Handle,
    c: Counts,
) -> R<()> {
    let order = order_of(order)?;
    let map = TypeMap::subarray(sizes, subsizes, starts, order, &map_of(old)?)?;
    new_type(map, &[old], out, c)
}

/// The darray core: `gsizes` as i64, the other per-dimension arrays as C ints.
#[allow(clippy::too_many_arguments)]
fn darray(
    size: c_int,
    rank: c_int,
    gsizes: &[i64],
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: Handle,
    out: *mut Handle,
    c: Counts,
) -> R<()> {
    use weft::dtype::{DarrayDim, Distribution};
    let order = order_of(order)?;
    let n = gsizes.len() as i64;
    let d = array(distribs, n, "array_of_distribs", |x| x as i64)?;
    let a = array(dargs, n, "array_of_dargs", |x| x as i64)?;
    let p = array(psizes, n, "array_of_psizes", |x| x as i64)?;
    let mut dims = Vec::with_capacity(gsizes.len());
    for i in 0..gsizes.len() {
        let distrib = match d[i] {
            17 => Distribution::Block,
            18 => Distribution::Cyclic,
            16 => Distribution::None,
            x => {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("array_of_distribs[{i}] = {x} is not a distribution"),
                ))
            }
        };
        let darg = if a[i] == 19 { None } else { Some(a[i]) };
        dims.push(DarrayDim {
            gsize: gsizes[i],
            distrib,
            darg,
            psize: p[i],
        });
    }
    let map = TypeMap::darray(size as i64, rank as i64, &dims, order, &map_of(old)?)?;
    new_type(map, &[old], out, c)
}

/// MPI_Type_size (MPI-4.1 §5.1.5): MPI_UNDEFINED when the size does not fit in an int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(dt: Handle, size: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = map_of(dt).and_then(|m| {
        put!(
            size,
            c_int::try_from(m.size_bytes()).unwrap_or(MPI_UNDEFINED)
        )
    });
    finish(MPI_COMM_WORLD, "MPI_Type_size", r)
}

/// MPI_Type_size_c (MPI-4.1 §5.1.5, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_c(dt: Handle, size: *mut i64) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { type_size_c_as("MPI_Type_size_c", dt, size) }
}

/// MPI_Type_size_c's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Type_size_c's contract.
pub(crate) unsafe fn type_size_c_as(func: &str, dt: Handle, size: *mut i64) -> c_int {
    let r = map_of(dt).and_then(|m| {
        put!(
            size,
            i64::try_from(m.size_bytes()).unwrap_or(MPI_UNDEFINED as i64)
        )
    });
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Type_get_extent (MPI-4.1 §5.1.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = map_of(dt).and_then(|m| {
        put!(lb, m.lb() as isize)?;
        put!(extent, m.extent() as isize)
    });
    finish(MPI_COMM_WORLD, "MPI_Type_get_extent", r)
}

/// MPI_Type_get_true_extent (MPI-4.1 §5.1.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = map_of(dt).and_then(|m| {
        put!(lb, m.true_lb() as isize)?;
        put!(extent, m.true_extent() as isize)
    });
    finish(MPI_COMM_WORLD, "MPI_Type_get_true_extent", r)
}

/// MPI_Type_contiguous (MPI-4.1 §5.1.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(
    count: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = contiguous(count as i64, old, newtype, Counts::Int);
    finish(MPI_COMM_WORLD, "MPI_Type_contiguous", r)
}

/// MPI_Type_contiguous_c (MPI-4.1 §5.1.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous_c(
    count: i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = contiguous(count, old, newtype, Counts::Large);
    finish(MPI_COMM_WORLD, "MPI_Type_contiguous_c", r)
}

/// MPI_Type_vector (MPI-4.1 §5.1.2): stride in items of `old`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector(
    count: c_int,
    blocklength: c_int,
    stride: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let (n, b, s) = (count as i64, blocklength as i64, stride as i64);
    let r = vector(n, b, s, old, newtype, Counts::Int);
    finish(MPI_COMM_WORLD, "MPI_Type_vector", r)
}

/// MPI_Type_vector_c (MPI-4.1 §5.1.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = vector(count, blocklength, stride, old, newtype, Counts::Large);
    finish(MPI_COMM_WORLD, "MPI_Type_vector_c", r)
}

/// MPI_Type_create_hvector (MPI-4.1 §5.1.2): stride in bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    count: c_int,
    blocklength: c_int,
    stride: isize,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let (n, b, s) = (count as i64, blocklength as i64, stride as i64);
    let r = hvector(n, b, s, old, newtype, Counts::Int);
    finish(MPI_COMM_WORLD, "MPI_Type_create_hvector", r)
}

/// MPI_Type_create_hvector_c (MPI-4.1 §5.1.2, large count): stride in bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = hvector(count, blocklength, stride, old, newtype, Counts::Large);
    finish(MPI_COMM_WORLD, "MPI_Type_create_hvector_c", r)
}

/// MPI_Type_indexed (MPI-4.1 §5.1.2): displacements in items of `old`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed(
    count: c_int,
    blocklengths: *const c_int,
    displs: *const c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let b = ints(blocklengths, count, "array_of_blocklengths")?;
        let d = ints(displs, count, "array_of_displacements")?;
        indexed(&b, &d, old, newtype, Counts::Int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_indexed", r)
}

/// MPI_Type_indexed_c (MPI-4.1 §5.1.2, large count): displacements in items of `old`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed_c(
    count: i64,
    blocklengths: *const i64,
    displs: *const i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let b = counts(blocklengths, count, "array_of_blocklengths")?;
        let d = counts(displs, count, "array_of_displacements")?;
        indexed(&b, &d, old, newtype, Counts::Large)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_indexed_c", r)
}

/// MPI_Type_create_hindexed (MPI-4.1 §5.1.2): displacements in bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    count: c_int,
    blocklengths: *const c_int,
    displs: *const isize,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let b = ints(blocklengths, count, "array_of_blocklengths")?;
        let d = aints(displs, count, "array_of_displacements")?;
        hindexed(&b, &d, old, newtype, Counts::Int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_hindexed", r)
}

/// MPI_Type_create_hindexed_c (MPI-4.1 §5.1.2, large count): displacements in bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_c(
    count: i64,
    blocklengths: *const i64,
    displs: *const i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let b = counts(blocklengths, count, "array_of_blocklengths")?;
        let d = counts(displs, count, "array_of_displacements")?;
        hindexed(&b, &d, old, newtype, Counts::Large)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_hindexed_c", r)
}

/// MPI_Type_create_indexed_block (MPI-4.1 §5.1.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    count: c_int,
    blocklength: c_int,
    displs: *const c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let d = ints(displs, count, "array_of_displacements")?;
        indexed_block(blocklength as i64, &d, old, newtype, Counts::Int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_indexed_block", r)
}

/// MPI_Type_create_indexed_block_c (MPI-4.1 §5.1.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block_c(
    count: i64,
    blocklength: i64,
    displs: *const i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let d = counts(displs, count, "array_of_displacements")?;
        indexed_block(blocklength, &d, old, newtype, Counts::Large)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_indexed_block_c", r)
}

/// MPI_Type_create_hindexed_block (MPI-4.1 §5.1.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    count: c_int,
    blocklength: c_int,
    displs: *const isize,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let d = aints(displs, count, "array_of_displacements")?;
        hindexed_block(blocklength as i64, &d, old, newtype, Counts::Int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_hindexed_block", r)
}

/// MPI_Type_create_hindexed_block_c (MPI-4.1 §5.1.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block_c(
    count: i64,
    blocklength: i64,
    displs: *const i64,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let d = counts(displs, count, "array_of_displacements")?;
        hindexed_block(blocklength, &d, old, newtype, Counts::Large)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_hindexed_block_c", r)
}

/// MPI_Type_create_struct (MPI-4.1 §5.1.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct(
    count: c_int,
    blocklengths: *const c_int,
    displs: *const isize,
    types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let b = ints(blocklengths, count, "array_of_blocklengths")?;
        let d = aints(displs, count, "array_of_displacements")?;
        create_struct(&b, &d, types, newtype, Counts::Int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_struct", r)
}

/// MPI_Type_create_struct_c (MPI-4.1 §5.1.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct_c(
    count: i64,
    blocklengths: *const i64,
    displs: *const i64,
    types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let b = counts(blocklengths, count, "array_of_blocklengths")?;
        let d = counts(displs, count, "array_of_displacements")?;
        create_struct(&b, &d, types, newtype, Counts::Large)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_struct_c", r)
}

/// MPI_Type_create_resized (MPI-4.1 §5.1.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(
    old: Handle,
    lb: isize,
    extent: isize,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = resized(old, lb as i64, extent as i64, newtype, Counts::Int);
    finish(MPI_COMM_WORLD, "MPI_Type_create_resized", r)
}

/// MPI_Type_create_resized_c (MPI-4.1 §5.1.7, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized_c(
    old: Handle,
    lb: i64,
    extent: i64,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = resized(old, lb, extent, newtype, Counts::Large);
    finish(MPI_COMM_WORLD, "MPI_Type_create_resized_c", r)
}

/// MPI_Type_create_subarray (MPI-4.1 §5.1.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let a = ints(sizes, ndims, "array_of_sizes")?;
        let b = ints(subsizes, ndims, "array_of_subsizes")?;
        let c = ints(starts, ndims, "array_of_starts")?;
        subarray(&a, &b, &c, order, old, newtype, Counts::Int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_subarray", r)
}

/// MPI_Type_create_subarray_c (MPI-4.1 §5.1.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray_c(
    ndims: c_int,
    sizes: *const i64,
    subsizes: *const i64,
    starts: *const i64,
    order: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let n = ndims as i64;
        let a = counts(sizes, n, "array_of_sizes")?;
        let b = counts(subsizes, n, "array_of_subsizes")?;
        let c = counts(starts, n, "array_of_starts")?;
        subarray(&a, &b, &c, order, old, newtype, Counts::Large)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_subarray_c", r)
}

/// MPI_Type_dup (MPI-4.1 §5.1.2 / §7.7): a committed copy.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(old: Handle, newtype: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { type_dup_as("MPI_Type_dup", old, newtype) }
}

/// MPI_Type_dup's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Type_dup's contract.
pub(crate) unsafe fn type_dup_as(func: &str, old: Handle, newtype: *mut Handle) -> c_int {
    let r = (|| {
        let committed = predefined(old).is_some()
            || handle_index(K_TYPE, old)
                .and_then(|i| state(func).ok()?.types.get(i).map(|d| d.committed))
                .unwrap_or(false);
        new_type(map_of(old)?.dup(), &[old], newtype, Counts::Int)?;
        // SAFETY: just written.
        let h = unsafe { *newtype };
        if let Some(d) = handle_index(K_TYPE, h).and_then(|i| state(func).ok()?.types.get_mut(i)) {
            d.committed = committed;
        }
        // Attributes travel by their keyval's copy callback (MPI-4.1 §7.7.4).
        crate::tattr::copy_all(old, h)
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Type_commit (MPI-4.1 §5.1.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(dt: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
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
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(dt: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { type_free_as("MPI_Type_free", dt) }
}

/// MPI_Type_free's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Type_free's contract.
pub(crate) unsafe fn type_free_as(func: &str, dt: *mut Handle) -> c_int {
    let r = (|| {
        if dt.is_null() {
            return Err(err(MPI_ERR_ARG, "datatype pointer is NULL"));
        }
        // SAFETY: non-null, readable and writable.
        let h = unsafe { *dt };
        let s = state(func)?;
        if crate::fortran::is_f90(h) {
            return Err(err(
                MPI_ERR_TYPE,
                format!("datatype {h:#x} is an MPI_Type_create_f90_* type, which is predefined and cannot be freed"),
            ));
        }
        if handle_index(K_TYPE, h)
            .and_then(|i| s.types.get(i))
            .is_none()
        {
            return Err(err(
                MPI_ERR_TYPE,
                format!("datatype {h:#x} is predefined or not valid and cannot be freed"),
            ));
        }
        // Attributes are deleted first (MPI-4.1 §7.7.4); a failing delete callback's error
        // is returned, the datatype is freed all the same.
        let deleted = crate::tattr::delete_all(h);
        crate::contents::forget(h);
        match handle_index(K_TYPE, h).and_then(|i| s.types.remove(i)) {
            Some(_) => put!(dt, MPI_DATATYPE_NULL).and(deleted),
            None => Err(err(
                MPI_ERR_TYPE,
                format!("datatype {h:#x} is predefined or not valid and cannot be freed"),
            )),
        }
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Type_get_name (MPI-4.1 §7.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(
    dt: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if dt == MPI_DATATYPE_NULL {
            // SAFETY: forwarded caller contract.
            unsafe { write_c_string("MPI_DATATYPE_NULL", name, MPI_MAX_OBJECT_NAME, len) };
            return Ok(());
        }
        map_of(dt)?;
        let s = state("MPI_Type_get_name")?;
        let text = match handle_index(K_TYPE, dt).and_then(|i| s.types.get(i)) {
            Some(d) => d.name.clone(),
            None => s
                .type_names
                .get(&dt)
                .cloned()
                .unwrap_or_else(|| predefined_name(dt).to_string()),
        };
        // SAFETY: forwarded caller contract.
        unsafe { write_c_string(&text, name, MPI_MAX_OBJECT_NAME, len) };
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_name", r)
}

/// MPI_Type_set_name (MPI-4.1 §7.8): derived and predefined datatypes alike (a predefined
/// one keeps its new name in this process until renamed again).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(dt: Handle, name: *const c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: a NUL-terminated string (the caller's contract).
        let text = unsafe { crate::env::c_str(name, "name")? };
        let s = state("MPI_Type_set_name")?;
        if let Some(d) = handle_index(K_TYPE, dt).and_then(|i| s.types.get_mut(i)) {
            d.name = text;
            return Ok(());
        }
        if predefined(dt).is_none() {
            return Err(err(
                MPI_ERR_TYPE,
                format!("datatype {dt:#x} is not a datatype (freed or never created)"),
            ));
        }
        s.type_names.insert(dt, text);
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_set_name", r)
}

/// The predefined Fortran datatype of `typeclass` (MPI_TYPECLASS_INTEGER, _REAL, _COMPLEX)
/// whose size is `size` bytes, as MPI_Type_match_size picks it.
fn match_size(typeclass: c_int, size: c_int) -> R<Handle> {
    let table: &[(c_int, Handle)] = match typeclass {
        MPI_TYPECLASS_INTEGER => &[(1, 0x2c1), (2, 0x2c9), (4, 0x2d1), (8, 0x2d9), (16, 0x2e1)],
        MPI_TYPECLASS_REAL => &[(2, 0x2ca), (4, 0x2d2), (8, 0x2da), (16, 0x2e2)],
        MPI_TYPECLASS_COMPLEX => &[(4, 0x2d3), (8, 0x2db), (16, 0x2e3), (32, 0x2eb)],
        _ => {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "typeclass {typeclass} is not MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_REAL or \
                     MPI_TYPECLASS_COMPLEX"
                ),
            ))
        }
    };
    table
        .iter()
        .find(|&&(n, _)| n == size)
        .map(|&(_, h)| h)
        .ok_or_else(|| {
            err(
                MPI_ERR_ARG,
                format!("no predefined datatype of typeclass {typeclass} has {size} bytes"),
            )
        })
}

/// MPI_Type_get_value_index (MPI-4.1 §6.9.4): the predefined value-index pair type of
/// `value` and `index` (MPI_FLOAT_INT, ..., MPI_2INT), or MPI_DATATYPE_NULL when no
/// predefined pair has those parts.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_value_index(
    value: Handle,
    index: Handle,
    pair: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        for (h, what) in [(value, "value_type"), (index, "index_type")] {
            if predefined(h).is_none() && map_of(h).is_err() {
                return Err(err(
                    MPI_ERR_TYPE,
                    format!("{what} {h:#x} is not a valid datatype"),
                ));
            }
        }
        const INT: Handle = 0x209;
        let p = match (value, index) {
            (0x210, INT) => 0x228, // FLOAT_INT
            (0x214, INT) => 0x229, // DOUBLE_INT
            (0x20a, INT) => 0x22a, // LONG_INT
            (INT, INT) => 0x22b,   // 2INT
            (0x208, INT) => 0x22c, // SHORT_INT
            (0x220, INT) => 0x22d, // LONG_DOUBLE_INT
            _ => MPI_DATATYPE_NULL,
        };
        put!(pair, p)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_value_index", r)
}

/// MPI_Type_match_size (MPI-4.1, Fortran support: size-specific datatypes): the predefined
/// INTEGERn, REALn or COMPLEXn type of `size` bytes (a predefined handle, never to be freed).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_match_size(
    typeclass: c_int,
    size: c_int,
    datatype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Type_match_size").and_then(|_| put!(datatype, match_size(typeclass, size)?));
    finish(MPI_COMM_WORLD, "MPI_Type_match_size", r)
}

/// MPI_Get_address (MPI-4.1 §5.1.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut isize) -> c_int {
    let _entered = crate::threads::enter();
    let r = put!(address, location as isize);
    finish(MPI_COMM_WORLD, "MPI_Get_address", r)
}

/// MPI_Aint_add (MPI-4.1 §5.1.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    let _entered = crate::threads::enter();
    base.wrapping_add(disp)
}

/// MPI_Aint_diff (MPI-4.1 §5.1.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Aint_diff(a: isize, b: isize) -> isize {
    let _entered = crate::threads::enter();
    a.wrapping_sub(b)
}

/// MPI_Pack_size (MPI-4.1 §5.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(
    count: c_int,
    dt: Handle,
    comm: Handle,
    size: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = pack_size(count as i64, dt, comm).and_then(|n| {
        let n = c_int::try_from(n).map_err(|_| {
            err(
                MPI_ERR_COUNT,
                format!("{n} packed bytes do not fit an int (use MPI_Pack_size_c)"),
            )
        })?;
        put!(size, n)
    });
    finish(comm, "MPI_Pack_size", r)
}

/// MPI_Pack_size_c (MPI-4.1 §5.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size_c(
    count: i64,
    dt: Handle,
    comm: Handle,
    size: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = pack_size(count, dt, comm).and_then(|n| put!(size, n));
    finish(comm, "MPI_Pack_size_c", r)
}

fn pack_size(count: i64, dt: Handle, comm: Handle) -> R<i64> {
    state("MPI_Pack_size")?.comm(comm)?;
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("incount {count} is negative")));
    }
    Ok(map_of(dt)?.packed_bytes(count as u64)? as i64)
}

/// The user bytes `count` items of `map` touch, as a slice starting at or below `buf`
/// (weft's pack and unpack index the buffer address inside the slice), and that index.
///
/// # Safety
/// `buf` must be valid for the footprint of `count` items and, when the footprint starts
/// above `buf`, for the bytes between `buf` and it.
pub unsafe fn user_span<'a>(
    map: &TypeMap,
    buf: *const c_void,
    count: u64,
) -> R<(&'a mut [u8], usize)> {
    let Some((lo, hi)) = map.footprint(count)? else {
        return Ok((&mut [], 0));
    };
    if buf.is_null() {
        return Err(err(
            MPI_ERR_BUFFER,
            "buffer is NULL (this call does not take MPI_BOTTOM with absolute addresses yet)",
        ));
    }
    let lo = lo.min(0);
    let start = (buf as isize).wrapping_add(lo as isize) as *mut u8;
    // SAFETY: the caller's contract covers [buf + min(lo, 0), buf + hi).
    let span = unsafe { std::slice::from_raw_parts_mut(start, (hi - lo) as usize) };
    Ok((span, (-lo) as usize))
}

/// The user bytes `count` items of `map` at `buf` touch, the index of `buf` in them, and
/// the map to index them with: `map` itself, or for `buf` = MPI_BOTTOM (NULL) with absolute
/// displacements (from MPI_Get_address, MPI-4.1 §5.1.12) a copy of `map` shifted by the
/// footprint's start, whose slice begins at that start with origin 0. This is
/// [`user_span`] plus MPI_BOTTOM; the shifted map (when `Some`) must be used in place of
/// `map` for the pack or unpack.
///
/// # Safety
/// As for [`user_span`]; with MPI_BOTTOM, the bytes at the absolute addresses the type's
/// blocks name must be valid (MPI's contract). Nothing is promised for the gaps between
/// blocks, which may be unmapped (a struct of the addresses of a stack and a heap variable):
/// see the note inside on what the returned slice may cover.
pub unsafe fn user_view<'a>(
    map: &TypeMap,
    buf: *const c_void,
    count: u64,
) -> R<(&'a mut [u8], usize, Option<TypeMap>)> {
    if !buf.is_null() {
        // SAFETY: forwarded caller contract.
        let (span, origin) = unsafe { user_span(map, buf, count)? };
        return Ok((span, origin, None));
    }
    let Some((lo, hi)) = map.footprint(count)? else {
        return Ok((&mut [], 0, None));
    };
    if lo <= 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!(
                "buffer is NULL (MPI_BOTTOM) but the datatype's data starts at byte {lo}: \
                 with MPI_BOTTOM its displacements must be absolute addresses"
            ),
        ));
    }
    if hi as u64 > isize::MAX as u64 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!(
                "with MPI_BOTTOM the datatype's data ends at address {hi:#x}, beyond the \
                 address space"
            ),
        ));
    }
    let shifted = map.shifted(-lo)?;
    // SAFETY: (and its limit) the slice spans [lo, hi), the footprint, which is inside the
    // address space (checked above) and within isize::MAX bytes (hi - lo <= hi). Every read
    // and write through it, by weft's pack and unpack with `shifted`, falls in a block of
    // the type, which the caller's contract makes valid. The gaps between blocks are not
    // covered by any contract and may be unmapped or belong to other objects; no access
    // falls there, but Rust asks a slice to be valid for its whole length, so for a
    // footprint with such gaps this slice is formally outside that rule. Removing that
    // needs pack/unpack over raw pointers in weft (requested, notes/requests.md); until
    // then the only accesses are the blocks'.
    let span =
        unsafe { std::slice::from_raw_parts_mut(lo as usize as *mut u8, (hi - lo) as usize) };
    Ok((span, 0, Some(shifted)))
}

/// MPI_Pack's body on 64-bit counts: packs `count` items of `dt` at byte `pos` of
/// `outbuf` (`outsize` bytes); returns the position after them.
unsafe fn pack(
    inbuf: *const c_void,
    count: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    pos: i64,
    comm: Handle,
) -> R<i64> {
    state("MPI_Pack")?.comm(comm)?;
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("incount {count} is negative")));
    }
    let map = map_of(dt)?;
    let n = map.packed_bytes(count as u64)? as usize;
    if pos < 0 || pos as u64 + n as u64 > outsize.max(0) as u64 {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("packing {n} bytes at position {pos} overflows outsize {outsize}"),
        ));
    }
    if n > 0 {
        // SAFETY: the caller's buffers cover the footprint and `outsize` bytes.
        let (src, origin, shifted) = unsafe { user_view(&map, inbuf, count as u64)? };
        let out =
            // SAFETY: `outbuf` holds `outsize` bytes (MPI_Pack's contract) and pos + n <=
            // outsize (checked above).
            unsafe { std::slice::from_raw_parts_mut((outbuf as *mut u8).add(pos as usize), n) };
        shifted
            .as_ref()
            .unwrap_or(&map)
            .pack(src, origin, count as u64, out)?;
    }
    Ok(pos + n as i64)
}

/// MPI_Unpack's body on 64-bit counts: unpacks `count` items of `dt` from byte `pos` of
/// `inbuf` (`insize` bytes); returns the position after them.
unsafe fn unpack(
    inbuf: *const c_void,
    insize: i64,
    pos: i64,
    outbuf: *mut c_void,
    count: i64,
    dt: Handle,
    comm: Handle,
) -> R<i64> {
    state("MPI_Unpack")?.comm(comm)?;
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("outcount {count} is negative")));
    }
    let map = map_of(dt)?;
    let n = map.packed_bytes(count as u64)? as usize;
    if pos < 0 || pos as u64 + n as u64 > insize.max(0) as u64 {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("unpacking {n} bytes at position {pos} overruns insize {insize}"),
        ));
    }
    if n > 0 {
        // SAFETY: the caller's buffers cover `insize` bytes and the footprint.
        let packed =
            unsafe { std::slice::from_raw_parts((inbuf as *const u8).add(pos as usize), n) };
        // SAFETY: `outbuf` is valid for the footprint of `count` items of `dt` (MPI_Unpack's
        // contract), which is what user_view requires.
        let (dst, origin, shifted) = unsafe { user_view(&map, outbuf, count as u64)? };
        shifted
            .as_ref()
            .unwrap_or(&map)
            .unpack(packed, dst, origin, count as u64)?;
    }
    Ok(pos + n as i64)
}

/// Reads `*position`, runs `f` from it, writes the new position back (as `T`, which must
/// hold it).
fn at_position<T: Copy + Into<i64> + TryFrom<i64>>(
    position: *mut T,
    f: impl FnOnce(i64) -> R<i64>,
) -> R<()> {
    if position.is_null() {
        return Err(err(MPI_ERR_ARG, "position is NULL"));
    }
    // SAFETY: non-null and writable (the caller's MPI contract).
    let pos = unsafe { *position }.into();
    let end = f(pos)?;
    let end = T::try_from(end).map_err(|_| {
        err(
            MPI_ERR_COUNT,
            format!("position {end} does not fit the position argument (use the _c form)"),
        )
    })?;
    put!(position, end)
}

/// MPI_Pack (MPI-4.1 §5.2): appends `count` items at `*position` of `outbuf`.
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
    let _entered = crate::threads::enter();
    // SAFETY: MPI_Pack's contract for the caller's buffers, which pack requires.
    let r = at_position(position, |pos| unsafe {
        pack(inbuf, count as i64, dt, outbuf, outsize as i64, pos, comm)
    });
    finish(comm, "MPI_Pack", r)
}

/// MPI_Pack_c (MPI-4.1 §5.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_c(
    inbuf: *const c_void,
    count: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut i64,
    comm: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: MPI_Pack_c's contract for the caller's buffers, which pack requires.
    let r = at_position(position, |pos| unsafe {
        pack(inbuf, count, dt, outbuf, outsize, pos, comm)
    });
    finish(comm, "MPI_Pack_c", r)
}

/// MPI_Unpack (MPI-4.1 §5.2).
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
    let _entered = crate::threads::enter();
    // SAFETY: MPI_Unpack's contract for the caller's buffers, which unpack requires.
    let r = at_position(position, |pos| unsafe {
        unpack(inbuf, insize as i64, pos, outbuf, count as i64, dt, comm)
    });
    finish(comm, "MPI_Unpack", r)
}

/// MPI_Unpack_c (MPI-4.1 §5.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_c(
    inbuf: *const c_void,
    insize: i64,
    position: *mut i64,
    outbuf: *mut c_void,
    count: i64,
    dt: Handle,
    comm: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: MPI_Unpack_c's contract for the caller's buffers, which unpack requires.
    let r = at_position(position, |pos| unsafe {
        unpack(inbuf, insize, pos, outbuf, count, dt, comm)
    });
    finish(comm, "MPI_Unpack_c", r)
}

/// MPI_Type_get_extent_c (MPI-4.1 §5.1.7, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_c(
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { type_get_extent_c_as("MPI_Type_get_extent_c", dt, lb, extent) }
}

/// MPI_Type_get_extent_c's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Type_get_extent_c's contract.
pub(crate) unsafe fn type_get_extent_c_as(
    func: &str,
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    let r = map_of(dt).and_then(|m| {
        put!(lb, m.lb())?;
        put!(extent, m.extent())
    });
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Type_get_true_extent_c (MPI-4.1 §5.1.8, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_c(
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { type_get_true_extent_c_as("MPI_Type_get_true_extent_c", dt, lb, extent) }
}

/// MPI_Type_get_true_extent_c's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Type_get_true_extent_c's contract.
pub(crate) unsafe fn type_get_true_extent_c_as(
    func: &str,
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    let r = map_of(dt).and_then(|m| {
        put!(lb, m.true_lb())?;
        put!(extent, m.true_extent())
    });
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Type_create_darray (MPI-4.1 §5.1.4): this process's part of a distributed array.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let g = ints(gsizes, ndims, "array_of_gsizes")?;
        darray(
            size,
            rank,
            &g,
            distribs,
            dargs,
            psizes,
            order,
            old,
            newtype,
            Counts::Int,
        )
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_darray", r)
}

/// MPI_Type_create_darray_c (MPI-4.1 §5.1.4, large count): global sizes as MPI_Count.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const i64,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: Handle,
    newtype: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let g = counts(gsizes, ndims as i64, "array_of_gsizes")?;
        darray(
            size,
            rank,
            &g,
            distribs,
            dargs,
            psizes,
            order,
            old,
            newtype,
            Counts::Large,
        )
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_darray_c", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLOAT: Handle = 0x210;
    const LONG_DOUBLE: Handle = 0x220;
    const C_DOUBLE_COMPLEX: Handle = 0x216;
    const C_BOOL: Handle = 0x238;
    const CHAR: Handle = 0x243;
    const INT: Handle = 0x209;
    const INTEGER: Handle = 0x219;
    const AINT: Handle = 0x201;
    const SHORT_INT: Handle = 0x22c;

    #[test]
    fn every_predefined_type_has_a_group() {
        for h in 0x200..0x300 {
            assert_eq!(predefined(h).is_some(), op_class(h).is_some(), "{h:#x}");
            if predefined(h).is_some() {
                assert!(!predefined_name(h).is_empty(), "{h:#x} has no name");
            }
        }
    }

    #[test]
    fn predefined_ops_follow_the_standard_table() {
        let ok = |op, dt| check_op(op, dt).is_ok();
        let refused = |op, dt| {
            let e = check_op(op, dt).unwrap_err();
            assert_eq!(e.class, MPI_ERR_OP, "{}", e.message);
            assert!(e.message.contains(predefined_name(dt)), "{}", e.message);
        };
        assert!(ok(MPI_SUM, FLOAT) && ok(MPI_MAX, LONG_DOUBLE) && ok(MPI_PROD, C_DOUBLE_COMPLEX));
        assert!(ok(MPI_LAND, INT) && ok(MPI_BXOR, INT) && ok(MPI_LOR, C_BOOL));
        assert!(ok(MPI_BAND, MPI_BYTE) && ok(MPI_BOR, INTEGER) && ok(MPI_MINLOC, SHORT_INT));
        assert!(ok(MPI_LXOR, AINT), "the documented extension");
        refused(MPI_BAND, FLOAT);
        refused(MPI_MAX, C_DOUBLE_COMPLEX);
        refused(MPI_SUM, C_BOOL);
        refused(MPI_SUM, MPI_BYTE);
        refused(MPI_LAND, INTEGER);
        // MPI_CHAR reduces as a signed integer, as in MPICH and Open MPI (the default of
        // WEFT_CHAR_REDUCTIONS; tests/compat.rs runs the strict table).
        assert!(ok(MPI_SUM, CHAR) && ok(MPI_BAND, CHAR));
        refused(MPI_MINLOC, INT);
        refused(MPI_SUM, SHORT_INT);
        refused(MPI_REPLACE, INT);
        // User operations and derived types are not judged here.
        assert!(ok(0x1234_5678, FLOAT) && ok(MPI_BAND, 0x9999_0000));
        // Handles in the gaps of the predefined operations' table are no operation, on any
        // datatype, and the message says so instead of calling them user operations.
        for gap in [0x25, 0x27, 0x2b, 0x2f, 0x33, 0x37, 0x3a, 0x3b] {
            for dt in [INT, FLOAT, 0x9999_0000] {
                let e = check_op(gap, dt).unwrap_err();
                assert_eq!(e.class, MPI_ERR_OP);
                assert!(
                    e.message.contains(&format!("{gap:#x}")) && e.message.contains("names none"),
                    "{}",
                    e.message
                );
            }
        }
        let e = check_op(MPI_MINLOC, INT).unwrap_err();
        assert!(
            e.message
                .starts_with("MPI_MINLOC is not defined on MPI_INT"),
            "{}",
            e.message
        );
    }

    #[test]
    fn match_size_gives_predefined_types_of_that_size() {
        for (class, sizes) in [
            (MPI_TYPECLASS_INTEGER, &[1, 2, 4, 8, 16][..]),
            (MPI_TYPECLASS_REAL, &[4, 8, 16][..]),
            (MPI_TYPECLASS_COMPLEX, &[8, 16, 32][..]),
        ] {
            for &n in sizes {
                let h = super::match_size(class, n).unwrap();
                assert_eq!(predefined(h).map(|p| p.0), Some(n as usize), "{class} {n}");
            }
            assert_eq!(super::match_size(class, 3).unwrap_err().class, MPI_ERR_ARG);
        }
        assert_eq!(super::match_size(7, 4).unwrap_err().class, MPI_ERR_ARG);
    }

    #[test]
    fn new_kinds_map_with_c_sizes() {
        use TypeKind::*;
        assert_eq!(predefined(LONG_DOUBLE), Some((16, Some(LongDouble))));
        assert_eq!(predefined(0x212), Some((8, Some(ComplexF32))));
        assert_eq!(predefined(0x21d), Some((16, Some(ComplexF64))));
        assert_eq!(predefined(0x225), Some((32, Some(ComplexLongDouble))));
        assert_eq!(predefined(SHORT_INT), Some((8, Some(I16I32))));
        assert_eq!(predefined(0x22d), Some((32, Some(LongDoubleI32))));
        assert_eq!(predefined(0x230), Some((8, Some(F32F32))));
        assert_eq!(predefined(0x231), Some((16, Some(F64F64))));
        assert!(check_op(MPI_MAXLOC, 0x231).is_ok() && check_op(MPI_SUM, 0x230).is_err());
        for (h, k) in [(SHORT_INT, I16I32), (0x22d, LongDoubleI32)] {
            let m = predefined_map(h).unwrap();
            assert_eq!(m.extent() as usize, k.size_bytes());
            assert_eq!(m.reduction_kind(), Some((k, 1)));
        }
    }
}
