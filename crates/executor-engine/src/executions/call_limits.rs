//! What one tool call may take from the server: time, a share of an integration, and the size of
//! its answer. A hanging or huge upstream then costs its own callers an error value, never the
//! server its other executions (issue #17).
//!
//! Limits (`call_limits.rs`, `executions/` `Admission`): every integration call has a call timeout
//! (`upstream_timeout`; the MCP client's own timer, which pauses while a person answers an
//! elicitation, is set to the same value), a share of its integration (64 calls in flight, a 5 s
//! wait, then `integration_busy`); every live host call's answer is capped
//! (`tool_output_too_large`) in `journal::call`, whose one size count also decides what the journal
//! keeps; executions are admitted up to the pool's slots with a bounded queue and wait
//! (`EngineError::Busy` → 503 + `Retry-After`); an execution whose caller drops the `execute`
//! future before it answers is aborted, its spawned host calls and their upstream requests with it.
//! The journal keeps at most 1 MiB of a call's answer (beyond it a digest, which a replay refuses).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_core::{ToolError, ToolOutcome};
use executor_sandbox::HostReply;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default [`CallLimitsConfig::call_timeout`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default [`CallLimitsConfig::max_output_bytes`].
pub const DEFAULT_MAX_TOOL_OUTPUT_BYTES: usize = 16 * 1024 * 1024;
/// Default [`CallLimitsConfig::per_integration`].
pub const DEFAULT_CALLS_PER_INTEGRATION: usize = 64;
/// Default [`CallLimitsConfig::slot_wait`].
pub const DEFAULT_SLOT_WAIT: Duration = Duration::from_secs(5);

/// Limits on every integration tool call.
#[derive(Debug, Clone)]
pub struct CallLimitsConfig {
    /// How long one call may take upstream (headers and body, or the MCP answer). The time a
    /// person spends answering an elicitation of the call does not count.
    pub call_timeout: Duration,
    /// Largest answer (as JSON) handed to the sandbox; larger ones are
    /// `tool_output_too_large`.
    pub max_output_bytes: usize,
    /// Calls one integration may have in flight at once, across all executions.
    pub per_integration: usize,
    /// How long a call waits for one of those slots before it is `integration_busy`.
    pub slot_wait: Duration,
}

impl Default for CallLimitsConfig {
    fn default() -> Self {
        Self {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_TOOL_OUTPUT_BYTES,
            per_integration: DEFAULT_CALLS_PER_INTEGRATION,
            slot_wait: DEFAULT_SLOT_WAIT,
        }
    }
}

/// The limits and the slots of each integration.
pub(crate) struct CallLimits {
    pub(crate) config: CallLimitsConfig,
    /// By tenant, then integration slug: one tenant's hanging upstream never takes another's.
    slots: Mutex<HashMap<String, HashMap<String, Arc<Semaphore>>>>,
}

impl CallLimits {
    pub(crate) fn new(config: CallLimitsConfig) -> Self {
        Self {
            config: CallLimitsConfig {
                per_integration: config.per_integration.max(1),
                ..config
            },
            slots: Mutex::default(),
        }
    }

    /// A slot of `integration`, waiting up to the slot wait for one; else `integration_busy`.
    /// An integration whose calls hang holds at most its own slots, so executions that call it
    /// fail fast and end instead of piling up behind it.
    pub(crate) async fn slot(
        &self,
        tenant: &str,
        integration: &str,
    ) -> Result<OwnedSemaphorePermit, ToolError> {
        let semaphore = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            match slots
                .get(tenant)
                .and_then(|of_tenant| of_tenant.get(integration))
            {
                Some(semaphore) => semaphore.clone(),
                None => slots
                    .entry(tenant.to_owned())
                    .or_default()
                    .entry(integration.to_owned())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.config.per_integration)))
                    .clone(),
            }
        };
        if let Ok(permit) = semaphore.clone().try_acquire_owned() {
            return Ok(permit);
        }
        match tokio::time::timeout(self.config.slot_wait, semaphore.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(ToolError::new(
                "integration_busy",
                format!(
                    "{integration} already has {} calls in flight (the limit); none finished within {} s. Try again later.",
                    self.config.per_integration,
                    self.config.slot_wait.as_secs_f64()
                ),
            )
            .with_retryable(true)
            .with_details(json!({
                "integration": integration,
                "limit": self.config.per_integration,
            }))),
        }
    }

    /// The reply, or `tool_output_too_large` when its JSON is over the output limit, with the
    /// size of what is returned (a rejection's message length), so the journal need not
    /// measure it again.
    pub(crate) fn cap_output(&self, reply: HostReply) -> (HostReply, usize) {
        let value = match &reply {
            HostReply::Resolve(value) => value,
            HostReply::Reject(message) => {
                let bytes = message.len();
                return (reply, bytes);
            }
        };
        let limit = self.config.max_output_bytes;
        let bytes = json_size(value);
        if bytes <= limit {
            return (reply, bytes);
        }
        let refused = ToolOutcome::Err(
            ToolError::new(
                "tool_output_too_large",
                format!(
                    "The tool answered {bytes} bytes, over the limit of {limit} bytes. Ask for less (a page, a filter, fewer fields)."
                ),
            )
            .with_retryable(false)
            .with_details(json!({ "bytes": bytes, "limit": limit })),
        )
        .to_json();
        let refused_bytes = json_size(&refused);
        (HostReply::Resolve(refused), refused_bytes)
    }
}

/// Length of `value` as compact JSON, counted without building the text.
pub(crate) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_integration: usize, max_output_bytes: usize) -> CallLimits {
        CallLimits::new(CallLimitsConfig {
            per_integration,
            max_output_bytes,
            slot_wait: Duration::from_millis(50),
            ..CallLimitsConfig::default()
        })
    }

    #[test]
    fn json_size_is_the_compact_length() {
        let v = json!({"a": [1, "two", null], "b": {"c": true}});
        assert_eq!(json_size(&v), v.to_string().len());
    }

    #[test]
    fn answers_over_the_limit_become_an_error_value() {
        let limits = limits(1, 10);
        let small = HostReply::Resolve(json!("12345678"));
        assert!(matches!(limits.cap_output(small), (HostReply::Resolve(v), 10) if v == "12345678"));
        let big = HostReply::Resolve(json!({"data": "x".repeat(100)}));
        let (HostReply::Resolve(v), _) = limits.cap_output(big) else {
            panic!("expected a value");
        };
        assert_eq!(v["ok"], false);
        assert_eq!(v["error"]["code"], "tool_output_too_large");
        assert_eq!(v["error"]["details"]["limit"], 10);
        assert_eq!(v["error"]["details"]["bytes"], 111);
    }

    #[tokio::test]
    async fn an_integration_holds_only_its_own_slots() {
        let limits = limits(2, 10);
        let a1 = limits.slot("t", "a").await.unwrap();
        let _a2 = limits.slot("t", "a").await.unwrap();
        let busy = limits.slot("t", "a").await.unwrap_err();
        assert_eq!(busy.code, "integration_busy");
        // Another integration is not affected, nor another tenant's of the same slug.
        let _b = limits.slot("t", "b").await.unwrap();
        let _other_tenant = limits.slot("u", "a").await.unwrap();
        drop(a1);
        let _again = limits.slot("t", "a").await.unwrap();
    }
}
