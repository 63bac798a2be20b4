#![no_main]
//! Fuzz target `boot_response`: see `weft_fuzz::boot_response`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::boot_response(data));
