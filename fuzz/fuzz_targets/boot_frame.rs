#![no_main]
//! Fuzz target `boot_frame`: see `weft_fuzz::boot_frame`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::boot_frame(data));
