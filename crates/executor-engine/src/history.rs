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

type Row = (ExecutionRecord, Vec<ExecutionCallRecord>);

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
    pub(crate) fn spawn(io: &tokio::runtime::Handle, store: Arc<dyn Store>, scope: Scope) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let hurry = Arc::new(Notify::new());
        io.spawn(run(rx, hurry.clone(), store, scope));
        Self { tx, hurry }
    }

    pub(crate) fn push(&self, row: ExecutionRecord, calls: Vec<ExecutionCallRecord>) {
        let _ = self.tx.send(Msg::Row(Box::new((row, calls))));
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
/// wake this task), then writes everything queued in one transaction.
async fn run(
    mut rx: mpsc::UnboundedReceiver<Msg>,
    hurry: Arc<Notify>,
    store: Arc<dyn Store>,
    scope: Scope,
) {
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
        if !batch.is_empty()
            && let Err(e) = store.save_executions(&scope, &batch).await
        {
            tracing::error!(error = %e, count = batch.len(), "could not record executions in the history");
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}
