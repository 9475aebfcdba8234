//! A real HTTP API (axum on 127.0.0.1:0) described by the same hand-written spec in three
//! dialects (OpenAPI 3.0 YAML, 3.1 JSON, Swagger 2.0 YAML): extract → tools → invoke each
//! operation against the server.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use executor_core::ToolOutcome;
use executor_core::auth::{AuthMethod, Carrier, render};
use executor_openapi::{
    CallConfig, Extraction, OpenApiTool, derive_auth_methods, extract, invoke, parse_spec, preview,
    validate_args,
};
use serde_json::{Value, json};

const KEY: &str = "s3cret";
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRfake-png-bytes";

#[derive(Clone, Default)]
struct Seen(Arc<AtomicUsize>);

#[allow(clippy::result_large_err)] // a test handler's early return
fn authed(h: &HeaderMap) -> Result<(), Response> {
    if h.get("x-api-key").and_then(|v| v.to_str().ok()) == Some(KEY) {
        Ok(())
    } else {
        Err((
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"message": "bad api key"})),
        )
            .into_response())
    }
}

async fn server() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route(
            "/files/{name}",
            get(
                |h: HeaderMap, Path(name): Path<String>, OriginalUri(uri): OriginalUri| async move {
                    authed(&h)?;
                    Ok::<_, Response>(axum::Json(json!({"name": name, "raw": uri.path()})))
                },
            ),
        )
        .route(
            "/search",
            get(|h: HeaderMap, RawQuery(q): RawQuery| async move {
                authed(&h)?;
                let rid = h.get("x-request-id").and_then(|v| v.to_str().ok());
                Ok::<_, Response>(axum::Json(json!({"query": q, "requestId": rid})))
            }),
        )
        .route(
            "/items",
            post(|h: HeaderMap, body: Bytes| async move {
                authed(&h)?;
                let ct = h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
                assert_eq!(ct, Some("application/json"));
                let mut item: Value = serde_json::from_slice(&body).unwrap();
                item["id"] = json!(7);
                Ok::<_, Response>((StatusCode::CREATED, axum::Json(item)))
            }),
        )
        .route(
            "/items/{id}",
            delete(|h: HeaderMap, Path(id): Path<u32>| async move {
                authed(&h)?;
                assert_eq!(id, 42);
                Ok::<_, Response>(StatusCode::NO_CONTENT)
            }),
        )
        .route(
            "/forms",
            post(|h: HeaderMap, body: Bytes| async move {
                authed(&h)?;
                let ct = h
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                Ok::<_, Response>((
                    [(header::CONTENT_TYPE, "text/plain")],
                    format!("{ct}|{}", String::from_utf8_lossy(&body)),
                ))
            }),
        )
        .route(
            "/events",
            get(|h: HeaderMap| async move {
                authed(&h)?;
                let body = (1..=3)
                    .map(|i| format!("{{\"seq\":{i},\"kind\":\"tick\"}}\n"))
                    .collect::<String>();
                Ok::<_, Response>(([(header::CONTENT_TYPE, "application/x-ndjson")], body))
            }),
        )
        .route(
            "/image",
            get(|h: HeaderMap| async move {
                authed(&h)?;
                Ok::<_, Response>((
                    [
                        (header::CONTENT_TYPE, "image/png"),
                        (header::CONTENT_DISPOSITION, "inline; filename=\"dot.png\""),
                    ],
                    PNG,
                ))
            }),
        )
        .route(
            "/missing",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"error": {"message": "no such thing"}})),
                )
            }),
        )
        .route(
            "/boom",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "kaboom") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            seen.clone(),
            |State(seen): State<Seen>,
             req: axum::extract::Request,
             next: axum::middleware::Next| async move {
                seen.0.fetch_add(1, Ordering::SeqCst);
                next.run(req).await
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/specs")
            .join(name),
    )
    .unwrap()
}

fn tool<'a>(ex: &'a Extraction, name: &str) -> &'a OpenApiTool {
    ex.tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}; have {:?}", names(ex)))
}

fn names(ex: &Extraction) -> Vec<&str> {
    ex.tools.iter().map(|t| t.name.as_str()).collect()
}

fn ok(outcome: ToolOutcome) -> (Value, Value) {
    match outcome {
        ToolOutcome::Ok { data, http } => (data, http.expect("http meta")),
        ToolOutcome::Err(e) => panic!("expected ok, got {e:?}"),
    }
}

fn err(outcome: ToolOutcome) -> executor_core::ToolError {
    match outcome {
        ToolOutcome::Err(e) => e,
        ToolOutcome::Ok { data, .. } => panic!("expected an error, got {data}"),
    }
}

/// The connection's credentials rendered as the engine will: derived method + `token` value.
fn auth_config(methods: &[AuthMethod], base_url: Option<String>) -> CallConfig {
    assert_eq!(methods.len(), 1, "{methods:?}");
    let AuthMethod::Apikey {
        slug, placements, ..
    } = &methods[0]
    else {
        panic!("{methods:?}")
    };
    assert_eq!(slug, "apikey-0");
    assert_eq!(placements[0].carrier, Carrier::Header);
    assert_eq!(placements[0].name, "X-API-Key");
    let rendered = render(
        &methods[0],
        &BTreeMap::from([("token".to_owned(), KEY.to_owned())]),
    );
    CallConfig {
        base_url,
        headers: rendered.headers,
        query: rendered.query,
        ..CallConfig::default()
    }
}

async fn exercise(spec_file: &str) {
    let (base, seen) = server().await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let spec = parse_spec(&fixture(spec_file)).unwrap();
    assert_eq!(spec.title.as_deref(), Some("Test API"));
    let ex = extract(&spec);
    assert!(ex.failures.is_empty(), "{:?}", ex.failures);
    let mut got = names(&ex);
    got.sort();
    assert_eq!(
        got,
        vec![
            "boom.boom",
            "events.listEvents",
            "files.getFile",
            "forms.submitForm",
            "items.createItem",
            "items.deleteItem",
            "items.searchItems",
            "media.getImage",
            "missing.getMissing",
            "slow.slow",
        ],
        "{spec_file}"
    );
    for t in &ex.tools {
        let write =
            ["items.createItem", "items.deleteItem", "forms.submitForm"].contains(&t.name.as_str());
        assert_eq!(t.requires_approval, write, "{} {spec_file}", t.name);
    }
    assert_eq!(
        tool(&ex, "items.deleteItem")
            .approval_description
            .as_deref(),
        Some("DELETE /items/{id}")
    );
    assert_eq!(tool(&ex, "files.getFile").description, "Get a file by name");
    assert_eq!(tool(&ex, "missing.getMissing").description, "GET /missing");

    // Input schemas.
    let search = tool(&ex, "items.searchItems");
    let s = &search.input_schema;
    assert_eq!(s["additionalProperties"], json!(false));
    assert_eq!(s["required"], json!(["q"]));
    let props: Vec<&str> = s["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // 3.0 / 3.1 declare `http://127.0.0.1:{port}`: a `server` argument is offered.
    let has_server_arg = spec_file != "api-swagger2.yaml";
    let mut expected = vec!["q", "tag", "ids", "X-Request-Id"];
    if has_server_arg {
        expected.push("server");
    }
    assert_eq!(props, expected, "{spec_file}");
    assert_eq!(s["properties"]["tag"]["type"], "array");
    let create = tool(&ex, "items.createItem");
    assert_eq!(create.input_schema["required"], json!(["body"]));
    assert_eq!(
        create.input_schema["properties"]["body"]["$ref"],
        "#/$defs/NewItem"
    );
    assert!(ex.definitions.contains_key("NewItem") && ex.definitions.contains_key("Item"));
    // allOf of a reference and an inline object: the inline part is merged.
    assert_eq!(
        ex.definitions["Item"]["properties"]["id"]["type"],
        "integer"
    );
    assert_eq!(
        tool(&ex, "events.listEvents").output_schema,
        Some(json!({"type": "array", "items": {"$ref": "#/$defs/Event"}}))
    );
    assert_eq!(
        tool(&ex, "media.getImage").output_schema.as_ref().unwrap()["properties"]["_tag"]["const"],
        "ToolFile"
    );
    assert_eq!(
        tool(&ex, "files.getFile").input_schema["properties"]
            .get("server")
            .is_some(),
        has_server_arg
    );

    let methods = derive_auth_methods(&spec);
    let config = auth_config(&methods, Some(base.clone()));
    let http = reqwest::Client::new();
    let p = preview(&spec);
    assert_eq!(p.operation_count, 10);
    assert_eq!(p.security_schemes.len(), 1);

    // Path parameter escaping.
    let (data, meta) = ok(invoke(
        &http,
        &tool(&ex, "files.getFile").binding,
        json!({"name": "a b/c?d#e%f"}),
        &config,
    )
    .await);
    assert_eq!(data["name"], "a b/c?d#e%f");
    assert_eq!(data["raw"], "/files/a%20b%2Fc%3Fd%23e%25f");
    assert_eq!(meta["status"], 200);
    assert_eq!(meta["headers"]["content-type"], "application/json");

    // Server variables instead of the baseUrl override.
    if has_server_arg {
        let no_override = auth_config(&methods, None);
        let (data, _) = ok(invoke(
            &http,
            &tool(&ex, "files.getFile").binding,
            json!({"name": "x", "server": {"variables": {"port": port}}}),
            &no_override,
        )
        .await);
        assert_eq!(data["name"], "x");
    }

    // Query arrays (explode and comma styles) and a header parameter; container form too.
    let (data, _) = ok(invoke(
        &http,
        &search.binding,
        json!({"q": "red & blue", "tag": ["x y", "z"], "ids": [1, 2, 3], "X-Request-Id": "r-1"}),
        &config,
    )
    .await);
    assert_eq!(
        data["query"], "q=red%20%26%20blue&tag=x%20y&tag=z&ids=1,2,3",
        "{spec_file}"
    );
    assert_eq!(data["requestId"], "r-1");
    let (data, _) = ok(invoke(
        &http,
        &search.binding,
        json!({"query": {"q": "c"}, "headers": {"x-request-id": "r-2"}}),
        &config,
    )
    .await);
    assert_eq!(data["query"], "q=c");
    assert_eq!(data["requestId"], "r-2");

    // JSON body.
    let (data, meta) = ok(invoke(
        &http,
        &create.binding,
        json!({"body": {"name": "widget", "count": 2}}),
        &config,
    )
    .await);
    assert_eq!(data, json!({"name": "widget", "count": 2, "id": 7}));
    assert_eq!(meta["status"], 201);

    // DELETE → 204 → null.
    let (data, meta) = ok(invoke(
        &http,
        &tool(&ex, "items.deleteItem").binding,
        json!({"id": 42}),
        &config,
    )
    .await);
    assert_eq!(data, Value::Null);
    assert_eq!(meta["status"], 204);

    // Form body.
    let (data, _) = ok(invoke(
        &http,
        &tool(&ex, "forms.submitForm").binding,
        json!({"body": {"name": "a&b c", "tags": ["t1", "t2"]}}),
        &config,
    )
    .await);
    assert_eq!(
        data,
        "application/x-www-form-urlencoded|name=a%26b%20c&tags=t1&tags=t2"
    );

    // NDJSON → array, with stream meta headers.
    let (data, meta) = ok(invoke(
        &http,
        &tool(&ex, "events.listEvents").binding,
        json!({}),
        &config,
    )
    .await);
    assert_eq!(data.as_array().unwrap().len(), 3);
    assert_eq!(data[2], json!({"seq": 3, "kind": "tick"}));
    assert_eq!(meta["headers"]["x-executor-stream"], "complete");
    // The size cap truncates and drops the partial row.
    let capped = CallConfig {
        stream_max_bytes: 40,
        ..config.clone()
    };
    let (data, meta) = ok(invoke(
        &http,
        &tool(&ex, "events.listEvents").binding,
        json!({}),
        &capped,
    )
    .await);
    assert_eq!(data, json!([{"seq": 1, "kind": "tick"}]));
    assert_eq!(meta["headers"]["x-executor-stream"], "truncated");

    // Binary → ToolFile.
    let (data, _) = ok(invoke(
        &http,
        &tool(&ex, "media.getImage").binding,
        Value::Null,
        &config,
    )
    .await);
    assert_eq!(data["_tag"], "ToolFile");
    assert_eq!(data["mimeType"], "image/png");
    assert_eq!(data["name"], "dot.png");
    assert_eq!(data["byteLength"], PNG.len());
    assert_eq!(data["encoding"], "base64");

    // Upstream failures.
    let e = err(invoke(
        &http,
        &tool(&ex, "missing.getMissing").binding,
        json!({}),
        &config,
    )
    .await);
    assert_eq!(e.code, "upstream_http_error");
    assert_eq!(e.status, Some(404));
    assert_eq!(e.message, "HTTP 404 Not Found: no such thing");
    assert_eq!(
        e.details.as_ref().unwrap()["body"],
        json!({"error": {"message": "no such thing"}})
    );
    let e = err(invoke(&http, &tool(&ex, "boom.boom").binding, json!({}), &config).await);
    assert_eq!(
        (e.code.as_str(), e.status),
        ("upstream_http_error", Some(500))
    );
    assert_eq!(e.details.as_ref().unwrap()["body"], "kaboom");
    assert_eq!(e.retryable, Some(true));
    // Wrong credentials.
    let mut bad = config.clone();
    bad.headers.insert("X-API-Key".into(), "nope".into());
    let e = err(invoke(
        &http,
        &tool(&ex, "files.getFile").binding,
        json!({"name": "x"}),
        &bad,
    )
    .await);
    assert_eq!(e.code, "connection_rejected");
    assert_eq!(e.status, Some(401));
    // Timeout waiting for headers.
    let quick = CallConfig {
        timeout: Duration::from_millis(200),
        ..config.clone()
    };
    let e = err(invoke(&http, &tool(&ex, "slow.slow").binding, json!({}), &quick).await);
    assert_eq!(e.code, "upstream_response_headers_timeout");

    // Bad arguments never reach the server.
    let before = seen.0.load(Ordering::SeqCst);
    let e = validate_args(&search.binding, &json!({"q": "x", "colour": "red"})).unwrap_err();
    assert_eq!(e.code, "invalid_tool_arguments");
    assert_eq!(
        e.message,
        format!(
            "Unknown argument \"colour\". This operation accepts: {}.",
            expected.join(", ")
        )
    );
    assert_eq!(
        e.details.as_ref().unwrap()["issues"][0]["path"],
        json!(["colour"])
    );
    let e = err(invoke(&http, &search.binding, json!({"tag": ["a"]}), &config).await);
    assert_eq!(e.code, "invalid_tool_arguments");
    assert_eq!(e.message, "Missing required query parameter: q");
    let e = err(invoke(&http, &create.binding, json!({}), &config).await);
    assert_eq!(e.message, "Missing required request body");
    let e = err(invoke(
        &http,
        &tool(&ex, "items.deleteItem").binding,
        json!({"idd": 1}),
        &config,
    )
    .await);
    assert_eq!(
        e.details.as_ref().unwrap()["issues"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{e:?}"
    );
    let e = err(invoke(&http, &search.binding, json!("q"), &config).await);
    assert_eq!(e.code, "invalid_tool_arguments");
    if has_server_arg {
        let e = err(invoke(
            &http,
            &tool(&ex, "files.getFile").binding,
            json!({"name": "x", "server": {"url": "http://elsewhere"}}),
            &config,
        )
        .await);
        assert_eq!(e.code, "invalid_tool_arguments");
    }
    assert!(validate_args(&search.binding, &json!({"q": "x", "tag": ["a"]})).is_ok());
    assert_eq!(
        seen.0.load(Ordering::SeqCst),
        before,
        "the server saw a request for invalid arguments"
    );
}

#[tokio::test]
async fn openapi_30_yaml() {
    exercise("api-3.0.yaml").await;
}

#[tokio::test]
async fn openapi_31_json() {
    exercise("api-3.1.json").await;
}

#[tokio::test]
async fn swagger_20_yaml() {
    exercise("api-swagger2.yaml").await;
}

#[tokio::test]
async fn unreachable_and_non_openapi_urls_fail_clearly() {
    let http = reqwest::Client::new();
    let (base, _) = server().await;
    // Bind then drop a listener: nothing listens on that port any more.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let e = executor_openapi::fetch_spec(
        &http,
        &format!("http://{dead}/openapi.json"),
        &BTreeMap::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.tag(), "OpenApiParseError");
    assert!(
        e.to_string()
            .starts_with("Could not fetch the OpenAPI spec from"),
        "{e}"
    );
    // A 404.
    let e = executor_openapi::fetch_spec(&http, &format!("{base}/nope"), &BTreeMap::new())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("HTTP 404"), "{e}");
    // Something that answers, but is not OpenAPI.
    let headers = BTreeMap::from([("X-API-Key".to_owned(), KEY.to_owned())]);
    let text = executor_openapi::fetch_spec(&http, &format!("{base}/files/x"), &headers)
        .await
        .unwrap();
    let e = parse_spec(&text).unwrap_err();
    assert!(
        e.to_string()
            .contains("not an OpenAPI spec: it has no \"openapi\" or \"swagger\" field"),
        "{e}"
    );
}

#[test]
fn partial_specs_import_what_they_can() {
    let spec = parse_spec(
        r##"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
            "/ok": {"get": {"responses": {"200": {"description": "x"}}}},
            "/broken": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]},
                        "post": "not an operation"},
            "/weird": 7
        }}"##,
    )
    .unwrap();
    let ex = extract(&spec);
    assert_eq!(names(&ex), vec!["ok.getOk"]);
    let failed: Vec<&str> = ex.failures.iter().map(|f| f.operation.as_str()).collect();
    assert_eq!(failed, vec!["GET /broken", "POST /broken", "/weird"]);
    assert!(
        ex.failures[0].message.contains("unresolved $ref"),
        "{:?}",
        ex.failures
    );
}
