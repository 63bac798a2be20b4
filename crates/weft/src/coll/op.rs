//! Reduction operations (MPI-4.1 §6.9.2): the predefined ones and user closures, with the
//! check of which operation applies to which type and the reduction kernels themselves
//! (plain loops over typed slices that the compiler vectorises). C's `long double` has no
//! Rust type: on x86-64 its kernels are small x87 instruction sequences (module `x87`);
//! elsewhere [`Op::check`] refuses the `long double` kinds. Depends on [`super::datatype`]
//! only; knows nothing of communicators.
//!
//! Convention: `apply(a, b)` stores `a ∘ b` into `b`, where `a` holds the contributions of
//! lower ranks (MPI's `invec`, `inoutvec`). Non-commutative operations rely on that order.

use super::datatype::{
    ComplexF32, ComplexF64, Datatype, TypeKind, F32F32, F32I32, F64F64, F64I32, I16I32, I32I32,
    I64I32,
};
#[cfg(target_arch = "x86_64")]
use super::datatype::{ComplexLongDouble, LongDouble, LongDoubleI32};
use std::fmt;
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result};

type UserFn = dyn Fn(&[u8], &mut [u8]);

/// A user-defined operation: a closure over typed slices and whether it commutes.
#[derive(Clone)]
pub struct UserOp {
    f: Rc<UserFn>,
    kind: TypeKind,
    commutative: bool,
    name: Rc<str>,
}

/// A reduction operation.
#[derive(Clone)]
pub enum Op {
    /// Sum (MPI_SUM).
    Sum,
    /// Product (MPI_PROD).
    Prod,
    /// Minimum (MPI_MIN).
    Min,
    /// Maximum (MPI_MAX).
    Max,
    /// Logical and of integers (MPI_LAND): 1 when both are non-zero.
    Land,
    /// Logical or (MPI_LOR).
    Lor,
    /// Logical exclusive or (MPI_LXOR).
    Lxor,
    /// Bitwise and (MPI_BAND).
    Band,
    /// Bitwise or (MPI_BOR).
    Bor,
    /// Bitwise exclusive or (MPI_BXOR).
    Bxor,
    /// Minimum value and the smallest index holding it (MPI_MINLOC), on pair types.
    MinLoc,
    /// Maximum value and the smallest index holding it (MPI_MAXLOC), on pair types.
    MaxLoc,
    /// A user operation (MPI_Op_create).
    User(UserOp),
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Op {
    /// A user operation on elements of `T`: `f(a, b)` must store `a[i] ∘ b[i]` into `b[i]`,
    /// where `a` holds lower ranks' contributions. A non-commutative operation is applied in
    /// rank order; a commutative one may be applied in any order.
    pub fn user<T: Datatype>(
        name: &str,
        commutative: bool,
        f: impl Fn(&[T], &mut [T]) + 'static,
    ) -> Op {
        Op::User(UserOp {
            f: Rc::new(move |a: &[u8], b: &mut [u8]| {
                f(bytemuck::cast_slice(a), bytemuck::cast_slice_mut(b))
            }),
            kind: T::KIND,
            commutative,
            name: name.into(),
        })
    }

    /// The operation's name, for messages.
    pub fn name(&self) -> String {
        match self {
            Op::Sum => "sum".into(),
            Op::Prod => "prod".into(),
            Op::Min => "min".into(),
            Op::Max => "max".into(),
            Op::Land => "land".into(),
            Op::Lor => "lor".into(),
            Op::Lxor => "lxor".into(),
            Op::Band => "band".into(),
            Op::Bor => "bor".into(),
            Op::Bxor => "bxor".into(),
            Op::MinLoc => "minloc".into(),
            Op::MaxLoc => "maxloc".into(),
            Op::User(u) => format!("user op {}", u.name),
        }
    }

    /// A number naming a predefined operation, the same for every value of it; None for a
    /// user operation (two of which may differ in everything but their name).
    #[inline]
    pub(crate) fn predefined_code(&self) -> Option<u8> {
        Some(match self {
            Op::Sum => 0,
            Op::Prod => 1,
            Op::Min => 2,
            Op::Max => 3,
            Op::Land => 4,
            Op::Lor => 5,
            Op::Lxor => 6,
            Op::Band => 7,
            Op::Bor => 8,
            Op::Bxor => 9,
            Op::MinLoc => 10,
            Op::MaxLoc => 11,
            Op::User(_) => return None,
        })
    }

    /// True when the operation may be applied in any order.
    pub fn is_commutative(&self) -> bool {
        match self {
            Op::User(u) => u.commutative,
            _ => true,
        }
    }

    /// Checks that the operation applies to elements of `kind` (the table of MPI-4.1 §6.9.2
    /// on weft's kinds: sum and product on numbers and complex numbers, minimum and maximum
    /// on real numbers, the logical and bitwise operations on integers, MINLOC and MAXLOC on
    /// value-index pairs); an `InvalidOp` error naming both otherwise. The `long double`
    /// kinds give an `Unsupported` error off x86-64, where weft has no kernel for the
    /// platform's format.
    #[inline]
    pub fn check(&self, kind: TypeKind) -> Result<()> {
        let ok = match self {
            Op::Sum | Op::Prod => !kind.is_pair(),
            Op::Min | Op::Max => !kind.is_pair() && !kind.is_complex(),
            Op::Land | Op::Lor | Op::Lxor | Op::Band | Op::Bor | Op::Bxor => kind.is_integer(),
            Op::MinLoc | Op::MaxLoc => kind.is_pair(),
            Op::User(u) => u.kind == kind,
        };
        let unsupported =
            kind.has_long_double() && !matches!(self, Op::User(_)) && !cfg!(target_arch = "x86_64");
        if ok && !unsupported {
            return Ok(());
        }
        Err(self.check_error(kind, ok))
    }

    /// What [`Op::check`] reports: `applies` when the operation is defined on `kind` but
    /// weft has no kernel for it on this platform.
    #[cold]
    #[inline(never)]
    fn check_error(&self, kind: TypeKind, applies: bool) -> Error {
        if applies {
            return Error::new(
                ErrorKind::Unsupported,
                format!(
                    "operation {} on type {}: weft reduces long double only on x86-64 \
                     (the 80-bit x87 format); use a user operation on this platform",
                    self.name(),
                    kind.name()
                ),
            );
        }
        let why = match self {
            Op::User(u) => format!("it was created for {}", u.kind.name()),
            Op::MinLoc | Op::MaxLoc => "it applies to value-index pairs only".into(),
            Op::Min | Op::Max if kind.is_complex() => "complex numbers are not ordered".into(),
            Op::Sum | Op::Prod | Op::Min | Op::Max => "it does not apply to pairs".into(),
            _ => "it applies to integer types only".into(),
        };
        Error::new(
            ErrorKind::InvalidOp,
            format!(
                "operation {} is not defined on type {}: {why}",
                self.name(),
                kind.name()
            ),
        )
    }

    /// Stores `a ∘ b` into `b`, element by element, for layers that combine contributions
    /// themselves (OpenSHMEM's active-set reductions): checks the operation against `kind`,
    /// the lengths (equal, whole elements) and the alignment.
    pub fn combine(&self, kind: TypeKind, a: &[u8], b: &mut [u8]) -> Result<()> {
        self.check(kind)?;
        let (size, align) = (kind.size_bytes(), kind.align_bytes());
        let aligned = |p: *const u8| (p as usize).is_multiple_of(align);
        if a.len() != b.len()
            || !a.len().is_multiple_of(size)
            || !aligned(a.as_ptr())
            || !aligned(b.as_ptr())
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "combining {} and {} bytes of {}: lengths must be equal whole elements, buffers aligned to {align}",
                    a.len(),
                    b.len(),
                    kind.name()
                ),
            ));
        }
        self.apply(kind, a, b);
        Ok(())
    }

    /// Stores `a ∘ b` into `b`, element by element. The caller checked the operation against
    /// `kind` ([`Op::check`]) and gives slices of equal length aligned for the type.
    pub(crate) fn apply(&self, kind: TypeKind, a: &[u8], b: &mut [u8]) {
        debug_assert_eq!(a.len(), b.len());
        if let Op::User(u) = self {
            (u.f)(a, b);
            return;
        }
        self.kernel(kind, a, Dst::InPlace(b));
    }

    /// Stores `a ∘ b` into `out` (one pass over three buffers instead of a copy and a
    /// pass); same conditions as [`Op::apply`].
    pub(crate) fn apply_into(&self, kind: TypeKind, a: &[u8], b: &[u8], out: &mut [u8]) {
        debug_assert!(a.len() == b.len() && b.len() == out.len());
        if let Op::User(u) = self {
            out.copy_from_slice(b);
            (u.f)(a, out);
            return;
        }
        self.kernel(kind, a, Dst::Into(b, out));
    }

    fn kernel(&self, kind: TypeKind, a: &[u8], b: Dst<'_>) {
        match kind {
            TypeKind::I8 => int::<i8>(self, a, b),
            TypeKind::I16 => int::<i16>(self, a, b),
            TypeKind::I32 => int::<i32>(self, a, b),
            TypeKind::I64 => int::<i64>(self, a, b),
            TypeKind::U8 => int::<u8>(self, a, b),
            TypeKind::U16 => int::<u16>(self, a, b),
            TypeKind::U32 => int::<u32>(self, a, b),
            TypeKind::U64 => int::<u64>(self, a, b),
            TypeKind::F32 => float::<f32>(self, a, b),
            TypeKind::F64 => float::<f64>(self, a, b),
            TypeKind::F32I32 => pair::<F32I32, f32, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::F64I32 => pair::<F64I32, f64, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::I32I32 => pair::<I32I32, i32, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::I64I32 => pair::<I64I32, i64, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::I16I32 => pair::<I16I32, i16, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::F32F32 => pair::<F32F32, f32, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::F64F64 => pair::<F64F64, f64, _>(self, a, b, |p| (p.value, p.index)),
            TypeKind::ComplexF32 => complex_f32(self, a, b),
            TypeKind::ComplexF64 => complex_f64(self, a, b),
            #[cfg(target_arch = "x86_64")]
            TypeKind::LongDouble => x87::long_double(self, a, b),
            #[cfg(target_arch = "x86_64")]
            TypeKind::ComplexLongDouble => x87::complex(self, a, b),
            #[cfg(target_arch = "x86_64")]
            TypeKind::LongDoubleI32 => x87::pair(self, a, b),
            #[cfg(not(target_arch = "x86_64"))]
            TypeKind::LongDouble | TypeKind::ComplexLongDouble | TypeKind::LongDoubleI32 => {
                unreachable!("refused by Op::check off x86-64")
            }
        }
    }
}

/// Integer arithmetic the kernels need, wrapping like C's unsigned arithmetic (MPI leaves
/// signed overflow undefined; wrapping is the one answer that never panics).
trait Int: Datatype + PartialOrd + Copy {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int_impl {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)]
            fn and(self, o: Self) -> Self { self & o }
            #[inline(always)]
            fn or(self, o: Self) -> Self { self | o }
            #[inline(always)]
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

/// The second operand of a kernel and where its result goes.
enum Dst<'x> {
    /// `b = a ∘ b`.
    InPlace(&'x mut [u8]),
    /// `out = a ∘ b`.
    Into(&'x [u8], &'x mut [u8]),
}

/// Applies `f` to every pair of elements; one monomorphic loop per operation so each can be
/// vectorised.
#[inline(always)]
fn zip<T: Datatype>(a: &[u8], b: Dst<'_>, f: impl Fn(T, T) -> T) {
    let a: &[T] = bytemuck::cast_slice(a);
    match b {
        Dst::InPlace(b) => {
            let b: &mut [T] = bytemuck::cast_slice_mut(b);
            for (x, y) in a.iter().zip(b.iter_mut()) {
                *y = f(*x, *y);
            }
        }
        Dst::Into(b, out) => {
            let b: &[T] = bytemuck::cast_slice(b);
            let out: &mut [T] = bytemuck::cast_slice_mut(out);
            for ((x, y), o) in a.iter().zip(b).zip(out.iter_mut()) {
                *o = f(*x, *y);
            }
        }
    }
}

fn int<T: Int>(op: &Op, a: &[u8], b: Dst<'_>) {
    let truth = |v: bool| if v { T::ONE } else { T::ZERO };
    match op {
        Op::Sum => zip::<T>(a, b, |x, y| x.add(y)),
        Op::Prod => zip::<T>(a, b, |x, y| x.mul(y)),
        Op::Min => zip::<T>(a, b, |x, y| if y < x { y } else { x }),
        Op::Max => zip::<T>(a, b, |x, y| if y > x { y } else { x }),
        Op::Land => zip::<T>(a, b, |x, y| truth(x != T::ZERO && y != T::ZERO)),
        Op::Lor => zip::<T>(a, b, |x, y| truth(x != T::ZERO || y != T::ZERO)),
        Op::Lxor => zip::<T>(a, b, |x, y| truth((x != T::ZERO) != (y != T::ZERO))),
        Op::Band => zip::<T>(a, b, |x, y| x.and(y)),
        Op::Bor => zip::<T>(a, b, |x, y| x.or(y)),
        Op::Bxor => zip::<T>(a, b, |x, y| x.xor(y)),
        Op::MinLoc | Op::MaxLoc | Op::User(_) => unreachable!("checked by Op::check"),
    }
}

trait Float:
    Datatype + PartialOrd + Copy + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
}
impl Float for f32 {}
impl Float for f64 {}

fn float<T: Float>(op: &Op, a: &[u8], b: Dst<'_>) {
    match op {
        Op::Sum => zip::<T>(a, b, |x, y| x + y),
        Op::Prod => zip::<T>(a, b, |x, y| x * y),
        Op::Min => zip::<T>(a, b, |x, y| if y < x { y } else { x }),
        Op::Max => zip::<T>(a, b, |x, y| if y > x { y } else { x }),
        _ => unreachable!("checked by Op::check"),
    }
}

macro_rules! complex_kernel {
    ($name:ident, $t:ident) => {
        /// Sum and product of complex numbers (the only predefined operations on them),
        /// computed like C without Annex G's infinity recovery.
        fn $name(op: &Op, a: &[u8], b: Dst<'_>) {
            match op {
                Op::Sum => zip::<$t>(a, b, |x, y| $t {
                    re: x.re + y.re,
                    im: x.im + y.im,
                }),
                Op::Prod => zip::<$t>(a, b, |x, y| $t {
                    re: x.re * y.re - x.im * y.im,
                    im: x.re * y.im + x.im * y.re,
                }),
                _ => unreachable!("checked by Op::check"),
            }
        }
    };
}
complex_kernel!(complex_f32, ComplexF32);
complex_kernel!(complex_f64, ComplexF64);

/// Whether MINLOC/MAXLOC keeps the first pair, given how the values compare and the indices
/// (MPI-4.1 §6.9.4: the smaller index wins ties; unordered values keep the second pair,
/// like the comparisons of [`pair`]).
#[cfg(target_arch = "x86_64")]
fn take_first(min: bool, ord: Option<std::cmp::Ordering>, xi: i32, yi: i32) -> bool {
    use std::cmp::Ordering::*;
    match ord {
        Some(Equal) => xi < yi,
        Some(Less) => min,
        Some(Greater) => !min,
        None => false,
    }
}

/// The `long double` kernels: x87 arithmetic on the 80-bit values in memory. Each helper is
/// one short `asm!` block that loads its operands onto the x87 stack, computes, stores the
/// result and leaves the stack empty again. The x87 unit computes with the 64-bit
/// significand (Linux's default precision control), so results are those of C's
/// `long double` arithmetic, rounded to nearest.
#[cfg(target_arch = "x86_64")]
mod x87 {
    use super::{take_first, zip, ComplexLongDouble, Dst, LongDouble, LongDoubleI32, Op};
    use std::arch::asm;
    use std::cmp::Ordering;

    /// `a + b`.
    #[inline]
    pub(super) fn add(a: &LongDouble, b: &LongDouble) -> LongDouble {
        let mut out = LongDouble::default();
        // SAFETY: `a` and `b` point to 16 readable bytes and `out` to 16 writable ones, of
        // which the block reads and writes the first 10; it loads two values and pops both
        // (faddp pops one, fstp the other), so the x87 stack is empty on exit as clobbering
        // all of st(0)-st(7) requires; it uses no Rust stack.
        unsafe {
            asm!(
                "fld tbyte ptr [{a}]",
                "fld tbyte ptr [{b}]",
                "faddp st(1), st",
                "fstp tbyte ptr [{o}]",
                a = in(reg) a,
                b = in(reg) b,
                o = in(reg) &mut out,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        out
    }

    /// `a * b`.
    #[inline]
    pub(super) fn mul(a: &LongDouble, b: &LongDouble) -> LongDouble {
        let mut out = LongDouble::default();
        // SAFETY: as in `add`, with fmulp in place of faddp.
        unsafe {
            asm!(
                "fld tbyte ptr [{a}]",
                "fld tbyte ptr [{b}]",
                "fmulp st(1), st",
                "fstp tbyte ptr [{o}]",
                a = in(reg) a,
                b = in(reg) b,
                o = in(reg) &mut out,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        out
    }

    /// `-a`: the sign bit flipped (exact, as IEEE negation is).
    #[inline]
    pub(super) fn neg(a: &LongDouble) -> LongDouble {
        let mut b = a.to_bytes();
        b[9] ^= 0x80;
        LongDouble::from_bytes(b)
    }

    /// How `a` compares with `b` as numbers (`None` when either is a NaN).
    #[inline]
    pub(super) fn compare(a: &LongDouble, b: &LongDouble) -> Option<Ordering> {
        let (below, equal, unordered): (u8, u8, u8);
        // SAFETY: `a` and `b` point to 16 readable bytes, of which the block reads the first
        // 10; it loads two values and pops both (fucomip pops one, fstp st(0) the other), so
        // the x87 stack is empty on exit; the flags it sets are read by the setcc
        // instructions before anything else changes them; it uses no Rust stack.
        unsafe {
            asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fucomip st, st(1)",
                "fstp st(0)",
                "setb {below}",
                "sete {equal}",
                "setp {unordered}",
                a = in(reg) a,
                b = in(reg) b,
                below = out(reg_byte) below,
                equal = out(reg_byte) equal,
                unordered = out(reg_byte) unordered,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        if unordered != 0 {
            None
        } else if equal != 0 {
            Some(Ordering::Equal)
        } else if below != 0 {
            Some(Ordering::Less)
        } else {
            Some(Ordering::Greater)
        }
    }

    impl LongDouble {
        /// The `long double` equal to `v` (exact: every `f64` is one).
        pub fn from_f64(v: f64) -> LongDouble {
            let mut out = LongDouble::default();
            // SAFETY: reads the 8 bytes of `v`, writes the first 10 of `out`; one value is
            // loaded and popped, so the x87 stack is empty on exit; no Rust stack.
            unsafe {
                asm!(
                    "fld qword ptr [{v}]",
                    "fstp tbyte ptr [{o}]",
                    v = in(reg) &v,
                    o = in(reg) &mut out,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            out
        }

        /// The `long double` equal to `v` (exact: the significand has 64 bits).
        pub fn from_i64(v: i64) -> LongDouble {
            let mut out = LongDouble::default();
            // SAFETY: as in `from_f64`, loading an integer (fild) instead of a double.
            unsafe {
                asm!(
                    "fild qword ptr [{v}]",
                    "fstp tbyte ptr [{o}]",
                    v = in(reg) &v,
                    o = in(reg) &mut out,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            out
        }

        /// The value rounded to the nearest `f64`.
        pub fn to_f64(self) -> f64 {
            let mut out = 0f64;
            // SAFETY: reads the first 10 bytes of `self`, writes the 8 of `out`; one value
            // is loaded and popped; no Rust stack.
            unsafe {
                asm!(
                    "fld tbyte ptr [{v}]",
                    "fstp qword ptr [{o}]",
                    v = in(reg) &self,
                    o = in(reg) &mut out,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            out
        }

        /// The value rounded to the nearest integer (ties to even); `i64::MIN` when it is
        /// out of range or a NaN (the x87 "integer indefinite").
        pub fn to_i64(self) -> i64 {
            let mut out = 0i64;
            // SAFETY: as in `to_f64`, storing an integer (fistp) instead of a double.
            unsafe {
                asm!(
                    "fld tbyte ptr [{v}]",
                    "fistp qword ptr [{o}]",
                    v = in(reg) &self,
                    o = in(reg) &mut out,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            out
        }
    }

    pub(super) fn long_double(op: &Op, a: &[u8], b: Dst<'_>) {
        let less = |x: &LongDouble, y: &LongDouble| compare(x, y) == Some(Ordering::Less);
        match op {
            Op::Sum => zip::<LongDouble>(a, b, |x, y| add(&x, &y)),
            Op::Prod => zip::<LongDouble>(a, b, |x, y| mul(&x, &y)),
            Op::Min => zip::<LongDouble>(a, b, |x, y| if less(&y, &x) { y } else { x }),
            Op::Max => zip::<LongDouble>(a, b, |x, y| if less(&x, &y) { y } else { x }),
            _ => unreachable!("checked by Op::check"),
        }
    }

    pub(super) fn complex(op: &Op, a: &[u8], b: Dst<'_>) {
        match op {
            Op::Sum => zip::<ComplexLongDouble>(a, b, |x, y| ComplexLongDouble {
                re: add(&x.re, &y.re),
                im: add(&x.im, &y.im),
            }),
            Op::Prod => zip::<ComplexLongDouble>(a, b, |x, y| ComplexLongDouble {
                re: add(&mul(&x.re, &y.re), &neg(&mul(&x.im, &y.im))),
                im: add(&mul(&x.re, &y.im), &mul(&x.im, &y.re)),
            }),
            _ => unreachable!("checked by Op::check"),
        }
    }

    pub(super) fn pair(op: &Op, a: &[u8], b: Dst<'_>) {
        let min = matches!(op, Op::MinLoc);
        zip::<LongDoubleI32>(a, b, |x, y| {
            if take_first(min, compare(&x.value, &y.value), x.index, y.index) {
                x
            } else {
                y
            }
        });
    }
}

fn pair<P: Datatype, V: PartialOrd + Copy, I: PartialOrd + Copy>(
    op: &Op,
    a: &[u8],
    b: Dst<'_>,
    parts: impl Fn(&P) -> (V, I),
) {
    let min = matches!(op, Op::MinLoc);
    let pick = |x: &P, y: &P| -> P {
        let (xv, xi) = parts(x);
        let (yv, yi) = parts(y);
        let take_x = if xv == yv {
            xi < yi
        } else if min {
            xv < yv
        } else {
            xv > yv
        };
        if take_x {
            *x
        } else {
            *y
        }
    };
    zip::<P>(a, b, |x, y| pick(&x, &y));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Datatype>(op: &Op, a: &[T], b: &[T]) -> Vec<T> {
        op.check(T::KIND).unwrap();
        let mut out = b.to_vec();
        op.apply(
            T::KIND,
            bytemuck::cast_slice(a),
            bytemuck::cast_slice_mut(&mut out),
        );
        out
    }

    #[test]
    fn predefined_ops_on_integers() {
        let a = [3i32, -2, 0, 7];
        let b = [1i32, 5, 4, 7];
        assert_eq!(run(&Op::Sum, &a, &b), [4, 3, 4, 14]);
        assert_eq!(run(&Op::Prod, &a, &b), [3, -10, 0, 49]);
        assert_eq!(run(&Op::Min, &a, &b), [1, -2, 0, 7]);
        assert_eq!(run(&Op::Max, &a, &b), [3, 5, 4, 7]);
        assert_eq!(run(&Op::Land, &a, &b), [1, 1, 0, 1]);
        assert_eq!(run(&Op::Lor, &[0i32, 0, 2], &[0, 1, 0]), [0, 1, 1]);
        assert_eq!(run(&Op::Lxor, &[0i32, 3, 2], &[0, 1, 0]), [0, 0, 1]);
        assert_eq!(run(&Op::Band, &[0b1100u8], &[0b1010]), [0b1000]);
        assert_eq!(run(&Op::Bor, &[0b1100u8], &[0b1010]), [0b1110]);
        assert_eq!(run(&Op::Bxor, &[0b1100u8], &[0b1010]), [0b0110]);
        assert_eq!(run(&Op::Sum, &[u8::MAX], &[2]), [1], "wraps");
    }

    #[test]
    fn apply_into_matches_apply() {
        let a = [3i64, -2, 0, 7, 9];
        let b = [1i64, 5, 4, 7, -9];
        let mut out = [0i64; 5];
        for op in [Op::Sum, Op::Prod, Op::Min, Op::Max, Op::Bxor, Op::Land] {
            op.apply_into(
                TypeKind::I64,
                bytemuck::cast_slice(&a),
                bytemuck::cast_slice(&b),
                bytemuck::cast_slice_mut(&mut out),
            );
            assert_eq!(out.to_vec(), run(&op, &a, &b), "{op:?}");
        }
        let pa = [F64I32::new(1.0, 4), F64I32::new(2.0, 0)];
        let pb = [F64I32::new(1.0, 2), F64I32::new(3.0, 1)];
        let mut po = [F64I32::default(); 2];
        Op::MinLoc.apply_into(
            TypeKind::F64I32,
            bytemuck::cast_slice(&pa),
            bytemuck::cast_slice(&pb),
            bytemuck::cast_slice_mut(&mut po),
        );
        assert_eq!(po, [F64I32::new(1.0, 2), F64I32::new(2.0, 0)]);
        // A user operation sees (a, b) in that order: non-commutative order is kept.
        let sub = Op::user::<i32>("sub", false, |x, y| {
            for (x, y) in x.iter().zip(y.iter_mut()) {
                *y = *x - *y;
            }
        });
        let mut o = [0i32; 2];
        sub.apply_into(
            TypeKind::I32,
            bytemuck::cast_slice(&[10i32, 1]),
            bytemuck::cast_slice(&[3i32, 5]),
            bytemuck::cast_slice_mut(&mut o),
        );
        assert_eq!(o, [7, -4]);
    }

    #[test]
    fn floats_and_pairs() {
        assert_eq!(run(&Op::Sum, &[1.5f64, 2.0], &[0.25, -2.0]), [1.75, 0.0]);
        assert_eq!(run(&Op::Max, &[1.5f32], &[2.5]), [2.5]);
        let a = [
            F64I32::new(1.0, 4),
            F64I32::new(2.0, 1),
            F64I32::new(3.0, 9),
        ];
        let b = [
            F64I32::new(1.0, 2),
            F64I32::new(5.0, 0),
            F64I32::new(0.5, 3),
        ];
        let min = run(&Op::MinLoc, &a, &b);
        assert_eq!(
            min,
            [
                F64I32::new(1.0, 2),
                F64I32::new(2.0, 1),
                F64I32::new(0.5, 3)
            ]
        );
        let max = run(&Op::MaxLoc, &a, &b);
        assert_eq!(
            max,
            [
                F64I32::new(1.0, 2),
                F64I32::new(5.0, 0),
                F64I32::new(3.0, 9)
            ]
        );
        let m = run(&Op::MaxLoc, &[I32I32::new(4, 7)], &[I32I32::new(4, 6)]);
        assert_eq!(m, [I32I32::new(4, 6)]);
    }

    #[test]
    fn unknown_combinations_name_op_and_type() {
        let e = Op::Band.check(TypeKind::F64).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidOp);
        assert!(
            e.message().contains("band") && e.message().contains("f64"),
            "{e}"
        );
        let e = Op::MinLoc.check(TypeKind::I32).unwrap_err();
        assert!(
            e.message().contains("minloc") && e.message().contains("i32"),
            "{e}"
        );
        let e = Op::Sum.check(TypeKind::F64I32).unwrap_err();
        assert!(e.message().contains("(f64, i32)"), "{e}");
        let u = Op::user::<i32>("first", false, |_, _| {});
        let e = u.check(TypeKind::I64).unwrap_err();
        assert!(
            e.message().contains("first") && e.message().contains("i64"),
            "{e}"
        );
    }

    #[test]
    fn complex_sum_and_product() {
        let a = [
            ComplexF64 { re: 1.0, im: 2.0 },
            ComplexF64 { re: -3.0, im: 0.5 },
        ];
        let b = [
            ComplexF64 { re: 3.0, im: -1.0 },
            ComplexF64 { re: 2.0, im: 4.0 },
        ];
        assert_eq!(
            run(&Op::Sum, &a, &b),
            [
                ComplexF64 { re: 4.0, im: 1.0 },
                ComplexF64 { re: -1.0, im: 4.5 }
            ]
        );
        // (1+2i)(3-i) = 5+5i; (-3+0.5i)(2+4i) = -8-11i
        assert_eq!(
            run(&Op::Prod, &a, &b),
            [
                ComplexF64 { re: 5.0, im: 5.0 },
                ComplexF64 {
                    re: -8.0,
                    im: -11.0
                }
            ]
        );
        let p = run(
            &Op::Prod,
            &[ComplexF32 { re: 0.0, im: 1.0 }],
            &[ComplexF32 { re: 0.0, im: 1.0 }],
        );
        assert_eq!(p, [ComplexF32 { re: -1.0, im: 0.0 }], "i * i");
    }

    #[test]
    fn fortran_pairs_compare_real_indices() {
        let p = |v: f64, i: f64| F64F64 { value: v, index: i };
        assert_eq!(
            run(
                &Op::MinLoc,
                &[p(1.5, 3.0), p(2.0, 1.0)],
                &[p(1.5, 2.0), p(0.5, 9.0)]
            ),
            [p(1.5, 2.0), p(0.5, 9.0)]
        );
        let q = |v: f32, i: f32| F32F32 { value: v, index: i };
        assert_eq!(
            run(
                &Op::MaxLoc,
                &[q(4.0, 1.0), q(-1.0, 0.0)],
                &[q(4.0, 0.5), q(-2.0, 5.0)]
            ),
            [q(4.0, 0.5), q(-1.0, 0.0)]
        );
    }

    #[test]
    fn short_int_pairs() {
        let a = [I16I32::new(-4, 3), I16I32::new(7, 9), I16I32::new(2, 1)];
        let b = [I16I32::new(-4, 2), I16I32::new(6, 0), I16I32::new(5, 5)];
        assert_eq!(
            run(&Op::MinLoc, &a, &b),
            [I16I32::new(-4, 2), I16I32::new(6, 0), I16I32::new(2, 1)]
        );
        assert_eq!(
            run(&Op::MaxLoc, &a, &b),
            [I16I32::new(-4, 2), I16I32::new(7, 9), I16I32::new(5, 5)]
        );
    }

    /// Every predefined operation against every kind: exactly the combinations of MPI-4.1
    /// §6.9.2 pass the check.
    #[test]
    fn check_follows_the_standard_table() {
        let ops = [
            Op::Sum,
            Op::Prod,
            Op::Min,
            Op::Max,
            Op::Land,
            Op::Lor,
            Op::Lxor,
            Op::Band,
            Op::Bor,
            Op::Bxor,
            Op::MinLoc,
            Op::MaxLoc,
        ];
        for k in TypeKind::ALL {
            for op in &ops {
                let allowed = match op {
                    Op::Sum | Op::Prod => k.is_integer() || k.is_float() || k.is_complex(),
                    Op::Min | Op::Max => k.is_integer() || k.is_float(),
                    Op::MinLoc | Op::MaxLoc => k.is_pair(),
                    _ => k.is_integer(),
                };
                let r = op.check(k);
                if !allowed {
                    let e = r.expect_err(&format!("{op:?} on {k:?}"));
                    assert_eq!(e.kind(), ErrorKind::InvalidOp, "{e}");
                } else if k.has_long_double() && !cfg!(target_arch = "x86_64") {
                    assert_eq!(r.unwrap_err().kind(), ErrorKind::Unsupported);
                } else {
                    r.unwrap_or_else(|e| panic!("{op:?} on {k:?}: {e}"));
                }
            }
        }
        let e = Op::Max.check(TypeKind::ComplexF32).unwrap_err();
        assert!(e.message().contains("not ordered"), "{e}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double_kernels_use_the_64_bit_significand() {
        let ld = LongDouble::from_i64;
        // 2^62 + 1 needs 63 bits: f64 cannot hold it, the x87 format can.
        let big = 1i64 << 62;
        assert_eq!(run(&Op::Sum, &[ld(big)], &[ld(1)]), [ld(big + 1)]);
        assert_eq!((ld(big).to_f64() + 1.0) as i64, big, "f64 loses the 1");
        assert_eq!(run(&Op::Sum, &[ld(big)], &[ld(1)])[0].to_i64(), big + 1);
        assert_eq!(run(&Op::Prod, &[ld(3)], &[ld(-7)]), [ld(-21)]);
        assert_eq!(
            run(&Op::Prod, &[ld(1 << 31)], &[ld((1 << 31) + 1)])[0].to_i64(),
            (1i64 << 62) + (1 << 31)
        );
        assert_eq!(
            run(&Op::Min, &[ld(3), ld(-2)], &[ld(2), ld(5)]),
            [ld(2), ld(-2)]
        );
        assert_eq!(
            run(&Op::Max, &[ld(3), ld(-2)], &[ld(2), ld(5)]),
            [ld(3), ld(5)]
        );
        assert_eq!(
            run(&Op::Max, &[ld(big + 1)], &[ld(big)]),
            [ld(big + 1)],
            "compared with 64 bits"
        );
        assert_eq!(LongDouble::from_f64(-2.5).to_f64(), -2.5);
        assert_eq!(LongDouble::from_f64(0.1).to_f64(), 0.1);
        let nan = LongDouble::from_f64(f64::NAN);
        assert!(nan.to_f64().is_nan());
        // Like the f64 kernels: a NaN second operand is not picked by min, a first one is kept.
        assert_eq!(run(&Op::Min, &[ld(1)], &[nan]), [ld(1)]);
        let c = |re: i64, im: i64| ComplexLongDouble {
            re: ld(re),
            im: ld(im),
        };
        assert_eq!(run(&Op::Sum, &[c(1, 2)], &[c(3, -1)]), [c(4, 1)]);
        assert_eq!(run(&Op::Prod, &[c(1, 2)], &[c(3, -1)]), [c(5, 5)]);
        assert_eq!(run(&Op::Prod, &[c(-3, 1)], &[c(2, 4)]), [c(-10, -10)]);
        let p = |v: i64, i: i32| LongDoubleI32::new(ld(v), i);
        assert_eq!(
            run(
                &Op::MinLoc,
                &[p(big + 1, 0), p(4, 7)],
                &[p(big, 3), p(4, 2)]
            ),
            [p(big, 3), p(4, 2)]
        );
        assert_eq!(
            run(
                &Op::MaxLoc,
                &[p(big + 1, 0), p(4, 7)],
                &[p(big, 3), p(4, 2)]
            ),
            [p(big + 1, 0), p(4, 2)]
        );
    }

    #[test]
    fn user_op_keeps_order() {
        // (a ∘ b) = 10a + b is not commutative: the lower rank's value must come first.
        let op = Op::user::<i64>("concat", false, |a, b| {
            for (x, y) in a.iter().zip(b.iter_mut()) {
                *y += *x * 10;
            }
        });
        assert!(!op.is_commutative());
        assert_eq!(run(&op, &[1i64, 2], &[3, 4]), [13, 24]);
    }
}
