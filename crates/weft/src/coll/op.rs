//! Reduction operations (MPI-4.1 §6.9.2): the predefined ones and user closures, with the
//! check of which operation applies to which type and the reduction kernels themselves
//! (plain loops over typed slices that the compiler vectorises). Depends on
//! [`super::datatype`] only; knows nothing of communicators.
//!
//! Convention: `apply(a, b)` stores `a ∘ b` into `b`, where `a` holds the contributions of
//! lower ranks (MPI's `invec`, `inoutvec`). Non-commutative operations rely on that order.

use super::datatype::{Datatype, TypeKind, F32I32, F64I32, I32I32, I64I32};
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

    /// True when the operation may be applied in any order.
    pub fn is_commutative(&self) -> bool {
        match self {
            Op::User(u) => u.commutative,
            _ => true,
        }
    }

    /// Checks that the operation applies to elements of `kind`; an `InvalidOp` error naming
    /// both otherwise.
    pub fn check(&self, kind: TypeKind) -> Result<()> {
        let ok = match self {
            Op::Sum | Op::Prod | Op::Min | Op::Max => !kind.is_pair(),
            Op::Land | Op::Lor | Op::Lxor | Op::Band | Op::Bor | Op::Bxor => kind.is_integer(),
            Op::MinLoc | Op::MaxLoc => kind.is_pair(),
            Op::User(u) => u.kind == kind,
        };
        if ok {
            return Ok(());
        }
        let why = match self {
            Op::User(u) => format!("it was created for {}", u.kind.name()),
            Op::MinLoc | Op::MaxLoc => "it applies to value-index pairs only".into(),
            Op::Sum | Op::Prod | Op::Min | Op::Max => "it does not apply to pairs".into(),
            _ => "it applies to integer types only".into(),
        };
        Err(Error::new(
            ErrorKind::InvalidOp,
            format!(
                "operation {} is not defined on type {}: {why}",
                self.name(),
                kind.name()
            ),
        ))
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
            TypeKind::F32I32 => pair::<F32I32, f32>(self, a, b, |p| (p.value, p.index)),
            TypeKind::F64I32 => pair::<F64I32, f64>(self, a, b, |p| (p.value, p.index)),
            TypeKind::I32I32 => pair::<I32I32, i32>(self, a, b, |p| (p.value, p.index)),
            TypeKind::I64I32 => pair::<I64I32, i64>(self, a, b, |p| (p.value, p.index)),
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

fn pair<P: Datatype, V: PartialOrd + Copy>(
    op: &Op,
    a: &[u8],
    b: Dst<'_>,
    parts: impl Fn(&P) -> (V, i32),
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
