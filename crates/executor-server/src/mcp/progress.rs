//! Downstream progress through the agent: when the agent's `tools/call` of `execute` carries a
//! `progressToken`, the progress the execution's downstream servers report on its calls reaches
//! the agent as `notifications/progress` with the agent's token.

use std::sync::{Arc, Mutex};

use executor_engine::ProgressSink;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;

/// One progress update as the downstream server reported it.
type Update = (f64, Option<f64>, Option<String>);

/// Forwards progress to the agent's peer under its token, in order, one task per execution.
struct PeerProgress {
    /// `None` once the execution answered: later progress would follow its result.
    updates: Mutex<Option<mpsc::UnboundedSender<Update>>>,
    series: Mutex<Series>,
}

/// The progress sink of one `execute` request and the task that forwards it.
pub(super) struct AgentProgress {
    sink: Arc<PeerProgress>,
    /// Holds a clone of the agent's peer: it must not outlive the request, or closing the
    /// session waits for it (rmcp drains its handlers' senders for 5 s).
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for AgentProgress {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// How long the result of `execute` waits for progress still queued for the agent.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

impl AgentProgress {
    pub(super) fn sink(&self) -> Arc<dyn ProgressSink> {
        self.sink.clone()
    }

    /// Stops forwarding and waits (briefly) until what was queued went out, so the agent
    /// hears a call's progress before the result of its execution.
    pub(super) async fn finish(mut self) {
        lock(&self.sink.updates).take();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(FLUSH_WAIT, task).await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps what the agent hears increasing (MCP requires it) across calls that each count from
/// their own start: a value at or below the last one sent rebases the new series above it.
#[derive(Default)]
struct Series {
    last: Option<f64>,
    offset: f64,
}

impl Series {
    /// The value to send for `progress` (with `total` moved alike), or `None` to skip it.
    fn next(&mut self, progress: f64, total: Option<f64>) -> Option<(f64, Option<f64>)> {
        if !progress.is_finite() {
            return None;
        }
        let mut value = progress + self.offset;
        if let Some(last) = self.last
            && value <= last
        {
            self.offset = last;
            value = last + progress;
            if value <= last {
                return None;
            }
        }
        self.last = Some(value);
        Some((value, total.map(|t| t + self.offset)))
    }
}

/// The progress sink of a `tools/call` that asked for progress; `None` without a token.
pub(super) fn for_request(
    peer: &Peer<RoleServer>,
    token: Option<ProgressToken>,
    request: tokio_util::sync::CancellationToken,
) -> Option<AgentProgress> {
    let token = token?;
    let (updates, mut rx) = mpsc::unbounded_channel::<Update>();
    let peer = peer.clone();
    // Ends when the request finishes, is cancelled (the agent's session closing cancels it), or
    // the agent's session is gone.
    let task = tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                next = rx.recv() => next,
                () = request.cancelled() => None,
            };
            let Some((progress, total, message)) = next else {
                break;
            };
            let mut param = ProgressNotificationParam::new(token.clone(), progress);
            param.total = total;
            param.message = message;
            if peer.notify_progress(param).await.is_err() {
                break;
            }
        }
    });
    Some(AgentProgress {
        sink: Arc::new(PeerProgress {
            updates: Mutex::new(Some(updates)),
            series: Mutex::default(),
        }),
        task: Some(task),
    })
}

impl ProgressSink for PeerProgress {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(updates) = lock(&self.updates).clone() else {
            return;
        };
        if let Some((progress, total)) = lock(&self.series).next(progress, total) {
            let _ = updates.send((progress, total, message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_series_continues_above_the_first() {
        let mut series = Series::default();
        assert_eq!(series.next(1.0, Some(3.0)), Some((1.0, Some(3.0))));
        assert_eq!(series.next(3.0, Some(3.0)), Some((3.0, Some(3.0))));
        assert_eq!(series.next(0.0, Some(2.0)), None);
        assert_eq!(series.next(1.0, Some(2.0)), Some((4.0, Some(5.0))));
        assert_eq!(series.next(f64::NAN, None), None);
    }
}
