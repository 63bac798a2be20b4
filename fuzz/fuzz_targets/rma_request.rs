#![no_main]
//! Fuzz target `rma_request`: see `weft_fuzz::rma_request`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::rma_request(data));
