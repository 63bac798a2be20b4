//! Multi-process integration tests of weft; see tests/. This library holds what they share:
//! namespace test hosts ([`hosts`]).

pub mod hosts;
