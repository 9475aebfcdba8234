//! A call's `select` text (agent input) → the GraphQL argument check, which parses it as a
//! selection set: an error value or success, never a panic or a stack overflow.
#![no_main]

use serde_json::json;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(select) = std::str::from_utf8(data) {
        let binding = json!({
            "kind": "query",
            "field": "viewer",
            "returnType": "User!",
            "args": [],
            "selection": "id",
        });
        let _ = executor_graphql::validate_args(None, &binding, &json!({ "select": select }));
    }
});
