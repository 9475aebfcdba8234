//! The downstream elicitation bridge (spec §6): a server that sends `elicitation/create` while it
//! handles one of our `tools/call` requests is answered by whoever made that call.
//!
//! Every `tools/call` registers a [`Route`] on its session for as long as it is in flight, keyed
//! by the JSON-RPC id of the request. rmcp marks a server request that arrived on the SSE
//! response stream of one of our POSTs with that POST's request id (`InboundStreamOrigin`), so
//! the elicitation reaches exactly the call it belongs to; since a session is leased by one
//! execution at a time, that is also the execution currently leasing the session. A request that
//! carries no association (the standalone GET stream, the legacy SSE transport) goes to the
//! session's oldest call in flight. With nobody to ask, the elicitation is cancelled.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
// Sampling is deprecated by SEP-2577 but still part of the protocol versions we speak.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    RequestId,
};
use rmcp::service::InboundStreamOrigin;
use serde_json::Value;
use tokio::time::Instant;

/// What a downstream server asks of a person.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation {
    /// Form mode: fill in `requested_schema` (an object schema of primitive properties).
    Form {
        message: String,
        requested_schema: Value,
    },
    /// URL mode: the person opens `url` and finishes something there.
    Url {
        message: String,
        url: String,
        elicitation_id: String,
    },
}

impl Elicitation {
    pub fn message(&self) -> &str {
        match self {
            Elicitation::Form { message, .. } | Elicitation::Url { message, .. } => message,
        }
    }

    /// A form whose schema asks for nothing (no properties): a plain confirmation.
    pub fn asks_for_nothing(&self) -> bool {
        match self {
            Elicitation::Form {
                requested_schema, ..
            } => requested_schema
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(|p| p.is_empty()),
            Elicitation::Url { .. } => false,
        }
    }

    /// An accepted form's content with the requested schema's defaults filled in where the
    /// person gave no value (SEP-1034): `None` stays `None` only when there is nothing to fill.
    pub fn with_defaults(&self, content: Option<Value>) -> Option<Value> {
        let Elicitation::Form {
            requested_schema, ..
        } = self
        else {
            return content;
        };
        let Some(properties) = requested_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            return content;
        };
        let given = content.is_some();
        let mut filled = match content {
            Some(Value::Object(map)) => map,
            None => serde_json::Map::new(),
            // Not an object: nothing to fill into; the server judges it.
            Some(other) => return Some(other),
        };
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !filled.contains_key(name)
            {
                filled.insert(name.clone(), default.clone());
            }
        }
        (given || !filled.is_empty()).then_some(Value::Object(filled))
    }

    fn from_params(params: ElicitRequestParams) -> Option<Self> {
        match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => Some(Elicitation::Form {
                message,
                requested_schema: serde_json::to_value(&requested_schema)
                    .unwrap_or_else(|_| serde_json::json!({"type": "object", "properties": {}})),
            }),
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => Some(Elicitation::Url {
                message,
                url,
                elicitation_id,
            }),
            _ => None,
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// The answer sent back to the server as the `elicitation/create` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitAnswer {
    pub action: ElicitAction,
    /// Form content (only sent with `Accept`).
    pub content: Option<Value>,
}

impl ElicitAnswer {
    pub fn cancel() -> Self {
        Self {
            action: ElicitAction::Cancel,
            content: None,
        }
    }

    fn into_result(self) -> ElicitResult {
        match self.action {
            ElicitAction::Accept => {
                let result = ElicitResult::new(ElicitationAction::Accept);
                match self.content {
                    Some(content) => result.with_content(content),
                    None => result,
                }
            }
            ElicitAction::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitAction::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

/// Whoever made a call answers the elicitations the server sends while handling it.
pub trait Elicitor: Send + Sync {
    /// Asks a person; the future resolves with their answer (or `Cancel` when nobody will answer).
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitAnswer>;

    /// Who answers the server's `sampling/createMessage` requests during the call: the model
    /// behind the agent's own MCP client, when that client can sample. `None`: nobody.
    fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        None
    }

    /// The server reported progress on the call (`notifications/progress` with the call's
    /// token). `progress` increases within one call; `total` when the server knows it.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let _ = (progress, total, message);
    }

    /// The server sent a log message (`notifications/message`) while handling the call.
    /// `level` is the MCP logging level as spelled on the wire (`info`, `warning`, …).
    fn log(&self, level: &str, logger: Option<&str>, data: &Value) {
        let _ = (level, logger, data);
    }
}

/// Forwards `sampling/createMessage` to a model (the agent's MCP client), as JSON: the request's
/// params in, the `CreateMessageResult` out.
pub trait Sampler: Send + Sync {
    fn create_message(&self, params: Value) -> BoxFuture<'static, Result<Value, SamplingError>>;
}

/// Why a sampling request got no message: a JSON-RPC error for the server.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingError {
    pub code: i32,
    pub message: String,
}

/// The JSON-RPC error a server gets when nobody can sample for it.
fn no_sampler() -> rmcp::ErrorData {
    rmcp::ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        // Worded without "tool … is not available": servers echo it, and that phrase reads as
        // an unknown tool (`is_unknown_tool_message`).
        "sampling/createMessage refused: the Executor execution that made this call has no \
         model to sample with (its agent's MCP client does not support sampling, or the \
         request arrived outside a call)",
        None,
    )
}

/// One call in flight on a session.
struct Route {
    /// The JSON-RPC id of its `tools/call`, once sent.
    request_id: Option<RequestId>,
    /// The `progressToken` its request carried (rmcp gives every request its own).
    progress_token: Option<ProgressToken>,
    /// The last progress value handed on (values must increase; see [`Routes::progress`]).
    last_progress: Option<f64>,
    elicitor: Option<Arc<dyn Elicitor>>,
    /// Elicitations of this call waiting for an answer.
    waiting: usize,
    /// When its last elicitation was answered (the call timeout restarts from there).
    answered_at: Option<Instant>,
}

#[derive(Default)]
struct RouteTable {
    next: u64,
    /// Calls in flight, by registration order.
    calls: BTreeMap<u64, Route>,
    /// Calls that ended moments ago. rmcp hands a response to its caller at once but runs a
    /// notification handler as a task of its own, so the progress and log messages a server
    /// sends just before its result can be handled after the call has ended: they still go to
    /// the call they name.
    ended: VecDeque<(Instant, Route)>,
}

/// How long (and how many) ended calls still take their late notifications.
const ENDED_GRACE: Duration = Duration::from_secs(2);
const ENDED_KEPT: usize = 64;

impl RouteTable {
    /// The route (in flight or just ended) matching `pred`.
    fn named(&self, pred: impl Fn(&Route) -> bool) -> Option<&Route> {
        self.calls
            .values()
            .find(|r| pred(r))
            .or_else(|| self.ended.iter().map(|(_, r)| r).find(|r| pred(r)))
    }

    fn named_mut(&mut self, pred: impl Fn(&Route) -> bool) -> Option<&mut Route> {
        match self.calls.values_mut().find(|r| pred(r)) {
            Some(route) => Some(route),
            None => self.ended.iter_mut().map(|(_, r)| r).find(|r| pred(r)),
        }
    }
}

/// The calls in flight on one session, for routing the server's elicitations.
#[derive(Default)]
pub(crate) struct Routes {
    table: Mutex<RouteTable>,
    changed: tokio::sync::Notify,
}

/// How long an elicitation that names a request we have not registered yet waits for it.
const REGISTRATION_WAIT: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes its call from the table when the call ends (or is dropped).
pub(crate) struct Registration {
    routes: Arc<Routes>,
    key: u64,
}

impl Registration {
    /// The call's request went out with `id` and `progress_token`.
    pub(crate) fn sent(&self, id: RequestId, progress_token: ProgressToken) {
        if let Some(route) = lock(&self.routes.table).calls.get_mut(&self.key) {
            route.request_id = Some(id);
            route.progress_token = Some(progress_token);
        }
        self.routes.changed.notify_waiters();
    }

    /// Whether an elicitation of this call is waiting for a person.
    pub(crate) fn waiting(&self) -> bool {
        lock(&self.routes.table)
            .calls
            .get(&self.key)
            .is_some_and(|r| r.waiting > 0)
    }

    /// When the call's last elicitation was answered.
    pub(crate) fn answered_at(&self) -> Option<Instant> {
        lock(&self.routes.table)
            .calls
            .get(&self.key)
            .and_then(|r| r.answered_at)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut table = lock(&self.routes.table);
        let now = Instant::now();
        while table
            .ended
            .front()
            .is_some_and(|(at, _)| *at + ENDED_GRACE < now)
            || table.ended.len() >= ENDED_KEPT
        {
            table.ended.pop_front();
        }
        if let Some(route) = table.calls.remove(&self.key)
            && route.request_id.is_some()
        {
            table.ended.push_back((now, route));
        }
        drop(table);
        self.routes.changed.notify_waiters();
    }
}

enum Found {
    Route(u64, Option<Arc<dyn Elicitor>>),
    /// Some call's request id is not known yet: it may be the one.
    Unsent,
    Nobody,
}

impl Routes {
    /// Registers a call about to be sent.
    pub(crate) fn register(self: &Arc<Self>, elicitor: Option<Arc<dyn Elicitor>>) -> Registration {
        let mut table = lock(&self.table);
        let key = table.next;
        table.next += 1;
        table.calls.insert(
            key,
            Route {
                request_id: None,
                progress_token: None,
                last_progress: None,
                elicitor,
                waiting: 0,
                answered_at: None,
            },
        );
        Registration {
            routes: self.clone(),
            key,
        }
    }

    fn find(&self, origin: Option<&RequestId>, fallback: bool) -> Found {
        let table = lock(&self.table);
        if let Some(id) = origin
            && let Some((key, route)) = table
                .calls
                .iter()
                .find(|(_, r)| r.request_id.as_ref() == Some(id))
        {
            return Found::Route(*key, route.elicitor.clone());
        }
        if origin.is_some() && !fallback && table.calls.values().any(|r| r.request_id.is_none()) {
            return Found::Unsent;
        }
        match table.calls.iter().next() {
            Some((key, route)) => Found::Route(*key, route.elicitor.clone()),
            None => Found::Nobody,
        }
    }

    fn mark(&self, key: u64, asking: bool) {
        if let Some(route) = lock(&self.table).calls.get_mut(&key) {
            if asking {
                route.waiting += 1;
            } else {
                route.waiting = route.waiting.saturating_sub(1);
                route.answered_at = Some(Instant::now());
            }
        }
    }

    /// The call a server request belongs to (see the module docs), waiting briefly for one
    /// whose request id is not known yet. `None`: no call is in flight.
    async fn route_of(
        &self,
        origin: Option<&InboundStreamOrigin>,
    ) -> Option<(u64, Option<Arc<dyn Elicitor>>)> {
        let origin_id = match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
            _ => None,
        };
        let deadline = Instant::now() + REGISTRATION_WAIT;
        loop {
            let changed = self.changed.notified();
            match self.find(origin_id.as_ref(), Instant::now() >= deadline) {
                Found::Route(key, elicitor) => return Some((key, elicitor)),
                Found::Nobody => return None,
                Found::Unsent => {
                    let _ = tokio::time::timeout_at(deadline, changed).await;
                }
            }
        }
    }

    /// Hands one `notifications/progress` of the server to the call whose request carried its
    /// token. Progress for a token we no longer (or never) had is dropped, as MCP allows.
    ///
    /// rmcp handles each notification in a task of its own, so two progress notifications sent
    /// in a row can be handled in either order: one that does not increase on what was handed
    /// on is stale and dropped, so the call's elicitor sees an increasing series.
    pub(crate) fn progress(&self, label: &str, params: ProgressNotificationParam) {
        let elicitor = {
            let mut table = lock(&self.table);
            match table.named_mut(|r| r.progress_token.as_ref() == Some(&params.progress_token)) {
                Some(route)
                    if route
                        .last_progress
                        .is_some_and(|last| params.progress <= last) =>
                {
                    tracing::debug!(%label, "downstream progress out of order; dropped");
                    return;
                }
                Some(route) => {
                    route.last_progress = Some(params.progress);
                    route.elicitor.clone()
                }
                None => None,
            }
        };
        match elicitor {
            Some(elicitor) => elicitor.progress(params.progress, params.total, params.message),
            None => tracing::debug!(%label, "downstream progress for no call in flight; dropped"),
        }
    }

    /// Hands one `notifications/message` of the server to the call it belongs to: the one whose
    /// POST stream it arrived on, else the only call in flight on the session. With several
    /// calls and no association (the GET stream, stdio), nobody can tell whose it is: dropped.
    #[allow(deprecated)]
    pub(crate) fn log(
        &self,
        label: &str,
        params: LoggingMessageNotificationParam,
        origin: Option<&InboundStreamOrigin>,
    ) {
        let elicitor = {
            let table = lock(&self.table);
            let by_origin = match origin {
                Some(InboundStreamOrigin::OutboundRequest(id)) => {
                    table.named(|r| r.request_id.as_ref() == Some(id))
                }
                _ => None,
            };
            let only = || {
                let mut calls = table.calls.values();
                match (calls.next(), calls.next()) {
                    (Some(route), None) => Some(route),
                    _ => None,
                }
            };
            by_origin.or_else(only).and_then(|r| r.elicitor.clone())
        };
        let Some(elicitor) = elicitor else {
            tracing::debug!(%label, "downstream log message with no call to hand it to; dropped");
            return;
        };
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "info".to_owned());
        elicitor.log(&level, params.logger.as_deref(), &params.data);
    }

    /// Answers one `elicitation/create` of the server.
    pub(crate) async fn elicit(
        &self,
        label: &str,
        params: ElicitRequestParams,
        origin: Option<&InboundStreamOrigin>,
    ) -> ElicitResult {
        let Some(request) = Elicitation::from_params(params) else {
            return ElicitAnswer::cancel().into_result();
        };
        let Some((key, elicitor)) = self.route_of(origin).await else {
            tracing::info!(%label, "downstream elicitation outside any tool call; cancelled");
            return ElicitAnswer::cancel().into_result();
        };
        let Some(elicitor) = elicitor else {
            tracing::info!(%label, "downstream elicitation with nobody to ask; cancelled");
            return ElicitAnswer::cancel().into_result();
        };
        self.mark(key, true);
        let mut answer = elicitor.elicit(request.clone()).await;
        self.mark(key, false);
        if answer.action == ElicitAction::Accept {
            answer.content = request.with_defaults(answer.content);
        }
        answer.into_result()
    }

    /// Answers one `sampling/createMessage` of the server through the sampler of the call it
    /// belongs to. The call timeout waits while the model answers, as for a person.
    #[allow(deprecated)]
    pub(crate) async fn sample(
        &self,
        label: &str,
        params: CreateMessageRequestParams,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let Some((key, Some(elicitor))) = self.route_of(origin).await else {
            tracing::info!(%label, "downstream sampling request with no call to answer it; refused");
            return Err(no_sampler());
        };
        let Some(sampler) = elicitor.sampler() else {
            tracing::info!(%label, "downstream sampling request, but the agent's client cannot sample; refused");
            return Err(no_sampler());
        };
        let params = serde_json::to_value(&params)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        self.mark(key, true);
        let answer = sampler.create_message(params).await;
        self.mark(key, false);
        match answer {
            Ok(result) => serde_json::from_value(result).map_err(|e| {
                rmcp::ErrorData::internal_error(
                    format!("the agent's client answered sampling with an unreadable result: {e}"),
                    None,
                )
            }),
            Err(e) => Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode(e.code),
                e.message,
                None,
            )),
        }
    }
}
