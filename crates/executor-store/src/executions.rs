//! Durable executions: one row per execution (written when it first pauses, or once when it
//! settles) and its journal of host calls.

use async_trait::async_trait;
use serde_json::Value;

use crate::{Result, Scope};

/// Where an execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionStatus {
    /// Being resumed (or, after a crash, interrupted while it was).
    Running,
    /// Waiting for a person's decision; `pending` holds the interaction.
    Paused,
    /// Settled; `outcome.isError` is false.
    Completed,
    /// Settled with an error outcome.
    Failed,
    /// Paused for longer than the pause TTL and abandoned.
    Expired,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "paused" => Self::Paused,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "expired" => Self::Expired,
            _ => return None,
        })
    }

    /// Completed, failed or expired: the row will not change again.
    pub fn is_settled(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Expired)
    }
}

/// One execution row.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionRecord {
    pub id: String,
    pub code: String,
    pub auto_approve: bool,
    pub status: ExecutionStatus,
    /// The seed of the sandbox's `Math.random`.
    pub seed: u64,
    pub started_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub duration_ms: Option<i64>,
    pub tool_calls: i64,
    /// Clock values handed to the code, in order (JSON array of numbers).
    pub clock: Value,
    /// The pending interaction of a paused execution.
    pub pending: Option<Value>,
    /// The final `{text, structured, isError}`.
    pub outcome: Option<Value>,
}

/// One journaled host call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionCallRecord {
    /// Issue order within the execution, from 0.
    pub seq: i64,
    pub path: String,
    /// Arguments with secret-looking values masked.
    pub args: Value,
    /// Salted hash of the unredacted arguments.
    pub args_hash: String,
    /// `{"resolve": value}` | `{"reject": message}`; `None` while in flight.
    pub outcome: Option<Value>,
    /// The approval interaction when this call paused the execution.
    pub pause: Option<Value>,
    pub started_at: i64,
    pub duration_ms: Option<i64>,
}

/// The history projection of an execution.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionSummary {
    pub id: String,
    pub status: ExecutionStatus,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    pub duration_ms: Option<i64>,
    pub tool_calls: i64,
    /// From the stored outcome, when settled.
    pub is_error: Option<bool>,
}

/// Which executions a history page shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutionFilter {
    pub status: Option<ExecutionStatus>,
    /// Only executions that called a tool of this integration (its slug, the first segment of
    /// a call's path).
    pub integration: Option<String>,
}

/// Persistence of executions and their journals. A supertrait of [`crate::Store`].
///
/// Rows are scoped by tenant and subject; the sweeps (`expire_paused_executions`,
/// `fail_running_executions`, `delete_settled_executions`) work across tenants: they are the
/// background work of the whole deployment, run by one process at a time
/// ([`crate::Store::lead_background`]).
#[async_trait]
pub trait ExecutionStore: Send + Sync + 'static {
    /// Inserts or updates the row and upserts `calls`, in one transaction. A settled row is never
    /// changed again (a late write is ignored), and a call's stored outcome is never replaced by
    /// `None`.
    async fn save_execution(
        &self,
        scope: &Scope,
        rec: &ExecutionRecord,
        calls: &[ExecutionCallRecord],
    ) -> Result<()>;
    /// [`Self::save_execution`] for many executions in one transaction (the history writer
    /// batches settled executions this way).
    async fn save_executions(
        &self,
        scope: &Scope,
        batch: &[(ExecutionRecord, Vec<ExecutionCallRecord>)],
    ) -> Result<()>;
    /// Upserts one call of an already saved execution (same rules as [`Self::save_execution`]).
    async fn save_execution_call(
        &self,
        execution_id: &str,
        call: &ExecutionCallRecord,
    ) -> Result<()>;
    async fn get_execution(&self, scope: &Scope, id: &str) -> Result<Option<ExecutionRecord>>;
    /// The journal, in `seq` order.
    async fn execution_calls(&self, execution_id: &str) -> Result<Vec<ExecutionCallRecord>>;
    /// `paused` → `running` when the row is paused and not past `expires_at` at `now`.
    /// Whether this caller won the claim.
    async fn claim_paused_execution(&self, scope: &Scope, id: &str, now: i64) -> Result<bool>;
    /// Newest first, those `filter` lets through.
    async fn list_executions(
        &self,
        scope: &Scope,
        filter: &ExecutionFilter,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<ExecutionSummary>>;
    /// Paused rows with `expires_at <= now` become `expired` with `outcome`; returns their ids.
    async fn expire_paused_executions(&self, now: i64, outcome: &Value) -> Result<Vec<String>>;
    /// Rows left `running` (the process stopped while resuming them) and last updated before
    /// `updated_before` become `failed` with `outcome`. Returns how many. A process that owns
    /// the database passes `now`; replicas pass a time no live resume can be older than.
    async fn fail_running_executions(
        &self,
        now: i64,
        updated_before: i64,
        outcome: &Value,
    ) -> Result<u64>;
    /// Deletes settled executions (and their journals) that finished before `before`.
    async fn delete_settled_executions(&self, before: i64) -> Result<u64>;
}
