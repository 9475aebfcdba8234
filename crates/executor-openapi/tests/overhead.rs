//! Per-call overhead of an OpenAPI tool call over calling the same endpoint directly with
//! reqwest (same client, same server). Run with `--release` for the figure:
//! `cargo test -p executor-openapi --release --test overhead -- --nocapture`.

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use executor_core::ToolOutcome;
use executor_openapi::{CallConfig, extract, invoke, parse_spec};
use serde_json::json;

const SPEC: &str = r#"
openapi: 3.0.3
info: { title: Ping, version: "1" }
paths:
  /things/{id}:
    get:
      operationId: getThing
      tags: [things]
      parameters:
        - { name: id, in: path, required: true, schema: { type: string } }
        - { name: fields, in: query, schema: { type: array, items: { type: string } } }
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: { type: object }
"#;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_overhead_over_direct_call() {
    let app = Router::new().route(
        "/things/{id}",
        get(|| async { axum::Json(json!({"id": "a", "name": "thing", "tags": ["x", "y"]})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let ex = extract(&parse_spec(SPEC).unwrap());
    let binding = ex.tools[0].binding.clone();
    let mut config = CallConfig {
        base_url: Some(base.clone()),
        ..CallConfig::default()
    };
    config
        .headers
        .insert("Authorization".into(), "Bearer t0ken".into());
    let http = reqwest::Client::new();
    let direct_url = format!("{base}/things/a%20b?fields=x&fields=y");

    let direct = || async {
        let r = http
            .get(&direct_url)
            .header("authorization", "Bearer t0ken")
            .header("user-agent", "executor")
            .send()
            .await
            .unwrap();
        let _ = r.status();
        let _: serde_json::Value = r.json().await.unwrap();
    };
    let tool = || async {
        match invoke(
            &http,
            &binding,
            json!({"id": "a b", "fields": ["x", "y"]}),
            &config,
        )
        .await
        {
            ToolOutcome::Ok { .. } => {}
            ToolOutcome::Err(e) => panic!("{e:?}"),
        }
    };
    for _ in 0..50 {
        direct().await;
        tool().await;
    }
    let (mut d, mut t) = (Vec::new(), Vec::new());
    for _ in 0..400 {
        let s = Instant::now();
        direct().await;
        d.push(s.elapsed());
        let s = Instant::now();
        tool().await;
        t.push(s.elapsed());
    }
    let (md, mt) = (median(d), median(t));
    let overhead = mt.saturating_sub(md);
    println!(
        "BENCH openapi invoke overhead: direct median {:.1} µs, invoke median {:.1} µs, overhead {:.1} µs ({} build)",
        md.as_secs_f64() * 1e6,
        mt.as_secs_f64() * 1e6,
        overhead.as_secs_f64() * 1e6,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    );
    // Generous: the aim is < 0.3 ms in release; debug builds and busy CI machines are slower.
    assert!(overhead < Duration::from_millis(5), "overhead {overhead:?}");
}
