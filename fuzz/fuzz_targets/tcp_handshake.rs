#![no_main]
//! Fuzz target `tcp_handshake`: see `weft_fuzz::tcp_handshake`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::tcp_handshake(data));
