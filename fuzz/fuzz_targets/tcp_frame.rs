#![no_main]
//! Fuzz target `tcp_frame`: see `weft_fuzz::tcp_frame`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::tcp_frame(data));
