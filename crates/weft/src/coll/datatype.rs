//! Element types of collectives: the fixed-size integers, `f32`, `f64` and the value-index
//! pairs of MINLOC/MAXLOC (MPI-4.1 §6.9.4), each tagged with a [`TypeKind`] so reductions can
//! dispatch on it. Pure data; depends on nothing but `bytemuck`.

use bytemuck::{Pod, Zeroable};

/// The element types a reduction knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// [`F32I32`] (MPI_FLOAT_INT)
    F32I32,
    /// [`F64I32`] (MPI_DOUBLE_INT)
    F64I32,
    /// [`I32I32`] (MPI_2INT)
    I32I32,
    /// [`I64I32`] (MPI_LONG_INT)
    I64I32,
}

impl TypeKind {
    /// The Rust spelling of the type, for error messages.
    pub fn name(self) -> &'static str {
        match self {
            TypeKind::I8 => "i8",
            TypeKind::I16 => "i16",
            TypeKind::I32 => "i32",
            TypeKind::I64 => "i64",
            TypeKind::U8 => "u8",
            TypeKind::U16 => "u16",
            TypeKind::U32 => "u32",
            TypeKind::U64 => "u64",
            TypeKind::F32 => "f32",
            TypeKind::F64 => "f64",
            TypeKind::F32I32 => "(f32, i32)",
            TypeKind::F64I32 => "(f64, i32)",
            TypeKind::I32I32 => "(i32, i32)",
            TypeKind::I64I32 => "(i64, i32)",
        }
    }

    /// Bytes of one element.
    pub fn size_bytes(self) -> usize {
        match self {
            TypeKind::I8 | TypeKind::U8 => 1,
            TypeKind::I16 | TypeKind::U16 => 2,
            TypeKind::I32 | TypeKind::U32 | TypeKind::F32 => 4,
            TypeKind::I64 | TypeKind::U64 | TypeKind::F64 => 8,
            TypeKind::F32I32 | TypeKind::I32I32 => 8,
            TypeKind::F64I32 | TypeKind::I64I32 => 16,
        }
    }

    /// Alignment in bytes an element needs (that of its widest field).
    pub fn align_bytes(self) -> usize {
        match self {
            TypeKind::F32I32 | TypeKind::I32I32 => 4,
            TypeKind::F64I32 | TypeKind::I64I32 => 8,
            k => k.size_bytes(),
        }
    }

    /// True for the integer types (the bitwise and logical operations apply to them).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            TypeKind::I8
                | TypeKind::I16
                | TypeKind::I32
                | TypeKind::I64
                | TypeKind::U8
                | TypeKind::U16
                | TypeKind::U32
                | TypeKind::U64
        )
    }

    /// True for the value-index pairs (only MINLOC, MAXLOC and user operations apply).
    pub fn is_pair(self) -> bool {
        matches!(
            self,
            TypeKind::F32I32 | TypeKind::F64I32 | TypeKind::I32I32 | TypeKind::I64I32
        )
    }
}

/// An element type collectives can move and reduce.
pub trait Datatype: Pod {
    /// Which kind it is, for reduction kernels.
    const KIND: TypeKind;
}

macro_rules! scalar {
    ($($t:ty => $k:ident),*) => {$(
        impl Datatype for $t {
            const KIND: TypeKind = TypeKind::$k;
        }
    )*};
}
scalar!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
    u64 => U64, f32 => F32, f64 => F64);

macro_rules! pair {
    ($(#[$doc:meta] $name:ident($v:ty) $(pad $pad:ident)?;)*) => {$(
        #[$doc]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
        pub struct $name {
            /// The value compared.
            pub value: $v,
            /// The index carried along (the smaller one wins ties).
            pub index: i32,
            $(
            /// Explicit tail padding, so the type has no uninitialised bytes; always zero.
            $pad: u32,
            )?
        }

        impl $name {
            /// A pair of `value` and `index`.
            pub fn new(value: $v, index: i32) -> $name {
                let mut p: $name = Zeroable::zeroed();
                p.value = value;
                p.index = index;
                p
            }
        }

        impl Datatype for $name {
            const KIND: TypeKind = TypeKind::$name;
        }
    )*};
}

pair! {
    /// A `(f32, i32)` pair for MINLOC/MAXLOC (MPI_FLOAT_INT).
    F32I32(f32);
    /// A `(f64, i32)` pair for MINLOC/MAXLOC (MPI_DOUBLE_INT), padded to 16 bytes.
    F64I32(f64) pad pad;
    /// A `(i32, i32)` pair for MINLOC/MAXLOC (MPI_2INT).
    I32I32(i32);
    /// A `(i64, i32)` pair for MINLOC/MAXLOC (MPI_LONG_INT), padded to 16 bytes.
    I64I32(i64) pad pad;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_sizes_match_c_layout() {
        assert_eq!(std::mem::size_of::<F32I32>(), 8);
        assert_eq!(std::mem::size_of::<F64I32>(), 16);
        assert_eq!(std::mem::size_of::<I32I32>(), 8);
        assert_eq!(std::mem::size_of::<I64I32>(), 16);
        assert_eq!(F64I32::new(1.5, 3).index, 3);
        assert!(TypeKind::U16.is_integer() && !TypeKind::F32.is_integer());
        assert!(TypeKind::I64I32.is_pair());
    }

    #[test]
    fn kind_sizes_and_alignments_match_the_rust_types() {
        fn check<T: Datatype>() {
            assert_eq!(
                T::KIND.size_bytes(),
                std::mem::size_of::<T>(),
                "{}",
                T::KIND.name()
            );
            assert_eq!(
                T::KIND.align_bytes(),
                std::mem::align_of::<T>(),
                "{}",
                T::KIND.name()
            );
        }
        check::<i8>();
        check::<i16>();
        check::<i32>();
        check::<i64>();
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
        check::<f32>();
        check::<f64>();
        check::<F32I32>();
        check::<F64I32>();
        check::<I32I32>();
        check::<I64I32>();
    }
}
