//! The journal of one execution: every host call in issue order (arguments redacted, the reply
//! the sandbox got), every clock value handed to the code, and the execution's row in the store.
//!
//! Writes are lazy so that the common case stays cheap: nothing is written while an execution
//! runs; it is saved when it first pauses (row + journal in one transaction) and once more when
//! it settles. Between those, i.e. while a saved execution is paused or resumed, each call is
//! written through as it is issued and as it completes, so a restart loses none of them.
//!
//! Replay: a paused execution restored from the store re-runs its code with the same seed,
//! `performance` origin and clock values; each call that matches a journaled one (same path and
//! argument hash) is answered from the journal without being invoked, the call that paused gets
//! the person's decision, and calls beyond the journal run live. A call that matches nothing
//! before the pause point is reached means the code took another path: the execution fails.
//!
//! A call can pause more than once (its approval, then each elicitation its MCP server sends while
//! it runs). Every answer is kept with the call (`pause.answers`: kind, decision, form content),
//! so a call that runs again on a replay (it had not finished) is not asked again: its approval
//! and its server's repeated elicitations are answered from there, in order, per kind.
//!
//! Shutdown: a paused execution is abandoned only once its calls that are not waiting for a
//! person have finished and been journaled ([`Journal::close`], [`Journal::quiesce`]), so a call
//! that already reached its tool is never sent again after the restart.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use executor_core::{Completed, RunOutput, now_ms};
use executor_sandbox::HostReply;
use executor_store::{ExecutionCallRecord, ExecutionRecord, ExecutionStatus, ExecutionSummary};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::dispatch::ExecutionCtx;
use super::{ExecEvent, PauseKind, PauseRequest, ResumeAction};
use crate::Inner;
use crate::caller::Caller;
use crate::error::is_secret_key;

/// What a masked value is replaced with.
pub(crate) const REDACTED: &str = "[REDACTED]";

tokio::task_local! {
    /// The journaled call a dispatch belongs to (read where the dispatcher pauses).
    static CALL: CallMeta;
}

/// One answered pause of a call, kept in its journal entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// `approval`, `form` or `url` ([`PauseKind::name`]).
    kind: String,
    action: ResumeAction,
    content: Option<Value>,
}

impl Answer {
    fn to_json(&self) -> Value {
        let mut v = json!({"kind": self.kind, "decision": self.action.as_str()});
        if let Some(content) = &self.content {
            v["content"] = content.clone();
        }
        v
    }

    fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            kind: v.get("kind")?.as_str()?.to_owned(),
            action: ResumeAction::parse(v.get("decision")?.as_str()?)?,
            content: v.get("content").cloned(),
        })
    }
}

/// The answers a call already got before a restart (`pause.answers`; older journals only have
/// the `decision` of an approval).
fn stored_answers(pause: Option<&Value>) -> VecDeque<Answer> {
    let Some(pause) = pause else {
        return VecDeque::new();
    };
    match pause.get("answers").and_then(Value::as_array) {
        Some(answers) => answers.iter().filter_map(Answer::from_json).collect(),
        None => pause
            .get("decision")
            .and_then(Value::as_str)
            .and_then(ResumeAction::parse)
            .map(|action| Answer {
                kind: PauseKind::Approval.name().to_owned(),
                action,
                content: None,
            })
            .into_iter()
            .collect(),
    }
}

/// The journaled call a dispatch (or an elicitation of its MCP server) belongs to.
#[derive(Debug, Clone)]
pub(crate) struct CallMeta {
    seq: i64,
    /// Answers given before a restart, not yet used by this run: its pauses take them, by kind
    /// and in order, instead of asking again.
    answers: Arc<Mutex<VecDeque<Answer>>>,
}

impl CallMeta {
    fn take_answer(&self, kind: &str) -> Option<Answer> {
        let mut answers = lock(&self.answers);
        let at = answers.iter().position(|a| a.kind == kind)?;
        answers.remove(at)
    }
}

/// The call the current task runs for, if any.
pub(crate) fn current_call() -> Option<CallMeta> {
    CALL.try_with(Clone::clone).ok()
}

/// An event on an execution's channel, with the journal seq of the call that paused.
pub(crate) type Event = (Option<i64>, ExecEvent);

/// Where the dispatcher sends a pause. A pause a call already had answered before a restart is
/// answered here at once instead of pausing again.
#[derive(Clone)]
pub(crate) struct PauseSink {
    tx: mpsc::UnboundedSender<Event>,
    journal: Arc<Journal>,
}

impl PauseSink {
    pub(crate) fn new(tx: mpsc::UnboundedSender<Event>, journal: Arc<Journal>) -> Self {
        Self { tx, journal }
    }

    /// A pause of the call the current task runs for.
    pub(crate) fn send(&self, event: ExecEvent) -> Result<(), ()> {
        self.send_as(current_call().as_ref(), event)
    }

    /// A pause of call `meta` (elicitations arrive on the MCP session's task, not the call's).
    pub(crate) fn send_as(&self, meta: Option<&CallMeta>, event: ExecEvent) -> Result<(), ()> {
        match event {
            ExecEvent::Paused(request) => {
                if let Some(answer) = meta.and_then(|m| m.take_answer(request.kind.name())) {
                    let _ = request.respond.send((answer.action, answer.content));
                    return Ok(());
                }
                let seq = meta.map(|m| m.seq);
                if let Some(seq) = seq {
                    self.journal.waiting_on(seq, true);
                }
                self.tx
                    .send((seq, ExecEvent::Paused(request)))
                    .map_err(|_| ())
            }
            event => self.tx.send((meta.map(|m| m.seq), event)).map_err(|_| ()),
        }
    }
}

/// The replay state of an execution restored from the store.
struct Replay {
    /// Stored calls in seq order, with whether this run has matched them yet.
    entries: Vec<(ExecutionCallRecord, bool)>,
    pending_seq: Option<i64>,
    /// What the pending pause asked (`approval` for journals that predate elicitations).
    pending_kind: String,
    decision: ResumeAction,
    content: Option<Value>,
    pending_reached: bool,
}

struct State {
    calls: BTreeMap<i64, ExecutionCallRecord>,
    next_seq: i64,
    clock_replay: VecDeque<f64>,
    clock_log: Vec<f64>,
    /// The row exists in the store: every change is written through.
    persisted: bool,
    status: ExecutionStatus,
    pending: Option<Value>,
    expires_at: Option<i64>,
    replay: Option<Replay>,
    diverged: Option<String>,
    /// Calls running live, until their outcome is journaled.
    in_flight: BTreeSet<i64>,
    /// Calls waiting for a person's answer to one of their pauses.
    waiting: BTreeSet<i64>,
}

pub(crate) struct Journal {
    pub(crate) id: String,
    /// Who started the execution: its calls act for them, and only they may answer its pauses.
    pub(crate) caller: Caller,
    pub(crate) code: String,
    pub(crate) auto_approve: bool,
    pub(crate) seed: u64,
    /// Epoch ms; also `performance.timeOrigin` of the code.
    pub(crate) started_at: i64,
    /// The downstream sessions a restored execution comes back to (see `persist_pause`).
    pub(crate) sessions: Vec<executor_mcp::SessionRecord>,
    state: Mutex<State>,
    /// Serialises this execution's store writes, so a later snapshot never lands first.
    writes: tokio::sync::Mutex<()>,
    /// Shut down or expired: nothing more is written.
    detached: AtomicBool,
    /// Shutting down: calls issued from now on are held until the execution is abandoned.
    closing: AtomicBool,
    /// Becomes `true` when the execution is abandoned (held calls end).
    abandoned: tokio::sync::watch::Sender<bool>,
    /// Fires when a call ends or starts waiting for a person (see [`Journal::quiesce`]).
    settled: tokio::sync::Notify,
    /// Log messages the execution's downstream servers sent during its calls.
    upstream_logs: Mutex<UpstreamLogs>,
}

/// At most this many upstream log lines, and bytes of them, per execution; the rest are
/// counted in one closing line.
const MAX_UPSTREAM_LOG_LINES: usize = 1_000;
const MAX_UPSTREAM_LOG_BYTES: usize = 64 * 1024;

#[derive(Default)]
struct UpstreamLogs {
    lines: Vec<String>,
    bytes: usize,
    dropped: usize,
}

/// How one call is answered.
enum Plan {
    /// Runs; its pauses take these answers first (given before a restart).
    Live {
        answers: VecDeque<Answer>,
    },
    Replayed(HostReply),
    Refused(String),
    Diverged(String),
}

impl Plan {
    fn live() -> Self {
        Plan::Live {
            answers: VecDeque::new(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Journal {
    pub(crate) fn fresh(id: String, caller: Caller, code: String, auto_approve: bool) -> Arc<Self> {
        Arc::new(Self {
            id,
            caller,
            code,
            auto_approve,
            seed: rand::random(),
            started_at: now_ms(),
            sessions: Vec::new(),
            state: Mutex::new(State {
                calls: BTreeMap::new(),
                next_seq: 0,
                clock_replay: VecDeque::new(),
                clock_log: Vec::new(),
                persisted: false,
                status: ExecutionStatus::Running,
                pending: None,
                expires_at: None,
                replay: None,
                diverged: None,
                in_flight: BTreeSet::new(),
                waiting: BTreeSet::new(),
            }),
            writes: tokio::sync::Mutex::new(()),
            detached: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            abandoned: tokio::sync::watch::channel(false).0,
            settled: tokio::sync::Notify::new(),
            upstream_logs: Mutex::default(),
        })
    }

    /// A paused execution read back from the store, to be re-run with `decision` (and the form
    /// `content` of an elicitation) for its pause.
    pub(crate) fn restored(
        caller: Caller,
        rec: ExecutionRecord,
        calls: Vec<ExecutionCallRecord>,
        decision: ResumeAction,
        content: Option<Value>,
    ) -> Arc<Self> {
        // The calls replay as the caller that paused them (principal, policy source); the
        // resuming caller's scope was checked to be the same.
        let caller = caller.with_recorded(rec.pending.as_ref().and_then(|p| p.get("caller")));
        let pending_seq = rec
            .pending
            .as_ref()
            .and_then(|p| p.get("seq"))
            .and_then(Value::as_i64);
        let pending_kind = rec
            .pending
            .as_ref()
            .and_then(|p| p.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or(PauseKind::Approval.name())
            .to_owned();
        let clock_replay = rec
            .clock
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let next_seq = calls.iter().map(|c| c.seq + 1).max().unwrap_or(0);
        let sessions = rec
            .pending
            .as_ref()
            .and_then(|p| p.get("sessions"))
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default();
        let mut stored = BTreeMap::new();
        for call in &calls {
            stored.insert(call.seq, call.clone());
        }
        Arc::new(Self {
            id: rec.id,
            caller,
            code: rec.code,
            auto_approve: rec.auto_approve,
            seed: rec.seed,
            started_at: rec.started_at,
            sessions,
            state: Mutex::new(State {
                calls: stored,
                next_seq,
                clock_replay,
                clock_log: Vec::new(),
                persisted: true,
                status: ExecutionStatus::Running,
                pending: None,
                expires_at: None,
                replay: Some(Replay {
                    entries: calls.into_iter().map(|c| (c, false)).collect(),
                    pending_seq,
                    pending_kind,
                    decision,
                    content,
                    pending_reached: false,
                }),
                diverged: None,
                in_flight: BTreeSet::new(),
                waiting: BTreeSet::new(),
            }),
            writes: tokio::sync::Mutex::new(()),
            detached: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            abandoned: tokio::sync::watch::channel(false).0,
            settled: tokio::sync::Notify::new(),
            upstream_logs: Mutex::default(),
        })
    }

    /// The clock the code reads: journaled values first (on a replay), then the system clock.
    pub(crate) fn clock(&self) -> f64 {
        let mut st = lock(&self.state);
        let value = st
            .clock_replay
            .pop_front()
            .unwrap_or_else(executor_sandbox::system_clock_ms);
        st.clock_log.push(value);
        value
    }

    pub(crate) fn is_persisted(&self) -> bool {
        lock(&self.state).persisted
    }

    /// Stops all further writes (the execution was shut down or expired); calls held by
    /// [`Journal::close`] end.
    pub(crate) fn detach(&self) {
        self.detached.store(true, Ordering::Release);
        self.abandoned.send_replace(true);
    }

    /// The process is stopping: calls the code issues from now on are held (never sent, never
    /// journaled), so they run after the restart instead.
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Waits until every call in flight is either journaled or waiting for a person, or until
    /// `deadline`. Returns whether it got there.
    pub(crate) async fn quiesce(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let settled = self.settled.notified();
            {
                let st = lock(&self.state);
                if st.in_flight.is_subset(&st.waiting) {
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                let st = lock(&self.state);
                return st.in_flight.is_subset(&st.waiting);
            }
        }
    }

    /// Call `seq` waits (`true`) or no longer waits for a person's answer.
    pub(crate) fn waiting_on(&self, seq: i64, waiting: bool) {
        {
            let mut st = lock(&self.state);
            if waiting {
                st.waiting.insert(seq);
            } else {
                st.waiting.remove(&seq);
            }
        }
        self.settled.notify_waiters();
    }

    fn started(&self, seq: i64) {
        lock(&self.state).in_flight.insert(seq);
    }

    fn ended(&self, seq: i64) {
        {
            let mut st = lock(&self.state);
            st.in_flight.remove(&seq);
            st.waiting.remove(&seq);
        }
        self.settled.notify_waiters();
    }

    /// A diverged replay fails the execution whatever the code made of the rejection.
    /// Upstream log lines follow the code's console lines, in the order they arrived.
    pub(crate) fn finish_output(&self, mut output: RunOutput) -> RunOutput {
        if let Some(message) = lock(&self.state).diverged.clone() {
            output.result = None;
            output.error = Some(message);
        }
        let upstream = std::mem::take(&mut *lock(&self.upstream_logs));
        output.logs.extend(upstream.lines);
        if upstream.dropped > 0 {
            output.logs.push(format!(
                "[warn] … {} upstream log lines dropped",
                upstream.dropped
            ));
        }
        output
    }

    /// Adds one line a downstream server logged to the execution's logs (bounded).
    pub(crate) fn upstream_log(&self, line: String) {
        let mut logs = lock(&self.upstream_logs);
        if logs.dropped > 0
            || logs.lines.len() >= MAX_UPSTREAM_LOG_LINES
            || logs.bytes + line.len() > MAX_UPSTREAM_LOG_BYTES
        {
            logs.dropped += 1;
            return;
        }
        logs.bytes += line.len();
        logs.lines.push(line);
    }

    /// Records a new call and decides how it is answered. Returns the record to write through
    /// when the execution is saved.
    fn issue(&self, path: &str, args: &Value) -> (i64, Plan, Option<ExecutionCallRecord>) {
        let hash = args_hash(self.seed, path, args);
        let mut st = lock(&self.state);
        if let Some(replay) = st.replay.as_mut() {
            let found = replay
                .entries
                .iter_mut()
                .find(|(c, used)| !*used && c.path == path && c.args_hash == hash);
            if let Some((call, used)) = found {
                *used = true;
                let seq = call.seq;
                let mut answers = stored_answers(call.pause.as_ref());
                if Some(seq) == replay.pending_seq {
                    replay.pending_reached = true;
                    let approval = replay.pending_kind == PauseKind::Approval.name();
                    let plan = match replay.decision {
                        ResumeAction::Decline if approval => {
                            Plan::Refused(declined(path, "declined"))
                        }
                        ResumeAction::Cancel if approval => {
                            Plan::Refused(declined(path, "cancelled"))
                        }
                        // An approval accepted, or an elicitation answered whatever the answer
                        // (its server hears it): the call runs again and gets it.
                        decision => {
                            answers.push_back(Answer {
                                kind: replay.pending_kind.clone(),
                                action: decision,
                                content: replay.content.clone(),
                            });
                            Plan::Live { answers }
                        }
                    };
                    return (seq, plan, None);
                }
                if let Some(omitted) = call.outcome.as_ref().and_then(|o| o.get("omitted")) {
                    // Sending the call again could repeat its effect; answering anything else
                    // would be a different result. The execution cannot go on.
                    let bytes = omitted.get("bytes").and_then(Value::as_u64).unwrap_or(0);
                    return (
                        seq,
                        Plan::Refused(format!(
                            "The execution could not be resumed after a restart: call #{seq} (tools.{path}) answered {bytes} bytes, more than the journal keeps ({MAX_JOURNALED_REPLY_BYTES} bytes), so it cannot be replayed. Run the code again instead."
                        )),
                        None,
                    );
                }
                if let Some(reply) = call.outcome.as_ref().and_then(reply_from_json) {
                    return (seq, Plan::Replayed(reply), None);
                }
                // In flight when the execution was saved: it runs again, without asking the
                // person again what they had already answered.
                return (seq, Plan::Live { answers }, None);
            }
            if replay.pending_seq.is_some() && !replay.pending_reached {
                let message = format!(
                    "The execution could not be resumed: its code took a different path than before the pause (call #{} was tools.{path}, which the journal does not have). Run the code again instead.",
                    st.next_seq
                );
                st.diverged.get_or_insert(message.clone());
                return (-1, Plan::Diverged(message), None);
            }
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        let record = ExecutionCallRecord {
            seq,
            path: path.to_owned(),
            args: journaled_args(path, args),
            args_hash: hash,
            outcome: None,
            pause: None,
            started_at: now_ms(),
            duration_ms: None,
        };
        st.calls.insert(seq, record.clone());
        let write = st.persisted.then_some(record);
        (seq, Plan::live(), write)
    }

    /// Records the reply of call `seq`; returns the record to write through when saved.
    /// `bytes` is the reply's size ([`super::call_limits::CallLimits::cap_output`]).
    fn complete(
        &self,
        seq: i64,
        reply: &HostReply,
        bytes: usize,
        took: Duration,
    ) -> Option<ExecutionCallRecord> {
        let mut st = lock(&self.state);
        let persisted = st.persisted;
        let call = st.calls.get_mut(&seq)?;
        call.outcome = Some(journaled_reply(reply, bytes));
        call.duration_ms = Some(i64::try_from(took.as_millis()).unwrap_or(i64::MAX));
        persisted.then(|| call.clone())
    }

    /// Tells the execution feed where this execution stands now.
    /// `is_error`: the outcome's, once settled.
    pub(crate) fn publish(&self, inner: &Inner, is_error: Option<bool>) {
        inner.feed.publish(self.caller.scope(), || {
            let st = lock(&self.state);
            let finished_at = st.status.is_settled().then(now_ms);
            ExecutionSummary {
                id: self.id.clone(),
                status: st.status,
                started_at: self.started_at,
                finished_at,
                duration_ms: finished_at.map(|at| at - self.started_at),
                tool_calls: st.calls.len() as i64,
                is_error,
            }
        });
    }

    fn row(&self, st: &State) -> ExecutionRecord {
        ExecutionRecord {
            id: self.id.clone(),
            code: self.code.clone(),
            auto_approve: self.auto_approve,
            status: st.status,
            seed: self.seed,
            started_at: self.started_at,
            updated_at: now_ms(),
            finished_at: None,
            expires_at: st.expires_at,
            duration_ms: None,
            tool_calls: st.calls.len() as i64,
            clock: json!(st.clock_log),
            pending: st.pending.clone(),
            outcome: None,
        }
    }

    async fn write_call(&self, inner: &Inner, call: ExecutionCallRecord) {
        let _serial = self.writes.lock().await;
        if self.detached.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = inner.store.save_execution_call(&self.id, &call).await {
            tracing::error!(execution_id = %self.id, error = %e, "could not journal a tool call");
        }
    }

    /// Saves the row and the whole journal, after `update` changed the state.
    async fn save(&self, inner: &Inner, update: impl FnOnce(&mut State) -> Option<i64>) {
        let _serial = self.writes.lock().await;
        if self.detached.load(Ordering::Acquire) {
            return;
        }
        let (row, calls) = {
            let mut st = lock(&self.state);
            let finished_at = update(&mut st);
            st.persisted = true;
            let mut row = self.row(&st);
            if let Some(finished_at) = finished_at {
                row.finished_at = Some(finished_at);
                row.duration_ms = Some(finished_at - self.started_at);
            }
            (row, st.calls.values().cloned().collect::<Vec<_>>())
        };
        if let Err(e) = inner
            .store
            .save_execution(self.caller.scope(), &row, &calls)
            .await
        {
            tracing::error!(execution_id = %self.id, error = %e, "could not save an execution");
        }
    }

    /// The execution paused at call `seq`: it is saved with its pending interaction.
    pub(crate) async fn persist_pause(
        &self,
        inner: &Inner,
        seq: Option<i64>,
        request: &PauseRequest,
        expires_at: i64,
        sessions: &[executor_mcp::SessionRecord],
    ) {
        let mut pending = pending_json(seq, request);
        pending["caller"] = self.caller.recorded();
        // The downstream sessions to come back to if this process restarts before the resume.
        if !sessions.is_empty() {
            pending["sessions"] = json!(sessions);
        }
        self.save(inner, |st| {
            if let Some(call) = seq.and_then(|s| st.calls.get_mut(&s)) {
                // Earlier answers of this call stay: a replay gives them back.
                let answers = call
                    .pause
                    .as_ref()
                    .and_then(|p| p.get("answers"))
                    .cloned()
                    .unwrap_or_else(|| json!([]));
                call.pause = Some(json!({
                    "message": request.message,
                    "address": request.address,
                    "kind": request.kind.name(),
                    "answers": answers,
                }));
            }
            st.status = ExecutionStatus::Paused;
            st.pending = Some(pending);
            st.expires_at = Some(expires_at);
            None
        })
        .await;
        self.publish(inner, None);
    }

    /// The person answered (`content`: the form they filled in); the execution runs again.
    pub(crate) async fn persist_running(
        &self,
        inner: &Inner,
        seq: Option<i64>,
        kind: &PauseKind,
        action: ResumeAction,
        content: Option<&Value>,
    ) {
        if let Some(seq) = seq {
            self.waiting_on(seq, false);
        }
        let answer = Answer {
            kind: kind.name().to_owned(),
            action,
            content: content.cloned(),
        };
        self.save(inner, |st| {
            if let Some(call) = seq.and_then(|s| st.calls.get_mut(&s))
                && let Some(Value::Object(pause)) = call.pause.as_mut()
            {
                pause.insert("decision".into(), json!(action.as_str()));
                match pause.get_mut("answers") {
                    Some(Value::Array(answers)) => answers.push(answer.to_json()),
                    _ => {
                        pause.insert("answers".into(), json!([answer.to_json()]));
                    }
                }
            }
            st.status = ExecutionStatus::Running;
            st.pending = None;
            st.expires_at = None;
            None
        })
        .await;
        self.publish(inner, None);
    }

    /// The execution settled. One that was saved before (it paused) is written now, before
    /// anyone hears the outcome; one that never paused goes to the batched history writer.
    pub(crate) async fn persist_finish(&self, inner: &Inner, completed: &Completed) {
        let now = now_ms();
        let finish = |st: &mut State| {
            st.status = if completed.is_error {
                ExecutionStatus::Failed
            } else {
                ExecutionStatus::Completed
            };
            st.pending = None;
            st.expires_at = None;
            let was_persisted = st.persisted;
            st.persisted = true;
            let mut row = self.row(st);
            row.finished_at = Some(now);
            row.duration_ms = Some(now - self.started_at);
            row.outcome = Some(completed_to_json(completed));
            (
                was_persisted,
                row,
                st.calls.values().cloned().collect::<Vec<_>>(),
            )
        };
        if !self.is_persisted() {
            if self.detached.load(Ordering::Acquire) {
                return;
            }
            let (_, row, calls) = finish(&mut lock(&self.state));
            inner.history.push(self.caller.scope(), row, calls);
            self.publish(inner, Some(completed.is_error));
            return;
        }
        let _serial = self.writes.lock().await;
        if self.detached.load(Ordering::Acquire) {
            return;
        }
        let (_, row, calls) = finish(&mut lock(&self.state));
        if let Err(e) = inner
            .store
            .save_execution(self.caller.scope(), &row, &calls)
            .await
        {
            tracing::error!(execution_id = %self.id, error = %e, "could not save an execution");
        }
        self.publish(inner, Some(completed.is_error));
    }
}

/// A host call's place in the journal, taken when the code makes the call (see [`issue`]).
pub(crate) struct Issued {
    journal: Arc<Journal>,
    /// `None`: the process is stopping, and the call runs after the restart, on the replay.
    planned: Option<Planned>,
}

struct Planned {
    seq: i64,
    plan: Plan,
    /// The call's row, when the execution is saved (written before the call runs).
    write: Option<ExecutionCallRecord>,
    /// Marks a live call ended when dropped (it ran, or its future was dropped unpolled).
    _ended: Option<Ended>,
}

/// Gives the call its sequence number and plan at once, in the order the code makes its calls:
/// done when the future runs instead, two calls' tasks could take their numbers in either order
/// and a replay would see a path the journal does not have.
pub(crate) fn issue(ctx: &ExecutionCtx, path: &str, args: &Value) -> Issued {
    let journal = ctx.journal.clone();
    if journal.closing.load(Ordering::Acquire) {
        return Issued {
            journal,
            planned: None,
        };
    }
    let (seq, plan, write) = journal.issue(path, args);
    let live = matches!(plan, Plan::Live { .. });
    if live {
        journal.started(seq);
    }
    let _ended = live.then(|| Ended {
        journal: journal.clone(),
        seq,
    });
    Issued {
        journal,
        planned: Some(Planned {
            seq,
            plan,
            write,
            _ended,
        }),
    }
}

/// One host call of an execution, journaled (runs on the IO runtime).
pub(crate) async fn call(
    inner: Arc<Inner>,
    ctx: Arc<ExecutionCtx>,
    issued: Issued,
    path: String,
    args: Value,
) -> HostReply {
    let Issued { journal, planned } = issued;
    let Some(Planned {
        seq,
        plan,
        write,
        _ended,
    }) = planned
    else {
        let mut abandoned = journal.abandoned.subscribe();
        let _ = abandoned.wait_for(|gone| *gone).await;
        return HostReply::Reject("The execution was stopped by a server shutdown.".to_owned());
    };
    if let Some(record) = write {
        journal.write_call(&inner, record).await;
    }
    let started = Instant::now();
    let audited_path = journal.caller.member_email().map(|_| path.clone());
    let (reply, bytes) = match plan {
        Plan::Replayed(reply) => return reply,
        Plan::Diverged(message) => return HostReply::Reject(message),
        Plan::Refused(message) => {
            let bytes = message.len();
            (HostReply::Reject(message), bytes)
        }
        Plan::Live { answers } => {
            let meta = CallMeta {
                seq,
                answers: Arc::new(Mutex::new(answers)),
            };
            let reply = CALL
                .scope(
                    meta,
                    super::dispatch::dispatch(inner.clone(), ctx, path, args),
                )
                .await;
            // What enters the sandbox is capped here, once for every kind, and its size serves
            // the journal too.
            inner.call_limits.cap_output(reply)
        }
    };
    if let Some(path) = audited_path {
        audit_call(&inner, &journal.caller, &path, &reply);
    }
    if let Some(record) = journal.complete(seq, &reply, bytes, started.elapsed()) {
        journal.write_call(&inner, record).await;
    }
    reply
}

/// A member's tool call in the audit log: the tool and how it ended, never its arguments or
/// answer (they may hold credentials and personal data).
fn audit_call(inner: &Arc<Inner>, caller: &crate::caller::Caller, path: &str, reply: &HostReply) {
    let (outcome, code) = match reply {
        HostReply::Resolve(value) if value["ok"] == Value::Bool(false) => {
            let code = value["error"]["code"].as_str().map(str::to_owned);
            let denied = matches!(
                code.as_deref(),
                Some("tool_blocked" | "org_write_denied" | "approval_declined")
            );
            (if denied { "denied" } else { "error" }, code)
        }
        HostReply::Resolve(_) => ("ok", None),
        _ => ("error", None),
    };
    let engine = crate::Engine {
        inner: inner.clone(),
    };
    engine.audit(
        caller,
        crate::AuditEntry {
            kind: crate::AuditKind::ToolCall,
            action: path.strip_prefix("tools.").unwrap_or(path).to_owned(),
            target: None,
            before: None,
            after: None,
            outcome,
            detail: code.map(|code| serde_json::json!({ "code": code })),
        },
    );
}

/// Marks a live call ended once its outcome is journaled (or it was dropped).
struct Ended {
    journal: Arc<Journal>,
    seq: i64,
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.journal.ended(self.seq);
    }
}

/// The message of a call that was declined or cancelled (the dispatcher's wording).
fn declined(path: &str, how: &str) -> String {
    format!("Tool \"{path}\" requires approval but the request was {how} by the user.")
}

/// The most of one call's reply the journal keeps (it is stored for the history's retention).
pub(crate) const MAX_JOURNALED_REPLY_BYTES: usize = 1024 * 1024;

/// The reply as the journal keeps it: whole, or past [`MAX_JOURNALED_REPLY_BYTES`] only its size
/// and digest (`{omitted: {bytes, sha256}}`), which a replay refuses rather than guess.
fn journaled_reply(reply: &HostReply, bytes: usize) -> Value {
    if bytes <= MAX_JOURNALED_REPLY_BYTES {
        return reply_to_json(reply);
    }
    let mut hasher = Sha256::new();
    match reply {
        HostReply::Resolve(value) => {
            let _ = serde_json::to_writer(&mut hasher, value);
        }
        HostReply::Reject(message) => hasher.update(message.as_bytes()),
    }
    let digest = hex::encode(hasher.finalize());
    json!({ "omitted": { "bytes": bytes, "sha256": digest } })
}

/// The arguments as the journal shows them: redacted, or past [`MAX_JOURNALED_REPLY_BYTES`] only
/// their size (replay matches calls on the salted hash of the real arguments, not on these).
fn journaled_args(path: &str, args: &Value) -> Value {
    let bytes = super::call_limits::json_size(args);
    if bytes <= MAX_JOURNALED_REPLY_BYTES {
        return redact_args(path, args);
    }
    json!({ "omitted": { "bytes": bytes } })
}

/// `{resolve: value}` | `{reject: message}`.
fn reply_to_json(reply: &HostReply) -> Value {
    match reply {
        HostReply::Resolve(value) => json!({ "resolve": value }),
        HostReply::Reject(message) => json!({ "reject": message }),
    }
}

fn reply_from_json(value: &Value) -> Option<HostReply> {
    if let Some(v) = value.get("resolve") {
        return Some(HostReply::Resolve(v.clone()));
    }
    value
        .get("reject")
        .and_then(Value::as_str)
        .map(|m| HostReply::Reject(m.to_owned()))
}

pub(crate) fn completed_to_json(c: &Completed) -> Value {
    let mut stored = json!({ "text": c.text, "structured": c.structured, "isError": c.is_error });
    if !c.content.is_empty() {
        stored["content"] = Value::Array(c.content.clone());
    }
    stored
}

pub(crate) fn completed_from_json(value: &Value) -> Option<Completed> {
    Some(Completed {
        text: value.get("text")?.as_str()?.to_owned(),
        structured: value.get("structured").cloned().unwrap_or(Value::Null),
        is_error: value
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        content: value
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    })
}

/// The stored pending interaction: what the paused view is rebuilt from after a restart.
fn pending_json(seq: Option<i64>, request: &PauseRequest) -> Value {
    let mut pending = json!({
        "seq": seq,
        "message": request.message,
        "address": request.address,
        "args": journaled_args(&request.address, &request.args),
        "kind": request.kind.name(),
    });
    match &request.kind {
        PauseKind::Approval => {}
        PauseKind::Form { requested_schema } => {
            pending["requestedSchema"] = requested_schema.clone();
        }
        PauseKind::Url { url } => pending["url"] = json!(url),
    }
    pending
}

/// Salted SHA-256 of the path and the unredacted arguments (replay matches on it; the salt is
/// the execution's seed, so equal secrets do not hash alike across executions).
fn args_hash(seed: u64, path: &str, args: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update(path.as_bytes());
    hasher.update([0]);
    // The compact JSON text, written straight into the hash (no copy of big arguments).
    let _ = serde_json::to_writer(&mut hasher, args);
    hex::encode(&hasher.finalize()[..16])
}

/// The arguments of the tools that take pasted credentials: every string under these keys is a
/// secret, whatever its variable is called (`GITHUB_PAT`, `username`, …).
const CREDENTIAL_ARGUMENTS: &[(&str, &[&str])] = &[(
    "executor.coreTools.connections.create",
    &["inputs", "values", "value"],
)];

/// The arguments of a call to `path` as they may be stored or shown: [`redact`], and for the
/// tools that take pasted credentials, every string under their credential arguments.
pub(crate) fn redact_args(path: &str, args: &Value) -> Value {
    let mut shown = redact(args);
    if let Some((_, keys)) = CREDENTIAL_ARGUMENTS.iter().find(|(p, _)| *p == path) {
        for key in *keys {
            if let Some(value) = shown.get_mut(*key) {
                mask_strings(value);
            }
        }
    }
    shown
}

fn mask_strings(value: &mut Value) {
    match value {
        Value::String(s) => *s = REDACTED.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(mask_strings),
        Value::Object(map) => map.values_mut().for_each(mask_strings),
        _ => {}
    }
}

/// A copy of `value` with the values of secret-looking keys, and strings that look like bearer
/// credentials, replaced by [`REDACTED`].
pub(crate) fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() {
                        json!(REDACTED)
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(s) if looks_like_credential(s) => json!(REDACTED),
        other => other.clone(),
    }
}

fn looks_like_credential(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("bearer ") || lower.starts_with("basic ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_log_lines_follow_console_lines_and_are_bounded() {
        let journal = Journal::fresh(
            "exec_t".into(),
            Caller::local("t"),
            "return 1".into(),
            false,
        );
        for i in 0..MAX_UPSTREAM_LOG_LINES + 5 {
            journal.upstream_log(format!("[upstream a.b info] {i}"));
        }
        let output = journal.finish_output(RunOutput {
            logs: vec!["[log] mine".into()],
            ..Default::default()
        });
        assert_eq!(output.logs.len(), 1 + MAX_UPSTREAM_LOG_LINES + 1);
        assert_eq!(output.logs[0], "[log] mine");
        assert_eq!(output.logs[1], "[upstream a.b info] 0");
        assert_eq!(
            output.logs.last().unwrap(),
            "[warn] … 5 upstream log lines dropped"
        );
    }

    #[test]
    fn redaction_masks_secret_keys_at_any_depth() {
        let args = json!({
            "token": "s3cret",
            "query": "hello",
            "nested": {"apiKey": "k", "api_key": "k2", "Authorization": "x", "page": 2},
            "list": [{"password": "p"}, "Bearer abc", "plain"],
            "client_secret": null,
            "keyword": "visible",
        });
        assert_eq!(
            redact(&args),
            json!({
                "token": REDACTED,
                "query": "hello",
                "nested": {"apiKey": REDACTED, "api_key": REDACTED, "Authorization": REDACTED, "page": 2},
                "list": [{"password": REDACTED}, REDACTED, "plain"],
                "client_secret": null,
                "keyword": "visible",
            })
        );
    }

    #[test]
    fn pasted_credentials_are_masked_whatever_their_names() {
        let args = json!({
            "integration": "github",
            "name": "work",
            "inputs": {"GITHUB_PAT": "ghp_x", "username": "ada", "other": {"provider": "file", "id": "k"}},
            "values": {"user": "u"},
            "value": "v",
        });
        assert_eq!(
            redact_args("executor.coreTools.connections.create", &args),
            json!({
                "integration": "github",
                "name": "work",
                "inputs": {"GITHUB_PAT": REDACTED, "username": REDACTED, "other": {"provider": REDACTED, "id": REDACTED}},
                "values": {"user": REDACTED},
                "value": REDACTED,
            })
        );
        // Other tools keep their `inputs` (a workflow's inputs are not credentials).
        assert_eq!(
            redact_args("github.org.main.dispatch", &args)["inputs"]["username"],
            "ada"
        );
    }

    fn stored(
        seed: u64,
        seq: i64,
        path: &str,
        args: &Value,
        outcome: Option<Value>,
    ) -> ExecutionCallRecord {
        ExecutionCallRecord {
            seq,
            path: path.to_owned(),
            args: redact(args),
            args_hash: args_hash(seed, path, args),
            outcome,
            pause: None,
            started_at: 0,
            duration_ms: None,
        }
    }

    fn restored(decision: ResumeAction) -> Arc<Journal> {
        restored_with(decision, None, json!({"seq": 2}), None)
    }

    fn restored_with(
        decision: ResumeAction,
        content: Option<Value>,
        pending: Value,
        inflight_pause: Option<Value>,
    ) -> Arc<Journal> {
        let rec = ExecutionRecord {
            id: "exec_x".into(),
            code: String::new(),
            auto_approve: false,
            status: ExecutionStatus::Paused,
            seed: 9,
            started_at: 0,
            updated_at: 0,
            finished_at: None,
            expires_at: None,
            duration_ms: None,
            tool_calls: 3,
            clock: json!([5.0, 6.0]),
            pending: Some(pending),
            outcome: None,
        };
        let calls = vec![
            stored(
                9,
                0,
                "a.b",
                &json!({"n": 1}),
                Some(json!({"resolve": "one"})),
            ),
            stored(9, 1, "a.c", &json!({}), Some(json!({"reject": "nope"}))),
            stored(9, 2, "a.gated", &json!({"n": 1}), None),
            ExecutionCallRecord {
                pause: inflight_pause,
                ..stored(9, 3, "a.inflight", &json!({}), None)
            },
        ];
        Journal::restored(Caller::local("t"), rec, calls, decision, content)
    }

    fn answers(plan: &Plan) -> Vec<Answer> {
        match plan {
            Plan::Live { answers } => answers.iter().cloned().collect(),
            _ => panic!("not live"),
        }
    }

    fn approval(action: ResumeAction) -> Answer {
        Answer {
            kind: "approval".into(),
            action,
            content: None,
        }
    }

    #[test]
    fn replay_answers_from_the_journal_then_runs_live() {
        let j = restored(ResumeAction::Accept);
        assert_eq!((j.clock(), j.clock()), (5.0, 6.0));
        assert!(j.clock() > 1.6e12, "then the system clock");
        // Out of order is fine: calls match on path and arguments.
        let (seq, plan, write) = j.issue("a.c", &json!({}));
        assert!(matches!(plan, Plan::Replayed(HostReply::Reject(ref m)) if m == "nope"));
        assert_eq!((seq, write), (1, None));
        let (seq, plan, _) = j.issue("a.b", &json!({"n": 1}));
        assert!(matches!(plan, Plan::Replayed(HostReply::Resolve(ref v)) if v == "one"));
        assert_eq!(seq, 0);
        // In flight at the pause: runs again under its seq.
        let (seq, plan, _) = j.issue("a.inflight", &json!({}));
        assert_eq!(answers(&plan), []);
        assert_eq!(seq, 3);
        let (seq, plan, _) = j.issue("a.gated", &json!({"n": 1}));
        assert_eq!(answers(&plan), [approval(ResumeAction::Accept)]);
        assert_eq!(seq, 2);
        // Beyond the journal: live, new seqs, written through (the row exists).
        let (seq, plan, write) = j.issue("a.b", &json!({"n": 1}));
        assert_eq!(answers(&plan), []);
        assert_eq!(seq, 4);
        assert_eq!(write.map(|w| w.seq), Some(4));
        assert!(j.finish_output(RunOutput::default()).error.is_none());
    }

    /// A huge answer is not kept whole (30 of 50 MB made `data.db` 1.48 GB); a replay that
    /// reaches it refuses to go on rather than send the call again or answer differently.
    #[test]
    fn a_reply_over_the_journal_cap_is_kept_as_a_digest_and_not_replayed() {
        let j = Journal::fresh(
            "exec_cap".into(),
            Caller::local("t"),
            "return 1".into(),
            false,
        );
        let (small, _, _) = j.issue("a.small", &json!({}));
        let done = |seq, value: Value| {
            let bytes = crate::executions::call_limits::json_size(&value);
            j.complete(seq, &HostReply::Resolve(value), bytes, Duration::ZERO);
        };
        done(small, json!("ok"));
        let heavy = json!({"data": "y".repeat(MAX_JOURNALED_REPLY_BYTES)});
        let (heavy_seq, _, _) = j.issue("a.heavy", &heavy);
        done(heavy_seq, json!(1));
        let (big, _, _) = j.issue("a.big", &json!({}));
        let huge = json!({"data": "x".repeat(MAX_JOURNALED_REPLY_BYTES)});
        done(big, huge.clone());
        let calls: Vec<ExecutionCallRecord> = lock(&j.state).calls.values().cloned().collect();
        assert_eq!(calls[0].outcome, Some(json!({"resolve": "ok"})));
        assert_eq!(
            calls[1].args["omitted"]["bytes"],
            crate::executions::call_limits::json_size(&heavy)
        );
        let omitted = &calls[2].outcome.as_ref().unwrap()["omitted"];
        assert_eq!(
            omitted["bytes"],
            crate::executions::call_limits::json_size(&huge)
        );
        assert_eq!(omitted["sha256"].as_str().unwrap().len(), 64);

        let rec = ExecutionRecord {
            status: ExecutionStatus::Paused,
            pending: Some(json!({"seq": 3, "kind": "approval"})),
            ..j.row(&lock(&j.state))
        };
        let restored =
            Journal::restored(Caller::local("t"), rec, calls, ResumeAction::Accept, None);
        let (_, plan, _) = restored.issue("a.small", &json!({}));
        assert!(matches!(plan, Plan::Replayed(_)));
        // Big arguments are matched by their hash, so that call still replays.
        let (_, plan, _) = restored.issue("a.heavy", &heavy);
        assert!(matches!(plan, Plan::Replayed(_)));
        let (_, plan, _) = restored.issue("a.big", &json!({}));
        assert!(matches!(plan, Plan::Refused(ref m) if m.contains("cannot be replayed")));
    }

    #[test]
    fn a_refused_pause_rejects_and_a_diverging_call_fails_the_execution() {
        let j = restored(ResumeAction::Decline);
        let (_, plan, _) = j.issue("a.gated", &json!({"n": 1}));
        assert!(matches!(plan, Plan::Refused(ref m) if m.contains("declined by the user")));

        let j = restored(ResumeAction::Accept);
        let (_, plan, _) = j.issue("a.gated", &json!({"n": 2}));
        assert!(matches!(plan, Plan::Diverged(_)));
        let out = j.finish_output(RunOutput {
            result: Some(json!(1)),
            ..RunOutput::default()
        });
        assert!(out.result.is_none());
        assert!(out.error.unwrap().contains("different path"));
    }

    #[test]
    fn answered_pauses_come_back_to_the_call_that_runs_again() {
        // The pending pause is an elicitation of the gated call, whose approval was accepted:
        // the call gets its approval and then the new answer, content included; even a decline
        // goes to the server (the call is not refused).
        let pending = json!({"seq": 2, "kind": "form", "requestedSchema": {"type": "object"}});
        for decision in [ResumeAction::Accept, ResumeAction::Decline] {
            let content = Some(json!({"reason": "old"}));
            let inflight = json!({"kind": "form", "decision": "accept", "answers": [
                {"kind": "approval", "decision": "accept"},
                {"kind": "form", "decision": "accept", "content": {"x": 1}},
            ]});
            let j = restored_with(decision, content.clone(), pending.clone(), Some(inflight));
            let (_, plan, _) = j.issue("a.gated", &json!({"n": 1}));
            assert_eq!(
                answers(&plan),
                [Answer {
                    kind: "form".into(),
                    action: decision,
                    content: content.clone()
                }]
            );
            // A call in flight at the pause gets all it was given, in order.
            let (_, plan, _) = j.issue("a.inflight", &json!({}));
            assert_eq!(
                answers(&plan),
                [
                    approval(ResumeAction::Accept),
                    Answer {
                        kind: "form".into(),
                        action: ResumeAction::Accept,
                        content: Some(json!({"x": 1}))
                    }
                ]
            );
        }
        // Older journals: an accepted approval is a `decision` only.
        let j = restored_with(
            ResumeAction::Accept,
            None,
            json!({"seq": 2}),
            Some(json!({"decision": "accept"})),
        );
        let (_, plan, _) = j.issue("a.inflight", &json!({}));
        assert_eq!(answers(&plan), [approval(ResumeAction::Accept)]);
    }

    #[test]
    fn a_call_takes_stored_answers_by_kind_in_order() {
        let meta = CallMeta {
            seq: 0,
            answers: Arc::new(Mutex::new(
                [
                    approval(ResumeAction::Accept),
                    Answer {
                        kind: "form".into(),
                        action: ResumeAction::Decline,
                        content: None,
                    },
                    Answer {
                        kind: "form".into(),
                        action: ResumeAction::Accept,
                        content: Some(json!({})),
                    },
                ]
                .into(),
            )),
        };
        assert_eq!(
            meta.take_answer("form").map(|a| a.action),
            Some(ResumeAction::Decline)
        );
        assert_eq!(meta.take_answer("url"), None);
        assert_eq!(
            meta.take_answer("approval").map(|a| a.action),
            Some(ResumeAction::Accept)
        );
        assert_eq!(
            meta.take_answer("form").map(|a| a.action),
            Some(ResumeAction::Accept)
        );
        assert_eq!(meta.take_answer("form"), None);
    }

    #[tokio::test]
    async fn quiesce_waits_for_running_calls_not_for_waiting_ones() {
        let j = Journal::fresh("exec_q".into(), Caller::local("t"), String::new(), false);
        j.started(0);
        j.started(1);
        j.waiting_on(1, true);
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        assert!(!j.quiesce(soon).await, "call 0 still runs");
        let j2 = j.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            j2.ended(0);
        });
        let later = tokio::time::Instant::now() + Duration::from_secs(5);
        assert!(j.quiesce(later).await);
    }

    #[test]
    fn hashes_depend_on_seed_path_and_args() {
        let a = args_hash(1, "x.y", &json!({"a": 1}));
        assert_eq!(a, args_hash(1, "x.y", &json!({"a": 1})));
        assert_ne!(a, args_hash(2, "x.y", &json!({"a": 1})));
        assert_ne!(a, args_hash(1, "x.z", &json!({"a": 1})));
        assert_ne!(a, args_hash(1, "x.y", &json!({"a": 2})));
    }
}
