//! Multi-process integration tests of weft; see tests/. This library holds what they share:
//! namespace test hosts ([`hosts`]), the lanes jobs run on ([`lanes`]) and what every job
//! is checked for ([`jobs`]).

pub mod hosts;
pub mod jobs;
pub mod lanes;
