//! Spec text (JSON or YAML, OpenAPI 3.x or Swagger 2) → parse and extract tools: an error value
//! or tools, never a panic, a stack overflow or a runaway parse.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(spec) = executor_openapi::parse_spec(text)
    {
        let _ = executor_openapi::extract(&spec);
    }
});
