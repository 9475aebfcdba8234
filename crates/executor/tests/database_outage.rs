//! Issue #39: during a PostgreSQL outage each request stalled 10 s and then answered 500,
//! `/api/health` still said ok, and `return 1` answered 200 with an execution id that was never
//! stored. Now the server answers 503 with `Retry-After` quickly, the readiness view reports
//! the database, no execution id is handed out while it is away, and all of it recovers when
//! the database is back.
//!
//! The outage is real as the server sees it: its connections go through a TCP relay to the test
//! cluster, and the relay cuts every connection and refuses new ones.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Harness, Options, fresh_postgres};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A relay to `upstream` that can be cut (every connection closed, new ones dropped).
struct Relay {
    port: u16,
    up: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
}

impl Relay {
    async fn start(upstream: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let (cut, cuts) = watch::channel(0u64);
        let relay_up = up.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !relay_up.load(Ordering::SeqCst) {
                    continue; // dropped: the connection closes at once
                }
                let upstream = upstream.clone();
                let mut cuts = cuts.clone();
                // Only a cut after this connection began ends it.
                cuts.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Relay { port, up, cut }
    }

    fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    fn up(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_answers_503_at_once_hands_out_no_id_and_recovers() {
    let Some(url) = fresh_postgres().await else {
        return;
    };
    // postgres://user@host:port/db → the relay in front of host:port.
    let (scheme_user, rest) = url.split_once('@').unwrap();
    let (host_port, db) = rest.split_once('/').unwrap();
    let relay = Relay::start(host_port.to_owned()).await;
    let relayed = format!("{scheme_user}@127.0.0.1:{}/{db}", relay.port);
    let h = Harness::start_opts(Options {
        postgres: Some((relayed, executor_store::MasterKey::generate())),
        ..Options::default()
    })
    .await;

    let (status, body) = h.get("/api/health/ready").await;
    assert_eq!((status, &body["database"]), (200, &json!("ok")), "{body}");
    let done = h.execute("return 1").await;
    assert_eq!(done["structured"]["result"], 1, "{done}");

    relay.down();
    // The probe notices within a couple of seconds.
    let noticed = Instant::now();
    loop {
        let (status, _) = h.get("/api/health/ready").await;
        if status == 503 {
            break;
        }
        assert!(
            noticed.elapsed() < Duration::from_secs(10),
            "readiness still ok"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let started = Instant::now();
    let (status, body) = h
        .post(
            "/api/executions",
            json!({"code": "return 1", "autoApprove": true}),
        )
        .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["_tag"], "DatabaseUnavailableError", "{body}");
    assert!(body.get("executionId").is_none(), "{body}");
    let (status, body) = h.get("/api/integrations").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered in {:?}",
        started.elapsed()
    );
    // Liveness is unchanged: the process is up.
    let (status, _) = h.get("/api/health").await;
    assert_eq!(status, 200);

    relay.up();
    let back = Instant::now();
    loop {
        let (status, _) = h.get("/api/health/ready").await;
        if status == 200 {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(15),
            "readiness never came back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let done = h.execute("return 2").await;
    assert_eq!(done["structured"]["result"], 2, "{done}");
    let id = done["executionId"].as_str().unwrap();
    // The id handed out is stored.
    let stored = Instant::now();
    loop {
        let (status, body) = h.get("/api/executions").await;
        if status == 200 && body.to_string().contains(id) {
            break;
        }
        assert!(
            stored.elapsed() < Duration::from_secs(10),
            "{status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
