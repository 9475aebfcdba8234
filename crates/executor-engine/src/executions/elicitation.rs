//! Downstream MCP elicitations (spec §4.6, §6 "Elicitation bridge"): when the server of an MCP
//! call sends `elicitation/create` while it runs that call, the execution pauses exactly as for
//! an approval, and the person's answer (accept + form content, decline, cancel) goes back to the
//! server as the elicitation result.
//!
//! `autoApprove` (the caller is the approver) answers inline only a form that asks for nothing
//! (no properties): accepting it needs no one. A form that asks for values, or a URL the person
//! must open, pauses even then, since nobody could fill it in inline.

use std::sync::Arc;

use executor_mcp::{ElicitAction, ElicitAnswer, Elicitation, Elicitor, Sampler};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::AgentLink;
use super::dispatch::ExecutionCtx;
use super::journal::{CallMeta, Journal, PauseSink};
use super::{ExecEvent, PauseKind, PauseRequest, ResumeAction};
use executor_core::ToolAddress;

/// Answers the elicitations of one MCP call by pausing its execution.
pub(crate) struct CallElicitor {
    sink: PauseSink,
    /// The journaled call (answers given before a restart are reused).
    meta: Option<CallMeta>,
    auto_approve: bool,
    address: String,
    args: Value,
    /// What the agent lends the execution: the server's sampling requests go to its client,
    /// the server's progress to its progress sink.
    agent: AgentLink,
    /// `<integration>.<connection>`: who is speaking in the server's log lines.
    upstream: String,
    journal: Arc<Journal>,
}

/// The elicitor of the call the current task runs.
pub(crate) fn for_call(
    ctx: &ExecutionCtx,
    address: &ToolAddress,
    args: &Value,
) -> Arc<dyn Elicitor> {
    Arc::new(CallElicitor {
        sink: ctx.pause_sink(),
        meta: super::journal::current_call(),
        auto_approve: ctx.auto_approve(),
        address: address.to_string(),
        args: args.clone(),
        agent: ctx.agent.clone(),
        upstream: format!("{}.{}", address.integration, address.connection),
        journal: ctx.journal.clone(),
    })
}

/// One upstream log message as a line of the execution's logs: text as it is, anything else
/// as compact JSON.
fn log_line(upstream: &str, level: &str, logger: Option<&str>, data: &Value) -> String {
    let text = match data {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match logger {
        Some(logger) => format!("[upstream {upstream} {level}] {logger}: {text}"),
        None => format!("[upstream {upstream} {level}] {text}"),
    }
}

/// The result the server gets for `action` (`content` as the person gave it).
fn answer(request: &Elicitation, action: ResumeAction, content: Option<Value>) -> ElicitAnswer {
    match action {
        ResumeAction::Accept => ElicitAnswer {
            action: ElicitAction::Accept,
            content: match request {
                Elicitation::Form { .. } => {
                    content.or_else(|| request.asks_for_nothing().then(|| json!({})))
                }
                Elicitation::Url { .. } => None,
            },
        },
        ResumeAction::Decline => ElicitAnswer {
            action: ElicitAction::Decline,
            content: None,
        },
        ResumeAction::Cancel => ElicitAnswer::cancel(),
    }
}

impl Elicitor for CallElicitor {
    fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        self.agent.sampler.clone()
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sink) = &self.agent.progress {
            sink.progress(progress, total, message);
        }
    }

    fn log(&self, level: &str, logger: Option<&str>, data: &Value) {
        self.journal
            .upstream_log(log_line(&self.upstream, level, logger, data));
    }

    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitAnswer> {
        if self.auto_approve && request.asks_for_nothing() {
            let inline = answer(&request, ResumeAction::Accept, None);
            return Box::pin(std::future::ready(inline));
        }
        let kind = match &request {
            Elicitation::Form {
                requested_schema, ..
            } => PauseKind::Form {
                requested_schema: requested_schema.clone(),
            },
            Elicitation::Url { url, .. } => PauseKind::Url { url: url.clone() },
        };
        let (respond, answered) = oneshot::channel();
        let pause = PauseRequest {
            message: request.message().to_owned(),
            address: self.address.clone(),
            args: self.args.clone(),
            kind,
            respond,
        };
        if self
            .sink
            .send_as(self.meta.as_ref(), ExecEvent::Paused(pause))
            .is_err()
        {
            // The execution is over: nobody will answer.
            return Box::pin(std::future::ready(ElicitAnswer::cancel()));
        }
        Box::pin(async move {
            match answered.await {
                Ok((action, content)) => answer(&request, action, content),
                // Abandoned (expired, shut down): the server hears a cancel.
                Err(_) => ElicitAnswer::cancel(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_content_only_when_accepted() {
        let form = Elicitation::Form {
            message: "m".into(),
            requested_schema: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        };
        let nothing = Elicitation::Form {
            message: "m".into(),
            requested_schema: json!({"type": "object", "properties": {}}),
        };
        let url = Elicitation::Url {
            message: "m".into(),
            url: "https://x".into(),
            elicitation_id: "1".into(),
        };
        let given = Some(json!({"a": "b"}));
        assert_eq!(
            answer(&form, ResumeAction::Accept, given.clone()).content,
            given
        );
        assert_eq!(answer(&form, ResumeAction::Accept, None).content, None);
        assert_eq!(
            answer(&nothing, ResumeAction::Accept, None).content,
            Some(json!({}))
        );
        assert_eq!(
            answer(&url, ResumeAction::Accept, given.clone()).content,
            None
        );
        let declined = answer(&form, ResumeAction::Decline, given);
        assert_eq!(
            (declined.action, declined.content),
            (ElicitAction::Decline, None)
        );
        assert_eq!(
            answer(&url, ResumeAction::Cancel, None).action,
            ElicitAction::Cancel
        );
    }
}
