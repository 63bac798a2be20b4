#![no_main]
//! Fuzz target `agent_from_agent`: see `weft_fuzz::agent_from_agent`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::agent_from_agent(data));
