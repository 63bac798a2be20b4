#![no_main]
//! Fuzz target `boot_request`: see `weft_fuzz::boot_request`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::boot_request(data));
