//! Agent code → `prepare` (fence and function recovery, oxc TypeScript strip): an error value or
//! JavaScript, never a panic or a stack overflow.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(code) = std::str::from_utf8(data) {
        let _ = executor_sandbox::prepare(code);
    }
});
