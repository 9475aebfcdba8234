//! Tool policies: CRUD with validation, and the one resolver every surface asks. Patterns are
//! checked when written (a bad pattern is a clear 400, not the original's 500), and each write
//! reports how many known tools the pattern matches, so a dead `block` rule shows at once.
//!
//! `policies.rs` holds policy CRUD with validation (each rule records its author, `person` for the
//! HTTP API and `agent` for the core tools, `0007_policy_author.sql`; `PolicySet::resolve` lets a
//! person's `block` stand over any agent rule, and agents change only agents' rules) (a bad pattern
//! is a 400; each write reports how many known tools it matches) and the cached `PolicySet` every
//! surface resolves against; blocked tools are left out of search, describe and agent listings.

use std::sync::Arc;

use executor_core::policy::{
    PolicyAction, PolicyAuthor, PolicyPattern, PolicyRule, PolicySet, count_matches,
    default_position, policy_id, validate_position,
};
use executor_core::{Owner, now_ms};
use executor_store::PolicyRecord;

use crate::AuditEntry;
use crate::Engine;
use crate::caller::{Caller, PolicyKey, PolicySource};
use crate::error::{EngineError, EngineResult};

/// A policy as the API returns it, with the number of known tools its pattern matches.
#[derive(Debug, Clone)]
pub struct PolicyView {
    pub id: String,
    pub owner: Owner,
    pub pattern: String,
    pub action: PolicyAction,
    pub position: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub matches: usize,
    pub author: PolicyAuthor,
}

/// The rule snapshot, rebuilt when the catalog generation (bumped by policy writes) moves.
#[derive(Default)]
pub(crate) struct PolicyCache {
    /// By tenant, subject and policy source.
    sets: crate::cache::PerKey<PolicyKey, PolicySet>,
}

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidPolicy {
        message: message.into(),
    }
}

fn parse_pattern(raw: &str) -> EngineResult<PolicyPattern> {
    PolicyPattern::parse(raw.trim())
        .map_err(|e| invalid(format!("Invalid policy pattern {raw:?}: {e}")))
}

fn parse_action(raw: &str) -> EngineResult<PolicyAction> {
    raw.parse()
        .map_err(|e: executor_core::policy::ActionError| invalid(e.to_string()))
}

/// The caller under the global policies: what the policy routes and core tools edit, whichever
/// source gates the caller's calls.
fn global(caller: &Caller) -> Caller {
    caller.clone().with_policies(PolicySource::Global)
}

fn rule_from(record: &PolicyRecord) -> Option<PolicyRule> {
    Some(PolicyRule {
        id: record.id.clone(),
        owner: record.owner,
        pattern: PolicyPattern::parse(&record.pattern).ok()?,
        action: record.action.parse().ok()?,
        position: record.position.clone(),
        author: record.author,
    })
}

impl Engine {
    /// Every visible rule: user rules first, then org, each by position.
    pub async fn list_policies(&self, caller: &Caller) -> EngineResult<Vec<PolicyView>> {
        let set = self.policy_set(&global(caller)).await?;
        let ids = self.policy_tool_ids(caller).await?;
        let records = self.inner.store.list_policies(caller.scope()).await?;
        Ok(set
            .rules()
            .iter()
            .filter_map(|rule| {
                let record = records.iter().find(|r| r.id == rule.id)?;
                Some(view(
                    record,
                    rule.action,
                    count_matches(&rule.pattern, ids.iter().map(String::as_str)),
                ))
            })
            .collect())
    }

    /// A person's rule (the HTTP API).
    pub async fn create_policy(
        &self,
        caller: &Caller,
        owner: Owner,
        pattern: &str,
        action: &str,
        position: Option<String>,
    ) -> EngineResult<PolicyView> {
        self.create_policy_by(
            caller,
            PolicyAuthor::Person,
            owner,
            pattern,
            action,
            position,
        )
        .await
    }

    pub(crate) async fn create_policy_by(
        &self,
        caller: &Caller,
        author: PolicyAuthor,
        owner: Owner,
        pattern: &str,
        action: &str,
        position: Option<String>,
    ) -> EngineResult<PolicyView> {
        self.ensure_may_write(caller, Some(owner), "create workspace policies")
            .await?;
        let pattern = parse_pattern(pattern)?;
        let action = parse_action(action)?;
        let position = match position {
            Some(p) => {
                validate_position(&p)
                    .map_err(|e| invalid(format!("Invalid position {p:?}: {e}")))?;
                Some(p)
            }
            None => None,
        };
        let now = now_ms();
        let mut record = PolicyRecord {
            id: policy_id(rand::random(), now),
            owner,
            pattern: pattern.as_str().to_owned(),
            action: action.as_str().to_owned(),
            position: position.clone().unwrap_or_default(),
            created_at: now,
            updated_at: now,
            author,
        };
        // The default place is chosen inside the write, from the rules as they are then.
        let place = |visible: &[PolicyRecord]| {
            let rules: Vec<PolicyRule> = visible.iter().filter_map(rule_from).collect();
            default_position(&rules, owner, &pattern)
        };
        record.position = self
            .inner
            .store
            .insert_policy(
                caller.scope(),
                &record,
                if position.is_none() {
                    Some(&place)
                } else {
                    None
                },
            )
            .await?;
        self.policies_changed();
        self.audit(
            caller,
            AuditEntry::change("policy.create", &record.id).after(Some(audited(&record))),
        );
        self.policy_view(caller, &record, &pattern, action).await
    }

    pub async fn update_policy(
        &self,
        caller: &Caller,
        id: &str,
        owner: Owner,
        pattern: Option<&str>,
        action: Option<&str>,
        position: Option<String>,
    ) -> EngineResult<PolicyView> {
        self.ensure_may_write(caller, Some(owner), "change workspace policies")
            .await?;
        let not_found = || EngineError::PolicyNotFound { id: id.to_owned() };
        let current = self
            .inner
            .store
            .list_policies(caller.scope())
            .await?
            .into_iter()
            .find(|r| r.id == id && r.owner == owner)
            .ok_or_else(not_found)?;
        let pattern = parse_pattern(pattern.unwrap_or(&current.pattern))?;
        let action = parse_action(action.unwrap_or(&current.action))?;
        if let Some(p) = &position {
            validate_position(p).map_err(|e| invalid(format!("Invalid position {p:?}: {e}")))?;
        }
        let current_seen = current.clone();
        let record = PolicyRecord {
            pattern: pattern.as_str().to_owned(),
            action: action.as_str().to_owned(),
            position: position.unwrap_or(current.position),
            ..current
        };
        let updated = self
            .inner
            .store
            .update_policy(caller.scope(), &record)
            .await?
            .ok_or_else(not_found)?;
        self.policies_changed();
        self.audit(
            caller,
            AuditEntry::change("policy.update", id)
                .before(Some(audited(&current_seen)))
                .after(Some(audited(&updated))),
        );
        self.policy_view(caller, &updated, &pattern, action).await
    }

    /// Whether a policy was removed (an unknown id removes nothing; the HTTP route answers 404).
    pub async fn remove_policy(
        &self,
        caller: &Caller,
        owner: Owner,
        id: &str,
    ) -> EngineResult<bool> {
        self.ensure_may_write(caller, Some(owner), "remove workspace policies")
            .await?;
        let before = match caller.member_email() {
            Some(_) => self
                .inner
                .store
                .list_policies(caller.scope())
                .await?
                .into_iter()
                .find(|r| r.id == id && r.owner == owner),
            None => None,
        };
        let removed = self
            .inner
            .store
            .delete_policy(caller.scope(), owner, id)
            .await?;
        if removed {
            self.policies_changed();
            self.audit(
                caller,
                AuditEntry::change("policy.remove", id).before(before.as_ref().map(audited)),
            );
        }
        Ok(removed)
    }

    /// Who wrote the visible policy `id` of `owner`; `None` when there is none.
    pub(crate) async fn policy_author(
        &self,
        caller: &Caller,
        owner: Owner,
        id: &str,
    ) -> EngineResult<Option<PolicyAuthor>> {
        Ok(self
            .inner
            .store
            .list_policies(caller.scope())
            .await?
            .into_iter()
            .find(|r| r.id == id && r.owner == owner)
            .map(|r| r.author))
    }

    pub(crate) async fn policy_set(&self, caller: &Caller) -> EngineResult<Arc<PolicySet>> {
        let generation = self
            .inner
            .catalog_generation
            .load(std::sync::atomic::Ordering::Acquire);
        self.inner
            .policies
            .sets
            .get_or_build(caller.policy_key(), generation, || async {
                if let Some(slug) = caller.toolkit() {
                    return self.toolkit_policy_set(caller, slug).await;
                }
                let records = self.inner.store.list_policies(caller.scope()).await?;
                let rules: Vec<PolicyRule> = records
                    .iter()
                    .filter_map(|r| {
                        let rule = rule_from(r);
                        if rule.is_none() {
                            tracing::warn!(policy = %r.id, "ignoring a stored policy that no longer parses");
                        }
                        rule
                    })
                    .collect();
                Ok::<_, EngineError>(PolicySet::new(rules))
            })
            .await
    }

    pub(crate) fn policies_changed(&self) {
        // Policies change what listings, search and describe show: every cache rebuilds.
        self.tools_changed();
    }

    /// Policy ids of every known tool: `<integration>.<owner>.<connection>.<tool>` and static fqids.
    async fn policy_tool_ids(&self, caller: &Caller) -> EngineResult<Vec<String>> {
        let mut ids: Vec<String> = self
            .inner
            .core_tools
            .iter()
            .map(|t| t.fqid.to_owned())
            .collect();
        ids.extend(
            self.inner
                .store
                .list_tools(caller.scope(), &executor_store::ToolFilter::default())
                .await?
                .iter()
                .map(|t| t.address().path()),
        );
        Ok(ids)
    }

    async fn policy_view(
        &self,
        caller: &Caller,
        record: &PolicyRecord,
        pattern: &PolicyPattern,
        action: PolicyAction,
    ) -> EngineResult<PolicyView> {
        let ids = self.policy_tool_ids(caller).await?;
        Ok(view(
            record,
            action,
            count_matches(pattern, ids.iter().map(String::as_str)),
        ))
    }
}

fn view(record: &PolicyRecord, action: PolicyAction, matches: usize) -> PolicyView {
    PolicyView {
        id: record.id.clone(),
        owner: record.owner,
        pattern: record.pattern.clone(),
        action,
        position: record.position.clone(),
        created_at: record.created_at,
        updated_at: record.updated_at,
        matches,
        author: record.author,
    }
}

/// A rule as the audit log shows it.
fn audited(record: &PolicyRecord) -> serde_json::Value {
    serde_json::json!({
        "id": record.id,
        "owner": record.owner.as_str(),
        "pattern": record.pattern,
        "action": record.action,
        "position": record.position,
    })
}
