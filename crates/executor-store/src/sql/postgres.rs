//! What only PostgreSQL does: the connection pool, the per-tenant write lock, and the
//! announcement of other replicas' writes.
//!
//! Every statement that changes a catalog table (integrations, connections, tools, policies,
//! toolkits, OAuth clients, secrets) bumps the one-row `generation` counter and NOTIFYs `executor_changes`
//! with its new value, from a statement trigger (in the schema migration), so no write path can forget
//! it. Each store keeps a dedicated LISTEN connection; a notification, or a reconnect that finds
//! the counter moved, is announced to the store's subscribers, who drop what they cached.

use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::postgres::PgListener;
use sqlx::{Any, AnyPool, Transaction};
use tokio::sync::watch;

use crate::Result;

/// The channel the triggers notify on.
pub(crate) const CHANNEL: &str = "executor_changes";
/// Connections per replica. Executions hold one only for a statement, so a few go far.
const MAX_CONNECTIONS: u32 = 16;
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a lost LISTEN connection waits before it reconnects.
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);

pub(crate) async fn pool(url: &str) -> Result<AnyPool> {
    Ok(AnyPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect(url)
        .await?)
}

/// Queues this transaction behind every other transaction, on every replica, that locked the
/// same `name` (a tenant's catalog writes; one connection's token refresh), until it ends.
pub(crate) async fn advisory_lock(tx: &mut Transaction<'static, Any>, name: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))::text")
        .bind(name)
        .fetch_one(&mut **tx)
        .await?;
    Ok(())
}

/// Takes the lock `advisory_lock` takes if nobody holds it; `false` when somebody does.
pub(crate) async fn try_advisory_lock(
    tx: &mut Transaction<'static, Any>,
    name: &str,
) -> Result<bool> {
    Ok(
        sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(hashtext($1))")
            .bind(name)
            .fetch_one(&mut **tx)
            .await?,
    )
}

/// The database's catalog generation as last seen by this store, moved by any replica's write.
#[derive(Debug)]
pub(crate) struct Changes {
    seen: watch::Receiver<i64>,
    task: tokio::task::JoinHandle<()>,
}

impl Changes {
    /// Starts listening before anything is read, so no write after this call is missed.
    pub(crate) async fn listen(url: &str) -> Result<Changes> {
        let mut listener = PgListener::connect(url).await?;
        listener.listen(CHANNEL).await?;
        let start = current(&mut listener).await?;
        let (tx, seen) = watch::channel(start);
        let url = url.to_owned();
        let task = tokio::spawn(async move { follow(listener, url, tx).await });
        Ok(Changes { seen, task })
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<i64> {
        self.seen.clone()
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn current(listener: &mut PgListener) -> Result<i64> {
    let value: Option<i64> = sqlx::query_scalar("SELECT value FROM generation WHERE id = 1")
        .fetch_optional(&mut *listener)
        .await
        .unwrap_or(None);
    Ok(value.unwrap_or(0))
}

/// Forwards notifications until every subscriber is gone. A dropped connection is reopened;
/// the counter read after re-listening covers whatever was announced while it was down.
async fn follow(mut listener: PgListener, url: String, tx: watch::Sender<i64>) {
    loop {
        match listener.try_recv().await {
            Ok(Some(note)) => {
                let value = note.payload().parse().unwrap_or(i64::MAX);
                tx.send_if_modified(|seen| {
                    let moved = *seen != value;
                    *seen = value;
                    moved
                });
            }
            Ok(None) | Err(_) => {
                // `try_recv` reconnects on the next call after `None`; an error means the
                // reconnect itself failed: start over.
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(RECONNECT_PAUSE).await;
                if let Ok(mut fresh) = PgListener::connect(&url).await
                    && fresh.listen(CHANNEL).await.is_ok()
                {
                    listener = fresh;
                }
                if let Ok(value) = current(&mut listener).await {
                    tx.send_if_modified(|seen| {
                        let moved = *seen != value;
                        *seen = value;
                        moved
                    });
                }
            }
        }
        if tx.is_closed() {
            return;
        }
    }
}

/// The advisory lock whose holder runs the deployment's background work.
const LEADER_LOCK: i64 = 0x4578_6563_4c65_6164; // "ExecLead"

/// One replica at a time leads: it holds a session advisory lock on a connection of its own,
/// so the lock goes with the process (or its connection) and the next replica that asks
/// takes it.
#[derive(Debug)]
pub(crate) struct Leader {
    url: String,
    held: tokio::sync::Mutex<Option<sqlx::PgConnection>>,
}

impl Leader {
    pub(crate) fn new(url: &str) -> Leader {
        Leader {
            url: url.to_owned(),
            held: tokio::sync::Mutex::new(None),
        }
    }

    /// Whether this store leads now (taking the lock when nobody holds it).
    pub(crate) async fn lead(&self) -> bool {
        use sqlx::Connection as _;
        let mut held = self.held.lock().await;
        if let Some(conn) = held.as_mut() {
            if conn.ping().await.is_ok() {
                return true;
            }
            // The connection (and with it the lock) is gone: ask again below.
            *held = None;
        }
        let Ok(mut conn) = sqlx::PgConnection::connect(&self.url).await else {
            return false;
        };
        let taken: Result<bool, _> = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(LEADER_LOCK)
            .fetch_one(&mut conn)
            .await;
        if matches!(taken, Ok(true)) {
            *held = Some(conn);
            true
        } else {
            conn.close().await.ok();
            false
        }
    }
}
