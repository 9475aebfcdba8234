//! Executions: run code in the sandbox, race "finished" against "first pause", and resume
//! paused executions. Pauses are queued: concurrent gated calls pause one after another.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use executor_core::{Completed, format_completed};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::Engine;
use crate::dispatch::{ExecutionCtx, ExecutionHost};
use crate::error::{EngineError, EngineResult};

/// Settled outcomes remembered so that a repeated resume replays the same answer.
const SETTLED_KEEP: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeAction {
    Accept,
    Decline,
    Cancel,
}

impl ResumeAction {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "accept" => Some(Self::Accept),
            "decline" => Some(Self::Decline),
            "cancel" => Some(Self::Cancel),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Paused {
    pub execution_id: String,
    pub text: String,
    pub structured: Value,
}

#[derive(Debug, Clone)]
pub enum ExecutionOutcome {
    Completed(Completed),
    Paused(Paused),
}

/// What a gated tool call asks of a person.
pub(crate) struct PauseRequest {
    pub(crate) message: String,
    pub(crate) address: String,
    pub(crate) args: Value,
    pub(crate) respond: oneshot::Sender<(ResumeAction, Option<Value>)>,
}

pub(crate) enum ExecEvent {
    Paused(PauseRequest),
    Done(Completed),
}

struct PausedExecution {
    events: mpsc::UnboundedReceiver<ExecEvent>,
    current: PauseRequest,
}

#[derive(Default)]
pub(crate) struct Registry {
    paused: Mutex<HashMap<String, PausedExecution>>,
    settled: Mutex<VecDeque<(String, Completed)>>,
}

impl Registry {
    pub(crate) fn clear(&self) {
        lock(&self.paused).clear();
    }

    fn settle(&self, id: String, completed: Completed) {
        let mut settled = lock(&self.settled);
        if settled.len() >= SETTLED_KEEP {
            settled.pop_front();
        }
        settled.push_back((id, completed));
    }

    fn replay(&self, id: &str) -> Option<Completed> {
        lock(&self.settled)
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, c)| c.clone())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Engine {
    /// Runs `code`. `auto_approve` means the caller is the approver: gated calls run inline.
    pub async fn execute(
        &self,
        code: String,
        auto_approve: bool,
    ) -> EngineResult<ExecutionOutcome> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let ctx = Arc::new(ExecutionCtx::new(
            self.inner.mcp.scope(),
            auto_approve,
            events_tx.clone(),
        ));
        let host = Arc::new(ExecutionHost {
            inner: self.inner.clone(),
            ctx: ctx.clone(),
        });
        let inner = self.inner.clone();
        self.inner.io.spawn(async move {
            let output = inner.sandbox.run(&code, host).await;
            ctx.finish().await;
            let _ = events_tx.send(ExecEvent::Done(format_completed(output)));
        });
        self.next_event(events_rx, None).await
    }

    async fn next_event(
        &self,
        mut events: mpsc::UnboundedReceiver<ExecEvent>,
        id: Option<String>,
    ) -> EngineResult<ExecutionOutcome> {
        match events.recv().await {
            Some(ExecEvent::Done(completed)) => {
                if let Some(id) = id {
                    self.inner.executions.settle(id, completed.clone());
                }
                Ok(ExecutionOutcome::Completed(completed))
            }
            Some(ExecEvent::Paused(request)) => {
                let id = id.unwrap_or_else(|| format!("exec_{}", uuid::Uuid::new_v4()));
                let paused = paused_view(&id, &request);
                lock(&self.inner.executions.paused).insert(
                    id,
                    PausedExecution {
                        events,
                        current: request,
                    },
                );
                Ok(ExecutionOutcome::Paused(paused))
            }
            None => Err(EngineError::Internal(
                "execution ended without an outcome".to_owned(),
            )),
        }
    }

    /// The pending interaction of a paused execution.
    pub fn paused_execution(&self, id: &str) -> EngineResult<Paused> {
        lock(&self.inner.executions.paused)
            .get(id)
            .map(|p| paused_view(id, &p.current))
            .ok_or_else(|| EngineError::ExecutionNotFound {
                execution_id: id.to_owned(),
            })
    }

    /// Answers the pending interaction and waits for the next pause or the end.
    pub async fn resume(
        &self,
        id: &str,
        action: ResumeAction,
        content: Option<Value>,
    ) -> EngineResult<ExecutionOutcome> {
        let taken = lock(&self.inner.executions.paused).remove(id);
        let Some(paused) = taken else {
            return self
                .inner
                .executions
                .replay(id)
                .map(ExecutionOutcome::Completed)
                .ok_or_else(|| EngineError::ExecutionNotFound {
                    execution_id: id.to_owned(),
                });
        };
        let _ = paused.current.respond.send((action, content));
        self.next_event(paused.events, Some(id.to_owned())).await
    }
}

const RESUME_INSTRUCTIONS: &str = "Show the user the message above and ask them to approve or decline. \
Then resume the execution with its executionId and action \"accept\", \"decline\" or \"cancel\" \
(HTTP: POST /api/executions/<executionId>/resume; MCP: the resume tool).";

fn paused_view(id: &str, request: &PauseRequest) -> Paused {
    let schema = json!({"type": "object", "properties": {}});
    let text = format!(
        "Execution paused: {}\nThe tool needs a decision from the user before it runs.\nRequested schema:\n{}\nexecutionId: {id}\ninstructions: {RESUME_INSTRUCTIONS}",
        request.message,
        serde_json::to_string_pretty(&schema).unwrap_or_default(),
    );
    let structured = json!({
        "status": "waiting_for_interaction",
        "executionId": id,
        "interaction": {
            "kind": "form",
            "message": request.message,
            "instructions": RESUME_INSTRUCTIONS,
            "address": request.address,
            "args": request.args,
            "requestedSchema": schema,
        }
    });
    Paused {
        execution_id: id.to_owned(),
        text,
        structured,
    }
}
