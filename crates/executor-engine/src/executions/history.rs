//! The history writer: executions that settle without ever having paused are written in
//! batches, off the answer's path. Nobody can resume them (their id was never handed out), so
//! they only need to reach the history; batching turns a stream of `return 1`s into one
//! transaction per window instead of one commit each.

use std::sync::Arc;
use std::time::Duration;

use executor_store::{ExecutionCallRecord, ExecutionRecord, Scope, Store};
use tokio::sync::{Notify, mpsc, oneshot};

/// How long the writer gathers rows before it commits them.
const WINDOW: Duration = Duration::from_millis(50);
/// Most rows in one transaction.
const MAX_BATCH: usize = 512;
/// How often, and how far apart, a batch is tried again while the database does not answer.
const UNAVAILABLE_RETRIES: u32 = 30;
const UNAVAILABLE_PAUSE: Duration = Duration::from_secs(1);

/// An execution and its journal.
type Saved = (ExecutionRecord, Vec<ExecutionCallRecord>);
/// An execution of one caller's scope, and its journal.
type Row = (Scope, ExecutionRecord, Vec<ExecutionCallRecord>);

enum Msg {
    Row(Box<Row>),
    Flush(oneshot::Sender<()>),
}

pub(crate) struct HistoryWriter {
    tx: mpsc::UnboundedSender<Msg>,
    /// Cuts the current window short (a flush is waiting).
    hurry: Arc<Notify>,
}

impl HistoryWriter {
    /// Starts the writer on `io`; it ends when the writer is dropped (after writing what it has).
    pub(crate) fn spawn(io: &tokio::runtime::Handle, store: Arc<dyn Store>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let hurry = Arc::new(Notify::new());
        io.spawn(run(rx, hurry.clone(), store));
        Self { tx, hurry }
    }

    pub(crate) fn push(
        &self,
        scope: &Scope,
        row: ExecutionRecord,
        calls: Vec<ExecutionCallRecord>,
    ) {
        let _ = self
            .tx
            .send(Msg::Row(Box::new((scope.clone(), row, calls))));
    }

    /// Waits until every row pushed before this call is written.
    pub(crate) async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Flush(ack)).is_ok() {
            self.hurry.notify_one();
            let _ = done.await;
        }
    }
}

/// Waits for a first row, lets the window fill without polling the channel (so a push does not
/// wake this task), then writes everything queued in one transaction per scope.
async fn run(mut rx: mpsc::UnboundedReceiver<Msg>, hurry: Arc<Notify>, store: Arc<dyn Store>) {
    while let Some(first) = rx.recv().await {
        if matches!(first, Msg::Row(_)) {
            tokio::select! {
                _ = tokio::time::sleep(WINDOW) => {}
                _ = hurry.notified() => {}
            }
        }
        let mut batch: Vec<Row> = Vec::new();
        let mut acks = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Row(row) => batch.push(*row),
                Msg::Flush(ack) => acks.push(ack),
            }
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        for (scope, rows) in by_scope(batch) {
            // An execution that settled while the database went away is written when it is
            // back (for a while): its id was handed out, so it must be found later.
            let mut attempts = 0;
            loop {
                match store.save_executions(&scope, &rows).await {
                    Ok(()) => break,
                    Err(e) if e.is_unavailable() && attempts < UNAVAILABLE_RETRIES => {
                        attempts += 1;
                        tokio::time::sleep(UNAVAILABLE_PAUSE).await;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, count = rows.len(), "could not record executions in the history");
                        break;
                    }
                }
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

/// The batch split by scope, in the order each scope first appears (one scope, one vector, in
/// the common case of a local server).
fn by_scope(batch: Vec<Row>) -> Vec<(Scope, Vec<Saved>)> {
    let mut groups: Vec<(Scope, Vec<Saved>)> = Vec::new();
    for (scope, rec, calls) in batch {
        match groups.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, rows)) => rows.push((rec, calls)),
            None => groups.push((scope, vec![(rec, calls)])),
        }
    }
    groups
}
