#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| proteus_tests::fuzzing::sha256x4(data));
