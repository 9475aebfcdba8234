//! The live feed of executions: each start, pause, resume and settle is published to whoever
//! watches (the console's executions page). Nothing is built when nobody watches, so the feed
//! costs an execution one atomic read.

use std::sync::Arc;

use executor_store::{ExecutionSummary, Scope};
use tokio::sync::broadcast;

use crate::Caller;

/// Changes a slow watcher may fall behind by before it is told to re-read the history.
const BACKLOG: usize = 256;

struct Change {
    scope: Scope,
    summary: ExecutionSummary,
}

pub(crate) struct Feed {
    tx: broadcast::Sender<Arc<Change>>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Feed {
    /// Publishes the summary `make` builds, if anyone watches.
    pub(crate) fn publish(&self, scope: &Scope, make: impl FnOnce() -> ExecutionSummary) {
        if self.tx.receiver_count() == 0 {
            return;
        }
        let _ = self.tx.send(Arc::new(Change {
            scope: scope.clone(),
            summary: make(),
        }));
    }

    pub(crate) fn watch(&self, caller: &Caller) -> ExecutionWatch {
        ExecutionWatch {
            rx: self.tx.subscribe(),
            scope: caller.scope().clone(),
        }
    }
}

/// What a watcher hears next.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutionEvent {
    /// One of the caller's executions started or changed status.
    Changed(ExecutionSummary),
    /// The watcher fell behind and missed changes: read the history again.
    Missed,
}

/// A subscription to one caller's executions (other callers' are never seen).
pub struct ExecutionWatch {
    rx: broadcast::Receiver<Arc<Change>>,
    scope: Scope,
}

impl ExecutionWatch {
    /// The next change of this caller's executions; `None` when the engine is gone.
    pub async fn next(&mut self) -> Option<ExecutionEvent> {
        loop {
            match self.rx.recv().await {
                Ok(change) if change.scope == self.scope => {
                    return Some(ExecutionEvent::Changed(change.summary.clone()));
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => return Some(ExecutionEvent::Missed),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use executor_store::ExecutionStatus;

    fn summary(id: &str) -> ExecutionSummary {
        ExecutionSummary {
            id: id.to_owned(),
            status: ExecutionStatus::Running,
            started_at: 1,
            finished_at: None,
            duration_ms: None,
            tool_calls: 0,
            is_error: None,
        }
    }

    #[tokio::test]
    async fn a_watcher_hears_only_its_own_callers_executions_and_is_told_when_it_fell_behind() {
        let feed = Feed::default();
        let (alice, bob) = (Caller::local("alice"), Caller::local("bob"));
        // Nobody watches: nothing is built.
        feed.publish(alice.scope(), || unreachable!("no watcher, no summary"));
        let mut watch = feed.watch(&alice);
        feed.publish(bob.scope(), || summary("exec_bob"));
        feed.publish(alice.scope(), || summary("exec_alice"));
        assert_eq!(
            watch.next().await,
            Some(ExecutionEvent::Changed(summary("exec_alice")))
        );
        for i in 0..BACKLOG + 5 {
            feed.publish(alice.scope(), || summary(&format!("exec_{i}")));
        }
        assert_eq!(watch.next().await, Some(ExecutionEvent::Missed));
        drop(feed);
        while let Some(event) = watch.next().await {
            assert!(matches!(event, ExecutionEvent::Changed(_)));
        }
    }
}
