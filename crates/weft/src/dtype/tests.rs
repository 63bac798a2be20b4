//! Tests of the datatype engine: hand-computed cases from MPI-4.1 chapter 5, every error, and
//! property tests against a naive reference that expands a random nested type into its full
//! type map (with explicit bound markers, as §5.1.6 defines them) and walks it entry by
//! entry.

use super::*;
use proptest::prelude::*;
use weft_core::ErrorKind;

fn int() -> TypeMap {
    TypeMap::basic(BasicKind::I32)
}

fn double() -> TypeMap {
    TypeMap::basic(BasicKind::F64)
}

/// `n` little-endian `i32`s 0, 1, 2, ...
fn ints(n: usize) -> Vec<u8> {
    (0..n as i32).flat_map(|i| i.to_le_bytes()).collect()
}

fn as_ints(b: &[u8]) -> Vec<i32> {
    b.chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn pack_all(t: &TypeMap, src: &[u8], origin: usize, count: u64) -> Vec<u8> {
    let mut out = vec![0u8; t.packed_bytes(count).unwrap() as usize];
    assert_eq!(t.pack(src, origin, count, &mut out).unwrap(), out.len());
    out
}

#[test]
fn basic_types_are_contiguous_and_reduce() {
    for k in BasicKind::ALL {
        let t = TypeMap::basic(k);
        assert_eq!(t.size_bytes(), k.size_bytes());
        assert_eq!((t.lb(), t.extent()), (0, k.size_bytes() as i64));
        assert_eq!((t.true_lb(), t.true_extent()), (0, k.size_bytes() as i64));
        assert!(t.is_contiguous());
        assert_eq!(t.elements_per_item(), 1);
        assert_eq!(t.reduction(), k.type_kind().map(|tk| (tk, 1)));
        assert_eq!(t.kinds(), Kinds::One(k));
    }
    assert_eq!(
        BasicKind::from_type_kind(TypeKind::U16),
        Some(BasicKind::U16)
    );
    assert_eq!(BasicKind::from_type_kind(TypeKind::F64I32), None);
}

#[test]
fn contiguous_of_basic_is_one_run_and_one_copy() {
    let t = TypeMap::contiguous(5, &int()).unwrap();
    assert_eq!((t.size_bytes(), t.extent()), (20, 20));
    assert!(t.is_contiguous());
    assert_eq!(t.body.items.len(), 1);
    let src = ints(10);
    assert_eq!(
        as_ints(&pack_all(&t, &src, 0, 2)),
        (0..10).collect::<Vec<_>>()
    );
    assert_eq!(t.reduction(), Some((TypeKind::I32, 5)));
}

#[test]
fn vector_picks_strided_blocks() {
    // MPI-4.1 §5.1.2: vector(3, 2, 4, int) has blocks at elements 0, 4, 8.
    let t = TypeMap::vector(3, 2, 4, &int()).unwrap();
    assert_eq!(t.size_bytes(), 24);
    assert_eq!((t.lb(), t.extent()), (0, 40));
    assert!(!t.is_contiguous());
    let src = ints(20);
    assert_eq!(as_ints(&pack_all(&t, &src, 0, 1)), [0, 1, 4, 5, 8, 9]);
    // A second item starts one extent (10 ints) later.
    assert_eq!(
        as_ints(&pack_all(&t, &src, 0, 2)),
        [0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19]
    );
    assert_eq!(t.reduction(), Some((TypeKind::I32, 6)));
}

#[test]
fn negative_stride_reaches_below_the_address() {
    let t = TypeMap::hvector(3, 1, -8, &int()).unwrap();
    assert_eq!((t.lb(), t.ub()), (-16, 4));
    assert_eq!((t.true_lb(), t.true_ub()), (-16, 4));
    assert_eq!(t.footprint(1).unwrap(), Some((-16, 4)));
    let src = ints(5);
    // Address at int 4 (byte 16): items at 16, 8, 0.
    assert_eq!(as_ints(&pack_all(&t, &src, 16, 1)), [4, 2, 0]);
}

#[test]
fn indexed_and_blocks() {
    let t = TypeMap::indexed(&[2, 0, 1], &[3, 0, 0], &int()).unwrap();
    assert_eq!(as_ints(&pack_all(&t, &ints(8), 0, 1)), [3, 4, 0]);
    assert_eq!((t.lb(), t.ub()), (0, 20));
    let h = TypeMap::hindexed(&[1, 1], &[12, 4], &int()).unwrap();
    assert_eq!(as_ints(&pack_all(&h, &ints(8), 0, 1)), [3, 1]);
    let b = TypeMap::indexed_block(2, &[5, 1], &int()).unwrap();
    assert_eq!(as_ints(&pack_all(&b, &ints(8), 0, 1)), [5, 6, 1, 2]);
    let hb = TypeMap::hindexed_block(1, &[8, 0, 4], &int()).unwrap();
    assert_eq!(as_ints(&pack_all(&hb, &ints(8), 0, 1)), [2, 0, 1]);
    // Adjacent blocks in order merge into one run.
    let m = TypeMap::indexed(&[2, 3], &[0, 2], &int()).unwrap();
    assert!(m.is_contiguous());
    assert_eq!(m.body.items.len(), 1);
}

#[test]
fn struct_pads_to_alignment() {
    // struct { double d; char c; }: size 9, extent 16 (ε of §5.1.6), true extent 9.
    let t = TypeMap::create_struct(
        &[1, 1],
        &[0, 8],
        &[double(), TypeMap::basic(BasicKind::Char)],
    )
    .unwrap();
    assert_eq!((t.size_bytes(), t.lb(), t.extent()), (9, 0, 16));
    assert_eq!(t.true_extent(), 9);
    assert_eq!(t.align_bytes(), 8);
    assert!(!t.is_contiguous());
    assert_eq!(t.kinds(), Kinds::Mixed);
    assert_eq!(t.reduction(), None);
    let src: Vec<u8> = (0..32).collect();
    let packed = pack_all(&t, &src, 0, 2);
    let want: Vec<u8> = (0..9).chain(16..25).collect();
    assert_eq!(packed, want);
    // Get_elements: 2 per item; inside the double is undefined.
    assert_eq!(t.elements_in(9), Some(2));
    assert_eq!(t.elements_in(8), Some(1));
    assert_eq!(t.elements_in(17), Some(3));
    assert_eq!(t.elements_in(4), None);
    assert_eq!(t.count_in(18), Some(2));
    assert_eq!(t.count_in(17), None);
}

#[test]
fn resized_with_negative_lb() {
    let t = TypeMap::resized(&int(), -4, 12).unwrap();
    assert_eq!((t.lb(), t.ub(), t.extent()), (-4, 8, 12));
    assert_eq!((t.true_lb(), t.true_extent()), (0, 4));
    assert!(!t.is_contiguous());
    assert_eq!(t.footprint(2).unwrap(), Some((0, 16)));
    let src = ints(4);
    assert_eq!(as_ints(&pack_all(&t, &src, 0, 2)), [0, 3]);
    let mut dst = vec![0u8; 16];
    t.unpack(&pack_all(&t, &src, 0, 2), &mut dst, 0, 2).unwrap();
    assert_eq!(as_ints(&dst), [0, 0, 0, 3]);
}

#[test]
fn resized_bounds_are_sticky() {
    // The MPI-1 marker example: {(lb, -3), (int, 0), (ub, 6)} has extent 9; two of them
    // span [-3, 15).
    let t = TypeMap::resized(&int(), -3, 9).unwrap();
    let c = TypeMap::contiguous(2, &t).unwrap();
    assert_eq!((c.lb(), c.ub(), c.extent()), (-3, 15, 18));
    assert_eq!((c.true_lb(), c.true_ub()), (0, 13));
    // In a struct the sticky bounds win over a plain int that lies outside them, and no
    // alignment padding is added.
    let s = TypeMap::create_struct(&[1, 1], &[0, 20], &[t.clone(), int()]).unwrap();
    assert_eq!((s.lb(), s.ub()), (-3, 6));
    assert_eq!((s.true_lb(), s.true_ub()), (0, 24));
    // A plain struct keeps both extremes.
    let p = TypeMap::create_struct(&[1, 1], &[0, 20], &[int(), int()]).unwrap();
    assert_eq!((p.lb(), p.ub()), (0, 24));
}

#[test]
fn subarray_c_order() {
    // A 4x5 int array, rows 1-2 and columns 2-4: elements r*5 + c.
    let t = TypeMap::subarray(&[4, 5], &[2, 3], &[1, 2], Order::C, &int()).unwrap();
    assert_eq!(t.size_bytes(), 24);
    assert_eq!((t.lb(), t.extent()), (0, 80));
    assert_eq!((t.true_lb(), t.true_ub()), (28, 60));
    let src = ints(40);
    assert_eq!(as_ints(&pack_all(&t, &src, 0, 1)), [7, 8, 9, 12, 13, 14]);
    // The next item is the next whole array.
    assert_eq!(
        as_ints(&pack_all(&t, &src, 0, 2))[6..],
        [27, 28, 29, 32, 33, 34]
    );
}

#[test]
fn subarray_fortran_order() {
    // The same shape stored column-major: element (r, c) at r + 4c, r fastest.
    let t = TypeMap::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &int()).unwrap();
    assert_eq!((t.lb(), t.extent()), (0, 80));
    let src = ints(20);
    assert_eq!(as_ints(&pack_all(&t, &src, 0, 1)), [9, 10, 13, 14, 17, 18]);
}

#[test]
fn subarray_3d_matches_loops() {
    let (sizes, sub, start) = ([3i64, 4, 5], [2i64, 2, 3], [1i64, 1, 2]);
    for order in [Order::C, Order::Fortran] {
        let t = TypeMap::subarray(&sizes, &sub, &start, order, &int()).unwrap();
        let mut want = Vec::new();
        match order {
            Order::C => {
                for i in 0..sub[0] {
                    for j in 0..sub[1] {
                        for k in 0..sub[2] {
                            let (a, b, c) = (start[0] + i, start[1] + j, start[2] + k);
                            want.push((a * 20 + b * 5 + c) as i32);
                        }
                    }
                }
            }
            Order::Fortran => {
                for k in 0..sub[2] {
                    for j in 0..sub[1] {
                        for i in 0..sub[0] {
                            let (a, b, c) = (start[0] + i, start[1] + j, start[2] + k);
                            want.push((a + b * 3 + c * 12) as i32);
                        }
                    }
                }
            }
        }
        assert_eq!(as_ints(&pack_all(&t, &ints(60), 0, 1)), want, "{order:?}");
        assert_eq!(t.extent(), 240);
    }
}

#[test]
fn zero_counts_make_empty_types() {
    let empties = [
        TypeMap::contiguous(0, &int()).unwrap(),
        TypeMap::vector(0, 2, 3, &int()).unwrap(),
        TypeMap::vector(3, 0, 3, &int()).unwrap(),
        TypeMap::indexed(&[0, 0], &[4, 9], &int()).unwrap(),
        TypeMap::hindexed(&[], &[], &int()).unwrap(),
        TypeMap::indexed_block(0, &[1, 2], &int()).unwrap(),
    ];
    for t in &empties {
        assert_eq!((t.size_bytes(), t.lb(), t.ub()), (0, 0, 0));
        assert_eq!((t.true_lb(), t.true_ub()), (0, 0));
        assert!(t.is_contiguous());
        assert_eq!(t.footprint(7).unwrap(), None);
        assert_eq!(t.pack(&[], 0, 7, &mut []).unwrap(), 0);
        t.unpack(&[], &mut [], 0, 7).unwrap();
        assert_eq!(t.reduction(), Some((TypeKind::I32, 0)));
        assert_eq!(t.count_in(0), Some(0));
        assert_eq!(t.elements_in(0), Some(0));
        assert_eq!(t.elements_in(1), None);
    }
    let s = TypeMap::create_struct(&[], &[], &[]).unwrap();
    assert_eq!((s.size_bytes(), s.extent(), s.kinds()), (0, 0, Kinds::None));
    // Zero items of a real type touch nothing either.
    assert_eq!(int().footprint(0).unwrap(), None);
    assert_eq!(int().pack(&[], 0, 0, &mut []).unwrap(), 0);
    // An empty copy does not stretch a struct's bounds.
    let e = TypeMap::create_struct(&[1, 1], &[100, 0], &[empties[0].clone(), int()]).unwrap();
    assert_eq!((e.lb(), e.ub()), (0, 4));
    // A resized empty type keeps its bounds.
    let r = TypeMap::resized(&empties[0], 2, 6).unwrap();
    let c = TypeMap::contiguous(3, &r).unwrap();
    assert_eq!((c.size_bytes(), c.lb(), c.ub()), (0, 2, 20));
}

#[test]
fn pairs_match_weft_pair_layout() {
    for (v, tk, size, extent) in [
        (BasicKind::F32, Some(TypeKind::F32I32), 8, 8),
        (BasicKind::F64, Some(TypeKind::F64I32), 12, 16),
        (BasicKind::I32, Some(TypeKind::I32I32), 8, 8),
        (BasicKind::I64, Some(TypeKind::I64I32), 12, 16),
        (BasicKind::I16, Some(TypeKind::I16I32), 6, 8),
        (BasicKind::LongDouble, Some(TypeKind::LongDoubleI32), 20, 32),
        (BasicKind::U8, None, 5, 8),
    ] {
        let p = TypeMap::pair(v);
        assert_eq!((p.size_bytes(), p.extent()), (size, extent), "{v:?}");
        assert_eq!(p.pair_kind(), tk);
        if let Some(tk) = tk {
            let rust_size = match tk {
                TypeKind::F32I32 => std::mem::size_of::<crate::coll::F32I32>(),
                TypeKind::F64I32 => std::mem::size_of::<crate::coll::F64I32>(),
                TypeKind::I32I32 => std::mem::size_of::<crate::coll::I32I32>(),
                TypeKind::I16I32 => std::mem::size_of::<crate::coll::datatype::I16I32>(),
                TypeKind::LongDoubleI32 => {
                    std::mem::size_of::<crate::coll::datatype::LongDoubleI32>()
                }
                _ => std::mem::size_of::<crate::coll::I64I32>(),
            };
            assert_eq!(extent as usize, rust_size);
            let c = TypeMap::contiguous(5, &p).unwrap();
            assert_eq!(c.reduction_kind(), Some((tk, 5)));
            let v = TypeMap::vector(2, 2, 3, &p).unwrap();
            assert_eq!(v.reduction_kind(), Some((tk, 4)));
            // Packed bytes are an array of the pair only when the pair has no padding.
            let padded = matches!(
                tk,
                TypeKind::F64I32 | TypeKind::I64I32 | TypeKind::I16I32 | TypeKind::LongDoubleI32
            );
            assert_eq!(v.reduction(), (!padded).then_some((tk, 4)));
            assert_eq!(size as usize == rust_size, !padded);
        }
    }
    // A derived type of MPI_DOUBLE_INT copied into weft's F64I32 array.
    let p = TypeMap::pair(BasicKind::F64);
    let v = TypeMap::vector(2, 1, 2, &p).unwrap();
    let src: Vec<crate::coll::F64I32> = (0..4)
        .map(|i| crate::coll::F64I32::new(i as f64 * 1.5, i))
        .collect();
    let src_bytes: &[u8] = bytemuck::cast_slice(&src);
    let mut dst = vec![crate::coll::F64I32::default(); 2];
    let dense = TypeMap::contiguous(2, &p).unwrap();
    let moved = copy(
        Typed {
            map: &v,
            count: 1,
            origin: 0,
        },
        src_bytes,
        Typed {
            map: &dense,
            count: 1,
            origin: 0,
        },
        bytemuck::cast_slice_mut(&mut dst),
    )
    .unwrap();
    assert_eq!(moved, 24);
    assert_eq!(dst[0], crate::coll::F64I32::new(0.0, 0));
    assert_eq!(dst[1], crate::coll::F64I32::new(3.0, 2));
    // A struct of a pair and an int reduces as nothing.
    let mixed = TypeMap::create_struct(&[1, 1], &[0, 16], &[p.clone(), int()]).unwrap();
    assert_eq!(mixed.reduction(), None);
}

#[test]
fn reduction_of_one_basic_kind() {
    let f = TypeMap::basic(BasicKind::F32);
    let t = TypeMap::create_struct(
        &[2, 3],
        &[0, 64],
        &[f.clone(), TypeMap::vector(2, 1, 3, &f).unwrap()],
    )
    .unwrap();
    assert_eq!(t.reduction(), Some((TypeKind::F32, 8)));
    // Kinds without a reduction kind (char) do not reduce.
    let c = TypeMap::contiguous(4, &TypeMap::basic(BasicKind::Char)).unwrap();
    assert_eq!(c.kinds(), Kinds::One(BasicKind::Char));
    assert_eq!(c.reduction(), None);
}

#[test]
fn pack_range_windows_concatenate() {
    let t = TypeMap::vector(4, 3, 5, &TypeMap::basic(BasicKind::I16)).unwrap();
    let src: Vec<u8> = (0..=255).collect();
    let full = pack_all(&t, &src, 0, 3);
    for cut in [1usize, 5, 7, 24, 50] {
        let mut pieces = Vec::new();
        let mut pos = 0;
        while pos < full.len() {
            let n = cut.min(full.len() - pos);
            let mut out = vec![0u8; n];
            t.pack_range(&src, 0, 3, pos as u64, &mut out).unwrap();
            pieces.extend_from_slice(&out);
            pos += n;
        }
        assert_eq!(pieces, full, "cut {cut}");
        let mut dst = vec![0u8; 256];
        let mut pos = 0;
        while pos < full.len() {
            let n = cut.min(full.len() - pos);
            t.unpack_range(&full[pos..pos + n], pos as u64, &mut dst, 0, 3)
                .unwrap();
            pos += n;
        }
        let mut want = vec![0u8; 256];
        t.unpack(&full, &mut want, 0, 3).unwrap();
        assert_eq!(dst, want);
    }
}

#[test]
fn copy_between_layouts() {
    let v = TypeMap::vector(3, 1, 2, &int()).unwrap();
    let src = ints(6);
    let mut dst = vec![0u8; 12];
    let from = Typed {
        map: &v,
        count: 1,
        origin: 0,
    };
    let dense = TypeMap::contiguous(3, &int()).unwrap();
    let to = Typed {
        map: &dense,
        count: 1,
        origin: 0,
    };
    assert_eq!(copy(from, &src, to, &mut dst).unwrap(), 12);
    assert_eq!(as_ints(&dst), [0, 2, 4]);
    // Non-contiguous on both sides, larger than one staging chunk.
    let big = TypeMap::vector(20_000, 1, 2, &int()).unwrap();
    let rev = TypeMap::hvector(20_000, 1, -12, &int()).unwrap();
    let src = ints(40_000);
    let mut dst = vec![0u8; 240_000];
    let n = copy(
        Typed {
            map: &big,
            count: 1,
            origin: 0,
        },
        &src,
        Typed {
            map: &rev,
            count: 1,
            origin: 239_996,
        },
        &mut dst,
    )
    .unwrap();
    assert_eq!(n, 80_000);
    let got = as_ints(&dst);
    for i in 0..20_000usize {
        assert_eq!(got[59_999 - 3 * i], 2 * i as i32);
    }
    // Shorter source into a longer destination is a partial receive; the reverse truncates.
    let one = Typed {
        map: &dense,
        count: 1,
        origin: 0,
    };
    let two = Typed {
        map: &dense,
        count: 2,
        origin: 0,
    };
    let src = ints(6);
    let mut dst = vec![0u8; 24];
    assert_eq!(copy(one, &src, two, &mut dst).unwrap(), 12);
    let e = copy(two, &src[..], one, &mut dst[..12]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncate);
}

#[test]
fn large_vector_is_compact() {
    // A million-element strided vector is one repetition of one run, not a million items.
    let t = TypeMap::vector(1_000_000, 1, 2, &double()).unwrap();
    assert_eq!(t.body.items.len(), 1);
    assert_eq!(t.size_bytes(), 8_000_000);
    // Nesting keeps it compact too.
    let m = TypeMap::contiguous(1000, &TypeMap::resized(&t, 0, 8).unwrap()).unwrap();
    assert_eq!(m.body.items.len(), 1);
    assert_eq!(m.elements_per_item(), 1_000_000_000);
}

fn expect_err<T: std::fmt::Debug>(r: Result<T, weft_core::Error>, kind: ErrorKind, text: &str) {
    let e = r.unwrap_err();
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.message().contains(text), "{e} lacks {text:?}");
}

#[test]
fn every_constructor_error() {
    let i = int();
    expect_err(
        TypeMap::contiguous(-1, &i),
        ErrorKind::InvalidCount,
        "count = -1",
    );
    expect_err(
        TypeMap::vector(-2, 1, 1, &i),
        ErrorKind::InvalidCount,
        "count = -2",
    );
    expect_err(
        TypeMap::vector(2, -1, 1, &i),
        ErrorKind::InvalidCount,
        "blocklength = -1",
    );
    expect_err(
        TypeMap::hvector(1, -3, 1, &i),
        ErrorKind::InvalidCount,
        "blocklength = -3",
    );
    expect_err(
        TypeMap::indexed(&[1, -1], &[0, 1], &i),
        ErrorKind::InvalidCount,
        "blocklengths[1] = -1",
    );
    expect_err(
        TypeMap::indexed(&[1], &[0, 1], &i),
        ErrorKind::InvalidArgument,
        "blocklengths has 1 entries but displacements has 2",
    );
    expect_err(
        TypeMap::hindexed(&[1, 2], &[0], &i),
        ErrorKind::InvalidArgument,
        "displacements has 1",
    );
    expect_err(
        TypeMap::indexed_block(-1, &[0], &i),
        ErrorKind::InvalidCount,
        "blocklength = -1",
    );
    expect_err(
        TypeMap::hindexed_block(-1, &[0], &i),
        ErrorKind::InvalidCount,
        "blocklength = -1",
    );
    expect_err(
        TypeMap::create_struct(&[1], &[0], &[]),
        ErrorKind::InvalidArgument,
        "types has 0",
    );
    expect_err(
        TypeMap::create_struct(&[1, -4], &[0, 8], &[i.clone(), i.clone()]),
        ErrorKind::InvalidCount,
        "blocklengths[1] = -4",
    );
    // Overflows: of the size, of a displacement, of a stride, of the bounds.
    expect_err(
        TypeMap::contiguous(i64::MAX / 2, &double()),
        ErrorKind::InvalidCount,
        "overflows",
    );
    expect_err(
        TypeMap::vector(2, 1, i64::MAX / 2, &double()),
        ErrorKind::InvalidCount,
        "stride",
    );
    expect_err(
        TypeMap::indexed(&[1], &[i64::MAX / 2], &double()),
        ErrorKind::InvalidCount,
        "displacement",
    );
    expect_err(
        TypeMap::hvector(3, 1, i64::MAX / 2, &i),
        ErrorKind::InvalidCount,
        "overflow",
    );
    expect_err(
        TypeMap::resized(&i, i64::MAX, 1),
        ErrorKind::InvalidCount,
        "lb 9223372036854775807 + extent 1",
    );
    let big = TypeMap::resized(&i, 0, i64::MAX / 2).unwrap();
    expect_err(
        TypeMap::contiguous(3, &big),
        ErrorKind::InvalidCount,
        "overflow",
    );
    let inner = TypeMap::hindexed(&[1], &[i64::MAX - 8], &i).unwrap();
    expect_err(
        TypeMap::hindexed(&[1], &[16], &inner),
        ErrorKind::InvalidCount,
        "overflow",
    );
}

#[test]
fn every_subarray_error() {
    let i = int();
    let sub = |s: &[i64], ss: &[i64], st: &[i64]| TypeMap::subarray(s, ss, st, Order::C, &i);
    expect_err(sub(&[], &[], &[]), ErrorKind::InvalidArgument, "ndims = 0");
    expect_err(
        sub(&[4, 4], &[2], &[0, 0]),
        ErrorKind::InvalidArgument,
        "subsizes has 1",
    );
    expect_err(
        sub(&[4, 4], &[2, 2], &[0]),
        ErrorKind::InvalidArgument,
        "starts has 1",
    );
    expect_err(
        sub(&[4, 0], &[2, 1], &[0, 0]),
        ErrorKind::InvalidArgument,
        "sizes[1] = 0",
    );
    expect_err(
        sub(&[4, 4], &[0, 1], &[0, 0]),
        ErrorKind::InvalidArgument,
        "subsizes[0] = 0 must be in 1..=4",
    );
    expect_err(
        sub(&[4, 4], &[5, 1], &[0, 0]),
        ErrorKind::InvalidArgument,
        "subsizes[0] = 5",
    );
    expect_err(
        sub(&[4, 4], &[1, 1], &[-1, 0]),
        ErrorKind::InvalidArgument,
        "starts[0] = -1",
    );
    expect_err(
        sub(&[4, 4], &[2, 3], &[0, 2]),
        ErrorKind::InvalidArgument,
        "starts[1] = 2 must be in 0..=1",
    );
    expect_err(
        sub(&[i64::MAX / 2, 4], &[1, 1], &[0, 0]),
        ErrorKind::InvalidCount,
        "overflows",
    );
}

#[test]
fn every_transfer_error() {
    let v = TypeMap::vector(2, 1, 3, &int()).unwrap(); // touches [0, 16)
    let src = ints(4);
    let mut out = vec![0u8; 8];
    expect_err(
        v.pack(&src, 0, 2, &mut out),
        ErrorKind::Truncate,
        "2 items need 16 bytes but the output holds 8",
    );
    expect_err(
        v.pack(&src[..12], 0, 1, &mut out),
        ErrorKind::InvalidArgument,
        "touch bytes [0, 16) around the buffer address, but the buffer spans [0, 12)",
    );
    expect_err(
        v.pack(&src, 4, 1, &mut out),
        ErrorKind::InvalidArgument,
        "buffer spans [-4, 12)",
    );
    let r = TypeMap::resized(&int(), 0, -8).unwrap(); // items step down
    expect_err(
        r.pack(&src, 0, 2, &mut out),
        ErrorKind::InvalidArgument,
        "touch bytes [-8, 4)",
    );
    assert_eq!(as_ints(&pack_all(&r, &src, 8, 2)), [2, 0]);
    expect_err(
        v.pack_range(&src, 0, 1, 4, &mut out),
        ErrorKind::Truncate,
        "window [4, 12) is past the 8 packed bytes",
    );
    let mut dst = vec![0u8; 16];
    expect_err(
        v.unpack(&[0u8; 12], &mut dst, 0, 1),
        ErrorKind::Truncate,
        "12 bytes arrived but 1 items of 8 bytes hold 8",
    );
    expect_err(
        v.unpack(&[0u8; 8], &mut dst[..15], 0, 1),
        ErrorKind::InvalidArgument,
        "buffer spans [0, 15)",
    );
    expect_err(
        v.unpack_range(&[0u8; 4], 6, &mut dst, 0, 1),
        ErrorKind::Truncate,
        "window [6, 10)",
    );
    expect_err(
        double().packed_bytes(u64::MAX / 4),
        ErrorKind::InvalidCount,
        "overflows",
    );
    let wide = TypeMap::resized(&int(), 0, i64::MAX / 2).unwrap();
    expect_err(wide.footprint(4), ErrorKind::InvalidCount, "beyond");
    let one = Typed {
        map: &v,
        count: 1,
        origin: 0,
    };
    expect_err(
        copy(one, &src[..8], one, &mut dst),
        ErrorKind::InvalidArgument,
        "copy source",
    );
    expect_err(
        copy(one, &src, one, &mut dst[..4]),
        ErrorKind::InvalidArgument,
        "copy destination",
    );
}

#[test]
fn combiners_record_the_constructor_call() {
    let i = int();
    assert!(matches!(i.combiner(), Combiner::Named));
    assert!(matches!(
        TypeMap::pair(BasicKind::F64).combiner(),
        Combiner::Named
    ));
    let v = TypeMap::vector(3, 2, 4, &i).unwrap();
    match v.combiner() {
        Combiner::Vector {
            count: 3,
            blocklength: 2,
            stride: 4,
            old,
        } => assert!(matches!(old.combiner(), Combiner::Named)),
        c => panic!("{c:?}"),
    }
    let d = v.dup();
    assert!(matches!(d.combiner(), Combiner::Dup(o) if o.size_bytes() == 24));
    assert_eq!(
        (d.size_bytes(), d.lb(), d.ub()),
        (v.size_bytes(), v.lb(), v.ub())
    );
    let checks: Vec<(TypeMap, &str)> = vec![
        (TypeMap::contiguous(2, &i).unwrap(), "Contiguous { count: 2"),
        (
            TypeMap::hvector(2, 1, 12, &i).unwrap(),
            "Hvector { count: 2, blocklength: 1, stride_bytes: 12",
        ),
        (
            TypeMap::indexed(&[1, 2], &[0, 3], &i).unwrap(),
            "Indexed { blocklengths: [1, 2], displacements: [0, 3]",
        ),
        (
            TypeMap::hindexed(&[1], &[8], &i).unwrap(),
            "Hindexed { blocklengths: [1], displacements_bytes: [8]",
        ),
        (
            TypeMap::indexed_block(2, &[0, 5], &i).unwrap(),
            "IndexedBlock { blocklength: 2, displacements: [0, 5]",
        ),
        (
            TypeMap::hindexed_block(1, &[4], &i).unwrap(),
            "HindexedBlock { blocklength: 1, displacements_bytes: [4]",
        ),
        (
            TypeMap::create_struct(&[1, 1], &[0, 8], &[double(), i.clone()]).unwrap(),
            "Struct { blocklengths: [1, 1], displacements_bytes: [0, 8]",
        ),
        (
            TypeMap::resized(&i, -4, 16).unwrap(),
            "Resized { lb: -4, extent: 16",
        ),
        (
            TypeMap::subarray(&[4, 4], &[2, 2], &[1, 1], Order::Fortran, &i).unwrap(),
            "Subarray { sizes: [4, 4], subsizes: [2, 2], starts: [1, 1], order: Fortran",
        ),
        (
            TypeMap::darray(2, 1, &[dim(4, Distribution::Block, None, 2)], Order::C, &i).unwrap(),
            "Darray { size: 2, rank: 1, dims: [DarrayDim { gsize: 4, distrib: Block",
        ),
    ];
    for (t, want) in checks {
        let got = format!("{:?}", t.combiner());
        assert!(got.starts_with(want), "{got} does not start with {want}");
    }
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn as_f64s(b: &[u8]) -> Vec<f64> {
    b.chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn reduce_local_on_a_strided_type() {
    let v = TypeMap::vector(3, 1, 2, &double()).unwrap();
    let input = f64s(&[
        1.0, 100.0, 2.0, 100.0, 3.0, 4.0, 100.0, 5.0, 100.0, 6.0, 100.0,
    ]);
    let mut inout = f64s(&[
        10.0, -1.0, 20.0, -1.0, 30.0, 40.0, -1.0, 50.0, -1.0, 60.0, -1.0,
    ]);
    // Two items: the second starts one extent (5 doubles) later.
    reduce_local(&crate::coll::Op::Sum, &v, 2, (&input, 0), (&mut inout, 0)).unwrap();
    assert_eq!(
        as_f64s(&inout),
        [11.0, -1.0, 22.0, -1.0, 33.0, 44.0, -1.0, 55.0, -1.0, 66.0, -1.0]
    );
    let g = v.gather_for_reduction(&input, 0, 2).unwrap();
    assert_eq!((g.kind(), g.elements()), (TypeKind::F64, 6));
    assert_eq!(as_f64s(g.bytes()), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(g.bytes().as_ptr() as usize % 8, 0);
}

#[test]
fn reduce_local_minloc_on_pairs() {
    use crate::coll::F64I32;
    let p = TypeMap::pair(BasicKind::F64);
    // Every other pair.
    let v = TypeMap::vector(2, 1, 2, &p).unwrap();
    let a = [
        F64I32::new(1.0, 0),
        F64I32::new(9.0, 9),
        F64I32::new(7.0, 0),
        F64I32::new(9.0, 9),
    ];
    let mut b = [
        F64I32::new(2.0, 1),
        F64I32::new(8.0, 8),
        F64I32::new(5.0, 1),
        F64I32::new(8.0, 8),
    ];
    reduce_local(
        &crate::coll::Op::MinLoc,
        &v,
        1,
        (bytemuck::cast_slice(&a), 0),
        (bytemuck::cast_slice_mut(&mut b), 0),
    )
    .unwrap();
    assert_eq!(b[0], F64I32::new(1.0, 0));
    assert_eq!(b[1], F64I32::new(8.0, 8), "gap untouched");
    assert_eq!(b[2], F64I32::new(5.0, 1));
}

#[test]
fn reduction_errors() {
    let mixed = TypeMap::create_struct(&[1, 1], &[0, 8], &[double(), int()]).unwrap();
    let buf = vec![0u8; 16];
    expect_err(
        mixed.gather_for_reduction(&buf, 0, 1),
        ErrorKind::InvalidType,
        "built from several basic kinds",
    );
    let chars = TypeMap::contiguous(2, &TypeMap::basic(BasicKind::Char)).unwrap();
    expect_err(
        chars.gather_for_reduction(&buf, 0, 1),
        ErrorKind::InvalidType,
        "built from char, which reductions do not apply to",
    );
    let d = TypeMap::contiguous(2, &double()).unwrap();
    let mut out = vec![0u8; 16];
    expect_err(
        reduce_local(&crate::coll::Op::Band, &d, 1, (&buf, 0), (&mut out, 0)),
        ErrorKind::InvalidOp,
        "reduce_local: operation",
    );
    let g = d.gather_for_reduction(&buf, 0, 1).unwrap();
    let i = TypeMap::contiguous(2, &int()).unwrap();
    expect_err(
        i.scatter_from_reduction(&g, &mut out, 0, 1),
        ErrorKind::InvalidType,
        "holds 2 f64 elements but 1 items of this type take 2 i32",
    );
    expect_err(
        d.gather_for_reduction(&buf[..8], 0, 1),
        ErrorKind::InvalidArgument,
        "gather_for_reduction: 1 items touch bytes [0, 16)",
    );
}

#[test]
fn contiguous_span_lets_sends_skip_packing() {
    fn shared<T: Send + Sync>(_: &T) {}
    let c = TypeMap::contiguous(4, &int()).unwrap();
    shared(&c);
    assert_eq!(c.contiguous_span(3), Some((0, 48)));
    // A negative lb with extent equal to the size still tiles items end to end.
    let r = TypeMap::resized(&c, -8, 16).unwrap();
    assert_eq!(r.contiguous_span(2), Some((0, 32)));
    // One item is one range even though the extent differs from the size...
    let g = TypeMap::resized(&c, 0, 24).unwrap();
    assert_eq!(g.contiguous_span(1), Some((0, 16)));
    // ...several are not (8-byte gaps between items).
    assert_eq!(g.contiguous_span(2), None);
    assert_eq!(
        TypeMap::vector(2, 1, 2, &int()).unwrap().contiguous_span(1),
        None
    );
    assert_eq!(c.contiguous_span(u64::MAX), None);
    // Get_elements through a strided batch counts whole elements.
    let v = TypeMap::vector(1000, 1, 3, &int()).unwrap();
    assert_eq!(v.elements_in(4 * 999), Some(999));
    assert_eq!(v.elements_in(4 * 999 + 2), None);
}

#[test]
fn shifted_types_serve_absolute_addresses() {
    // A struct with "absolute" displacements far above address 0 (MPI_BOTTOM): shift it so
    // its data starts at the slice start, keeping the extent so counts still stride right.
    let t = TypeMap::create_struct(&[1, 1], &[1 << 40, (1 << 40) + 8], &[int(), double()]).unwrap();
    let (lo, hi) = t.footprint(2).unwrap().unwrap();
    assert_eq!((lo, hi), (1 << 40, (1 << 40) + 32));
    let s = t.shifted(-lo).unwrap();
    assert_eq!((s.extent(), s.size_bytes()), (t.extent(), t.size_bytes()));
    assert_eq!(s.footprint(2).unwrap(), Some((0, 32)));
    let src: Vec<u8> = (0..32).collect();
    let want: Vec<u8> = (0..4).chain(8..20).chain(24..32).collect();
    assert_eq!(pack_all(&s, &src, 0, 2), want);
    // Bounds set by resized stay sticky through the shift.
    let r = TypeMap::resized(&int(), -4, 12)
        .unwrap()
        .shifted(100)
        .unwrap();
    assert_eq!((r.lb(), r.ub()), (96, 108));
}

fn dim(gsize: i64, distrib: Distribution, darg: Option<i64>, psize: i64) -> DarrayDim {
    DarrayDim {
        gsize,
        distrib,
        darg,
        psize,
    }
}

/// The elements (linear indices) `rank` owns, in storage order, computed element by element.
fn naive_darray(rank: i64, dims: &[DarrayDim], order: Order) -> Vec<i64> {
    let mut coords = vec![0i64; dims.len()];
    let mut r = rank;
    for i in (0..dims.len()).rev() {
        coords[i] = r % dims[i].psize;
        r /= dims[i].psize;
    }
    let total: i64 = dims.iter().map(|d| d.gsize).product();
    let mut out = Vec::new();
    for lin in 0..total {
        // Global index tuple of storage position `lin`.
        let mut idx = vec![0i64; dims.len()];
        let mut rest = lin;
        let fastest_first: Vec<usize> = match order {
            Order::C => (0..dims.len()).rev().collect(),
            Order::Fortran => (0..dims.len()).collect(),
        };
        for &i in &fastest_first {
            idx[i] = rest % dims[i].gsize;
            rest /= dims[i].gsize;
        }
        let owned = dims.iter().enumerate().all(|(i, d)| {
            let owner = match d.distrib {
                Distribution::None => 0,
                Distribution::Block => idx[i] / d.darg.unwrap_or((d.gsize - 1) / d.psize + 1),
                Distribution::Cyclic => (idx[i] / d.darg.unwrap_or(1)) % d.psize,
            };
            owner == coords[i]
        });
        if owned {
            out.push(lin);
        }
    }
    out
}

fn check_darray(dims: &[DarrayDim], order: Order) {
    let size: i64 = dims.iter().map(|d| d.psize).product();
    let total: i64 = dims.iter().map(|d| d.gsize).product();
    let src = ints(total as usize);
    let mut seen = vec![0u32; total as usize];
    for rank in 0..size {
        let t = TypeMap::darray(size, rank, dims, order, &int()).unwrap();
        assert_eq!((t.lb(), t.extent()), (0, total * 4), "{dims:?} {order:?}");
        let got = as_ints(&pack_all(&t, &src, 0, 1));
        let want: Vec<i32> = naive_darray(rank, dims, order)
            .into_iter()
            .map(|x| x as i32)
            .collect();
        assert_eq!(got, want, "rank {rank} of {dims:?} {order:?}");
        for g in got {
            seen[g as usize] += 1;
        }
    }
    // The ranks' parts partition the array.
    assert!(seen.iter().all(|&n| n == 1), "{dims:?} {order:?}: {seen:?}");
}

#[test]
fn darray_block_and_cyclic() {
    // 6 elements on 4 processes by block: blocks of 2; rank 3 owns nothing.
    let d = [dim(6, Distribution::Block, None, 4)];
    let t = TypeMap::darray(4, 1, &d, Order::C, &int()).unwrap();
    assert_eq!(as_ints(&pack_all(&t, &ints(6), 0, 1)), [2, 3]);
    let t = TypeMap::darray(4, 3, &d, Order::C, &int()).unwrap();
    assert_eq!(t.size_bytes(), 0);
    assert_eq!(t.extent(), 24);
    // Cyclic(2) of 7 on 2: rank 0 owns 0,1,4,5; rank 1 owns 2,3,6.
    let d = [dim(7, Distribution::Cyclic, Some(2), 2)];
    let t = TypeMap::darray(2, 1, &d, Order::C, &int()).unwrap();
    assert_eq!(as_ints(&pack_all(&t, &ints(7), 0, 1)), [2, 3, 6]);
    for order in [Order::C, Order::Fortran] {
        check_darray(&d, order);
        check_darray(
            &[
                dim(5, Distribution::Block, None, 2),
                dim(7, Distribution::Cyclic, Some(2), 3),
                dim(3, Distribution::None, None, 1),
            ],
            order,
        );
        check_darray(
            &[
                dim(9, Distribution::Cyclic, None, 2),
                dim(4, Distribution::Block, Some(3), 2),
            ],
            order,
        );
    }
}

#[test]
fn every_darray_error() {
    let i = int();
    let b = |g, p| dim(g, Distribution::Block, None, p);
    let dar = |size, rank, dims: &[DarrayDim]| TypeMap::darray(size, rank, dims, Order::C, &i);
    expect_err(
        dar(0, 0, &[b(4, 1)]),
        ErrorKind::InvalidArgument,
        "size = 0",
    );
    expect_err(
        dar(2, 2, &[b(4, 2)]),
        ErrorKind::InvalidRank,
        "rank = 2 is not in 0..2",
    );
    expect_err(dar(2, -1, &[b(4, 2)]), ErrorKind::InvalidRank, "rank = -1");
    expect_err(dar(1, 0, &[]), ErrorKind::InvalidArgument, "ndims = 0");
    expect_err(
        dar(1, 0, &[b(0, 1)]),
        ErrorKind::InvalidArgument,
        "gsizes[0] = 0",
    );
    expect_err(
        dar(1, 0, &[b(4, 0)]),
        ErrorKind::InvalidArgument,
        "psizes[0] = 0",
    );
    expect_err(
        dar(3, 0, &[b(4, 2)]),
        ErrorKind::InvalidArgument,
        "grid holds 2 processes but size = 3",
    );
    expect_err(
        dar(2, 0, &[dim(4, Distribution::None, None, 2)]),
        ErrorKind::InvalidArgument,
        "dimension 0 is not distributed but psizes[0] = 2",
    );
    expect_err(
        dar(2, 0, &[dim(9, Distribution::Block, Some(4), 2)]),
        ErrorKind::InvalidArgument,
        "block dargs[0] = 4 times psizes[0] = 2 does not cover gsizes[0] = 9",
    );
    expect_err(
        dar(2, 0, &[dim(9, Distribution::Cyclic, Some(0), 2)]),
        ErrorKind::InvalidArgument,
        "dargs[0] = 0 must be positive",
    );
}

// ---- Naive reference: full type maps with explicit markers -----------------------------

/// A constructor tree, built both by the engine and by the naive expander.
#[derive(Clone, Debug)]
enum Spec {
    Basic(BasicKind),
    Pair(BasicKind),
    Contig(i64, Box<Spec>),
    Vector(i64, i64, i64, Box<Spec>),
    Hvector(i64, i64, i64, Box<Spec>),
    Indexed(Vec<i64>, Vec<i64>, Box<Spec>),
    Hindexed(Vec<i64>, Vec<i64>, Box<Spec>),
    IndexedBlock(i64, Vec<i64>, Box<Spec>),
    HindexedBlock(i64, Vec<i64>, Box<Spec>),
    Struct(Vec<(i64, i64, Spec)>),
    Resized(i64, i64, Box<Spec>),
    Subarray(Vec<(i64, i64, i64)>, Order, Box<Spec>),
}

fn build(s: &Spec) -> TypeMap {
    match s {
        Spec::Basic(k) => TypeMap::basic(*k),
        Spec::Pair(k) => TypeMap::pair(*k),
        Spec::Contig(n, o) => TypeMap::contiguous(*n, &build(o)).unwrap(),
        Spec::Vector(n, b, st, o) => TypeMap::vector(*n, *b, *st, &build(o)).unwrap(),
        Spec::Hvector(n, b, st, o) => TypeMap::hvector(*n, *b, *st, &build(o)).unwrap(),
        Spec::Indexed(b, d, o) => TypeMap::indexed(b, d, &build(o)).unwrap(),
        Spec::Hindexed(b, d, o) => TypeMap::hindexed(b, d, &build(o)).unwrap(),
        Spec::IndexedBlock(b, d, o) => TypeMap::indexed_block(*b, d, &build(o)).unwrap(),
        Spec::HindexedBlock(b, d, o) => TypeMap::hindexed_block(*b, d, &build(o)).unwrap(),
        Spec::Struct(blocks) => {
            let lens: Vec<i64> = blocks.iter().map(|b| b.0).collect();
            let disps: Vec<i64> = blocks.iter().map(|b| b.1).collect();
            let types: Vec<TypeMap> = blocks.iter().map(|b| build(&b.2)).collect();
            TypeMap::create_struct(&lens, &disps, &types).unwrap()
        }
        Spec::Resized(lb, ext, o) => TypeMap::resized(&build(o), *lb, *ext).unwrap(),
        Spec::Subarray(dims, order, o) => {
            let sizes: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let subs: Vec<i64> = dims.iter().map(|d| d.1).collect();
            let starts: Vec<i64> = dims.iter().map(|d| d.2).collect();
            TypeMap::subarray(&sizes, &subs, &starts, *order, &build(o)).unwrap()
        }
    }
}

/// One entry of a full type map: data, or a bound marker. A hard marker comes from
/// `resized` and overrides data (§5.1.6); the soft upper marker is `create_struct`'s
/// alignment padding, which counts like data.
#[derive(Clone, Copy, Debug)]
enum E {
    Data(i64, BasicKind),
    HardLb(i64),
    HardUb(i64),
    SoftUb(i64),
}

fn shift(v: &[E], d: i64) -> impl Iterator<Item = E> + '_ {
    v.iter().map(move |e| match *e {
        E::Data(x, k) => E::Data(x + d, k),
        E::HardLb(x) => E::HardLb(x + d),
        E::HardUb(x) => E::HardUb(x + d),
        E::SoftUb(x) => E::SoftUb(x + d),
    })
}

fn has_hard(v: &[E]) -> bool {
    v.iter().any(|e| matches!(e, E::HardLb(_) | E::HardUb(_)))
}

fn naive_lb(v: &[E]) -> i64 {
    let hard: Vec<i64> = v
        .iter()
        .filter_map(|e| match e {
            E::HardLb(x) => Some(*x),
            _ => None,
        })
        .collect();
    if let Some(m) = hard.iter().min() {
        return *m;
    }
    v.iter()
        .filter_map(|e| match e {
            E::Data(x, _) => Some(*x),
            _ => None,
        })
        .min()
        .unwrap_or(0)
}

fn naive_ub(v: &[E]) -> i64 {
    let hard: Vec<i64> = v
        .iter()
        .filter_map(|e| match e {
            E::HardUb(x) => Some(*x),
            _ => None,
        })
        .collect();
    if let Some(m) = hard.iter().max() {
        return *m;
    }
    v.iter()
        .filter_map(|e| match e {
            E::Data(x, k) => Some(*x + k.size_bytes() as i64),
            E::SoftUb(x) => Some(*x),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn naive_extent(v: &[E]) -> i64 {
    naive_ub(v) - naive_lb(v)
}

fn naive_align(s: &Spec) -> u64 {
    match s {
        Spec::Basic(k) => k.align_bytes(),
        Spec::Pair(k) => k.align_bytes().max(4),
        Spec::Struct(b) => b.iter().map(|b| naive_align(&b.2)).max().unwrap_or(1),
        Spec::Contig(.., o)
        | Spec::Vector(.., o)
        | Spec::Hvector(.., o)
        | Spec::Indexed(.., o)
        | Spec::Hindexed(.., o)
        | Spec::IndexedBlock(.., o)
        | Spec::HindexedBlock(.., o)
        | Spec::Resized(.., o)
        | Spec::Subarray(.., o) => naive_align(o),
    }
}

/// Copies of `old` at each displacement, in order.
fn replicate(old: &[E], disps: impl Iterator<Item = i64>) -> Vec<E> {
    disps
        .flat_map(|d| shift(old, d).collect::<Vec<_>>())
        .collect()
}

fn expand(s: &Spec) -> Vec<E> {
    match s {
        Spec::Basic(k) => vec![E::Data(0, *k)],
        Spec::Pair(k) => {
            let at = k.size_bytes().div_ceil(4) * 4;
            let mut v = vec![E::Data(0, *k), E::Data(at as i64, BasicKind::I32)];
            pad(&mut v, naive_align(s));
            v
        }
        Spec::Contig(n, o) => {
            let e = expand(o);
            let x = naive_extent(&e);
            replicate(&e, (0..*n).map(|i| i * x))
        }
        Spec::Vector(n, b, st, o) | Spec::Hvector(n, b, st, o) => {
            let e = expand(o);
            let x = naive_extent(&e);
            let stride = if matches!(s, Spec::Vector(..)) {
                st * x
            } else {
                *st
            };
            replicate(
                &e,
                (0..*n).flat_map(|i| (0..*b).map(move |j| i * stride + j * x)),
            )
        }
        Spec::Indexed(b, d, o) | Spec::Hindexed(b, d, o) => {
            let e = expand(o);
            let x = naive_extent(&e);
            let scale = if matches!(s, Spec::Indexed(..)) { x } else { 1 };
            replicate(
                &e,
                b.iter()
                    .zip(d)
                    .flat_map(|(&b, &d)| (0..b).map(move |j| d * scale + j * x)),
            )
        }
        Spec::IndexedBlock(b, d, o) | Spec::HindexedBlock(b, d, o) => {
            let e = expand(o);
            let x = naive_extent(&e);
            let scale = if matches!(s, Spec::IndexedBlock(..)) {
                x
            } else {
                1
            };
            replicate(
                &e,
                d.iter()
                    .flat_map(|&d| (0..*b).map(move |j| d * scale + j * x)),
            )
        }
        Spec::Struct(blocks) => {
            let mut v = Vec::new();
            for (b, d, t) in blocks {
                let e = expand(t);
                let x = naive_extent(&e);
                v.extend(replicate(&e, (0..*b).map(|j| d + j * x)));
            }
            pad(&mut v, naive_align(s));
            v
        }
        Spec::Resized(lb, ext, o) => {
            let mut v: Vec<E> = expand(o)
                .into_iter()
                .filter(|e| matches!(e, E::Data(..)))
                .collect();
            v.push(E::HardLb(*lb));
            v.push(E::HardUb(lb + ext));
            v
        }
        Spec::Subarray(dims, order, o) => {
            let e = expand(o);
            let x = naive_extent(&e);
            // Every index tuple of the sub-block, fastest dimension last in C order.
            let mut idx: Vec<Vec<i64>> = vec![vec![]];
            let order_dims: Vec<usize> = match order {
                Order::C => (0..dims.len()).collect(),
                Order::Fortran => (0..dims.len()).rev().collect(),
            };
            for &k in &order_dims {
                idx = idx
                    .into_iter()
                    .flat_map(|p| {
                        (0..dims[k].1).map(move |i| {
                            let mut q = p.clone();
                            q.push(i);
                            q
                        })
                    })
                    .collect();
            }
            let linear = |pos: &[i64]| {
                // pos is in order_dims order; linearise in storage order.
                let mut at = vec![0i64; dims.len()];
                for (slot, &k) in order_dims.iter().enumerate() {
                    at[k] = dims[k].2 + pos[slot];
                }
                let mut lin = 0;
                for &k in &order_dims {
                    lin = lin * dims[k].0 + at[k];
                }
                lin
            };
            let mut v: Vec<E> = replicate(&e, idx.iter().map(|p| linear(p) * x))
                .into_iter()
                .filter(|e| matches!(e, E::Data(..)))
                .collect();
            let full: i64 = dims.iter().map(|d| d.0).product::<i64>() * x;
            v.push(E::HardLb(0));
            v.push(E::HardUb(full));
            v
        }
    }
}

/// `create_struct`'s padding: without hard markers, round the extent up to the alignment.
fn pad(v: &mut Vec<E>, align: u64) {
    if has_hard(v) || v.is_empty() {
        return;
    }
    let (lb, ub) = (naive_lb(v), naive_ub(v));
    let a = align as i64;
    v.push(E::SoftUb(lb + (ub - lb + a - 1) / a * a));
}

/// The basic kinds and pair kinds of the leaves (constructor inputs, counts ignored).
fn naive_reduction(s: &Spec, elements: u64) -> Option<(TypeKind, u64)> {
    fn leaves(s: &Spec, out: &mut Vec<Spec>) {
        match s {
            Spec::Basic(_) | Spec::Pair(_) => out.push(s.clone()),
            Spec::Struct(b) => b.iter().for_each(|b| leaves(&b.2, out)),
            Spec::Contig(.., o)
            | Spec::Vector(.., o)
            | Spec::Hvector(.., o)
            | Spec::Indexed(.., o)
            | Spec::Hindexed(.., o)
            | Spec::IndexedBlock(.., o)
            | Spec::HindexedBlock(.., o)
            | Spec::Resized(.., o)
            | Spec::Subarray(.., o) => leaves(o, out),
        }
    }
    let mut l = Vec::new();
    leaves(s, &mut l);
    let pair_of = |k: BasicKind| match k {
        BasicKind::F32 => Some(TypeKind::F32I32),
        BasicKind::F64 => Some(TypeKind::F64I32),
        BasicKind::I32 => Some(TypeKind::I32I32),
        BasicKind::I64 => Some(TypeKind::I64I32),
        BasicKind::I16 => Some(TypeKind::I16I32),
        BasicKind::LongDouble => Some(TypeKind::LongDoubleI32),
        _ => None,
    };
    if let Some(Spec::Pair(k0)) = l.first() {
        if let Some(p) = pair_of(*k0) {
            if l.iter().all(|x| matches!(x, Spec::Pair(k) if k == k0)) {
                return Some((p, elements / 2));
            }
        }
    }
    let mut kinds: Vec<BasicKind> = Vec::new();
    for x in &l {
        match x {
            Spec::Basic(k) => kinds.push(*k),
            Spec::Pair(k) => kinds.extend([*k, BasicKind::I32]),
            _ => unreachable!(),
        }
    }
    kinds.dedup();
    match kinds[..] {
        [k] if kinds.iter().all(|&x| x == k) => k.type_kind().map(|t| (t, elements)),
        _ => None,
    }
}

fn kind_strategy() -> impl Strategy<Value = BasicKind> {
    prop::sample::select(vec![
        BasicKind::I8,
        BasicKind::I16,
        BasicKind::I32,
        BasicKind::F64,
        BasicKind::Char,
        BasicKind::LongDouble,
    ])
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    let leaf = prop_oneof![
        4 => kind_strategy().prop_map(Spec::Basic),
        1 => prop::sample::select(vec![BasicKind::F64, BasicKind::I32, BasicKind::I16])
            .prop_map(Spec::Pair),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        let b = || inner.clone().prop_map(Box::new);
        prop_oneof![
            (0i64..4, b()).prop_map(|(n, o)| Spec::Contig(n, o)),
            (0i64..4, 0i64..3, -3i64..5, b()).prop_map(|(n, bl, s, o)| Spec::Vector(n, bl, s, o)),
            (0i64..4, 0i64..3, -24i64..40, b())
                .prop_map(|(n, bl, s, o)| Spec::Hvector(n, bl, s, o)),
            (prop::collection::vec((0i64..3, -2i64..6), 0..4), b()).prop_map(|(v, o)| {
                let (bl, d) = v.into_iter().unzip();
                Spec::Indexed(bl, d, o)
            }),
            (prop::collection::vec((0i64..3, -20i64..40), 0..4), b()).prop_map(|(v, o)| {
                let (bl, d) = v.into_iter().unzip();
                Spec::Hindexed(bl, d, o)
            }),
            (0i64..3, prop::collection::vec(-2i64..6, 0..4), b())
                .prop_map(|(bl, d, o)| Spec::IndexedBlock(bl, d, o)),
            (0i64..3, prop::collection::vec(-20i64..40, 0..4), b())
                .prop_map(|(bl, d, o)| Spec::HindexedBlock(bl, d, o)),
            prop::collection::vec((0i64..3, -16i64..48, inner.clone()), 0..4)
                .prop_map(Spec::Struct),
            (-16i64..16, -8i64..40, b()).prop_map(|(lb, x, o)| Spec::Resized(lb, x, o)),
            (
                prop::collection::vec((1i64..4, 0i64..4, 0i64..4), 1..4),
                prop::bool::ANY,
                b()
            )
                .prop_map(|(dims, c, o)| {
                    let dims = dims
                        .into_iter()
                        .map(|(size, sub, start)| {
                            let sub = 1 + sub % size;
                            (size, sub, start % (size - sub + 1))
                        })
                        .collect();
                    Spec::Subarray(dims, if c { Order::C } else { Order::Fortran }, o)
                }),
        ]
    })
}

/// Byte `i` of a source buffer: distinct enough to catch misplaced copies.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 8)) as u8
}

fn check_against_naive(spec: &Spec, count: u64, cuts: &[usize]) -> Result<(), TestCaseError> {
    let t = build(spec);
    let e = expand(spec);
    let data: Vec<(i64, BasicKind)> = e
        .iter()
        .filter_map(|x| match x {
            E::Data(d, k) => Some((*d, *k)),
            _ => None,
        })
        .collect();
    let size: u64 = data.iter().map(|d| d.1.size_bytes()).sum();
    prop_assert_eq!(t.size_bytes(), size);
    prop_assert_eq!((t.lb(), t.ub()), (naive_lb(&e), naive_ub(&e)), "bounds");
    let tlb = data.iter().map(|d| d.0).min().unwrap_or(0);
    let tub = data
        .iter()
        .map(|d| d.0 + d.1.size_bytes() as i64)
        .max()
        .unwrap_or(0);
    prop_assert_eq!((t.true_lb(), t.true_ub()), (tlb, tub), "true bounds");
    prop_assert_eq!(t.elements_per_item(), data.len() as u64);
    let want = naive_reduction(spec, data.len() as u64);
    prop_assert_eq!(t.reduction_kind(), want);
    let packed_ok = want.filter(|(k, _)| {
        !matches!(
            k,
            TypeKind::F64I32 | TypeKind::I64I32 | TypeKind::I16I32 | TypeKind::LongDoubleI32
        )
    });
    prop_assert_eq!(t.reduction(), packed_ok);
    let mut at = data.first().map_or(0, |d| d.0);
    let gap_free = data.iter().all(|&(d, k)| {
        let ok = d == at;
        at = d + k.size_bytes() as i64;
        ok
    });
    prop_assert_eq!(
        t.is_contiguous(),
        size == 0 || (gap_free && t.extent() == size as i64),
        "contiguity"
    );

    // A buffer covering the footprint plus slack on both sides.
    let (lo, hi) = t.footprint(count).unwrap().unwrap_or((0, 0));
    let origin = (-lo).max(0) as usize + 3;
    let len = origin + hi.max(0) as usize + 5;
    let src: Vec<u8> = (0..len).map(pattern).collect();
    let ext = t.extent();
    let at = |item: u64, d: i64| (origin as i64 + item as i64 * ext + d) as usize;
    let mut want = Vec::new();
    for item in 0..count {
        for &(d, k) in &data {
            let s = at(item, d);
            want.extend_from_slice(&src[s..s + k.size_bytes() as usize]);
        }
    }
    let packed = pack_all(&t, &src, origin, count);
    prop_assert_eq!(&packed, &want, "pack");

    let mut naive_dst = vec![0u8; len];
    let mut o = 0;
    for item in 0..count {
        for &(d, k) in &data {
            let s = at(item, d);
            let n = k.size_bytes() as usize;
            naive_dst[s..s + n].copy_from_slice(&packed[o..o + n]);
            o += n;
        }
    }
    let mut dst = vec![0u8; len];
    t.unpack(&packed, &mut dst, origin, count).unwrap();
    prop_assert_eq!(&dst, &naive_dst, "unpack");

    // Windows at arbitrary cut points concatenate to the whole.
    let mut bounds: Vec<usize> = cuts
        .iter()
        .map(|c| c % (packed.len() + 1))
        .chain([0, packed.len()])
        .collect();
    bounds.sort_unstable();
    let mut dst2 = vec![0u8; len];
    for w in bounds.windows(2) {
        let mut out = vec![0u8; w[1] - w[0]];
        t.pack_range(&src, origin, count, w[0] as u64, &mut out)
            .unwrap();
        prop_assert_eq!(&out[..], &packed[w[0]..w[1]], "pack window {:?}", w);
        t.unpack_range(&out, w[0] as u64, &mut dst2, origin, count)
            .unwrap();
    }
    prop_assert_eq!(&dst2, &naive_dst, "unpack windows");

    // Get_elements at every byte count of the stream.
    let mut boundaries = std::collections::BTreeMap::new();
    let mut pos = 0u64;
    let mut n = 0u64;
    boundaries.insert(0u64, 0u64);
    for _ in 0..count.max(2) {
        for &(_, k) in &data {
            pos += k.size_bytes();
            n += 1;
            boundaries.insert(pos, n);
        }
    }
    for b in 0..=pos {
        prop_assert_eq!(
            t.elements_in(b),
            boundaries.get(&b).copied(),
            "elements in {}",
            b
        );
    }

    // Typed copy into a byte array equals pack; back again equals unpack.
    let bytes = TypeMap::contiguous(packed.len() as i64, &TypeMap::basic(BasicKind::Byte)).unwrap();
    let mut flat = vec![0u8; packed.len()];
    let me = Typed {
        map: &t,
        count,
        origin,
    };
    let flat_side = Typed {
        map: &bytes,
        count: 1,
        origin: 0,
    };
    copy(me, &src, flat_side, &mut flat).unwrap();
    prop_assert_eq!(&flat, &packed, "copy out");
    let mut dst3 = vec![0u8; len];
    copy(me, &src, me, &mut dst3).unwrap();
    let mut want3 = vec![0u8; len];
    t.unpack(&packed, &mut want3, origin, count).unwrap();
    prop_assert_eq!(&dst3, &want3, "copy to same type");
    Ok(())
}

fn darray_dim_strategy() -> impl Strategy<Value = DarrayDim> {
    (1i64..8, 0u8..3, prop::option::of(1i64..4), 1i64..4).prop_map(|(g, kind, darg, p)| {
        match kind {
            0 => dim(g, Distribution::None, None, 1),
            // A block argument must cover the dimension; grow it until it does.
            1 => dim(
                g,
                Distribution::Block,
                darg.map(|a| a.max((g - 1) / p + 1)),
                p,
            ),
            _ => dim(g, Distribution::Cyclic, darg, p),
        }
    })
}

/// Values that stress overflow checks: small ones and ones near the ends of `i64`.
fn wild() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => -4i64..8,
        1 => prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            i64::MIN / 2,
            -(1 << 40),
            1 << 40,
            i64::MAX / 16,
            i64::MAX / 2,
            i64::MAX - 1,
            i64::MAX,
        ]),
    ]
}

/// Builds a type from arbitrary (often invalid) arguments, nesting once, and moves data with
/// it through a small buffer: every step returns a value or an error, never panics.
fn build_wild(args: &[i64], inner: bool) -> Result<TypeMap, weft_core::Error> {
    let base = if inner {
        build_wild(&args[6..], false)?
    } else {
        TypeMap::basic(BasicKind::I32)
    };
    let (a, b, c, d) = (args[0], args[1], args[2], args[3]);
    match args[4].rem_euclid(10) {
        0 => TypeMap::contiguous(a, &base),
        1 => TypeMap::vector(a, b, c, &base),
        2 => TypeMap::hvector(a, b, c, &base),
        3 => TypeMap::indexed(&[a, b], &[c, d], &base),
        4 => TypeMap::hindexed(&[a, b], &[c, d], &base),
        5 => TypeMap::indexed_block(a, &[c, d], &base),
        6 => TypeMap::hindexed_block(a, &[c, d], &base),
        7 => TypeMap::create_struct(
            &[a, b],
            &[c, d],
            &[base.clone(), TypeMap::basic(BasicKind::F64)],
        ),
        8 => TypeMap::resized(&base, c, d),
        _ => TypeMap::subarray(&[a, b], &[c, d], &[args[5], 0], Order::C, &base),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn wild_arguments_never_panic(
        args in prop::collection::vec(wild(), 12),
        count in prop::sample::select(vec![0u64, 1, 3, u64::MAX / 3, u64::MAX]),
        origin in 0usize..64,
    ) {
        if let Ok(t) = build_wild(&args, true) {
            let src = vec![7u8; 256];
            let mut out = vec![0u8; 256];
            let _ = t.footprint(count);
            let _ = t.packed_bytes(count);
            let _ = t.contiguous_span(count);
            let _ = t.elements_in(count);
            let _ = t.count_in(count);
            if let Ok(n) = t.pack(&src, origin, count, &mut out) {
                // Whatever packed must unpack into the same geometry.
                let mut dst = vec![0u8; 256];
                t.unpack(&out[..n], &mut dst, origin, count).unwrap();
            }
            let _ = t.pack_range(&src, origin, count, 5, &mut out[..7]);
            // Only gather what fits comfortably: an overlapping type may describe terabytes.
            if t.packed_bytes(count).is_ok_and(|n| n <= 1 << 20) {
                let _ = t.gather_for_reduction(&src, origin, count);
            }
        }
    }

    #[test]
    fn random_darrays_partition_the_array(
        dims in prop::collection::vec(darray_dim_strategy(), 1..4),
        c in prop::bool::ANY,
    ) {
        check_darray(&dims, if c { Order::C } else { Order::Fortran });
    }

    #[test]
    fn random_types_match_the_naive_type_map(
        spec in spec_strategy(),
        count in 0u64..4,
        cuts in prop::collection::vec(0usize..10_000, 0..5),
    ) {
        check_against_naive(&spec, count, &cuts)?;
    }
}
