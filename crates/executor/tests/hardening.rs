//! Issue #17: what a bad upstream or a runaway caller must not do to the server. A real HTTP API
//! (axum) that hangs, drips its body, or answers too much, behind a real OpenAPI integration.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use executor_engine::CallLimitsConfig;
use serde_json::{Value, json};
use support::{Harness, Options};

/// Requests the API started, and how many of them ended without an answer (their connection
/// closed while they hung).
#[derive(Clone, Default)]
struct Upstream {
    started: Arc<AtomicUsize>,
    abandoned: Arc<AtomicUsize>,
}

/// Counts a hanging request as abandoned when its handler is dropped.
struct Abandoned(Arc<AtomicUsize>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

async fn serve_upstream() -> (Upstream, String) {
    let upstream = Upstream::default();
    let hang = {
        let u = upstream.clone();
        move || {
            let u = u.clone();
            async move {
                u.started.fetch_add(1, Ordering::SeqCst);
                let _abandoned = Abandoned(u.abandoned.clone());
                std::future::pending::<()>().await;
                ""
            }
        }
    };
    let app = Router::new()
        .route("/hang", get(hang))
        .route(
            "/drip",
            get(|| async {
                // Headers at once, then one byte a second.
                let body = futures::stream::unfold(0u32, |n| async move {
                    if n > 0 {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    (n < 600).then(|| {
                        (
                            Ok::<_, std::io::Error>(bytes::Bytes::from_static(b" ")),
                            n + 1,
                        )
                    })
                });
                axum::response::Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from_stream(body))
                    .unwrap()
            }),
        )
        .route(
            "/big",
            get(|| async { axum::Json(json!({"blob": "x".repeat(2 * 1024 * 1024)})) }),
        )
        .route("/ok", get(|| async { axum::Json(json!({"fine": true})) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (upstream, base)
}

fn spec(base: &str) -> String {
    let op =
        |id: &str| json!({"get": {"operationId": id, "responses": {"200": {"description": "ok"}}}});
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Bad upstream", "version": "1"},
        "servers": [{"url": base}],
        "paths": {"/hang": op("hang"), "/drip": op("drip"), "/big": op("big"), "/ok": op("ok")}
    })
    .to_string()
}

async fn harness(
    calls: CallLimitsConfig,
    admission: Option<(usize, usize, Duration)>,
) -> (Harness, Upstream) {
    let (upstream, base) = serve_upstream().await;
    let h = Harness::start_opts(Options {
        calls: Some(calls),
        admission,
        ..Options::default()
    })
    .await;
    let (status, body) = h
        .post(
            "/api/openapi/specs",
            json!({"spec": {"kind": "blob", "value": spec(&base)}, "slug": "bad", "name": "Bad"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "bad", "template": "none", "value": ""}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    (h, upstream)
}

fn result(v: &Value) -> &Value {
    &v["structured"]["result"]
}

fn limits(call_timeout: Duration) -> CallLimitsConfig {
    CallLimitsConfig {
        call_timeout,
        ..CallLimitsConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_or_dripping_upstream_answers_upstream_timeout() {
    let (h, upstream) = harness(limits(Duration::from_millis(600)), None).await;
    for op in ["hang", "drip"] {
        let started = Instant::now();
        let out = h
            .execute(&format!("return await tools.bad.org.main.{op}.{op}({{}})"))
            .await;
        let error = &result(&out)["error"];
        assert_eq!(error["code"], "upstream_timeout", "{op}: {out}");
        assert_eq!(error["details"]["timeoutMs"], 600, "{out}");
        assert!(started.elapsed() < Duration::from_secs(5), "{op}");
    }
    // The hanging request was dropped, not left open.
    assert_eq!(upstream.started.load(Ordering::SeqCst), 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while upstream.abandoned.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstream.abandoned.load(Ordering::SeqCst), 1);
}

/// One integration that hangs holds only its own slots: calls past them fail fast, and an
/// execution that touches nothing slow answers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_integration_cannot_starve_other_executions() {
    let calls = CallLimitsConfig {
        call_timeout: Duration::from_secs(30),
        per_integration: 2,
        slot_wait: Duration::from_millis(100),
        ..CallLimitsConfig::default()
    };
    let (h, upstream) = harness(calls, None).await;
    let hanging = {
        let (base, http) = (h.base.clone(), h.http.clone());
        tokio::spawn(async move {
            http.post(format!("{base}/api/executions"))
                .json(&json!({"code": "return await Promise.all([1, 2].map(() => tools.bad.org.main.hang.hang({})))", "autoApprove": true}))
                .send()
                .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while upstream.started.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstream.started.load(Ordering::SeqCst), 2);
    let started = Instant::now();
    let busy = h.execute("return await tools.bad.org.main.ok.ok({})").await;
    assert_eq!(result(&busy)["error"]["code"], "integration_busy", "{busy}");
    assert_eq!(result(&busy)["error"]["retryable"], true, "{busy}");
    let plain = h.execute("return 1").await;
    assert_eq!(result(&plain), 1, "{plain}");
    assert!(started.elapsed() < Duration::from_secs(2));
    hanging.abort();
}

/// A caller that goes away cancels its execution, and with it the upstream request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_disconnects_cancels_its_execution() {
    let (h, upstream) = harness(limits(Duration::from_secs(60)), None).await;
    let sent = h
        .http
        .post(format!("{}/api/executions", h.base))
        .json(
            &json!({"code": "return await tools.bad.org.main.hang.hang({})", "autoApprove": true}),
        )
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    assert!(sent.is_err(), "the client gave up");
    assert_eq!(upstream.started.load(Ordering::SeqCst), 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while upstream.abandoned.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        upstream.abandoned.load(Ordering::SeqCst),
        1,
        "the upstream request was not cancelled"
    );
}

/// Past the running slots and the queue, executions are turned away with 503 and Retry-After.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_with_retry_after() {
    let admission = (1, 1, Duration::from_millis(300));
    let (h, upstream) = harness(limits(Duration::from_secs(30)), Some(admission)).await;
    let post = |code: &'static str| {
        let (base, http) = (h.base.clone(), h.http.clone());
        tokio::spawn(async move {
            let r = http
                .post(format!("{base}/api/executions"))
                .json(&json!({"code": code, "autoApprove": true}))
                .send()
                .await
                .unwrap();
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            (r.status().as_u16(), retry, r.json::<Value>().await.unwrap())
        })
    };
    let running = post("return await tools.bad.org.main.hang.hang({})");
    let deadline = Instant::now() + Duration::from_secs(5);
    while upstream.started.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = post("return 1");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let (status, retry, body) = post("return 2").await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(body["_tag"], "ServerBusyError", "{body}");
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "the full queue answers at once"
    );
    let (status, retry, body) = waiting.await.unwrap();
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");
    running.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_output_limit_is_an_error_value() {
    let calls = CallLimitsConfig {
        max_output_bytes: 1024 * 1024,
        ..CallLimitsConfig::default()
    };
    let (h, _upstream) = harness(calls, None).await;
    let out = h
        .execute("const r = await tools.bad.org.main.big.big({}); return r.ok ? 'whole' : r.error")
        .await;
    let error = result(&out);
    assert_eq!(error["code"], "tool_output_too_large", "{out}");
    assert_eq!(error["details"]["limit"], 1024 * 1024);
    assert!(
        error["details"]["bytes"].as_u64().unwrap() > 2 * 1024 * 1024,
        "{out}"
    );
    let fine = h
        .execute("return (await tools.bad.org.main.ok.ok({})).ok")
        .await;
    assert_eq!(result(&fine), true, "{fine}");
}
