//! Multi-process integration tests of weft; see tests/. This library holds what they share:
//! namespace test hosts ([`hosts`]) and the lanes jobs run on ([`lanes`]).

pub mod hosts;
pub mod lanes;
