//! MPI's Fortran bindings for gfortran over weft's C library (the MPI 5.0 standard ABI):
//! `mpif.h`, module `mpi`, module `mpi_f08` and `libmpifort_abi.so`, generated and built by
//! this crate's build script (see its module doc and the README). This library holds what
//! was built, for `weft install` to write under a prefix, and which procedures have a
//! Fortran binding, for `weft info`.

include!(concat!(env!("OUT_DIR"), "/generated.rs"));
