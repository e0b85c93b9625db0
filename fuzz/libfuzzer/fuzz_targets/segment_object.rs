#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rsm_fuzz::segment_object(data));
