//! A tool's JSON Schema (from an upstream) → TypeScript declarations for `describe`: bounded
//! output, never a panic or a stack overflow, whatever the schema's shape or `$ref`s.
#![no_main]

use std::collections::BTreeMap;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(serde_json::Value::Object(doc)) = serde_json::from_slice::<serde_json::Value>(data) {
        let definitions = doc
            .get("$defs")
            .and_then(serde_json::Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut out = BTreeMap::new();
        let _ = executor_core::schema_ts::schema_to_ts(
            &serde_json::Value::Object(doc),
            &definitions,
            &mut out,
        );
    }
});
