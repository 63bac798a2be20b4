#![no_main]
//! Fuzz target `agent_to_agent`: see `weft_fuzz::agent_to_agent`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::agent_to_agent(data));
