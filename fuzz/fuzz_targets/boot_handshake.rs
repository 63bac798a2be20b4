#![no_main]
//! Fuzz target `boot_handshake`: see `weft_fuzz::boot_handshake`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::boot_handshake(data));
