//! Executions: run code in the sandbox, race "finished" against "first pause", and resume
//! paused executions. Pauses are queued: concurrent gated calls pause one after another.
//!
//! Every execution is journaled (`journal.rs`) and saved in the store when it pauses and when it
//! settles. A pause that is still live in this process is resumed in place; one that survived a
//! restart is resumed by re-running its code against its journal. Resuming is idempotent: a
//! settled execution answers with its stored outcome, and concurrent resumes of one execution
//! share one answer. Pauses expire after the configured TTL.
//!
//! A pause is an approval (a gated call) or an elicitation a downstream MCP server sent while it
//! ran one of the execution's calls (form or URL mode); both are answered the same way, the form
//! content of an elicitation going back to its server.
//!
//! Durable executions (`journal.rs`, `executions/`): every host call is journaled in issue order.
//! An execution is written to the store when it first pauses (row + journal, one transaction) and
//! once when it settles (a `return 1` costs one insert, after its answer); while a saved execution
//! is paused or resumed its calls are written through. A pause live in this process is resumed in
//! place; one that survived a restart is resumed by re-running the code with the same seed and
//! clock values, answering journaled calls from the journal, giving the decision to the call that
//! paused and running later calls live (a call the journal does not have before the pause point
//! fails the execution). A pause is an approval or a downstream MCP elicitation (`elicitation.rs`:
//! the call's `Elicitor` pauses the execution; accept + form content / decline / cancel go back to
//! the server; under `autoApprove` only a form with no properties is accepted inline). Each call
//! keeps every answer it got (`pause.answers`, with form content), so a call re-run by a replay is
//! not asked again: its approval and its server's repeated elicitations are answered from there. At
//! shutdown, calls of paused executions that are running (not waiting for a person) get up to 5 s
//! to finish and be journaled, and calls issued meanwhile are held, before the executions are
//! abandoned; so a call that reached its tool is not sent again after the restart. Each pause also
//! records the execution's downstream sessions (`pending.sessions`: `executor_mcp::SessionRecord`,
//! the label, transport, `Mcp-Session-Id`, protocol version and the server's `initialize` answer).
//! At shutdown a paused execution's remote sessions are closed without DELETE
//! (`ExecutionScope::preserve`), and a resume after the restart reattaches to them
//! (`ExecutionScope::reattach_to`, `executor-mcp` `reattach.rs`: the transport's HTTP client
//! answers rmcp's handshake from the record, rmcp's re-initialisation off), so the calls after the
//! resume see the state the earlier ones set. A session the server forgot (404), a stdio child (it
//! died with us) or a legacy SSE stream cannot come back: every later call of that connection in
//! the execution answers `upstream_session_lost`, never a fresh session. Resume is idempotent
//! (settled → stored outcome; concurrent resumes share one answer), and answers only the policy
//! source the execution ran under (`/mcp` or one toolkit's endpoint; a settled row, which keeps no
//! source, only the global one); pauses expire after `pause_ttl`
//! (a background sweep; resume then answers with an `expired` error outcome); settled rows are
//! purged after `history_retention`.

pub(crate) mod call_limits;
pub(crate) mod dispatch;
pub(crate) mod elicitation;
pub(crate) mod feed;
pub(crate) mod history;
pub(crate) mod journal;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_core::{Completed, format_completed, now_ms};
use executor_sandbox::{RunOptions, Slot};
use executor_store::{
    ExecutionCallRecord, ExecutionFilter, ExecutionRecord, ExecutionStatus, ExecutionSummary, Scope,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use self::dispatch::{ExecutionCtx, ExecutionHost};
use self::journal::{Event, Journal, PauseSink};
use crate::caller::{Caller, PolicySource};
use crate::error::{EngineError, EngineResult};
use crate::{Engine, Inner};

/// Settled outcomes remembered so that a repeated resume replays the same answer.
const SETTLED_KEEP: usize = 64;
/// At shutdown, how long paused executions may take to finish (and journal) the calls they have
/// running, so that none of them is sent again after the restart.
pub(crate) const SHUTDOWN_CALL_GRACE: Duration = Duration::from_secs(5);
/// Most executions one history page returns.
pub const MAX_HISTORY_PAGE: u32 = 500;
/// How often settled executions older than the retention are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(600);

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

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
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

/// What a pause asks of a person.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PauseKind {
    /// A gated call: may it run?
    Approval,
    /// A downstream MCP server asks for a form (`requestedSchema`) while it runs the call.
    Form { requested_schema: Value },
    /// A downstream MCP server sends the person to a URL while it runs the call.
    Url { url: String },
}

impl PauseKind {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            PauseKind::Approval => "approval",
            PauseKind::Form { .. } => "form",
            PauseKind::Url { .. } => "url",
        }
    }

    /// From a stored pending interaction (journals that predate elicitations: an approval).
    fn from_pending(pending: &Value) -> Self {
        match pending.get("kind").and_then(Value::as_str) {
            Some("form") => PauseKind::Form {
                requested_schema: pending
                    .get("requestedSchema")
                    .cloned()
                    .unwrap_or_else(empty_schema),
            },
            Some("url") => PauseKind::Url {
                url: pending
                    .get("url")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            },
            _ => PauseKind::Approval,
        }
    }
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// What a gated tool call (or its server's elicitation) asks of a person.
pub(crate) struct PauseRequest {
    pub(crate) message: String,
    pub(crate) address: String,
    pub(crate) args: Value,
    pub(crate) kind: PauseKind,
    pub(crate) respond: oneshot::Sender<(ResumeAction, Option<Value>)>,
}

pub(crate) enum ExecEvent {
    Paused(PauseRequest),
    Done(Completed),
}

/// An execution whose code is running (or waiting) on the sandbox pool.
struct Live {
    events: mpsc::UnboundedReceiver<Event>,
    journal: Arc<Journal>,
    task: AbortHandle,
    /// Its downstream sessions (recorded with each pause; kept open at shutdown). Weak: the
    /// execution's calls own them.
    scope: std::sync::Weak<executor_mcp::ExecutionScope>,
}

struct PausedExecution {
    live: Live,
    current: PauseRequest,
    /// Journal seq of the call that paused.
    seq: Option<i64>,
    expires_at: i64,
}

impl PausedExecution {
    /// Stops the execution without settling it: nothing more is written, the code is dropped.
    fn abandon(self) {
        self.live.journal.detach();
        self.live.task.abort();
    }
}

/// A resume's answer, shared with concurrent resumes of the same execution.
type Shared = Option<Result<ExecutionOutcome, SharedError>>;

#[derive(Debug, Clone)]
enum SharedError {
    NotFound(String),
    Other(String),
}

impl From<&EngineError> for SharedError {
    fn from(e: &EngineError) -> Self {
        match e {
            EngineError::ExecutionNotFound { execution_id } => {
                SharedError::NotFound(execution_id.clone())
            }
            other => SharedError::Other(other.to_string()),
        }
    }
}

impl From<SharedError> for EngineError {
    fn from(e: SharedError) -> Self {
        match e {
            SharedError::NotFound(execution_id) => EngineError::ExecutionNotFound { execution_id },
            SharedError::Other(message) => EngineError::Internal(message),
        }
    }
}

/// A resume in flight: the scope and policy source of its execution, and where its answer comes.
type Resuming = (Scope, PolicySource, watch::Receiver<Shared>);

#[derive(Default)]
pub(crate) struct Registry {
    paused: Mutex<HashMap<String, PausedExecution>>,
    /// Recently settled saved executions, with the scope and policy source they ran under.
    settled: Mutex<VecDeque<(String, Scope, PolicySource, Completed)>>,
    /// Resumes in flight, with the scope and policy source of their execution.
    resuming: Mutex<HashMap<String, Resuming>>,
    /// Executions left `running` by a previous process are failed once, before this process
    /// writes `running` itself.
    recovered: tokio::sync::OnceCell<()>,
}

impl Registry {
    /// Abandons every live pause; their rows stay `paused` in the store, resumable after a
    /// restart. Calls of those executions that are running (not waiting for a person) get up
    /// to `grace` to finish and be journaled first, so the replay answers them from the
    /// journal instead of sending them again; calls the code issues meanwhile are held for the
    /// replay.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        let drained: Vec<PausedExecution> = lock(&self.paused).drain().map(|(_, p)| p).collect();
        for paused in &drained {
            paused.live.journal.close();
        }
        let deadline = tokio::time::Instant::now() + grace;
        for paused in &drained {
            if !paused.live.journal.quiesce(deadline).await {
                tracing::warn!(
                    execution_id = %paused.live.journal.id,
                    "a paused execution still had a call running at shutdown; it may run again after the restart"
                );
            }
        }
        for paused in drained {
            // Its downstream sessions stay open at their servers, to be reattached on resume.
            if let Some(scope) = paused.live.scope.upgrade() {
                scope.preserve();
            }
            paused.abandon();
        }
    }

    fn settle(&self, id: String, owner: &Caller, completed: Completed) {
        let mut settled = lock(&self.settled);
        if settled.len() >= SETTLED_KEEP {
            settled.pop_front();
        }
        settled.push_back((
            id,
            owner.scope().clone(),
            owner.policies().clone(),
            completed,
        ));
    }

    fn replay(&self, caller: &Caller, id: &str) -> Option<Completed> {
        lock(&self.settled)
            .iter()
            .find(|(k, scope, policies, _)| k == id && caller.may_answer(scope, policies))
            .map(|(_, _, _, c)| c.clone())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes a resume from the in-flight map when it ends (or its caller goes away).
struct ResumingGuard<'a> {
    registry: &'a Registry,
    id: &'a str,
}

impl Drop for ResumingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.registry.resuming).remove(self.id);
    }
}

/// Admission of new executions: as many run as the sandbox pool has slots; a bounded number wait
/// for one, each for a bounded time, and the rest are turned away at once
/// ([`EngineError::Busy`], HTTP 503 with `Retry-After`) rather than queue without end.
pub(crate) struct Admission {
    waiting: std::sync::atomic::AtomicUsize,
    max_waiting: usize,
    max_wait: Duration,
}

impl Admission {
    pub(crate) fn new(max_waiting: usize, max_wait: Duration) -> Self {
        Self {
            waiting: std::sync::atomic::AtomicUsize::new(0),
            max_waiting,
            max_wait,
        }
    }

    /// A slot of `pool` (its slots are the running limit: no second count of them here).
    async fn admit(&self, pool: &executor_sandbox::SandboxPool) -> EngineResult<Slot> {
        use std::sync::atomic::Ordering;
        if let Some(slot) = pool.try_slot() {
            return Ok(slot);
        }
        let busy = |waiting| EngineError::Busy {
            running: pool.slots(),
            waiting,
            retry_after_secs: 1,
        };
        let waiting = self.waiting.fetch_add(1, Ordering::AcqRel);
        struct Leave<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _leave = Leave(&self.waiting);
        if waiting >= self.max_waiting {
            return Err(busy(waiting));
        }
        match tokio::time::timeout(self.max_wait, pool.slot()).await {
            Ok(Some(slot)) => Ok(slot),
            _ => Err(busy(self.waiting.load(Ordering::Acquire).saturating_sub(1))),
        }
    }
}

/// Aborts an execution whose caller went away (its request future dropped) before it paused or
/// ended: its sandbox stops, and its upstream requests are dropped with it.
struct AbortUnlessAnswered(Option<AbortHandle>);

impl Drop for AbortUnlessAnswered {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// What the agent that asked for an execution lends it through its own MCP client.
#[derive(Clone, Default)]
pub struct AgentLink {
    /// Answers downstream `sampling/createMessage` (when the agent's client can sample).
    pub sampler: Option<Arc<dyn executor_mcp::Sampler>>,
    /// Hears the progress downstream servers report on the execution's calls (when the agent
    /// asked for progress).
    pub progress: Option<Arc<dyn ProgressSink>>,
}

/// Where the progress of an execution's downstream calls goes, as the servers reported it:
/// `progress` increases within one call, but calls start over, so the sink makes the series
/// it forwards monotonic itself.
pub trait ProgressSink: Send + Sync {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
}

impl Engine {
    /// Runs `code`. `auto_approve` means the caller is the approver: gated calls run inline.
    ///
    /// Dropping the returned future before it answers cancels the execution (a caller that
    /// disconnected); once it has paused, the pause lives on for a resume.
    pub async fn execute(
        &self,
        caller: &Caller,
        code: String,
        auto_approve: bool,
    ) -> EngineResult<ExecutionOutcome> {
        self.execute_for_agent(caller, code, auto_approve, AgentLink::default())
            .await
    }

    /// [`Self::execute`], lending the run what `agent` holds: its sampler answers the
    /// `sampling/createMessage` requests the downstream MCP servers send during its calls, its
    /// progress sink hears their progress. They serve the calls of this run in this process;
    /// after a restart nobody does.
    pub async fn execute_for_agent(
        &self,
        caller: &Caller,
        code: String,
        auto_approve: bool,
        agent: AgentLink,
    ) -> EngineResult<ExecutionOutcome> {
        self.execute_named(caller, code, auto_approve, agent)
            .await
            .map(|(_, outcome)| outcome)
    }

    /// [`Self::execute`], answering the execution's id with its outcome too (a settled one is
    /// in the history under it).
    pub async fn execute_identified(
        &self,
        caller: &Caller,
        code: String,
        auto_approve: bool,
    ) -> EngineResult<(String, ExecutionOutcome)> {
        self.execute_named(caller, code, auto_approve, AgentLink::default())
            .await
    }

    async fn execute_named(
        &self,
        caller: &Caller,
        code: String,
        auto_approve: bool,
        agent: AgentLink,
    ) -> EngineResult<(String, ExecutionOutcome)> {
        // No id for an execution whose history the database cannot take.
        self.inner.database.check()?;
        // Stale catalogs (a server said its tools changed, or the TTL ran out) are re-listed in
        // the background: an agent that only executes code would otherwise never see a change.
        self.refresh_stale_catalogs(caller);
        let admitted = self.inner.admission.admit(&self.inner.sandbox).await?;
        let id = format!("exec_{}", uuid::Uuid::now_v7());
        let journal = Journal::fresh(id.clone(), caller.clone(), code, auto_approve);
        let live = self.start_admitted(journal, Some(admitted), agent);
        let mut guard = AbortUnlessAnswered(Some(live.task.clone()));
        let outcome = self.next_event(live).await;
        guard.0 = None;
        outcome.map(|outcome| (id, outcome))
    }

    /// Starts the journal's code on the sandbox pool.
    fn start(&self, journal: Arc<Journal>) -> Live {
        self.start_admitted(journal, None, AgentLink::default())
    }

    /// [`Self::start`] in `admitted`, a slot of the sandbox pool taken at admission (else the
    /// run waits for one).
    fn start_admitted(
        &self,
        journal: Arc<Journal>,
        admitted: Option<Slot>,
        agent: AgentLink,
    ) -> Live {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        journal.publish(&self.inner, None);
        let scope = self.inner.mcp.scope();
        let caller_scope = journal.caller.scope();
        scope.reattach_to(
            journal
                .sessions
                .iter()
                .map(|r| crate::kinds::mcp::current_record(r.clone(), caller_scope)),
        );
        let mut ctx = ExecutionCtx::new(
            scope,
            journal.auto_approve,
            PauseSink::new(events_tx.clone(), journal.clone()),
            journal.clone(),
        );
        ctx.agent = agent;
        let ctx = Arc::new(ctx);
        let placement = self.inner.sandbox.place();
        let host = Arc::new(ExecutionHost {
            inner: self.inner.clone(),
            ctx: ctx.clone(),
            inline: placement.is_shared(),
        });
        let options = RunOptions {
            seed: journal.seed,
            time_origin_ms: Some(journal.started_at as f64),
        };
        let inner = self.inner.clone();
        let task_journal = journal.clone();
        let live_scope = ctx
            .mcp_scope()
            .map(|scope| Arc::downgrade(&scope))
            .unwrap_or_default();
        let task = self.inner.io.spawn(async move {
            let journal = task_journal;
            let output = match admitted {
                Some(slot) => {
                    inner
                        .sandbox
                        .run_in(slot, placement, &journal.code, host, options)
                        .await
                }
                None => {
                    inner
                        .sandbox
                        .run_placed(placement, &journal.code, host, options)
                        .await
                }
            };
            ctx.finish().await;
            let completed = format_completed(journal.finish_output(output));
            // Durable before it is answered when it paused (someone may resume it again);
            // otherwise queued for the history writer, which is immediate.
            journal.persist_finish(&inner, &completed).await;
            let _ = events_tx.send((None, ExecEvent::Done(completed)));
            release_after_heavy_traffic(&inner);
        });
        Live {
            events: events_rx,
            journal,
            task: task.abort_handle(),
            scope: live_scope,
        }
    }

    async fn next_event(&self, mut live: Live) -> EngineResult<ExecutionOutcome> {
        let id = live.journal.id.clone();
        match live.events.recv().await {
            Some((_, ExecEvent::Done(completed))) => {
                if live.journal.is_persisted() {
                    self.inner
                        .executions
                        .settle(id, &live.journal.caller, completed.clone());
                }
                Ok(ExecutionOutcome::Completed(completed))
            }
            Some((seq, ExecEvent::Paused(request))) => {
                let expires_at = now_ms().saturating_add(ttl_ms(self.inner.pause_ttl));
                let sessions = live
                    .scope
                    .upgrade()
                    .map(|scope| scope.records())
                    .unwrap_or_default();
                live.journal
                    .persist_pause(&self.inner, seq, &request, expires_at, &sessions)
                    .await;
                let deadline = Deadline {
                    expires_at,
                    ttl: self.inner.pause_ttl,
                };
                let paused = paused_view(
                    &id,
                    &request.message,
                    &request.address,
                    &request.args,
                    &request.kind,
                    deadline,
                );
                lock(&self.inner.executions.paused).insert(
                    id,
                    PausedExecution {
                        live,
                        current: request,
                        seq,
                        expires_at,
                    },
                );
                Ok(ExecutionOutcome::Paused(paused))
            }
            None => Err(EngineError::Internal(
                "execution ended without an outcome".to_owned(),
            )),
        }
    }

    /// The pending interaction of a paused execution (live, or saved before a restart).
    pub async fn paused_execution(&self, caller: &Caller, id: &str) -> EngineResult<Paused> {
        let not_found = || EngineError::ExecutionNotFound {
            execution_id: id.to_owned(),
        };
        let now = now_ms();
        {
            let paused = lock(&self.inner.executions.paused);
            if let Some(p) = paused.get(id) {
                return if p.expires_at > now && answers(caller, &p.live.journal.caller) {
                    let deadline = Deadline {
                        expires_at: p.expires_at,
                        ttl: self.inner.pause_ttl,
                    };
                    Ok(paused_view(
                        id,
                        &p.current.message,
                        &p.current.address,
                        &p.current.args,
                        &p.current.kind,
                        deadline,
                    ))
                } else {
                    Err(not_found())
                };
            }
        }
        let Some(rec) = self
            .inner
            .store
            .get_execution(caller.scope(), id)
            .await?
            .filter(|rec| row_answers(caller, rec))
        else {
            return Err(not_found());
        };
        match (&rec.status, &rec.pending, rec.expires_at) {
            (ExecutionStatus::Paused, Some(pending), Some(expires_at)) if expires_at > now => {
                let deadline = Deadline {
                    expires_at,
                    ttl: self.inner.pause_ttl,
                };
                Ok(stored_paused_view(id, pending, deadline))
            }
            _ => Err(not_found()),
        }
    }

    /// Answers the pending interaction and waits for the next pause or the end.
    ///
    /// Idempotent: a settled execution answers with its stored outcome; a resume of an execution
    /// that is already being resumed waits for and returns that resume's answer.
    pub async fn resume(
        &self,
        caller: &Caller,
        id: &str,
        action: ResumeAction,
        content: Option<Value>,
    ) -> EngineResult<ExecutionOutcome> {
        let registry = &self.inner.executions;
        let joined = {
            let mut resuming = lock(&registry.resuming);
            match resuming.get(id) {
                Some((scope, policies, _)) if !caller.may_answer(scope, policies) => {
                    return Err(EngineError::ExecutionNotFound {
                        execution_id: id.to_owned(),
                    });
                }
                Some((_, _, rx)) => Err(rx.clone()),
                None => {
                    let (tx, rx) = watch::channel(None);
                    resuming.insert(
                        id.to_owned(),
                        (caller.scope().clone(), caller.policies().clone(), rx),
                    );
                    Ok(tx)
                }
            }
        };
        let tx = match joined {
            Ok(tx) => tx,
            Err(mut rx) => {
                // Another resume of this execution is in flight: its answer is ours.
                if let Ok(answer) = rx.wait_for(Option::is_some).await
                    && let Some(answer) = answer.clone()
                {
                    return answer.map_err(EngineError::from);
                }
                // It went away without an answer: look again.
                return Box::pin(self.resume(caller, id, action, content)).await;
            }
        };
        let guard = ResumingGuard { registry, id };
        let result = self.resume_once(caller, id, action, content).await;
        // Who decided a paused call: the approver of the tool call the log shows next.
        if result.is_ok() {
            self.audit(
                caller,
                crate::AuditEntry::change("execution.resume", id)
                    .after(Some(serde_json::json!({ "action": action.as_str() }))),
            );
        }
        let shared = match &result {
            Ok(outcome) => Ok(outcome.clone()),
            Err(e) => Err(SharedError::from(e)),
        };
        let _ = tx.send(Some(shared));
        drop(guard);
        result
    }

    async fn resume_once(
        &self,
        caller: &Caller,
        id: &str,
        action: ResumeAction,
        content: Option<Value>,
    ) -> EngineResult<ExecutionOutcome> {
        self.recover().await;
        let now = now_ms();
        let taken = {
            let mut paused = lock(&self.inner.executions.paused);
            match paused.get(id) {
                Some(p) if answers(caller, &p.live.journal.caller) => paused.remove(id),
                _ => None,
            }
        };
        if let Some(paused) = taken {
            if paused.expires_at <= now {
                paused.abandon();
                self.sweep_expired(now).await;
                return Ok(ExecutionOutcome::Completed(self.expired_outcome()));
            }
            // Of replicas sharing the database, another may have resumed this pause from its
            // journal: the live copy runs only if the store's claim is ours.
            if self.shares_database()
                && !self
                    .inner
                    .store
                    .claim_paused_execution(paused.live.journal.caller.scope(), id, now)
                    .await?
            {
                paused.abandon();
                return self.resume_stored(caller, id, action, content, now).await;
            }
            paused
                .live
                .journal
                .persist_running(
                    &self.inner,
                    paused.seq,
                    &paused.current.kind,
                    action,
                    content.as_ref(),
                )
                .await;
            let _ = paused.current.respond.send((action, content));
            return self.next_event(paused.live).await;
        }
        if let Some(completed) = self.inner.executions.replay(caller, id) {
            return Ok(ExecutionOutcome::Completed(completed));
        }
        self.resume_stored(caller, id, action, content, now).await
    }

    /// Resumes an execution known only to the store (it paused before a restart), or answers
    /// with its stored outcome.
    async fn resume_stored(
        &self,
        caller: &Caller,
        id: &str,
        action: ResumeAction,
        content: Option<Value>,
        now: i64,
    ) -> EngineResult<ExecutionOutcome> {
        let not_found = || EngineError::ExecutionNotFound {
            execution_id: id.to_owned(),
        };
        let store = &self.inner.store;
        let Some(rec) = store
            .get_execution(caller.scope(), id)
            .await?
            .filter(|rec| row_answers(caller, rec))
        else {
            return Err(not_found());
        };
        match rec.status {
            status if status.is_settled() => {
                let outcome = rec
                    .outcome
                    .as_ref()
                    .and_then(journal::completed_from_json)
                    .unwrap_or_else(|| self.expired_outcome());
                Ok(ExecutionOutcome::Completed(outcome))
            }
            // Of replicas sharing the database, another is resuming it: its outcome is ours.
            ExecutionStatus::Running if self.shares_database() => {
                self.outcome_of_other_replica(caller, id).await
            }
            // Not being resumed here (that would have been joined above): left behind by a
            // process that stopped while resuming it.
            ExecutionStatus::Running => Ok(ExecutionOutcome::Completed(interrupted_outcome())),
            _ if rec.expires_at.is_some_and(|at| at <= now) => {
                self.sweep_expired(now).await;
                Ok(ExecutionOutcome::Completed(self.expired_outcome()))
            }
            _ => {
                if !store
                    .claim_paused_execution(caller.scope(), id, now)
                    .await?
                {
                    // Another replica claimed it between our read and our claim.
                    if self.shares_database() {
                        return self.outcome_of_other_replica(caller, id).await;
                    }
                    return Err(not_found());
                }
                let calls = store.execution_calls(id).await?;
                tracing::info!(execution_id = %id, calls = calls.len(), action = action.as_str(), "resuming a saved execution by replay");
                let journal = Journal::restored(caller.clone(), rec, calls, action, content);
                let live = self.start(journal);
                self.next_event(live).await
            }
        }
    }

    /// Recent executions, newest first, those `filter` lets through.
    pub async fn list_executions(
        &self,
        caller: &Caller,
        filter: &ExecutionFilter,
        limit: u32,
        offset: u32,
    ) -> EngineResult<Vec<ExecutionSummary>> {
        // Executions that settled just now are still with the history writer.
        self.inner.history.flush().await;
        Ok(self
            .inner
            .store
            .list_executions(caller.scope(), filter, limit.min(MAX_HISTORY_PAGE), offset)
            .await?)
    }

    /// One of the caller's executions as recorded: its code, status, outcome and the journal
    /// of its tool calls (arguments redacted). An execution that is running and never paused
    /// is not recorded yet.
    pub async fn execution_record(
        &self,
        caller: &Caller,
        id: &str,
    ) -> EngineResult<(ExecutionRecord, Vec<ExecutionCallRecord>)> {
        self.inner.history.flush().await;
        let Some(record) = self.inner.store.get_execution(caller.scope(), id).await? else {
            return Err(EngineError::ExecutionNotFound {
                execution_id: id.to_owned(),
            });
        };
        let calls = self.inner.store.execution_calls(id).await?;
        Ok((record, calls))
    }

    /// Every start, pause, resume and settle of the caller's executions from now on.
    pub fn watch_executions(&self, caller: &Caller) -> feed::ExecutionWatch {
        self.inner.feed.watch(caller)
    }

    /// Fails executions a previous process left `running` (once per engine). Replicas of a
    /// shared database leave that to the leader's sweep.
    async fn recover(&self) {
        if !self.shares_database() {
            recover(&self.inner).await;
        }
    }

    /// Waits for the replica resuming `id` to settle it or pause it again, and answers that,
    /// so two callers resuming one pause on two replicas hear the same outcome.
    async fn outcome_of_other_replica(
        &self,
        caller: &Caller,
        id: &str,
    ) -> EngineResult<ExecutionOutcome> {
        let deadline = tokio::time::Instant::now() + STALE_RUNNING;
        loop {
            tokio::time::sleep(OTHER_REPLICA_POLL).await;
            let Some(rec) = self.inner.store.get_execution(caller.scope(), id).await? else {
                return Err(EngineError::ExecutionNotFound {
                    execution_id: id.to_owned(),
                });
            };
            match rec.status {
                status if status.is_settled() => {
                    return Ok(ExecutionOutcome::Completed(
                        rec.outcome
                            .as_ref()
                            .and_then(journal::completed_from_json)
                            .unwrap_or_else(|| self.expired_outcome()),
                    ));
                }
                ExecutionStatus::Paused => {
                    return Ok(ExecutionOutcome::Paused(
                        self.paused_execution(caller, id).await?,
                    ));
                }
                _ if tokio::time::Instant::now() >= deadline => {
                    return Ok(ExecutionOutcome::Completed(interrupted_outcome()));
                }
                _ => {}
            }
        }
    }

    /// Marks due pauses expired in the store and abandons their live executions.
    /// Called by a resume that found its pause due: the store's expiry is a conditional
    /// update, so any replica may run it now rather than wait for the leader.
    async fn sweep_expired(&self, now: i64) {
        sweep_expired(&self.inner, now, true).await;
    }

    fn expired_outcome(&self) -> Completed {
        expired_outcome(self.inner.pause_ttl)
    }
}

/// How long a `running` row of a shared database may go without an update before the leader
/// takes its replica for dead and fails it. A live resume settles (or pauses again) well within
/// it: its code runs under the execution timeout, and a person's answer pauses it again.
const STALE_RUNNING: Duration = Duration::from_secs(30 * 60);
/// How often a replica looks whether the one resuming an execution is done with it.
const OTHER_REPLICA_POLL: Duration = Duration::from_millis(20);

/// Fails executions a dead process left `running`. A database this process owns: every such
/// row, once per engine (they are the previous process's). A shared one: rows no replica has
/// touched for [`STALE_RUNNING`], at every sweep of the leader.
pub(crate) async fn recover(inner: &Inner) {
    let outcome = journal::completed_to_json(&interrupted_outcome());
    let fail = |updated_before: i64| {
        let outcome = &outcome;
        async move {
            match inner
                .store
                .fail_running_executions(now_ms(), updated_before, outcome)
                .await
            {
                Ok(0) => {}
                Ok(n) => tracing::warn!(
                    count = n,
                    "executions interrupted while resuming (a restart, or a replica gone) were marked failed"
                ),
                Err(e) => tracing::error!(error = %e, "could not recover interrupted executions"),
            }
        }
    };
    if inner.shares_database {
        fail(now_ms().saturating_sub(ttl_ms(STALE_RUNNING))).await;
    } else {
        inner
            .executions
            .recovered
            .get_or_init(|| fail(now_ms()))
            .await;
    }
}

/// Expires due pauses: in the store when `leads` (one process of the deployment does), and
/// this process's live ones always.
pub(crate) async fn sweep_expired(inner: &Inner, now: i64, leads: bool) {
    let outcome = journal::completed_to_json(&expired_outcome(inner.pause_ttl));
    let expired = if !leads {
        Vec::new()
    } else {
        match inner.store.expire_paused_executions(now, &outcome).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "could not expire paused executions");
                Vec::new()
            }
        }
    };
    let abandoned: Vec<PausedExecution> = {
        let mut paused = lock(&inner.executions.paused);
        let due: Vec<String> = paused
            .iter()
            .filter(|(id, p)| p.expires_at <= now || expired.contains(id))
            .map(|(id, _)| id.clone())
            .collect();
        due.iter().filter_map(|id| paused.remove(id)).collect()
    };
    if !expired.is_empty() || !abandoned.is_empty() {
        tracing::info!(
            stored = expired.len(),
            live = abandoned.len(),
            "paused executions expired"
        );
    }
    for paused in abandoned {
        paused.abandon();
    }
}

/// Scripts and the host moved this much since memory was last handed back: hand it back now.
const TRIM_AFTER_TRANSFER_BYTES: u64 = 2 * 1024 * 1024;

/// Hands the allocator's free pages back to the system (off the IO workers) once much data has
/// crossed the sandbox's door since the last time; the idle process then returns to its size.
fn release_after_heavy_traffic(inner: &Inner) {
    if let Some(release) = &inner.release_memory
        && executor_sandbox::take_transfer_over(TRIM_AFTER_TRANSFER_BYTES)
    {
        let release = release.clone();
        inner.io.spawn_blocking(move || (release.0)());
    }
}

/// The background sweep: expires pauses and purges old history. Holds the engine weakly, so it
/// ends when the engine is dropped.
pub(crate) fn spawn_sweeper(inner: &Arc<Inner>) {
    let weak = Arc::downgrade(inner);
    let every = (inner.pause_ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    inner.io.spawn(async move {
        let mut last_purge: Option<tokio::time::Instant> = None;
        loop {
            {
                let Some(inner) = weak.upgrade() else { return };
                // Of several replicas, one does the store's share; each expires its own.
                let leads = inner.store.lead_background().await;
                if leads {
                    recover(&inner).await;
                }
                let now = now_ms();
                sweep_expired(&inner, now, leads).await;
                if inner
                    .documents
                    .evict_idle_extractions(crate::kinds::COMPILED_SPEC_IDLE)
                {
                    tracing::debug!("compiled OpenAPI specs idle for a minute were dropped");
                    if let Some(release) = &inner.release_memory {
                        (release.0)();
                    }
                }
                if leads && last_purge.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
                    last_purge = Some(tokio::time::Instant::now());
                    let opened_before =
                        now.saturating_sub(ttl_ms(crate::agent_sessions::AGENT_SESSION_LIFETIME));
                    if let Err(e) = inner.store.delete_mcp_sessions_before(opened_before).await {
                        tracing::warn!(error = %e, "could not forget old agent sessions");
                    }
                    let before = now.saturating_sub(ttl_ms(inner.history_retention));
                    match inner.store.delete_settled_executions(before).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(count = n, "old executions deleted"),
                        Err(e) => tracing::warn!(error = %e, "could not delete old executions"),
                    }
                }
            }
            tokio::time::sleep(every).await;
        }
    });
}

/// Whether `caller` may answer the live execution `owner` runs (its scope and policy source).
fn answers(caller: &Caller, owner: &Caller) -> bool {
    caller.may_answer(owner.scope(), owner.policies())
}

/// Whether `caller` (whose scope the store matched) may answer the saved execution `rec`: a
/// paused row keeps its policy source with its pending interaction; a row that keeps none (a
/// settled one, or a pause of an older build) answers only the global source, so a toolkit's
/// agent never reads an outcome it cannot tell was made under its toolkit.
fn row_answers(caller: &Caller, rec: &ExecutionRecord) -> bool {
    let kept = Caller::recorded_policies(rec.pending.as_ref().and_then(|p| p.get("caller")))
        .unwrap_or(PolicySource::Global);
    *caller.policies() == kept
}

fn ttl_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn error_outcome(message: &str, extra: Value) -> Completed {
    let mut structured = json!({"status": "error", "error": message, "logs": []});
    if let (Value::Object(s), Value::Object(extra)) = (&mut structured, extra) {
        s.extend(extra);
    }
    Completed {
        text: format!("Error: {message}"),
        structured,
        is_error: true,
        content: Vec::new(),
    }
}

pub(crate) fn expired_outcome(ttl: Duration) -> Completed {
    let message = format!(
        "This execution expired: nobody answered its approval within {}, so it was abandoned and did not continue. Run the code again to retry.",
        human_duration(ttl)
    );
    error_outcome(&message, json!({"expired": true}))
}

fn interrupted_outcome() -> Completed {
    error_outcome(
        "This execution was interrupted: the server stopped while it was running after a resume. It did not finish; check what it did and run the code again if needed.",
        json!({"interrupted": true}),
    )
}

fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 && secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs >= 60 && secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else if secs >= 1 && d.subsec_millis() == 0 {
        format!("{secs}s")
    } else {
        format!("{}ms", d.as_millis())
    }
}

const RESUME_INSTRUCTIONS: &str = "Show the user the message above and ask them to approve or decline. \
Then resume the execution with its executionId and action \"accept\", \"decline\" or \"cancel\" \
(HTTP: POST /api/executions/<executionId>/resume; MCP: the resume tool).";

const FORM_INSTRUCTIONS: &str = "Show the user the message above and ask them for the values the requested schema describes. \
Then resume the execution with its executionId, action \"accept\" and content: an object that matches the requested schema \
(or action \"decline\" or \"cancel\" if they do not want to answer). \
HTTP: POST /api/executions/<executionId>/resume with {\"action\", \"content\"}; MCP: the resume tool, content as a JSON-encoded object.";

const URL_INSTRUCTIONS: &str = "Ask the user to open the URL above in a browser and finish there. \
Then resume the execution with its executionId and action \"accept\" once they did, or \"decline\" or \"cancel\" \
(HTTP: POST /api/executions/<executionId>/resume; MCP: the resume tool).";

/// When a pause expires, shown with it (spec §4.6 `expiresAt` / `ttlMs` / `resumeDeadline`).
#[derive(Debug, Clone, Copy)]
struct Deadline {
    expires_at: i64,
    ttl: Duration,
}

fn stored_paused_view(id: &str, pending: &Value, deadline: Deadline) -> Paused {
    let text = |key: &str| {
        pending
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    paused_view(
        id,
        &text("message"),
        &text("address"),
        pending.get("args").unwrap_or(&Value::Null),
        &PauseKind::from_pending(pending),
        deadline,
    )
}

/// The view of a pause (spec §4.6); arguments are shown redacted (the stored pending holds them
/// redacted, so a live pause and the same pause read back after a restart look the same).
fn paused_view(
    id: &str,
    message: &str,
    address: &str,
    args: &Value,
    kind: &PauseKind,
    deadline: Deadline,
) -> Paused {
    let (middle, instructions) = match kind {
        PauseKind::Approval => (
            format!(
                "The tool needs a decision from the user before it runs.\nRequested schema:\n{}",
                serde_json::to_string_pretty(&empty_schema()).unwrap_or_default()
            ),
            RESUME_INSTRUCTIONS,
        ),
        PauseKind::Form { requested_schema } => (
            format!(
                "The tool asks the user for the information below; ask them, then resume with their answer as content.\nRequested schema:\n{}",
                serde_json::to_string_pretty(requested_schema).unwrap_or_default()
            ),
            FORM_INSTRUCTIONS,
        ),
        PauseKind::Url { url } => (
            format!(
                "Open this URL in a browser:\n{url}\nWhen the user finished there, resume with action \"accept\" (or \"decline\" / \"cancel\")."
            ),
            URL_INSTRUCTIONS,
        ),
    };
    let text = format!(
        "Execution paused: {message}\n{middle}\nexecutionId: {id}\nresumeDeadline: {}\ninstructions: {instructions}",
        iso_utc(deadline.expires_at),
    );
    let mut interaction = json!({
        "kind": if matches!(kind, PauseKind::Url { .. }) { "url" } else { "form" },
        "message": message,
        "instructions": instructions,
        "address": address,
        "args": journal::redact_args(address, args),
    });
    match kind {
        PauseKind::Approval => interaction["requestedSchema"] = empty_schema(),
        PauseKind::Form { requested_schema } => {
            interaction["requestedSchema"] = requested_schema.clone();
        }
        PauseKind::Url { url } => interaction["url"] = json!(url),
    }
    let structured = json!({
        "status": "waiting_for_interaction",
        "executionId": id,
        "expiresAt": deadline.expires_at,
        "ttlMs": ttl_ms(deadline.ttl),
        "interaction": interaction,
    });
    Paused {
        execution_id: id.to_owned(),
        text,
        structured,
    }
}

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn iso_utc(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso_utc(1_767_225_599_999), "2025-12-31T23:59:59.999Z");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(86_400)), "24h");
        assert_eq!(human_duration(Duration::from_secs(90)), "90s");
        assert_eq!(human_duration(Duration::from_millis(400)), "400ms");
    }
}
