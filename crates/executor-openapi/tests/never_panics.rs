//! Property tests: parsing and extraction never panic, whatever the input.

use executor_openapi::{derive_auth_methods, extract, parse_spec, preview, validate_args};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        // Strings that matter to the importer, and arbitrary ones.
        prop::sample::select(vec![
            "#/components/schemas/A",
            "#/components/parameters/P",
            "#/paths/~1a/get",
            "#/",
            "#",
            "other.yaml#/x",
            "get",
            "path",
            "query",
            "header",
            "cookie",
            "body",
            "formData",
            "array",
            "object",
            "string",
            "binary",
            "application/json",
            "application/x-ndjson",
            "multipart/form-data",
            "image/png",
            "3.0.0",
            "3.1.0",
            "2.0",
            "/a/{id}",
            "{id}",
            "apiKey",
            "http",
            "bearer",
            "basic",
            "oauth2",
            "form",
            "deepObject",
        ])
        .prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
    ]
}

fn keys() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "$ref",
            "openapi",
            "swagger",
            "info",
            "paths",
            "components",
            "schemas",
            "parameters",
            "requestBody",
            "responses",
            "content",
            "schema",
            "allOf",
            "anyOf",
            "properties",
            "items",
            "type",
            "name",
            "in",
            "required",
            "servers",
            "url",
            "variables",
            "security",
            "securitySchemes",
            "securityDefinitions",
            "definitions",
            "get",
            "post",
            "/a",
            "/a/{id}",
            "200",
            "default",
            "application/json",
            "tags",
            "operationId",
            "nullable",
            "format",
            "style",
            "explode",
            "flows",
            "scheme",
            "host",
            "basePath",
            "consumes",
        ])
        .prop_map(str::to_owned),
        "[a-z/{}]{0,6}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 200, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A document that claims to be OpenAPI, so the walk gets past the version check.
fn spec_like() -> impl Strategy<Value = Value> {
    let op = (
        prop::sample::select(vec!["get", "post", "delete", "parameters", "servers"]),
        json_value(),
    );
    let item = prop::collection::vec(op, 0..4)
        .prop_map(|ops| Value::Object(ops.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    let paths = prop::collection::vec(
        (
            prop::sample::select(vec!["/a", "/a/{id}", "/v1/b/{x}", "/", "x"]),
            item,
        ),
        0..4,
    )
    .prop_map(|ps| Value::Object(ps.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    (
        prop::sample::select(vec!["3.0.0", "3.1.0", "2.0"]),
        paths,
        json_value(),
        json_value(),
    )
        .prop_map(|(version, paths, components, extra)| {
            let mut doc = json!({ "paths": paths, "components": components,
                                  "definitions": extra.clone(), "securityDefinitions": extra });
            if version == "2.0" {
                doc["swagger"] = json!(version);
            } else {
                doc["openapi"] = json!(version);
            }
            doc
        })
}

fn exercise(text: &str) {
    if let Ok(spec) = parse_spec(text) {
        let ex = extract(&spec);
        let _ = derive_auth_methods(&spec);
        let _ = preview(&spec);
        for t in &ex.tools {
            let _ = validate_args(&t.binding, &json!({}));
            let _ = validate_args(&t.binding, &json!({"body": 1, "server": {"url": 2}}));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_json_never_panics(v in json_value()) {
        exercise(&v.to_string());
    }

    #[test]
    fn spec_shaped_json_never_panics(v in spec_like()) {
        exercise(&v.to_string());
    }

    #[test]
    fn spec_shaped_yaml_never_panics(v in spec_like()) {
        // JSON is YAML; flow style with a leading comment forces the YAML path.
        exercise(&format!("# yaml\n{v}"));
    }

    #[test]
    fn arbitrary_strings_never_panic(s in ".{0,400}") {
        exercise(&s);
    }

    #[test]
    fn yamlish_strings_never_panic(s in "(openapi: 3\\.0\\.0\n|swagger: '2\\.0'\n)?([a-z$/{}:\\-\\[\\]&*!|>' \n]{0,300})") {
        exercise(&s);
    }

    #[test]
    fn validate_args_never_panics(binding in json_value(), args in json_value()) {
        let _ = validate_args(&binding, &args);
    }
}
