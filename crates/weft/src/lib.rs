//! The weft runtime.
