//! The local API's bearer token and CORS (spec §2), through a real server.

mod support;

use reqwest::StatusCode;
use serde_json::json;
use support::{Harness, Options};

const TOKEN: &str = "test-token-0123456789";

async fn guarded() -> Harness {
    Harness::start_opts(Options {
        auth_token: Some(TOKEN.to_owned()),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn api_and_mcp_need_the_token_health_does_not() {
    let h = guarded().await;
    let anonymous = reqwest::Client::new();

    let health = anonymous
        .get(format!("{}/api/health", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);

    for (method, path) in [
        (reqwest::Method::GET, "/api/integrations"),
        (reqwest::Method::POST, "/api/executions"),
        (reqwest::Method::GET, "/api/tools"),
        (reqwest::Method::POST, "/mcp"),
    ] {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Basic dGVzdA=="),
            Some(TOKEN),
        ] {
            let mut request = anonymous
                .request(method.clone(), format!("{}{path}", h.base))
                .json(&json!({"code": "return 1"}));
            if let Some(a) = auth {
                request = request.header("authorization", a);
            }
            let response = request.send().await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} {auth:?}"
            );
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer realm=\"executor\""
            );
            assert_eq!(response.text().await.unwrap(), "Unauthorized");
        }
    }
    // Nothing ran while refused.
    let (status, executions) = h.get("/api/executions").await;
    assert_eq!(status, 200);
    assert_eq!(executions.as_array().map(Vec::len), Some(0), "{executions}");

    // With the token (the harness's client sends it) everything answers.
    let (status, _) = h.get("/api/integrations").await;
    assert_eq!(status, 200);
    let done = h.execute("return 40 + 2").await;
    assert_eq!(done["structured"]["result"], json!(42), "{done}");
}

#[tokio::test]
async fn loopback_origins_get_credentialed_cors_others_do_not() {
    let h = guarded().await;
    let anonymous = reqwest::Client::new();
    let preflight = anonymous
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/api/executions", h.base),
        )
        .header("origin", "http://localhost:5173")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), StatusCode::NO_CONTENT);
    let headers = preflight.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "http://localhost:5173"
    );
    assert_eq!(headers["access-control-allow-credentials"], "true");
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("PATCH")
    );

    let foreign = anonymous
        .get(format!("{}/api/health", h.base))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), StatusCode::OK);
    assert!(
        foreign
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    // Issue #39: an origin whose userinfo looks like loopback is evil.com's, preflight or not.
    for disguised in ["http://localhost:80@evil.com", "http://127.0.0.1@evil.com"] {
        for method in [reqwest::Method::OPTIONS, reqwest::Method::GET] {
            let answer = anonymous
                .request(method.clone(), format!("{}/api/tools", h.base))
                .header("origin", disguised)
                .header("access-control-request-method", "GET")
                .send()
                .await
                .unwrap();
            assert!(
                answer
                    .headers()
                    .get("access-control-allow-origin")
                    .is_none(),
                "{method} with Origin {disguised} got CORS"
            );
            assert!(
                answer
                    .headers()
                    .get("access-control-allow-credentials")
                    .is_none()
            );
        }
    }

    // A refused request still tells a loopback browser why (the CORS headers are on the 401).
    let refused = anonymous
        .get(format!("{}/api/tools", h.base))
        .header("origin", "http://127.0.0.1:3000")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused.headers()["access-control-allow-origin"],
        "http://127.0.0.1:3000"
    );
}
