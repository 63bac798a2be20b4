//! Reductions on derived datatypes (MPI-4.1 §6.9.1: a reduction applies to a derived type
//! built from one basic type, element by element). The elements are gathered into an aligned
//! array of the reduction kind, reduced there by the collective kernels, and scattered back.
//! Depends on [`crate::coll`]'s `Op` and `TypeKind` only; no communication.

use super::transfer::Typed;
use super::{copy, TypeMap};
use crate::coll::{Op, TypeKind};
use weft_core::{Error, ErrorKind, Result};

/// `count` items' elements laid out as an array of the reduction kind, aligned for it (what
/// the byte-level reduction entry points such as `allreduce_bytes` take).
#[derive(Clone, Debug)]
pub struct ReductionBuf {
    kind: TypeKind,
    elements: usize,
    bytes: usize,
    /// `u64` words so the bytes are 8-aligned, enough for every reduction kind.
    words: Vec<u64>,
}

impl ReductionBuf {
    /// The reduction kind of the elements.
    pub fn kind(&self) -> TypeKind {
        self.kind
    }

    /// Number of elements of [`ReductionBuf::kind`].
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// The elements as bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.bytes]
    }

    /// The elements as writable bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.bytes]
    }
}

impl TypeMap {
    /// The reduction kind and the dense type of `n` such elements in that kind's memory
    /// layout (for pairs: weft's padded pair structs), or an `InvalidType` error.
    fn reduction_layout(&self, count: u64) -> Result<(TypeKind, u64, TypeMap)> {
        let (kind, per_item) = self.reduction_kind().ok_or_else(|| {
            let built = match self.kinds() {
                super::Kinds::None => "no basic type".to_string(),
                super::Kinds::One(k) => format!("{}, which reductions do not apply to", k.name()),
                super::Kinds::Mixed => "several basic kinds".to_string(),
            };
            Error::new(
                ErrorKind::InvalidType,
                format!(
                    "a reduction needs a type built from one basic numeric kind or one \
                     value-index pair; this one is built from {built}"
                ),
            )
        })?;
        let n = per_item.checked_mul(count).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidCount,
                format!("count {count} of {per_item} elements overflows"),
            )
        })?;
        let element = match kind {
            TypeKind::F32I32 => TypeMap::pair(super::BasicKind::F32),
            TypeKind::F64I32 => TypeMap::pair(super::BasicKind::F64),
            TypeKind::I32I32 => TypeMap::pair(super::BasicKind::I32),
            TypeKind::I64I32 => TypeMap::pair(super::BasicKind::I64),
            TypeKind::I16I32 => TypeMap::pair(super::BasicKind::I16),
            TypeKind::LongDoubleI32 => TypeMap::pair(super::BasicKind::LongDouble),
            // Fortran's pairs are two values of one kind: packed and in memory alike.
            TypeKind::F32F32 => TypeMap::contiguous(2, &TypeMap::basic(super::BasicKind::F32))?,
            TypeKind::F64F64 => TypeMap::contiguous(2, &TypeMap::basic(super::BasicKind::F64))?,
            scalar => TypeMap::basic(
                super::BasicKind::from_type_kind(scalar).expect("scalar kinds are basic"),
            ),
        };
        let dense = TypeMap::contiguous(n as i64, &element)?;
        Ok((kind, n, dense))
    }

    /// Gathers `count` items of `src` (address at index `origin`) into an aligned array of
    /// their reduction kind (MPI-4.1 §6.9.1). Fails with `InvalidType` when the type mixes
    /// kinds or is built from a kind reductions do not know.
    pub fn gather_for_reduction(
        &self,
        src: &[u8],
        origin: usize,
        count: u64,
    ) -> Result<ReductionBuf> {
        let (kind, n, dense) = self.reduction_layout(count)?;
        // Check the source before allocating: overlapping types (stride 0) can describe far
        // more elements than the buffer holds bytes.
        self.check_buffer("gather_for_reduction", src.len(), origin, count)?;
        let too_big = || {
            Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "{n} {} reduction elements do not fit in memory",
                    kind.name()
                ),
            )
        };
        let bytes = usize::try_from(dense.extent()).map_err(|_| too_big())?;
        let mut words = Vec::new();
        words
            .try_reserve_exact(bytes.div_ceil(8))
            .map_err(|_| too_big())?;
        words.resize(bytes.div_ceil(8), 0u64);
        let mut buf = ReductionBuf {
            kind,
            elements: n as usize,
            bytes,
            words,
        };
        let from = Typed {
            map: self,
            count,
            origin,
        };
        let to = Typed {
            map: &dense,
            count: 1,
            origin: 0,
        };
        copy(from, src, to, buf.bytes_mut())?;
        Ok(buf)
    }

    /// Scatters a reduction result back into `count` items of `dst` (address at index
    /// `origin`): the inverse of [`TypeMap::gather_for_reduction`].
    pub fn scatter_from_reduction(
        &self,
        buf: &ReductionBuf,
        dst: &mut [u8],
        origin: usize,
        count: u64,
    ) -> Result<()> {
        let (kind, n, dense) = self.reduction_layout(count)?;
        if kind != buf.kind || n as usize != buf.elements {
            return Err(Error::new(
                ErrorKind::InvalidType,
                format!(
                    "the reduction result holds {} {} elements but {count} items of this type \
                     take {n} {}",
                    buf.elements,
                    buf.kind.name(),
                    kind.name()
                ),
            ));
        }
        let from = Typed {
            map: &dense,
            count: 1,
            origin: 0,
        };
        let to = Typed {
            map: self,
            count,
            origin,
        };
        copy(from, buf.bytes(), to, dst)?;
        Ok(())
    }
}

/// `inout = input ∘ inout` over `count` items of `map`, element by element
/// (MPI_Reduce_local, MPI-4.1 §6.9.7, on a derived type of one basic kind). Each side is a
/// byte slice and the index of its buffer address.
pub fn reduce_local(
    op: &Op,
    map: &TypeMap,
    count: u64,
    input: (&[u8], usize),
    inout: (&mut [u8], usize),
) -> Result<()> {
    let a = map
        .gather_for_reduction(input.0, input.1, count)
        .map_err(|e| e.context("reduce_local input"))?;
    op.check(a.kind()).map_err(|e| e.context("reduce_local"))?;
    let mut b = map
        .gather_for_reduction(inout.0, inout.1, count)
        .map_err(|e| e.context("reduce_local inout"))?;
    op.apply(a.kind(), a.bytes(), b.bytes_mut());
    map.scatter_from_reduction(&b, inout.0, inout.1, count)
}
