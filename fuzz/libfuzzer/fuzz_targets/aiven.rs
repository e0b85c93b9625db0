#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rsm_fuzz::aiven(data));
