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
/// How long a statement waits for a connection: while the database is down every request
/// waited this long before its 500 (issue #39); past it the request answers 503.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
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
        // Before the first replica migrated there is no counter yet: it starts at 0.
        let start = current(&mut listener).await.unwrap_or(0);
        let (tx, seen) = watch::channel(start);
        let task = tokio::spawn(follow(listener, tx));
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
        .await?;
    Ok(value.unwrap_or(0))
}

/// Tells the subscribers when the counter moved.
fn announce(tx: &watch::Sender<i64>, value: i64) {
    tx.send_if_modified(|seen| std::mem::replace(seen, value) != value);
}

/// Forwards notifications until every subscriber is gone. After the connection drops,
/// `try_recv` answers `None` and the listener reconnects (listening again) at its next use;
/// the counter, read once that works, covers whatever was announced while it was down.
async fn follow(mut listener: PgListener, tx: watch::Sender<i64>) {
    let mut resync = false;
    while !tx.is_closed() {
        if resync {
            match current(&mut listener).await {
                Ok(value) => {
                    announce(&tx, value);
                    resync = false;
                }
                Err(_) => {
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    continue;
                }
            }
        }
        match listener.try_recv().await {
            Ok(Some(note)) => announce(&tx, note.payload().parse().unwrap_or(i64::MAX)),
            Ok(None) => resync = true,
            Err(_) => {
                resync = true;
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
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
    /// The connection that asks for (and, once granted, holds) the lock, and whether it holds
    /// it.
    conn: tokio::sync::Mutex<Option<(sqlx::PgConnection, bool)>>,
}

impl Leader {
    pub(crate) fn new(url: &str) -> Leader {
        Leader {
            url: url.to_owned(),
            conn: tokio::sync::Mutex::new(None),
        }
    }

    /// Whether this store leads now (taking the lock when nobody holds it).
    pub(crate) async fn lead(&self) -> bool {
        use sqlx::Connection as _;
        let mut state = self.conn.lock().await;
        if let Some((conn, leading)) = state.as_mut() {
            // Session locks count: ask again only while not holding it.
            let asked = if *leading {
                conn.ping().await.map(|()| true)
            } else {
                try_session_lock(conn).await
            };
            match asked {
                Ok(now) => {
                    *leading = now;
                    return now;
                }
                // The connection, and with it any lock it held, is gone: connect again.
                Err(_) => *state = None,
            }
        }
        let Ok(mut conn) = sqlx::PgConnection::connect(&self.url).await else {
            return false;
        };
        let leading = try_session_lock(&mut conn).await.unwrap_or(false);
        *state = Some((conn, leading));
        leading
    }
}

async fn try_session_lock(conn: &mut sqlx::PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(LEADER_LOCK)
        .fetch_one(conn)
        .await
}
