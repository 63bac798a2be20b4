//! Derived datatypes (MPI-4.1 chapter 5): type maps built from basic kinds by the MPI type
//! constructors, their bounds and extents, and pack/unpack between a typed buffer and MPI's
//! packed format (the typed bytes in type-map order, nothing else). Pure and safe: no I/O, no
//! `unsafe`, no dependency on the engine or on communicators; only on [`crate::coll`]'s
//! [`TypeKind`] and `Op` (to say how a type reduces and to reduce locally) and `weft_core`'s
//! error type.
//!
//! # API summary (for the MPI layer)
//!
//! A [`TypeMap`] is an immutable, cheaply clonable (`Arc`) description of one datatype.
//! It is `Send + Sync`, so a handle table may share it.
//!
//! * Predefined types: [`TypeMap::basic`]`(`[`BasicKind`]`)` for every C scalar (map the C
//!   type to the kind of the same width and representation: `MPI_INT` → `I32`, `MPI_LONG` →
//!   `I64`, `MPI_CHAR` → `Char`, `MPI_BYTE` → `Byte`, `MPI_PACKED` → `Packed`, ...), and
//!   [`TypeMap::pair`]`(value_kind)` for `MPI_FLOAT_INT`, `MPI_DOUBLE_INT`, `MPI_LONG_INT`,
//!   `MPI_2INT`, `MPI_SHORT_INT`, `MPI_LONG_DOUBLE_INT` (a struct of value and `int`, laid out
//!   like C and like weft's pair types).
//! * Constructors (§5.1.2-5.1.4, §5.1.7), counts and block lengths as `i64` (checked
//!   non-negative), displacements and strides as `i64` (elements for `vector`/`indexed`/
//!   `indexed_block`, bytes for the `h` variants and `create_struct`):
//!   [`TypeMap::contiguous`], [`TypeMap::vector`], [`TypeMap::hvector`],
//!   [`TypeMap::indexed`], [`TypeMap::hindexed`], [`TypeMap::indexed_block`],
//!   [`TypeMap::hindexed_block`], [`TypeMap::create_struct`], [`TypeMap::resized`],
//!   [`TypeMap::subarray`] (with [`Order`]), [`TypeMap::darray`] (with
//!   [`DarrayDim`]); [`TypeMap::dup`] (`clone()` is the same type without the record).
//!   [`TypeMap::combiner`] returns the constructor and arguments for
//!   `MPI_Type_get_envelope`/`MPI_Type_get_contents`.
//!   Bad input returns `ErrorKind::InvalidCount` (negative counts, sizes or bounds beyond
//!   `i64`), `InvalidArgument` (mismatched lengths, bad subarray/darray shapes) or
//!   `InvalidRank` (darray rank) naming the field and value. Moving data returns `Truncate`
//!   (output too small, more data than the receive type holds, a window past the end),
//!   `InvalidArgument` (a buffer that does not cover what the type touches) and, for
//!   reductions, `InvalidType`/`InvalidOp`. Nothing panics on bad input.
//! * Queries (§5.1.5-5.1.8): [`TypeMap::size_bytes`] (`MPI_Type_size`), [`TypeMap::lb`],
//!   [`TypeMap::ub`], [`TypeMap::extent`] (`MPI_Type_get_extent`), [`TypeMap::true_lb`],
//!   [`TypeMap::true_extent`] (`MPI_Type_get_true_extent`), [`TypeMap::is_contiguous`],
//!   [`TypeMap::elements_per_item`], [`TypeMap::kinds`].
//! * Moving data. Buffers are byte slices plus an `origin`: the index in the slice of the
//!   user's buffer address (displacement 0), because a type may reach below its address
//!   (negative lb or displacements). [`TypeMap::footprint`]`(count)` gives the byte range
//!   `[lo, hi)` relative to the address that `count` items touch, so a C layer can build the
//!   slice from a pointer (when the data lies wholly above the address, as with `MPI_BOTTOM`
//!   and absolute displacements, use [`TypeMap::shifted`]`(-lo)` and a slice from `lo`).
//!   Then [`TypeMap::pack`] / [`TypeMap::unpack`] (whole messages,
//!   §5.2 `MPI_Pack`/`MPI_Unpack`; [`TypeMap::packed_bytes`] is `MPI_Pack_size`),
//!   [`TypeMap::pack_range`] / [`TypeMap::unpack_range`] (a byte window of the packed stream,
//!   for pipelined transfers), and [`copy`] (typed buffer to typed buffer, e.g. a receive
//!   from self or `MPI_Sendrecv` to self). Contiguous types move with one `copy_from_slice`,
//!   and [`TypeMap::contiguous_span`]`(count)` says when `count` items are one byte range
//!   (then send from / receive into the user buffer directly, no packing).
//! * Receive side (§3.2.5, §5.1.11): [`TypeMap::count_in`] (`MPI_Get_count`) and
//!   [`TypeMap::elements_in`] (`MPI_Get_elements`); `None` means `MPI_UNDEFINED`.
//! * Reductions (§6.9.1): [`TypeMap::reduction_kind`] says whether the type is built from
//!   one basic kind (or one value-index pair kind) and how many of them one item holds;
//!   [`TypeMap::reduction`] says the same only when packed bytes already are an array of the
//!   kind (not for the padded `(f64, i32)`/`(i64, i32)` pairs);
//!   [`TypeMap::gather_for_reduction`] packs `count` items into an aligned array of that
//!   [`TypeKind`] (a [`ReductionBuf`], what `allreduce_bytes` and friends take) and
//!   [`TypeMap::scatter_from_reduction`] puts the result back; [`reduce_local`] is
//!   `MPI_Reduce_local` on any such type.
//!
//! Extent rules follow MPICH where the standard leaves room: the alignment padding ε of
//! §5.1.6 is added by `create_struct` only (when no bound was set by `resized`), and bounds
//! set by `resized` are sticky through later constructors (the marker rules of §5.1.6).

mod construct;
mod map;
mod pieces;
mod reduce;
mod transfer;

#[cfg(test)]
mod tests;

pub use reduce::{reduce_local, ReductionBuf};
pub use transfer::{copy, Typed};

use crate::coll::TypeKind;
use map::Body;
use std::sync::Arc;

/// The basic (predefined, non-derived) element kinds a type map is built from (MPI-4.1
/// §3.2.2 and §5.1.1). Sizes and alignments are those of the C types on LP64 Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BasicKind {
    /// `int8_t`, `signed char`
    I8,
    /// `int16_t`, `short`
    I16,
    /// `int32_t`, `int`
    I32,
    /// `int64_t`, `long`, `long long`, `MPI_Aint`, `MPI_Offset`, `MPI_Count`
    I64,
    /// `uint8_t`, `unsigned char`
    U8,
    /// `uint16_t`, `unsigned short`
    U16,
    /// `uint32_t`, `unsigned`
    U32,
    /// `uint64_t`, `unsigned long`, `unsigned long long`
    U64,
    /// `float`
    F32,
    /// `double`
    F64,
    /// `long double` (x86-64: 16 bytes, 16-aligned)
    LongDouble,
    /// `float _Complex`
    ComplexF32,
    /// `double _Complex`
    ComplexF64,
    /// `long double _Complex`
    ComplexLongDouble,
    /// `_Bool` / C++ `bool` (logical operations only)
    Bool,
    /// `char` (text: no reduction)
    Char,
    /// `wchar_t` (4 bytes on Linux; no reduction)
    Wchar,
    /// `MPI_BYTE`: uninterpreted bytes
    Byte,
    /// `MPI_PACKED`: bytes produced by pack
    Packed,
}

impl BasicKind {
    /// Every kind, for tests and tables.
    pub const ALL: [BasicKind; 19] = [
        BasicKind::I8,
        BasicKind::I16,
        BasicKind::I32,
        BasicKind::I64,
        BasicKind::U8,
        BasicKind::U16,
        BasicKind::U32,
        BasicKind::U64,
        BasicKind::F32,
        BasicKind::F64,
        BasicKind::LongDouble,
        BasicKind::ComplexF32,
        BasicKind::ComplexF64,
        BasicKind::ComplexLongDouble,
        BasicKind::Bool,
        BasicKind::Char,
        BasicKind::Wchar,
        BasicKind::Byte,
        BasicKind::Packed,
    ];

    /// Bytes of one element.
    pub fn size_bytes(self) -> u64 {
        match self {
            BasicKind::I8
            | BasicKind::U8
            | BasicKind::Bool
            | BasicKind::Char
            | BasicKind::Byte
            | BasicKind::Packed => 1,
            BasicKind::I16 | BasicKind::U16 => 2,
            BasicKind::I32 | BasicKind::U32 | BasicKind::F32 | BasicKind::Wchar => 4,
            BasicKind::I64 | BasicKind::U64 | BasicKind::F64 | BasicKind::ComplexF32 => 8,
            BasicKind::LongDouble | BasicKind::ComplexF64 => 16,
            BasicKind::ComplexLongDouble => 32,
        }
    }

    /// Alignment the C compiler gives the type (what `create_struct`'s padding rounds to).
    pub fn align_bytes(self) -> u64 {
        match self {
            BasicKind::ComplexF32 => 4,
            BasicKind::ComplexF64 => 8,
            BasicKind::LongDouble | BasicKind::ComplexLongDouble => 16,
            k => k.size_bytes(),
        }
    }

    /// The reduction kind with the same representation, if reductions apply to it.
    pub fn type_kind(self) -> Option<TypeKind> {
        match self {
            BasicKind::I8 => Some(TypeKind::I8),
            BasicKind::I16 => Some(TypeKind::I16),
            BasicKind::I32 => Some(TypeKind::I32),
            BasicKind::I64 => Some(TypeKind::I64),
            BasicKind::U8 => Some(TypeKind::U8),
            BasicKind::U16 => Some(TypeKind::U16),
            BasicKind::U32 => Some(TypeKind::U32),
            BasicKind::U64 => Some(TypeKind::U64),
            BasicKind::F32 => Some(TypeKind::F32),
            BasicKind::F64 => Some(TypeKind::F64),
            BasicKind::LongDouble => Some(TypeKind::LongDouble),
            BasicKind::ComplexF32 => Some(TypeKind::ComplexF32),
            BasicKind::ComplexF64 => Some(TypeKind::ComplexF64),
            BasicKind::ComplexLongDouble => Some(TypeKind::ComplexLongDouble),
            BasicKind::Bool
            | BasicKind::Char
            | BasicKind::Wchar
            | BasicKind::Byte
            | BasicKind::Packed => None,
        }
    }

    /// The basic kind of a scalar [`TypeKind`]; `None` for the value-index pairs, which are
    /// derived types here (see [`TypeMap::pair`]).
    pub fn from_type_kind(kind: TypeKind) -> Option<BasicKind> {
        match kind {
            TypeKind::I8 => Some(BasicKind::I8),
            TypeKind::I16 => Some(BasicKind::I16),
            TypeKind::I32 => Some(BasicKind::I32),
            TypeKind::I64 => Some(BasicKind::I64),
            TypeKind::U8 => Some(BasicKind::U8),
            TypeKind::U16 => Some(BasicKind::U16),
            TypeKind::U32 => Some(BasicKind::U32),
            TypeKind::U64 => Some(BasicKind::U64),
            TypeKind::F32 => Some(BasicKind::F32),
            TypeKind::F64 => Some(BasicKind::F64),
            TypeKind::LongDouble => Some(BasicKind::LongDouble),
            TypeKind::ComplexF32 => Some(BasicKind::ComplexF32),
            TypeKind::ComplexF64 => Some(BasicKind::ComplexF64),
            TypeKind::ComplexLongDouble => Some(BasicKind::ComplexLongDouble),
            TypeKind::F32I32
            | TypeKind::F64I32
            | TypeKind::I32I32
            | TypeKind::I64I32
            | TypeKind::I16I32
            | TypeKind::LongDoubleI32
            | TypeKind::F32F32
            | TypeKind::F64F64 => None,
        }
    }

    /// Short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            BasicKind::I8 => "i8",
            BasicKind::I16 => "i16",
            BasicKind::I32 => "i32",
            BasicKind::I64 => "i64",
            BasicKind::U8 => "u8",
            BasicKind::U16 => "u16",
            BasicKind::U32 => "u32",
            BasicKind::U64 => "u64",
            BasicKind::F32 => "f32",
            BasicKind::F64 => "f64",
            BasicKind::LongDouble => "long double",
            BasicKind::ComplexF32 => "float complex",
            BasicKind::ComplexF64 => "double complex",
            BasicKind::ComplexLongDouble => "long double complex",
            BasicKind::Bool => "bool",
            BasicKind::Char => "char",
            BasicKind::Wchar => "wchar",
            BasicKind::Byte => "byte",
            BasicKind::Packed => "packed",
        }
    }
}

/// Storage order of a multi-dimensional array (`MPI_ORDER_C`, `MPI_ORDER_FORTRAN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row-major: the last dimension varies fastest.
    C,
    /// Column-major: the first dimension varies fastest.
    Fortran,
}

/// How one dimension of a distributed array is spread over the process grid
/// (`MPI_DISTRIBUTE_BLOCK`, `MPI_DISTRIBUTE_CYCLIC`, `MPI_DISTRIBUTE_NONE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Consecutive blocks, one per process.
    Block,
    /// Blocks dealt round-robin.
    Cyclic,
    /// Not distributed (the grid dimension must be 1).
    None,
}

/// One dimension of [`TypeMap::darray`]: global size, distribution, distribution argument
/// (`None` is `MPI_DISTRIBUTE_DFLT_DARG`: blocks of `ceil(gsize / psize)` for `Block`, 1 for
/// `Cyclic`) and the process grid's size in this dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DarrayDim {
    /// Elements of the old type in this dimension of the global array.
    pub gsize: i64,
    /// How the dimension is spread.
    pub distrib: Distribution,
    /// Block size, or `None` for the default.
    pub darg: Option<i64>,
    /// Processes along this dimension.
    pub psize: i64,
}

/// Which basic kinds a type is built from (counting constructor inputs even when their
/// count is zero, so that `contiguous(0, int)` still reduces as `int`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kinds {
    /// Built from no basic type at all (a struct of zero blocks).
    None,
    /// Built from this one kind only.
    One(BasicKind),
    /// Built from several kinds.
    Mixed,
}

impl Kinds {
    fn union(self, other: Kinds) -> Kinds {
        match (self, other) {
            (Kinds::None, k) | (k, Kinds::None) => k,
            (Kinds::One(a), Kinds::One(b)) if a == b => Kinds::One(a),
            _ => Kinds::Mixed,
        }
    }
}

/// A datatype: its packed data layout (the type map, in order, compressed into runs and
/// repetitions) and its bounds. Immutable; `clone` is cheap.
#[derive(Clone, Debug)]
pub struct TypeMap {
    body: Arc<Body>,
    lb: i64,
    ub: i64,
    /// The lower bound was set by `resized` (directly or in a component) and overrides the
    /// data's own minimum in later constructors (the markers of MPI-4.1 §5.1.6).
    lb_sticky: bool,
    /// Same for the upper bound.
    ub_sticky: bool,
    align_bytes: u64,
    kinds: Kinds,
    /// Set when the type is made only of copies of one value-index pair.
    pair: Option<TypeKind>,
    /// The constructor call that made the type (for MPI_Type_get_envelope/contents).
    combiner: Arc<Combiner>,
}

/// How a type was made, with the arguments given (MPI_Type_get_envelope and
/// MPI_Type_get_contents, MPI-4.1 §5.1.13). The MPI layer turns `old` types back into
/// handles; a predefined type is `Named`.
#[derive(Clone, Debug)]
pub enum Combiner {
    /// A predefined type (MPI_COMBINER_NAMED).
    Named,
    /// MPI_Type_dup.
    Dup(TypeMap),
    /// MPI_Type_contiguous.
    Contiguous {
        /// Copies.
        count: i64,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_vector.
    Vector {
        /// Blocks.
        count: i64,
        /// Copies per block.
        blocklength: i64,
        /// Block stride in extents of `old`.
        stride: i64,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_create_hvector.
    Hvector {
        /// Blocks.
        count: i64,
        /// Copies per block.
        blocklength: i64,
        /// Block stride in bytes.
        stride_bytes: i64,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_indexed.
    Indexed {
        /// Copies per block.
        blocklengths: Vec<i64>,
        /// Block displacements in extents of `old`.
        displacements: Vec<i64>,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_create_hindexed.
    Hindexed {
        /// Copies per block.
        blocklengths: Vec<i64>,
        /// Block displacements in bytes.
        displacements_bytes: Vec<i64>,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_create_indexed_block.
    IndexedBlock {
        /// Copies per block.
        blocklength: i64,
        /// Block displacements in extents of `old`.
        displacements: Vec<i64>,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_create_hindexed_block.
    HindexedBlock {
        /// Copies per block.
        blocklength: i64,
        /// Block displacements in bytes.
        displacements_bytes: Vec<i64>,
        /// Old type.
        old: TypeMap,
    },
    /// MPI_Type_create_struct.
    Struct {
        /// Copies per block.
        blocklengths: Vec<i64>,
        /// Block displacements in bytes.
        displacements_bytes: Vec<i64>,
        /// Block types.
        types: Vec<TypeMap>,
    },
    /// MPI_Type_create_subarray.
    Subarray {
        /// Array sizes.
        sizes: Vec<i64>,
        /// Sub-block sizes.
        subsizes: Vec<i64>,
        /// Sub-block starts.
        starts: Vec<i64>,
        /// Storage order.
        order: Order,
        /// Element type.
        old: TypeMap,
    },
    /// MPI_Type_create_darray.
    Darray {
        /// Processes.
        size: i64,
        /// This process.
        rank: i64,
        /// Dimensions.
        dims: Vec<DarrayDim>,
        /// Storage order.
        order: Order,
        /// Element type.
        old: TypeMap,
    },
    /// MPI_Type_create_resized.
    Resized {
        /// New lower bound.
        lb: i64,
        /// New extent.
        extent: i64,
        /// Old type.
        old: TypeMap,
    },
}

impl TypeMap {
    /// Bytes of data in one item: the sum of its basic elements' sizes (MPI_Type_size,
    /// MPI-4.1 §5.1.5). Also the packed size of one item.
    pub fn size_bytes(&self) -> u64 {
        self.body.size
    }

    /// Lower bound (MPI_Type_get_extent, MPI-4.1 §5.1.6-5.1.7).
    pub fn lb(&self) -> i64 {
        self.lb
    }

    /// Upper bound.
    pub fn ub(&self) -> i64 {
        self.ub
    }

    /// `ub - lb`: the stride between consecutive items of a buffer (MPI-4.1 §5.1.7).
    /// Negative only if `resized` was given a negative extent.
    pub fn extent(&self) -> i64 {
        self.ub - self.lb
    }

    /// Lowest byte the data occupies, ignoring bounds set by `resized`
    /// (MPI_Type_get_true_extent, MPI-4.1 §5.1.8). 0 for a type without data.
    pub fn true_lb(&self) -> i64 {
        self.body.true_bounds.map_or(0, |b| b.0)
    }

    /// One past the highest byte the data occupies (0 for a type without data).
    pub fn true_ub(&self) -> i64 {
        self.body.true_bounds.map_or(0, |b| b.1)
    }

    /// `true_ub - true_lb`.
    pub fn true_extent(&self) -> i64 {
        self.true_ub() - self.true_lb()
    }

    /// Alignment of the widest basic kind inside (rounds `create_struct`'s extent).
    pub fn align_bytes(&self) -> u64 {
        self.align_bytes
    }

    /// The basic kinds this type is built from.
    pub fn kinds(&self) -> Kinds {
        self.kinds
    }

    /// Basic elements in one item (what MPI_Get_elements counts, MPI-4.1 §5.1.11).
    pub fn elements_per_item(&self) -> u64 {
        self.body.elements
    }

    /// True when one item's data is one gap-free byte range in type-map order and `extent`
    /// equals `size`, so that any `count` items are `count * size` consecutive bytes and
    /// pack is a single copy.
    pub fn is_contiguous(&self) -> bool {
        self.body.size == 0
            || (self.body.contiguous_at.is_some() && self.extent() == self.body.size as i64)
    }

    /// If the type is built from one basic kind that reductions know, or from copies of one
    /// value-index pair, that kind and how many of it one item holds (MPI-4.1 §6.9.1 allows
    /// reductions on such derived types). Reduce through
    /// [`TypeMap::gather_for_reduction`], which lays the elements out as an array of the kind
    /// (padded pairs included).
    pub fn reduction_kind(&self) -> Option<(TypeKind, u64)> {
        if let Some(p) = self.pair {
            return Some((p, self.body.elements / 2));
        }
        match self.kinds {
            Kinds::One(k) => k.type_kind().map(|t| (t, self.body.elements)),
            _ => None,
        }
    }

    /// Like [`TypeMap::reduction_kind`], but only when the *packed* bytes of an item already
    /// are an array of the kind in weft's layout, so packed data can go to the byte-level
    /// reductions as is. True for the scalar kinds and for `(f32, i32)` and `(i32, i32)`
    /// pairs; `None` for the padded pairs `(f64, i32)`, `(i64, i32)` (12 packed bytes, 16 in
    /// memory), `(i16, i32)` (6 and 8) and `(long double, i32)` (20 and 32): use
    /// [`TypeMap::gather_for_reduction`] for those.
    pub fn reduction(&self) -> Option<(TypeKind, u64)> {
        match self.reduction_kind()? {
            (
                TypeKind::F64I32 | TypeKind::I64I32 | TypeKind::I16I32 | TypeKind::LongDoubleI32,
                _,
            ) => None,
            r => Some(r),
        }
    }

    /// The constructor that made this type and its arguments (MPI_Type_get_envelope and
    /// MPI_Type_get_contents, MPI-4.1 §5.1.13).
    pub fn combiner(&self) -> &Combiner {
        &self.combiner
    }

    /// The value-index pair this type is made of, if any.
    pub fn pair_kind(&self) -> Option<TypeKind> {
        self.pair
    }
}
