//! Fast path of the blocking and nonblocking point-to-point calls for predefined contiguous
//! datatypes (filled in by session 4's work on the MPI layer's small-message overhead).
