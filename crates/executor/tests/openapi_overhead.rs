//! Per-call overhead of an OpenAPI tool call (sandbox → dispatcher → policy gate → argument
//! validation → request → response decoding) over calling the same endpoint directly with a
//! pooled reqwest client. Ignored by default; the figure needs a release build:
//!
//! `cargo test --release -p executor --test openapi_overhead -- --ignored --nocapture`

mod support;

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use executor_engine::ExecutionOutcome;
use serde_json::json;
use support::Harness;

const CALLS: usize = 200;
const ROUNDS: usize = 15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn spec(base: &str) -> String {
    format!(
        r#"openapi: 3.0.3
info: {{ title: Ping, version: "1" }}
servers: [{{ url: "{base}" }}]
components:
  securitySchemes:
    key: {{ type: apiKey, in: header, name: X-Api-Key }}
security: [{{ key: [] }}]
paths:
  /things/{{id}}:
    get:
      operationId: getThing
      tags: [things]
      parameters:
        - {{ name: id, in: path, required: true, schema: {{ type: string }} }}
        - {{ name: fields, in: query, schema: {{ type: array, items: {{ type: string }} }} }}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {{ type: object }}
"#
    )
}

async fn run(h: &Harness, code: &str) -> Duration {
    let started = Instant::now();
    let outcome = h
        .engine
        .execute(&h.caller, code.to_owned(), true)
        .await
        .unwrap();
    let took = started.elapsed();
    match outcome {
        ExecutionOutcome::Completed(c) => assert!(!c.is_error, "{}", c.text),
        ExecutionOutcome::Paused(p) => panic!("paused: {}", p.text),
    }
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
async fn openapi_call_overhead_over_direct_http() {
    let app = Router::new().route(
        "/things/{id}",
        get(|| async { axum::Json(json!({"id": "a", "name": "thing", "tags": ["x", "y"]})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let h = Harness::start().await;
    let (status, added) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": spec(&base)}, "slug": "ping"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let (status, conn) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "ping", "template": "apikey-0", "value": "t0ken"}),
        )
        .await;
    assert_eq!(status, 200, "{conn}");

    let calls = format!(
        "for (let i = 0; i < {CALLS}; i++) {{ const r = await tools.ping.org.main.things.getThing({{ id: 'a b', fields: ['x', 'y'] }}); if (!r.ok) throw new Error(JSON.stringify(r)); }} return {CALLS};"
    );
    let empty = format!("for (let i = 0; i < {CALLS}; i++) {{ }} return {CALLS};");

    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let url = format!("{base}/things/a%20b?fields=x&fields=y");
    // On a runtime worker, as the engine's host calls are (not on the test's own thread).
    let direct_round = || {
        let (http, url) = (http.clone(), url.clone());
        async move {
            tokio::spawn(async move {
                let started = Instant::now();
                for _ in 0..CALLS {
                    let r = http
                        .get(&url)
                        .header("x-api-key", "t0ken")
                        .header("user-agent", "executor")
                        .send()
                        .await
                        .unwrap();
                    let status = r.status();
                    let _: serde_json::Value = r.json().await.unwrap();
                    assert!(status.is_success());
                }
                started.elapsed()
            })
            .await
            .unwrap()
        }
    };

    // Warm up both paths (pools, caches, the JS pool).
    for _ in 0..3 {
        run(&h, &calls).await;
        direct_round().await;
    }
    let (mut tool, mut direct, mut base_exec) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        tool.push(run(&h, &calls).await);
        direct.push(direct_round().await);
        base_exec.push(run(&h, &empty).await);
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / CALLS as f64;
    let tool_us = per(median(tool).saturating_sub(median(base_exec.clone())));
    let direct_us = per(median(direct));
    println!(
        "BENCH openapi call: {CALLS} calls per execution, median of {ROUNDS}: tool {tool_us:.1} µs/call, direct {direct_us:.1} µs/call, overhead {:.1} µs/call (empty execution {:.2} ms)",
        tool_us - direct_us,
        median(base_exec).as_secs_f64() * 1e3,
    );
}
