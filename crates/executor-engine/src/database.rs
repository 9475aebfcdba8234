//! Whether the shared database answers (issue #39): during a PostgreSQL outage every request
//! waited for a connection and then answered 500, health said ok, and `return 1` answered with an
//! execution id that was never stored. A probe asks the database once a second; while it does
//! not answer, executions are refused before they start (no id is handed out), the server
//! answers 503 with `Retry-After` at once, and the readiness view says why.
//!
//! A database the process owns (SQLite, a local file) is always taken as ready: it has no
//! outage separate from the process's own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::Inner;
use crate::error::{DATABASE_RETRY_AFTER_SECS, EngineError, EngineResult};

/// How often the probe asks, and how long one answer may take.
const PROBE_EVERY: Duration = Duration::from_secs(1);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct DatabaseState {
    ready: AtomicBool,
}

impl Default for DatabaseState {
    fn default() -> Self {
        Self {
            ready: AtomicBool::new(true),
        }
    }
}

impl DatabaseState {
    pub(crate) fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// `Unavailable` while the database does not answer.
    pub(crate) fn check(&self) -> EngineResult<()> {
        if self.ready() {
            Ok(())
        } else {
            Err(EngineError::Unavailable {
                retry_after_secs: DATABASE_RETRY_AFTER_SECS,
            })
        }
    }

    fn set(&self, ready: bool) {
        let was = self.ready.swap(ready, Ordering::AcqRel);
        if was != ready {
            if ready {
                tracing::info!("the database answers again");
            } else {
                tracing::error!("the database does not answer: requests get 503 until it does");
            }
        }
    }
}

/// Starts the probe of a shared database; it ends with the engine.
pub(crate) fn watch(inner: &Arc<Inner>) {
    if !inner.shares_database {
        return;
    }
    let weak: Weak<Inner> = Arc::downgrade(inner);
    inner.io.spawn(async move {
        let mut tick = tokio::time::interval(PROBE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            let answered = inner.store.ping(PROBE_TIMEOUT).await.is_ok();
            inner.database.set(answered);
        }
    });
}
