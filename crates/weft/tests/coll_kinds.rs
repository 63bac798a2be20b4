//! Reductions on the element kinds C has and Rust lacks: `long double` (x86-64's 80-bit x87
//! format), the complex types, and the `(short, int)` and `(long double, int)` pairs of
//! MINLOC/MAXLOC (and Fortran's `(REAL, REAL)` and `(DOUBLE PRECISION, DOUBLE PRECISION)`). Real ranks (one thread each, 1-4 of them) run allreduce, reduce and scan
//! with every predefined operation MPI-4.1 §6.9.2 allows on each kind, and the results are
//! compared with a serial reference computed in exact integer arithmetic; the combinations
//! the standard does not allow fail on every rank with `InvalidOp`.
//!
//! The `long double` inputs include values that need more than f64's 53-bit significand
//! (2^62 + r, (2^15 + 1)^n), so a kernel that went through f64 would fail.

mod common;

use std::fmt::Debug;
use weft::coll::datatype::{ComplexF32, ComplexF64, F32F32, F64F64, I16I32};
use weft::coll::{Datatype, Op, TypeKind};
use weft::{Comm, ErrorKind};

/// Element counts: a single element, a few, and enough to cross the eager limit and make
/// the algorithms split the vector.
const COUNTS: &[usize] = &[1, 7, 3000];

/// Reduces `input(rank, i)` over the ranks with `op` (allreduce, reduce at the last rank,
/// scan) and compares each result with the serial reference: the model values folded in
/// rank order with `fold`, converted with `to`. Values compare with `Key` (`==` on the
/// numbers, so `0.0` equals `-0.0`).
fn check<M: Copy, T: Datatype + Key + Debug>(
    w: &Comm,
    what: &str,
    op: &Op,
    input: impl Fn(u32, usize) -> M,
    fold: impl Fn(M, M) -> M,
    to: impl Fn(M) -> T,
) {
    let (rank, size) = (w.rank(), w.size());
    for &n in COUNTS {
        let send: Vec<T> = (0..n).map(|i| to(input(rank, i))).collect();
        let prefix = |upto: u32| -> Vec<T> {
            (0..n)
                .map(|i| {
                    let v = (1..=upto).fold(input(0, i), |acc, r| fold(acc, input(r, i)));
                    to(v)
                })
                .collect()
        };
        let all = prefix(size - 1);
        let mut recv = vec![T::zeroed(); n];
        w.allreduce(&send, &mut recv, op).unwrap();
        assert_eq!(
            keys(&recv),
            keys(&all),
            "allreduce {what} {op:?}, {n} elements, {size} ranks"
        );

        let root = size - 1;
        let mut recv = vec![T::zeroed(); if rank == root { n } else { 0 }];
        w.reduce(&send, &mut recv, op, root).unwrap();
        if rank == root {
            assert_eq!(
                keys(&recv),
                keys(&all),
                "reduce {what} {op:?}, {n} elements, {size} ranks"
            );
        }

        let mut recv = vec![T::zeroed(); n];
        w.scan(&send, &mut recv, op).unwrap();
        assert_eq!(
            keys(&recv),
            keys(&prefix(rank)),
            "scan {what} {op:?}, {n} elements, rank {rank} of {size}"
        );
    }
}

/// How results compare with the reference: the numbers (and indices) they hold.
trait Key {
    type K: PartialEq + Debug;
    fn key(&self) -> Self::K;
}

fn keys<T: Key>(v: &[T]) -> Vec<T::K> {
    v.iter().map(Key::key).collect()
}

impl Key for ComplexF32 {
    type K = (f32, f32);
    fn key(&self) -> (f32, f32) {
        (self.re, self.im)
    }
}

impl Key for ComplexF64 {
    type K = (f64, f64);
    fn key(&self) -> (f64, f64) {
        (self.re, self.im)
    }
}

impl Key for F32F32 {
    type K = (f32, f32);
    fn key(&self) -> (f32, f32) {
        (self.value, self.index)
    }
}

impl Key for F64F64 {
    type K = (f64, f64);
    fn key(&self) -> (f64, f64) {
        (self.value, self.index)
    }
}

impl Key for I16I32 {
    type K = (i16, i32);
    fn key(&self) -> (i16, i32) {
        (self.value, self.index)
    }
}

/// `op` on `T` fails with `InvalidOp` on every rank (nothing is sent, so the communicator
/// stays in step).
fn refused<T: Datatype>(w: &Comm, op: &Op) {
    let send = vec![T::zeroed(); 3];
    let mut recv = vec![T::zeroed(); 3];
    let e = w.allreduce(&send, &mut recv, op).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOp, "{e}");
    assert!(
        e.message().contains(&op.name()) && e.message().contains(T::KIND.name()),
        "{e}"
    );
}

/// MINLOC/MAXLOC reference on (value, index) pairs: the smaller or larger value, the
/// smaller index on ties.
fn loc<V: PartialOrd + Copy>(min: bool) -> impl Fn((V, i32), (V, i32)) -> (V, i32) {
    move |a, b| {
        let first = if a.0 == b.0 {
            a.1 < b.1
        } else if min {
            a.0 < b.0
        } else {
            a.0 > b.0
        };
        if first {
            a
        } else {
            b
        }
    }
}

type Cx = (i64, i64);

fn cx_sum(a: Cx, b: Cx) -> Cx {
    (a.0 + b.0, a.1 + b.1)
}

fn cx_prod(a: Cx, b: Cx) -> Cx {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

/// Small Gaussian integers whose sums and products over 4 ranks stay exact in f32.
fn cx_input(rank: u32, i: usize) -> Cx {
    let r = rank as i64;
    let i = i as i64;
    ((i % 3) - 1 + r, (i % 2) + 1 - r % 2)
}

fn complex(w: &Comm) {
    let c32 = |(re, im): Cx| ComplexF32 {
        re: re as f32,
        im: im as f32,
    };
    let c64 = |(re, im): Cx| ComplexF64 {
        re: re as f64,
        im: im as f64,
    };
    check(w, "float complex", &Op::Sum, cx_input, cx_sum, c32);
    check(w, "float complex", &Op::Prod, cx_input, cx_prod, c32);
    check(w, "double complex", &Op::Sum, cx_input, cx_sum, c64);
    check(w, "double complex", &Op::Prod, cx_input, cx_prod, c64);
    for op in [Op::Min, Op::Max, Op::Band, Op::Land, Op::MinLoc] {
        refused::<ComplexF32>(w, &op);
        refused::<ComplexF64>(w, &op);
    }
}

fn short_int(w: &Comm) {
    // Values repeat across ranks (rank / 2), so ties pick the smaller index.
    let input = |rank: u32, i: usize| -> (i16, i32) {
        let v = ((i % 5) as i16 - 2) * 1000
            + (rank / 2) as i16 * if i.is_multiple_of(2) { 1 } else { -1 };
        (v, rank as i32 * 10 + (i % 3) as i32)
    };
    let to = |(v, i): (i16, i32)| I16I32::new(v, i);
    check(w, "(short, int)", &Op::MinLoc, input, loc(true), to);
    check(w, "(short, int)", &Op::MaxLoc, input, loc(false), to);
    for op in [Op::Sum, Op::Min, Op::Bor] {
        refused::<I16I32>(w, &op);
    }
}

fn fortran_pairs(w: &Comm) {
    // Ties across ranks (rank / 2) pick the smaller index, which is a real number here.
    let input = |rank: u32, i: usize| -> (i32, i32) {
        (
            (i % 4) as i32 * 3 - (rank / 2) as i32,
            rank as i32 * 2 + (i % 3) as i32,
        )
    };
    let fold = |min: bool| move |a: (i32, i32), b: (i32, i32)| -> (i32, i32) { loc(min)(a, b) };
    let to32 = |(v, i): (i32, i32)| F32F32 {
        value: v as f32 / 2.0,
        index: i as f32,
    };
    let to64 = |(v, i): (i32, i32)| F64F64 {
        value: v as f64 * 0.25,
        index: i as f64,
    };
    check(w, "(f32, f32)", &Op::MinLoc, input, fold(true), to32);
    check(w, "(f32, f32)", &Op::MaxLoc, input, fold(false), to32);
    check(w, "(f64, f64)", &Op::MinLoc, input, fold(true), to64);
    check(w, "(f64, f64)", &Op::MaxLoc, input, fold(false), to64);
    refused::<F64F64>(w, &Op::Sum);
    refused::<F32F32>(w, &Op::Max);
}

#[cfg(target_arch = "x86_64")]
mod long_double {
    use super::*;
    use weft::coll::datatype::{ComplexLongDouble, LongDouble, LongDoubleI32};

    const BIG: i64 = 1 << 62;

    /// Exact model values (all within i64) as `long double`.
    fn ld(v: i64) -> LongDouble {
        LongDouble::from_i64(v)
    }

    // The models are integers below 2^63, which the x87 format holds exactly: reading the
    // results back with `to_i64` compares them exactly (a rounded or non-integer result
    // differs), and `-0` equals `0` as numbers do.
    impl Key for LongDouble {
        type K = i64;
        fn key(&self) -> i64 {
            self.to_i64()
        }
    }

    impl Key for ComplexLongDouble {
        type K = (i64, i64);
        fn key(&self) -> (i64, i64) {
            (self.re.to_i64(), self.im.to_i64())
        }
    }

    impl Key for LongDoubleI32 {
        type K = (i64, i32);
        fn key(&self) -> (i64, i32) {
            (self.value.to_i64(), self.index)
        }
    }

    pub(crate) fn scalars(w: &Comm) {
        // Sum: 2^62 on rank 0 plus small values: 2^62 + k needs 63 significant bits.
        let sum_in = |rank: u32, i: usize| -> i64 {
            if rank == 0 {
                BIG + i as i64
            } else {
                rank as i64 * 3 - i as i64 % 4
            }
        };
        check(w, "long double", &Op::Sum, sum_in, |a, b| a + b, ld);
        // Product: (2^15 + 1)^n needs up to 61 significant bits at 4 ranks.
        let prod_in = |rank: u32, i: usize| -> i64 {
            if i.is_multiple_of(2) {
                (1 << 15) + 1
            } else {
                -(rank as i64 + 1 + i as i64 % 3)
            }
        };
        check(w, "long double", &Op::Prod, prod_in, |a, b| a * b, ld);
        // Min and max of values f64 cannot tell apart (2^62 + small).
        let near = |rank: u32, i: usize| -> i64 { BIG + ((rank as i64 * 7 + i as i64) % 5) };
        check(w, "long double", &Op::Min, near, i64::min, ld);
        check(w, "long double", &Op::Max, near, i64::max, ld);
        // Small integers: the results are exact in f64 too.
        let small = |rank: u32, i: usize| -> i64 { rank as i64 - (i % 3) as i64 };
        check(w, "long double", &Op::Sum, small, |a, b| a + b, ld);
        let n = w.size() as i64;
        let send = vec![ld(2), ld(-1)];
        let mut recv = vec![LongDouble::default(); 2];
        w.allreduce(&send, &mut recv, &Op::Sum).unwrap();
        assert_eq!(
            (recv[0].to_f64(), recv[1].to_f64()),
            (2.0 * n as f64, -(n as f64))
        );
        // The x87 sum of 2^62 and 1 per extra rank, read back as an integer: exact.
        let send = vec![ld(if w.rank() == 0 { BIG } else { 1 })];
        w.allreduce(&send, &mut recv[..1], &Op::Sum).unwrap();
        assert_eq!(recv[0].to_i64(), BIG + n - 1);
        if n > 1 {
            assert_ne!(
                recv[0],
                LongDouble::from_f64(recv[0].to_f64()),
                "beyond f64"
            );
        }
        for op in [Op::Band, Op::Lor, Op::MinLoc] {
            refused::<LongDouble>(w, &op);
        }
    }

    pub(crate) fn complex(w: &Comm) {
        let c = |(re, im): Cx| ComplexLongDouble {
            re: ld(re),
            im: ld(im),
        };
        check(w, "long double complex", &Op::Sum, cx_input, cx_sum, c);
        check(w, "long double complex", &Op::Prod, cx_input, cx_prod, c);
        // A real part beyond f64: 2^62 + small sums.
        let big_in = |rank: u32, i: usize| -> Cx {
            if rank == 0 {
                (BIG, i as i64)
            } else {
                (rank as i64, -(i as i64 % 3))
            }
        };
        check(w, "long double complex", &Op::Sum, big_in, cx_sum, c);
        for op in [Op::Min, Op::Max, Op::Bxor] {
            refused::<ComplexLongDouble>(w, &op);
        }
    }

    pub(crate) fn pairs(w: &Comm) {
        // Values 2^62 + small with ties across ranks: 64-bit comparisons and the index rule.
        let input = |rank: u32, i: usize| -> (i64, i32) {
            let v = BIG + ((rank as i64 / 2) * 3 + i as i64 % 4) % 5;
            (v, rank as i32 + i as i32 % 2)
        };
        let to = |(v, i): (i64, i32)| LongDoubleI32::new(ld(v), i);
        check(w, "(long double, int)", &Op::MinLoc, input, loc(true), to);
        check(w, "(long double, int)", &Op::MaxLoc, input, loc(false), to);
        for op in [Op::Sum, Op::Max, Op::Land] {
            refused::<LongDoubleI32>(w, &op);
        }
    }
}

#[test]
fn new_kinds_reduce_like_a_serial_reference() {
    for np in 1..=4 {
        common::run_ranks(np, &[], |w| {
            complex(&w);
            short_int(&w);
            fortran_pairs(&w);
            #[cfg(target_arch = "x86_64")]
            {
                long_double::scalars(&w);
                long_double::complex(&w);
                long_double::pairs(&w);
            }
            w.barrier().unwrap();
        });
    }
}

/// The byte-level entry point takes the new kinds too (what the MPI layer calls for
/// reductions staged as bytes).
#[test]
fn byte_level_reductions_take_the_new_kinds() {
    common::run_ranks(3, &[], |w| {
        let n = w.size() as f64;
        let send: Vec<ComplexF64> = (0..5)
            .map(|i| ComplexF64 {
                re: i as f64,
                im: 1.0,
            })
            .collect();
        let mut recv = vec![ComplexF64::default(); 5];
        w.allreduce_bytes(
            bytemuck::cast_slice(&send),
            bytemuck::cast_slice_mut(&mut recv),
            TypeKind::ComplexF64,
            &Op::Sum,
        )
        .unwrap();
        for (i, c) in recv.iter().enumerate() {
            assert_eq!((c.re, c.im), (i as f64 * n, n));
        }
        // A buffer that is not a whole number of 16-byte elements is refused.
        let e = w
            .allreduce_bytes(&[0u8; 24], &mut [0u8; 24], TypeKind::ComplexF64, &Op::Sum)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidCount, "{e}");
    });
}
