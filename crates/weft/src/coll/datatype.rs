//! Element types of collectives: the fixed-size integers, `f32`, `f64`, C's `long double`
//! (x86-64's 80-bit extended format in 16 bytes), the complex types of MPI-4.1 §3.2.2 and
//! the value-index pairs of MINLOC/MAXLOC (MPI-4.1 §6.9.4), each tagged with a [`TypeKind`]
//! so reductions can dispatch on it. Pure data; depends on nothing but `bytemuck` (the
//! arithmetic on `long double` lives with the kernels in [`super::op`]).

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
    /// [`LongDouble`]: C's `long double` (MPI_LONG_DOUBLE); reduced on x86-64 only, where
    /// it is the x87 80-bit extended format.
    LongDouble,
    /// [`ComplexF32`]: `float _Complex` (MPI_C_FLOAT_COMPLEX, MPI_COMPLEX, ...).
    ComplexF32,
    /// [`ComplexF64`]: `double _Complex` (MPI_C_DOUBLE_COMPLEX, MPI_DOUBLE_COMPLEX, ...).
    ComplexF64,
    /// [`ComplexLongDouble`]: `long double _Complex` (MPI_C_LONG_DOUBLE_COMPLEX); x86-64
    /// only, like [`TypeKind::LongDouble`].
    ComplexLongDouble,
    /// [`I16I32`] (MPI_SHORT_INT)
    I16I32,
    /// [`LongDoubleI32`] (MPI_LONG_DOUBLE_INT); x86-64 only, like [`TypeKind::LongDouble`].
    LongDoubleI32,
    /// [`F32F32`] (MPI_2REAL: Fortran's pair of two REALs)
    F32F32,
    /// [`F64F64`] (MPI_2DOUBLE_PRECISION)
    F64F64,
}

impl TypeKind {
    /// Every kind (for tests that go through all of them, and the codes of
    /// [`TypeKind::code`]).
    pub(crate) const ALL: [TypeKind; 22] = {
        use TypeKind::*;
        // A new kind fails to compile here until it joins the list.
        const fn listed(k: TypeKind) {
            match k {
                I8 | I16 | I32 | I64 | U8 | U16 | U32 | U64 | F32 | F64 | F32I32 | F64I32
                | I32I32 | I64I32 | LongDouble | ComplexF32 | ComplexF64 | ComplexLongDouble
                | I16I32 | LongDoubleI32 | F32F32 | F64F64 => {}
            }
        }
        listed(I8);
        [
            I8,
            I16,
            I32,
            I64,
            U8,
            U16,
            U32,
            U64,
            F32,
            F64,
            F32I32,
            F64I32,
            I32I32,
            I64I32,
            LongDouble,
            ComplexF32,
            ComplexF64,
            ComplexLongDouble,
            I16I32,
            LongDoubleI32,
            F32F32,
            F64F64,
        ]
    };

    /// A number naming the kind (its place in [`TypeKind::ALL`]), for one-sided requests
    /// between processes.
    pub(crate) fn code(self) -> u8 {
        Self::ALL.iter().position(|&k| k == self).unwrap_or(0) as u8
    }

    /// The kind [`TypeKind::code`] names.
    pub(crate) fn from_code(code: u8) -> Option<TypeKind> {
        Self::ALL.get(code as usize).copied()
    }

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
            TypeKind::LongDouble => "long double",
            TypeKind::ComplexF32 => "float complex",
            TypeKind::ComplexF64 => "double complex",
            TypeKind::ComplexLongDouble => "long double complex",
            TypeKind::I16I32 => "(i16, i32)",
            TypeKind::LongDoubleI32 => "(long double, i32)",
            TypeKind::F32F32 => "(f32, f32)",
            TypeKind::F64F64 => "(f64, f64)",
        }
    }

    /// Bytes of one element.
    #[inline]
    pub fn size_bytes(self) -> usize {
        match self {
            TypeKind::I8 | TypeKind::U8 => 1,
            TypeKind::I16 | TypeKind::U16 => 2,
            TypeKind::I32 | TypeKind::U32 | TypeKind::F32 => 4,
            TypeKind::I64 | TypeKind::U64 | TypeKind::F64 => 8,
            TypeKind::F32I32 | TypeKind::I32I32 | TypeKind::I16I32 | TypeKind::F32F32 => 8,
            TypeKind::F64F64 => 16,
            TypeKind::F64I32 | TypeKind::I64I32 => 16,
            TypeKind::ComplexF32 => 8,
            TypeKind::ComplexF64 | TypeKind::LongDouble => 16,
            TypeKind::ComplexLongDouble | TypeKind::LongDoubleI32 => 32,
        }
    }

    /// Alignment in bytes an element needs (that of its widest field). For the `long double`
    /// kinds this is 8, less than C's 16: the kernels read them with instructions that need
    /// no alignment, and collectives' scratch buffers are 8-aligned.
    #[inline]
    pub fn align_bytes(self) -> usize {
        match self {
            TypeKind::F32I32 | TypeKind::I32I32 | TypeKind::I16I32 | TypeKind::ComplexF32 => 4,
            TypeKind::F32F32 => 4,
            TypeKind::F64I32 | TypeKind::I64I32 | TypeKind::ComplexF64 | TypeKind::F64F64 => 8,
            TypeKind::LongDouble | TypeKind::ComplexLongDouble | TypeKind::LongDoubleI32 => 8,
            k => k.size_bytes(),
        }
    }

    /// True for the integer types (the bitwise and logical operations apply to them).
    #[inline]
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

    /// True for the real floating-point types (sum, product, minimum and maximum apply).
    pub fn is_float(self) -> bool {
        matches!(self, TypeKind::F32 | TypeKind::F64 | TypeKind::LongDouble)
    }

    /// True for the complex types (only sum, product and user operations apply).
    #[inline]
    pub fn is_complex(self) -> bool {
        matches!(
            self,
            TypeKind::ComplexF32 | TypeKind::ComplexF64 | TypeKind::ComplexLongDouble
        )
    }

    /// True for the value-index pairs (only MINLOC, MAXLOC and user operations apply).
    #[inline]
    pub fn is_pair(self) -> bool {
        matches!(
            self,
            TypeKind::F32I32
                | TypeKind::F64I32
                | TypeKind::I32I32
                | TypeKind::I64I32
                | TypeKind::I16I32
                | TypeKind::LongDoubleI32
                | TypeKind::F32F32
                | TypeKind::F64F64
        )
    }

    /// True for the kinds holding C's `long double`, whose format depends on the
    /// architecture: weft reduces them only where it is x86-64's 80-bit extended format.
    #[inline]
    pub fn has_long_double(self) -> bool {
        matches!(
            self,
            TypeKind::LongDouble | TypeKind::ComplexLongDouble | TypeKind::LongDoubleI32
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

/// A `(i16, i32)` pair for MINLOC/MAXLOC (MPI_SHORT_INT): C's layout, with 2 bytes of
/// padding between value and index.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct I16I32 {
    /// The value compared.
    pub value: i16,
    /// Explicit padding, so the type has no uninitialised bytes; zero when made here.
    pad: u16,
    /// The index carried along (the smaller one wins ties).
    pub index: i32,
}

impl I16I32 {
    /// A pair of `value` and `index`.
    pub fn new(value: i16, index: i32) -> I16I32 {
        I16I32 {
            value,
            pad: 0,
            index,
        }
    }
}

impl Datatype for I16I32 {
    const KIND: TypeKind = TypeKind::I16I32;
}

/// C's `long double` as it lies in memory: 16 bytes. On x86-64 the first 10 are the x87
/// 80-bit extended format (64-bit significand with an explicit integer bit, 15-bit
/// exponent, sign) and the other 6 are padding. Rust has no such float: the reduction
/// kernels compute on it with the x87 unit (x86-64 only; `from_f64`, `from_i64`, `to_f64`
/// and `to_i64` are defined there too). Equality (`==`) compares the 10 bytes of the value,
/// not numbers: `0.0` and `-0.0` differ, the padding is ignored.
#[repr(C)]
#[derive(Clone, Copy, Default, Pod, Zeroable)]
pub struct LongDouble {
    /// The 16 bytes, as words so the type is 8-aligned (C aligns it to 16).
    words: [u64; 2],
}

impl LongDouble {
    /// Bytes of the value proper (the rest of the 16 is padding).
    pub const VALUE_BYTES: usize = 10;

    /// The value from its 16 bytes in memory order.
    pub fn from_bytes(bytes: [u8; 16]) -> LongDouble {
        bytemuck::cast(bytes)
    }

    /// The 16 bytes in memory order.
    pub fn to_bytes(self) -> [u8; 16] {
        bytemuck::cast(self)
    }

    /// The 10 bytes of the value (little-endian significand, then sign and exponent).
    pub fn value_bytes(self) -> [u8; 10] {
        let b = self.to_bytes();
        let mut v = [0u8; 10];
        v.copy_from_slice(&b[..LongDouble::VALUE_BYTES]);
        v
    }
}

impl PartialEq for LongDouble {
    fn eq(&self, other: &LongDouble) -> bool {
        self.value_bytes() == other.value_bytes()
    }
}

impl std::fmt::Debug for LongDouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.value_bytes();
        let top = u16::from_le_bytes([v[8], v[9]]);
        let sig = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        write!(f, "LongDouble({top:#06x}:{sig:#018x})")
    }
}

/// `float _Complex` (MPI_C_FLOAT_COMPLEX, MPI_CXX_FLOAT_COMPLEX, MPI_COMPLEX, MPI_COMPLEX8).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ComplexF32 {
    /// Real part.
    pub re: f32,
    /// Imaginary part.
    pub im: f32,
}

/// `double _Complex` (MPI_C_DOUBLE_COMPLEX, MPI_CXX_DOUBLE_COMPLEX, MPI_DOUBLE_COMPLEX,
/// MPI_COMPLEX16).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ComplexF64 {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}

/// `long double _Complex` (MPI_C_LONG_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ComplexLongDouble {
    /// Real part.
    pub re: LongDouble,
    /// Imaginary part.
    pub im: LongDouble,
}

/// A `(long double, i32)` pair for MINLOC/MAXLOC (MPI_LONG_DOUBLE_INT): C's layout, 32
/// bytes with the index at byte 16.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LongDoubleI32 {
    /// The value compared.
    pub value: LongDouble,
    /// The index carried along (the smaller one wins ties).
    pub index: i32,
    /// Explicit tail padding, so the type has no uninitialised bytes; zero when made here.
    pad: [u32; 3],
}

impl LongDoubleI32 {
    /// A pair of `value` and `index`.
    pub fn new(value: LongDouble, index: i32) -> LongDoubleI32 {
        LongDoubleI32 {
            value,
            index,
            pad: [0; 3],
        }
    }
}

impl Datatype for LongDoubleI32 {
    const KIND: TypeKind = TypeKind::LongDoubleI32;
}

/// A Fortran `(REAL, REAL)` pair for MINLOC/MAXLOC (MPI_2REAL): the index is a REAL too.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct F32F32 {
    /// The value compared.
    pub value: f32,
    /// The index carried along (the smaller one wins ties).
    pub index: f32,
}

/// A Fortran `(DOUBLE PRECISION, DOUBLE PRECISION)` pair for MINLOC/MAXLOC
/// (MPI_2DOUBLE_PRECISION).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct F64F64 {
    /// The value compared.
    pub value: f64,
    /// The index carried along (the smaller one wins ties).
    pub index: f64,
}

scalar!(F32F32 => F32F32, F64F64 => F64F64);

scalar!(LongDouble => LongDouble, ComplexF32 => ComplexF32, ComplexF64 => ComplexF64,
    ComplexLongDouble => ComplexLongDouble);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_sizes_match_c_layout() {
        assert_eq!(std::mem::size_of::<F32I32>(), 8);
        assert_eq!(std::mem::size_of::<F64I32>(), 16);
        assert_eq!(std::mem::size_of::<I32I32>(), 8);
        assert_eq!(std::mem::size_of::<I64I32>(), 16);
        assert_eq!(std::mem::size_of::<I16I32>(), 8);
        assert_eq!(std::mem::size_of::<LongDoubleI32>(), 32);
        assert_eq!(std::mem::offset_of!(I16I32, index), 4);
        assert_eq!(std::mem::offset_of!(LongDoubleI32, index), 16);
        assert_eq!(std::mem::size_of::<ComplexLongDouble>(), 32);
        assert_eq!(F64I32::new(1.5, 3).index, 3);
        assert!(TypeKind::U16.is_integer() && !TypeKind::F32.is_integer());
        assert!(TypeKind::I64I32.is_pair());
        assert!(TypeKind::I16I32.is_pair() && TypeKind::LongDoubleI32.is_pair());
        assert!(TypeKind::ComplexF64.is_complex() && !TypeKind::ComplexF64.is_float());
        assert!(TypeKind::LongDouble.is_float() && TypeKind::LongDouble.has_long_double());
        assert!(!TypeKind::F64.has_long_double());
    }

    #[test]
    fn every_size_and_alignment_is_a_power_of_two() {
        // `coll::elements` checks lengths and addresses with masks.
        for k in TypeKind::ALL {
            assert!(k.size_bytes().is_power_of_two(), "{k:?}");
            assert!(k.align_bytes().is_power_of_two(), "{k:?}");
        }
    }

    #[test]
    fn long_double_equality_ignores_the_padding() {
        let mut a = [0u8; 16];
        a[7] = 0x80;
        a[8] = 0xff;
        a[9] = 0x3f; // 1.0 in the x87 format
        let mut b = a;
        b[12] = 0x55;
        assert_eq!(LongDouble::from_bytes(a), LongDouble::from_bytes(b));
        b[0] = 1;
        assert_ne!(LongDouble::from_bytes(a), LongDouble::from_bytes(b));
        assert_eq!(LongDouble::from_bytes(a).to_bytes(), a);
        assert_eq!(
            format!("{:?}", LongDouble::from_bytes(a)),
            "LongDouble(0x3fff:0x8000000000000000)"
        );
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
        check::<I16I32>();
        check::<LongDouble>();
        check::<ComplexF32>();
        check::<ComplexF64>();
        check::<ComplexLongDouble>();
        check::<LongDoubleI32>();
        check::<F32F32>();
        check::<F64F64>();
    }
}
