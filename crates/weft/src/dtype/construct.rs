//! The MPI type constructors (MPI-4.1 §5.1.2-5.1.4, §5.1.7): each describes its new type
//! as copies of old types at displacements, builds the compressed map from them and derives
//! the bounds with the marker rules of §5.1.6. Pure; depends only on [`super::map`].

use super::map::Builder;
use super::{BasicKind, Combiner, DarrayDim, Distribution, Kinds, Order, TypeMap};
use crate::coll::TypeKind;
use std::sync::Arc;
use weft_core::{Error, ErrorKind, Result};

fn non_negative(op: &str, field: &str, v: i64) -> Result<u64> {
    if v < 0 {
        Err(Error::new(
            ErrorKind::InvalidCount,
            format!("{op}: {field} = {v} is negative"),
        ))
    } else {
        Ok(v as u64)
    }
}

fn same_len(op: &str, a: (&str, usize), b: (&str, usize)) -> Result<()> {
    if a.1 != b.1 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{op}: {} has {} entries but {} has {}", a.0, a.1, b.0, b.1),
        ));
    }
    Ok(())
}

fn mul(op: &str, what: &str, a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidCount,
            format!("{op}: {what} = {a} * {b} bytes overflows the address range"),
        )
    })
}

/// Whether the copies are all one value-index pair.
#[derive(Clone, Copy)]
enum PairState {
    Start,
    Pair(TypeKind),
    No,
}

/// Accumulates the bounds, kinds and alignment of a new type from its placements of old
/// types. `lb`/`ub` follow the markers of §5.1.6: a bound set by `resized` in any copy
/// overrides the data's extremes (it behaves like an explicit marker); otherwise the extremes
/// of all copies' bounds count.
struct Acc {
    lb_soft: Option<i128>,
    lb_sticky: Option<i128>,
    ub_soft: Option<i128>,
    ub_sticky: Option<i128>,
    align_bytes: u64,
    kinds: Kinds,
    pair: PairState,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            lb_soft: None,
            lb_sticky: None,
            ub_soft: None,
            ub_sticky: None,
            align_bytes: 1,
            kinds: Kinds::None,
            pair: PairState::Start,
        }
    }

    /// Records copies of `old` at `disp + i * s0 + j * s1 + ...` for each `(count, stride)`
    /// of `grid`. Kinds and alignment count even when a count is zero (an empty vector of
    /// `int` is still a type of `int`); bounds only count copies that exist.
    fn add(&mut self, disp: i64, grid: &[(u64, i64)], old: &TypeMap) {
        self.kinds = self.kinds.union(old.kinds);
        self.align_bytes = self.align_bytes.max(old.align_bytes);
        // A type built from nothing (a struct of no blocks) does not break a pair type.
        if old.kinds != Kinds::None {
            self.pair = match (self.pair, old.pair) {
                (PairState::Start, Some(p)) => PairState::Pair(p),
                (PairState::Pair(q), Some(p)) if p == q => PairState::Pair(p),
                _ => PairState::No,
            };
        }
        // Copies of a type with neither data nor bounds set by `resized` have an empty type
        // map: nothing in them bounds the new type.
        let empty = old.body.size == 0 && !old.lb_sticky && !old.ub_sticky;
        if empty || grid.iter().any(|&(c, _)| c == 0) {
            return;
        }
        let (mut lo, mut hi) = (disp as i128, disp as i128);
        for &(c, s) in grid {
            let span = (c as i128 - 1) * s as i128;
            lo += span.min(0);
            hi += span.max(0);
        }
        let (lb, ub) = (lo + old.lb as i128, hi + old.ub as i128);
        let min = |a: Option<i128>| Some(a.map_or(lb, |a| a.min(lb)));
        let max = |a: Option<i128>| Some(a.map_or(ub, |a| a.max(ub)));
        if old.lb_sticky {
            self.lb_sticky = min(self.lb_sticky);
        } else {
            self.lb_soft = min(self.lb_soft);
        }
        if old.ub_sticky {
            self.ub_sticky = max(self.ub_sticky);
        } else {
            self.ub_soft = max(self.ub_soft);
        }
    }

    /// The new type over `builder`'s data. `pad` applies `create_struct`'s alignment rule:
    /// without sticky bounds the extent is rounded up to the widest alignment inside.
    fn finish(self, op: &str, builder: Builder, pad: bool, combiner: Combiner) -> Result<TypeMap> {
        let body = builder.finish().map_err(|e| e.context(op))?;
        let lb = self.lb_sticky.or(self.lb_soft).unwrap_or(0);
        let mut ub = self.ub_sticky.or(self.ub_soft).unwrap_or(0);
        let lb_sticky = self.lb_sticky.is_some();
        let ub_sticky = self.ub_sticky.is_some();
        if pad && !lb_sticky && !ub_sticky {
            let a = self.align_bytes as i128;
            let extent = ub - lb;
            ub = lb + (extent + a - 1).div_euclid(a) * a;
        }
        let fits = |v: i128| (i64::MIN as i128..=i64::MAX as i128).contains(&v);
        if !fits(lb) || !fits(ub) || !fits(ub - lb) {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!("{op}: bounds [{lb}, {ub}) overflow the address range"),
            ));
        }
        Ok(TypeMap {
            body,
            lb: lb as i64,
            ub: ub as i64,
            lb_sticky,
            ub_sticky,
            align_bytes: self.align_bytes,
            kinds: self.kinds,
            pair: match self.pair {
                PairState::Pair(p) => Some(p),
                _ => None,
            },
            combiner: Arc::new(combiner),
        })
    }
}

impl TypeMap {
    /// A predefined basic type (MPI-4.1 §3.2.2): one element at displacement 0, `lb` 0,
    /// extent its size.
    pub fn basic(kind: BasicKind) -> TypeMap {
        let mut b = Builder::default();
        b.push_run(0, kind, 1);
        TypeMap {
            body: b.finish().expect("one basic element fits"),
            lb: 0,
            ub: kind.size_bytes() as i64,
            lb_sticky: false,
            ub_sticky: false,
            align_bytes: kind.align_bytes(),
            kinds: Kinds::One(kind),
            pair: None,
            combiner: Arc::new(Combiner::Named),
        }
    }

    /// The predefined value-index pair types of MINLOC/MAXLOC (MPI-4.1 §6.9.4): `value` at
    /// 0 and an `int` after it at the next multiple of 4, extent padded to the C struct's
    /// alignment. `F32` is MPI_FLOAT_INT, `F64` MPI_DOUBLE_INT, `I64` MPI_LONG_INT, `I32`
    /// MPI_2INT, `I16` MPI_SHORT_INT, `LongDouble` MPI_LONG_DOUBLE_INT. The first four reduce
    /// as weft's pair [`TypeKind`]s (same layout); the others move but do not reduce.
    pub fn pair(value: BasicKind) -> TypeMap {
        let index_at = value.size_bytes().div_ceil(4) * 4;
        let parts = [TypeMap::basic(value), TypeMap::basic(BasicKind::I32)];
        let mut t = TypeMap::create_struct(&[1, 1], &[0, index_at as i64], &parts)
            .expect("a pair of two basic elements is valid");
        t.pair = match value {
            BasicKind::F32 => Some(TypeKind::F32I32),
            BasicKind::F64 => Some(TypeKind::F64I32),
            BasicKind::I32 => Some(TypeKind::I32I32),
            BasicKind::I64 => Some(TypeKind::I64I32),
            BasicKind::I16 => Some(TypeKind::I16I32),
            BasicKind::LongDouble => Some(TypeKind::LongDoubleI32),
            _ => None,
        };
        t.combiner = Arc::new(Combiner::Named);
        t
    }

    /// `count` copies of `old`, one extent apart (MPI_Type_contiguous, MPI-4.1 §5.1.2).
    pub fn contiguous(count: i64, old: &TypeMap) -> Result<TypeMap> {
        const OP: &str = "contiguous";
        let n = non_negative(OP, "count", count)?;
        let mut b = Builder::default();
        b.place(0, n, old.extent(), &old.body)
            .map_err(|e| e.context(OP))?;
        let mut acc = Acc::new();
        acc.add(0, &[(n, old.extent())], old);
        let combiner = Combiner::Contiguous {
            count,
            old: old.clone(),
        };
        acc.finish(OP, b, false, combiner)
    }

    /// `count` blocks of `blocklength` copies of `old`, block starts `stride` extents of
    /// `old` apart (MPI_Type_vector, MPI-4.1 §5.1.2).
    pub fn vector(count: i64, blocklength: i64, stride: i64, old: &TypeMap) -> Result<TypeMap> {
        let bytes = mul("vector", "stride", stride, old.extent())?;
        let combiner = Combiner::Vector {
            count,
            blocklength,
            stride,
            old: old.clone(),
        };
        TypeMap::strided("vector", count, blocklength, bytes, old, combiner)
    }

    /// Like [`TypeMap::vector`] with the stride in bytes (MPI_Type_create_hvector,
    /// MPI-4.1 §5.1.2).
    pub fn hvector(
        count: i64,
        blocklength: i64,
        stride_bytes: i64,
        old: &TypeMap,
    ) -> Result<TypeMap> {
        let combiner = Combiner::Hvector {
            count,
            blocklength,
            stride_bytes,
            old: old.clone(),
        };
        TypeMap::strided("hvector", count, blocklength, stride_bytes, old, combiner)
    }

    fn strided(
        op: &str,
        count: i64,
        blocklength: i64,
        stride_bytes: i64,
        old: &TypeMap,
        combiner: Combiner,
    ) -> Result<TypeMap> {
        let n = non_negative(op, "count", count)?;
        let bl = non_negative(op, "blocklength", blocklength)?;
        let ext = old.extent();
        let mut inner = Builder::default();
        inner
            .place(0, bl, ext, &old.body)
            .map_err(|e| e.context(op))?;
        let block = inner.finish().map_err(|e| e.context(op))?;
        let mut b = Builder::default();
        b.place(0, n, stride_bytes, &block)
            .map_err(|e| e.context(op))?;
        let mut acc = Acc::new();
        acc.add(0, &[(n, stride_bytes), (bl, ext)], old);
        acc.finish(op, b, false, combiner)
    }

    /// Blocks of copies of `old` at displacements counted in extents of `old`
    /// (MPI_Type_indexed, MPI-4.1 §5.1.2).
    pub fn indexed(blocklengths: &[i64], displacements: &[i64], old: &TypeMap) -> Result<TypeMap> {
        const OP: &str = "indexed";
        same_len(
            OP,
            ("blocklengths", blocklengths.len()),
            ("displacements", displacements.len()),
        )?;
        let bytes = displacements
            .iter()
            .map(|&d| mul(OP, "displacement", d, old.extent()))
            .collect::<Result<Vec<i64>>>()?;
        let combiner = Combiner::Indexed {
            blocklengths: blocklengths.to_vec(),
            displacements: displacements.to_vec(),
            old: old.clone(),
        };
        TypeMap::blocks(OP, blocklengths, &bytes, old, combiner)
    }

    /// Like [`TypeMap::indexed`] with displacements in bytes (MPI_Type_create_hindexed,
    /// MPI-4.1 §5.1.2).
    pub fn hindexed(
        blocklengths: &[i64],
        displacements_bytes: &[i64],
        old: &TypeMap,
    ) -> Result<TypeMap> {
        const OP: &str = "hindexed";
        same_len(
            OP,
            ("blocklengths", blocklengths.len()),
            ("displacements", displacements_bytes.len()),
        )?;
        let combiner = Combiner::Hindexed {
            blocklengths: blocklengths.to_vec(),
            displacements_bytes: displacements_bytes.to_vec(),
            old: old.clone(),
        };
        TypeMap::blocks(OP, blocklengths, displacements_bytes, old, combiner)
    }

    /// Blocks of `blocklength` copies of `old` at displacements counted in extents of `old`
    /// (MPI_Type_create_indexed_block, MPI-4.1 §5.1.2).
    pub fn indexed_block(
        blocklength: i64,
        displacements: &[i64],
        old: &TypeMap,
    ) -> Result<TypeMap> {
        const OP: &str = "indexed_block";
        non_negative(OP, "blocklength", blocklength)?;
        let bytes = displacements
            .iter()
            .map(|&d| mul(OP, "displacement", d, old.extent()))
            .collect::<Result<Vec<i64>>>()?;
        let combiner = Combiner::IndexedBlock {
            blocklength,
            displacements: displacements.to_vec(),
            old: old.clone(),
        };
        TypeMap::blocks(OP, &vec![blocklength; bytes.len()], &bytes, old, combiner)
    }

    /// Like [`TypeMap::indexed_block`] with displacements in bytes
    /// (MPI_Type_create_hindexed_block, MPI-4.1 §5.1.2).
    pub fn hindexed_block(
        blocklength: i64,
        displacements_bytes: &[i64],
        old: &TypeMap,
    ) -> Result<TypeMap> {
        const OP: &str = "hindexed_block";
        non_negative(OP, "blocklength", blocklength)?;
        let combiner = Combiner::HindexedBlock {
            blocklength,
            displacements_bytes: displacements_bytes.to_vec(),
            old: old.clone(),
        };
        TypeMap::blocks(
            OP,
            &vec![blocklength; displacements_bytes.len()],
            displacements_bytes,
            old,
            combiner,
        )
    }

    fn blocks(
        op: &str,
        lens: &[i64],
        disps: &[i64],
        old: &TypeMap,
        combiner: Combiner,
    ) -> Result<TypeMap> {
        let ext = old.extent();
        let mut b = Builder::default();
        let mut acc = Acc::new();
        for (i, (&len, &disp)) in lens.iter().zip(disps).enumerate() {
            let n = non_negative(op, &format!("blocklengths[{i}]"), len)?;
            b.place(disp, n, ext, &old.body)
                .map_err(|e| e.context(format!("{op}: block {i}")))?;
            acc.add(disp, &[(n, ext)], old);
        }
        if lens.is_empty() {
            // No blocks still makes a type of `old`'s kind (count zero).
            acc.add(0, &[(0, ext)], old);
        }
        acc.finish(op, b, false, combiner)
    }

    /// Blocks of different types at byte displacements (MPI_Type_create_struct,
    /// MPI-4.1 §5.1.2). Unless a component's bound was set by `resized`, the extent is
    /// padded up to the widest alignment inside, as a C compiler pads the matching struct
    /// (the ε of §5.1.6).
    pub fn create_struct(
        blocklengths: &[i64],
        displacements_bytes: &[i64],
        types: &[TypeMap],
    ) -> Result<TypeMap> {
        const OP: &str = "create_struct";
        same_len(
            OP,
            ("blocklengths", blocklengths.len()),
            ("displacements", displacements_bytes.len()),
        )?;
        same_len(
            OP,
            ("blocklengths", blocklengths.len()),
            ("types", types.len()),
        )?;
        let mut b = Builder::default();
        let mut acc = Acc::new();
        for (i, ((&len, &disp), old)) in blocklengths
            .iter()
            .zip(displacements_bytes)
            .zip(types)
            .enumerate()
        {
            let n = non_negative(OP, &format!("blocklengths[{i}]"), len)?;
            let ext = old.extent();
            b.place(disp, n, ext, &old.body)
                .map_err(|e| e.context(format!("{OP}: block {i}")))?;
            acc.add(disp, &[(n, ext)], old);
        }
        let combiner = Combiner::Struct {
            blocklengths: blocklengths.to_vec(),
            displacements_bytes: displacements_bytes.to_vec(),
            types: types.to_vec(),
        };
        acc.finish(OP, b, true, combiner)
    }

    /// The same type with every displacement moved by `bytes` (bounds too, so the extent is
    /// unchanged): a transient helper for buffers whose slice cannot start at or below the
    /// address, such as `MPI_BOTTOM` with absolute displacements (shift by `-lo` of the
    /// footprint, then use the slice from `lo` with origin 0). Records itself as a one-block
    /// `hindexed`.
    pub fn shifted(&self, bytes: i64) -> Result<TypeMap> {
        TypeMap::hindexed(&[1], &[bytes], self)
    }

    /// A copy of `old` that records where it came from (MPI_Type_dup, MPI-4.1 §5.1.10):
    /// same map and bounds, combiner [`Combiner::Dup`].
    pub fn dup(&self) -> TypeMap {
        let mut t = self.clone();
        t.combiner = Arc::new(Combiner::Dup(self.clone()));
        t
    }

    /// `old` with its bounds replaced: `lb` and `lb + extent`, both sticky in later
    /// constructors (MPI_Type_create_resized, MPI-4.1 §5.1.7). The data does not move.
    pub fn resized(old: &TypeMap, lb: i64, extent: i64) -> Result<TypeMap> {
        let ub = lb.checked_add(extent).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidCount,
                format!("resized: lb {lb} + extent {extent} overflows the address range"),
            )
        })?;
        Ok(TypeMap {
            body: old.body.clone(),
            lb,
            ub,
            lb_sticky: true,
            ub_sticky: true,
            align_bytes: old.align_bytes,
            kinds: old.kinds,
            pair: old.pair,
            combiner: Arc::new(Combiner::Resized {
                lb,
                extent,
                old: old.clone(),
            }),
        })
    }

    /// The sub-block `starts[i]..starts[i] + subsizes[i]` of an array of `sizes` elements of
    /// `old`, stored in `order` (MPI_Type_create_subarray, MPI-4.1 §5.1.3). The type's lb is
    /// 0 and its extent the whole array, so consecutive items are consecutive arrays.
    pub fn subarray(
        sizes: &[i64],
        subsizes: &[i64],
        starts: &[i64],
        order: Order,
        old: &TypeMap,
    ) -> Result<TypeMap> {
        const OP: &str = "subarray";
        let bad = |msg: String| Error::new(ErrorKind::InvalidArgument, format!("{OP}: {msg}"));
        if sizes.is_empty() {
            return Err(bad("ndims = 0; an array has at least one dimension".into()));
        }
        same_len(OP, ("sizes", sizes.len()), ("subsizes", subsizes.len()))?;
        same_len(OP, ("sizes", sizes.len()), ("starts", starts.len()))?;
        for i in 0..sizes.len() {
            if sizes[i] < 1 {
                return Err(bad(format!("sizes[{i}] = {} must be positive", sizes[i])));
            }
            if subsizes[i] < 1 || subsizes[i] > sizes[i] {
                return Err(bad(format!(
                    "subsizes[{i}] = {} must be in 1..={}",
                    subsizes[i], sizes[i]
                )));
            }
            if starts[i] < 0 || starts[i] > sizes[i] - subsizes[i] {
                return Err(bad(format!(
                    "starts[{i}] = {} must be in 0..={} (sizes[{i}] = {}, subsizes[{i}] = {})",
                    starts[i],
                    sizes[i] - subsizes[i],
                    sizes[i],
                    subsizes[i]
                )));
            }
        }
        // Dimensions from the fastest-varying to the slowest.
        let dims: Vec<usize> = match order {
            Order::C => (0..sizes.len()).rev().collect(),
            Order::Fortran => (0..sizes.len()).collect(),
        };
        let mut stride = old.extent();
        let mut t = TypeMap::contiguous(subsizes[dims[0]], old)?;
        let mut disp = mul(OP, "start displacement", starts[dims[0]], stride)?;
        for w in dims.windows(2) {
            stride = mul(OP, "dimension stride", stride, sizes[w[0]])?;
            t = TypeMap::hvector(subsizes[w[1]], 1, stride, &t)?;
            disp = disp
                .checked_add(mul(OP, "start displacement", starts[w[1]], stride)?)
                .ok_or_else(|| bad("start displacement overflows".into()))?;
        }
        let full = mul(OP, "array extent", stride, sizes[dims[dims.len() - 1]])?;
        let placed = TypeMap::hindexed(&[1], &[disp], &t)?;
        let mut t = TypeMap::resized(&placed, 0, full)?;
        t.combiner = Arc::new(Combiner::Subarray {
            sizes: sizes.to_vec(),
            subsizes: subsizes.to_vec(),
            starts: starts.to_vec(),
            order,
            old: old.clone(),
        });
        Ok(t)
    }

    /// This process's part of an array distributed over a process grid
    /// (MPI_Type_create_darray, MPI-4.1 §5.1.4): `rank` of `size` processes laid out
    /// row-major on the grid of `dims[i].psize`, each dimension distributed by block,
    /// cyclically or not at all. The owned elements appear in the array's storage order;
    /// lb is 0 and the extent the whole global array.
    pub fn darray(
        size: i64,
        rank: i64,
        dims: &[DarrayDim],
        order: Order,
        old: &TypeMap,
    ) -> Result<TypeMap> {
        const OP: &str = "darray";
        let bad = |msg: String| Error::new(ErrorKind::InvalidArgument, format!("{OP}: {msg}"));
        if size < 1 {
            return Err(bad(format!("size = {size} must be positive")));
        }
        if rank < 0 || rank >= size {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!("{OP}: rank = {rank} is not in 0..{size}"),
            ));
        }
        if dims.is_empty() {
            return Err(bad("ndims = 0; an array has at least one dimension".into()));
        }
        let mut grid: i64 = 1;
        for (i, d) in dims.iter().enumerate() {
            if d.gsize < 1 {
                return Err(bad(format!("gsizes[{i}] = {} must be positive", d.gsize)));
            }
            if d.psize < 1 {
                return Err(bad(format!("psizes[{i}] = {} must be positive", d.psize)));
            }
            if let Some(a) = d.darg {
                if a < 1 {
                    return Err(bad(format!("dargs[{i}] = {a} must be positive")));
                }
            }
            match d.distrib {
                Distribution::None if d.psize != 1 => {
                    return Err(bad(format!(
                        "dimension {i} is not distributed but psizes[{i}] = {}",
                        d.psize
                    )));
                }
                Distribution::Block => {
                    if let Some(a) = d.darg {
                        if (a as i128) * (d.psize as i128) < d.gsize as i128 {
                            return Err(bad(format!(
                                "block dargs[{i}] = {a} times psizes[{i}] = {} does not cover \
                                 gsizes[{i}] = {}",
                                d.psize, d.gsize
                            )));
                        }
                    }
                }
                _ => {}
            }
            grid = grid.saturating_mul(d.psize);
        }
        if grid != size {
            return Err(bad(format!(
                "the process grid holds {grid} processes but size = {size}"
            )));
        }
        // Grid coordinates, row-major whatever the array order (MPI-4.1 §5.1.4).
        let mut coords = vec![0i64; dims.len()];
        let mut r = rank;
        for i in (0..dims.len()).rev() {
            coords[i] = r % dims[i].psize;
            r /= dims[i].psize;
        }
        let fastest_first: Vec<usize> = match order {
            Order::C => (0..dims.len()).rev().collect(),
            Order::Fortran => (0..dims.len()).collect(),
        };
        let mut t = old.clone();
        for &i in &fastest_first {
            t = darray_dim(&dims[i], coords[i], &t)
                .map_err(|e| e.context(format!("{OP}: dimension {i}")))?;
        }
        let full = t.extent();
        let mut t = TypeMap::resized(&t, 0, full)?;
        t.combiner = Arc::new(Combiner::Darray {
            size,
            rank,
            dims: dims.to_vec(),
            order,
            old: old.clone(),
        });
        Ok(t)
    }
}

/// One dimension of a distributed array: the elements of `old` this grid coordinate owns,
/// with lb 0 and extent the whole dimension (so the next dimension strides over it).
fn darray_dim(d: &DarrayDim, coord: i64, old: &TypeMap) -> Result<TypeMap> {
    let ext = old.extent();
    let full = mul("darray", "dimension extent", d.gsize, ext)?;
    let owned = match d.distrib {
        Distribution::None => TypeMap::contiguous(d.gsize, old)?,
        Distribution::Block => {
            let b = d.darg.unwrap_or((d.gsize - 1) / d.psize + 1);
            let start = (coord as i128 * b as i128).min(d.gsize as i128) as i64;
            let n = (d.gsize - start).min(b);
            let at = mul("darray", "block displacement", start, ext)?;
            TypeMap::hindexed(&[n], &[at], old)?
        }
        Distribution::Cyclic => {
            let k = d.darg.unwrap_or(1);
            let blocks = (d.gsize - 1) / k + 1;
            // Blocks coord, coord + P, ... < blocks; only the array's last block may be short.
            let mine = if coord < blocks {
                (blocks - 1 - coord) / d.psize + 1
            } else {
                0
            };
            let short = d.gsize % k != 0 && mine > 0 && (blocks - 1 - coord) % d.psize == 0;
            let full_blocks = if short { mine - 1 } else { mine };
            let stride = mul("darray", "cyclic stride", k, d.psize)
                .and_then(|kp| mul("darray", "cyclic stride", kp, ext))?;
            let first = mul("darray", "cyclic displacement", coord.min(blocks) * k, ext)?;
            let last = mul("darray", "cyclic displacement", (blocks - 1) * k, ext)?;
            let whole = TypeMap::hvector(full_blocks, k, stride, old)?;
            let tail = TypeMap::contiguous(if short { d.gsize % k } else { 0 }, old)?;
            TypeMap::create_struct(&[1, 1], &[first, last], &[whole, tail])?
        }
    };
    TypeMap::resized(&owned, 0, full)
}
