#![no_main]
//! Fuzz target `rma_reply`: see `weft_fuzz::rma_reply`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::rma_reply(data));
