//! The team server's rules on the workspace (issue #24): who may change it, and the audit log
//! of what its members changed and called.
//!
//! Members read and use the workspace and fully control their own (`user`) rows; changing the
//! catalog or any `org` row takes an admin or owner. The role is read from the store at each
//! decision, so a promotion or demotion applies to the next write, a resumed execution's
//! included. Local owners and embedders (callers that are not members) may write everything and
//! are not audited.
//!
//! Audit events are buffered and appended in batches off the caller's path: a tool call does
//! not wait for its line in the log.

use std::sync::{Arc, Mutex};

use executor_core::{Owner, now_ms};
use executor_store::{AuditRecord, Store};
use serde_json::Value;

use crate::caller::{Caller, Principal};
use crate::error::{EngineError, EngineResult};

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditKind {
    /// A change to the workspace (or to the caller's own rows).
    Change,
    /// A tool call.
    ToolCall,
}

/// One thing a member did, before it is stamped with who and when.
#[derive(Debug, Clone)]
pub struct AuditEntry {
    pub kind: AuditKind,
    pub action: String,
    pub target: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// `ok`, `error`, `denied` or `paused`.
    pub outcome: &'static str,
    pub detail: Option<Value>,
}

impl AuditEntry {
    pub fn change(action: impl Into<String>, target: impl Into<String>) -> Self {
        AuditEntry {
            kind: AuditKind::Change,
            action: action.into(),
            target: Some(target.into()),
            before: None,
            after: None,
            outcome: "ok",
            detail: None,
        }
    }

    pub fn before(mut self, value: Option<Value>) -> Self {
        self.before = value;
        self
    }

    pub fn after(mut self, value: Option<Value>) -> Self {
        self.after = value;
        self
    }
}

/// How the caller signed in, as the log shows it.
fn via(principal: Principal) -> &'static str {
    match principal {
        Principal::UserSession => "session",
        Principal::ApiKey => "api_key",
        Principal::AgentToken => "oauth",
        Principal::LocalOwner => "system",
    }
}

/// Events waiting for their batch.
#[derive(Default)]
pub(crate) struct AuditLog {
    pending: Mutex<Vec<AuditRecord>>,
    /// Held while a batch is written, so a reader's flush returns only once every event
    /// recorded before it is in the store.
    writing: tokio::sync::Mutex<()>,
}

impl AuditLog {
    fn push(self: &Arc<Self>, store: &Arc<dyn Store>, record: AuditRecord) {
        let first = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.push(record);
            pending.len() == 1
        };
        if first {
            let log = self.clone();
            let store = store.clone();
            tokio::spawn(async move { log.flush(&store).await });
        }
    }

    async fn flush(&self, store: &Arc<dyn Store>) {
        let _writing = self.writing.lock().await;
        let batch = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() {
            return;
        }
        if let Err(e) = store.append_audit(&batch).await {
            tracing::error!(error = %e, events = batch.len(), "could not write audit events");
        }
    }
}

impl crate::Engine {
    /// Whether the caller may change workspace (`org`) rows: a caller that is not a member,
    /// or a member whose role, read now, is admin or owner. Asks nothing of the audit log.
    pub(crate) async fn may_write_org(&self, caller: &Caller) -> EngineResult<bool> {
        if caller.member_email().is_none() {
            return Ok(true);
        }
        let role = match caller.subject() {
            Some(user) => self
                .inner
                .store
                .get_user(caller.tenant(), user)
                .await?
                .map(|u| u.role),
            None => None,
        };
        Ok(matches!(role.as_deref(), Some("owner" | "admin")))
    }

    /// `Ok` when the caller may change rows of `owner` (`None`: the tenant's catalog, which
    /// every member shares). `what` completes "Only workspace admins can …".
    pub async fn ensure_may_write(
        &self,
        caller: &Caller,
        owner: Option<Owner>,
        what: &str,
    ) -> EngineResult<()> {
        if owner == Some(Owner::User) || self.may_write_org(caller).await? {
            return Ok(());
        }
        // A refused attempt is worth a line too: it is how an admin learns what members try to
        // change.
        self.audit(
            caller,
            AuditEntry {
                outcome: "denied",
                detail: Some(serde_json::json!({ "attempt": what })),
                ..AuditEntry::change("workspace.write", owner.map_or("catalog", Owner::as_str))
            },
        );
        Err(EngineError::OrgWriteDenied {
            message: format!(
                "Only workspace admins can {what}. Ask an admin, or make it a personal one (owner \"user\")."
            ),
        })
    }

    /// Records a member's attempt that was refused (`what` completes "tried to …").
    pub(crate) fn audit_denied(&self, caller: &Caller, action: &str, target: &str, what: &str) {
        self.audit(
            caller,
            AuditEntry {
                outcome: "denied",
                detail: Some(serde_json::json!({ "attempt": what })),
                ..AuditEntry::change(action, target)
            },
        );
    }

    /// Records what a member did (nothing for callers that are not members).
    pub fn audit(&self, caller: &Caller, entry: AuditEntry) {
        if let Some(record) = audit_record(caller, entry) {
            self.inner.audit.push(&self.inner.store, record);
        }
    }

    /// Records what a member is about to do, and returns only once it is in the log: for what
    /// must be on record before it happens (a command about to run on the host). When the line
    /// cannot be written, the caller must not go on.
    pub(crate) async fn audit_before(
        &self,
        caller: &Caller,
        action: &str,
        target: &str,
        what: Value,
    ) -> EngineResult<()> {
        let entry = AuditEntry::change(action, target).after(Some(what));
        if let Some(record) = audit_record(caller, entry) {
            self.inner.store.append_audit(&[record]).await?;
        }
        Ok(())
    }

    /// Writes the events still buffered (a reader of the log sees everything recorded before).
    pub async fn flush_audit(&self) {
        self.inner.audit.flush(&self.inner.store).await;
    }
}

/// The log's record of `entry` by `caller`; `None` for callers that are not members.
fn audit_record(caller: &Caller, entry: AuditEntry) -> Option<AuditRecord> {
    let email = caller.member_email()?;
    Some(AuditRecord {
        id: 0,
        tenant: caller.tenant().to_owned(),
        at: now_ms(),
        kind: match entry.kind {
            AuditKind::Change => "change",
            AuditKind::ToolCall => "tool_call",
        }
        .to_owned(),
        actor_id: caller.subject().map(str::to_owned),
        actor_email: Some(email.to_owned()),
        via: via(caller.principal()).to_owned(),
        action: entry.action,
        target: entry.target,
        before: entry.before,
        after: entry.after,
        outcome: entry.outcome.to_owned(),
        detail: entry.detail,
    })
}
