//! Toolkits (spec §1.9, issue #22): named allow-lists of tools, each its own MCP endpoint. CRUD
//! with validation here; resolution is the one [`PolicySet`] every surface already asks, built
//! from a toolkit's snapshot when the caller's [`PolicySource`] is that toolkit
//! ([`Engine::toolkit_policy_set`]).
//!
//! A toolkit owns ordered *connection patterns* (what it grants: `<integration>.<owner>.<connection>.*`
//! or a static prefix such as `executor.coreTools.*`) and ordered *policies*; new entries go to
//! the top. Both use the global policies' pattern grammar. Every write bumps the catalog
//! generation, so open sessions follow at their next call.

use executor_core::policy::{
    Decision, PolicyAction, PolicyAuthor, PolicyPattern, PolicyRule, PolicySet, ToolkitGrant,
    prefixed_id, validate_position,
};
use executor_core::{Owner, now_ms};
use executor_store::{
    StoreError, ToolSummary, ToolkitEntryKind, ToolkitEntryRecord, ToolkitRecord,
};

use crate::Engine;
use crate::caller::{Caller, PolicySource};
use crate::catalog::ToolListFilter;
use crate::error::{EngineError, EngineResult};

/// Longest toolkit slug, in characters.
pub const MAX_SLUG_LEN: usize = 63;
/// Longest toolkit name, in characters.
pub const MAX_TOOLKIT_NAME_CHARS: usize = 200;

const SLUG_RULE: &str =
    "Toolkit slug must be 1–63 characters of a-z, 0-9 and '-', not starting or ending with '-'.";

/// A toolkit as the API returns it: the stored row and how many entries of each kind it has.
#[derive(Debug, Clone)]
pub struct ToolkitView {
    pub toolkit: ToolkitRecord,
    pub connection_count: usize,
    pub policy_count: usize,
}

/// One of a toolkit's policies or connection patterns; `action` is set for policies.
#[derive(Debug, Clone)]
pub struct ToolkitEntryView {
    pub id: String,
    pub toolkit_id: String,
    pub pattern: String,
    pub action: Option<PolicyAction>,
    pub position: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A tool a toolkit exposes, and what decides its calls there.
#[derive(Debug, Clone)]
pub struct ToolkitTool {
    pub tool: ToolSummary,
    pub decision: Decision,
}

fn toolkit_error(message: impl Into<String>) -> EngineError {
    EngineError::Toolkit {
        message: message.into(),
    }
}

fn not_found() -> EngineError {
    toolkit_error("Toolkit not found.")
}

fn entry_not_found(kind: ToolkitEntryKind) -> EngineError {
    toolkit_error(match kind {
        ToolkitEntryKind::Policy => "Toolkit policy not found.",
        ToolkitEntryKind::Connection => "Toolkit connection not found.",
    })
}

/// Whether `slug` is 1–63 of `[a-z0-9-]` with no leading or trailing hyphen.
pub fn is_valid_slug(slug: &str) -> bool {
    let bytes = slug.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_SLUG_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// A slug made from a name: lower-case, each run of other characters one `-`, trimmed to 63.
pub fn slug_from_name(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(MAX_SLUG_LEN);
    slug.trim_end_matches('-').to_owned()
}

fn check_name(name: &str) -> EngineResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(toolkit_error("Toolkit name is required."));
    }
    if name.chars().count() > MAX_TOOLKIT_NAME_CHARS {
        return Err(toolkit_error(format!(
            "Toolkit name is longer than {MAX_TOOLKIT_NAME_CHARS} characters."
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(toolkit_error(
            "Toolkit name may not contain control characters.",
        ));
    }
    Ok(name.to_owned())
}

fn check_slug(slug: &str) -> EngineResult<String> {
    let slug = slug.trim();
    if is_valid_slug(slug) {
        Ok(slug.to_owned())
    } else {
        Err(toolkit_error(SLUG_RULE))
    }
}

fn parse_pattern(kind: ToolkitEntryKind, raw: &str) -> EngineResult<PolicyPattern> {
    let what = match kind {
        ToolkitEntryKind::Policy => "policy",
        ToolkitEntryKind::Connection => "connection",
    };
    PolicyPattern::parse(raw.trim())
        .map_err(|e| toolkit_error(format!("Invalid toolkit {what} pattern: {raw}: {e}")))
}

fn parse_action(raw: &str) -> EngineResult<PolicyAction> {
    raw.parse()
        .map_err(|e: executor_core::policy::ActionError| toolkit_error(e.to_string()))
}

fn check_position(position: &str) -> EngineResult<()> {
    validate_position(position)
        .map_err(|e| toolkit_error(format!("Invalid position {position:?}: {e}")))
}

fn entry_view(record: &ToolkitEntryRecord) -> ToolkitEntryView {
    ToolkitEntryView {
        id: record.id.clone(),
        toolkit_id: record.toolkit_id.clone(),
        pattern: record.pattern.clone(),
        action: record.action.as_deref().and_then(|a| a.parse().ok()),
        position: record.position.clone(),
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

/// Org toolkits first, then by name, then slug.
fn listing_order(a: &ToolkitRecord, b: &ToolkitRecord) -> std::cmp::Ordering {
    let rank = |o: Owner| u8::from(o == Owner::User);
    rank(a.owner)
        .cmp(&rank(b.owner))
        .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
        .then_with(|| a.slug.cmp(&b.slug))
}

impl Engine {
    /// The toolkits the caller can see, org first, then by name and slug.
    pub async fn list_toolkits(&self, caller: &Caller) -> EngineResult<Vec<ToolkitView>> {
        let mut records = self.inner.store.list_toolkits(caller.scope()).await?;
        records.sort_by(listing_order);
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        let entries = self
            .inner
            .store
            .list_toolkit_entries(caller.scope(), &ids)
            .await?;
        Ok(records.iter().map(|r| toolkit_view(r, &entries)).collect())
    }

    pub async fn get_toolkit(&self, caller: &Caller, id: &str) -> EngineResult<ToolkitView> {
        let record = self.toolkit_record(caller, id).await?;
        let entries = self
            .inner
            .store
            .list_toolkit_entries(caller.scope(), &[id])
            .await?;
        Ok(toolkit_view(&record, &entries))
    }

    /// A new toolkit; the slug is derived from the name when absent and must be free among the
    /// toolkits the caller sees.
    pub async fn create_toolkit(
        &self,
        caller: &Caller,
        owner: Owner,
        name: &str,
        slug: Option<&str>,
    ) -> EngineResult<ToolkitView> {
        self.ensure_may_write(caller, Some(owner), "create workspace toolkits")
            .await?;
        let name = check_name(name)?;
        let slug = match slug.map(str::trim).filter(|s| !s.is_empty()) {
            Some(slug) => check_slug(slug)?,
            None => check_slug(&slug_from_name(&name))?,
        };
        if owner == Owner::User && caller.subject().is_none() {
            return Err(toolkit_error(
                "Cannot create a personal toolkit: this context has no user subject.",
            ));
        }
        self.check_slug_free(caller, &slug, None).await?;
        let now = now_ms();
        let record = ToolkitRecord {
            id: prefixed_id("tk", rand::random(), now),
            owner,
            slug,
            name,
            created_at: now,
            updated_at: now,
        };
        match self
            .inner
            .store
            .insert_toolkit(caller.scope(), &record)
            .await
        {
            Ok(()) => {}
            Err(StoreError::AlreadyExists) => return Err(slug_taken(&record.slug)),
            Err(e) => return Err(e.into()),
        }
        self.toolkit_changed(true);
        Ok(toolkit_view(&record, &[]))
    }

    pub async fn update_toolkit(
        &self,
        caller: &Caller,
        id: &str,
        name: Option<&str>,
        slug: Option<&str>,
    ) -> EngineResult<ToolkitView> {
        let current = self.toolkit_for_write(caller, id).await?;
        let name = match name {
            Some(name) => check_name(name)?,
            None => current.name.clone(),
        };
        let slug = match slug {
            Some(slug) => check_slug(slug)?,
            None => current.slug.clone(),
        };
        if slug != current.slug {
            self.check_slug_free(caller, &slug, Some(id)).await?;
        }
        let record = ToolkitRecord {
            name,
            slug,
            ..current
        };
        let updated = match self
            .inner
            .store
            .update_toolkit(caller.scope(), &record)
            .await
        {
            Ok(Some(updated)) => updated,
            Ok(None) => return Err(not_found()),
            Err(StoreError::AlreadyExists) => return Err(slug_taken(&record.slug)),
            Err(e) => return Err(e.into()),
        };
        self.toolkit_changed(true);
        self.get_toolkit(caller, &updated.id).await
    }

    /// Removes a toolkit and its entries; connections and integrations stay.
    pub async fn remove_toolkit(&self, caller: &Caller, id: &str) -> EngineResult<()> {
        let record = self.toolkit_for_write(caller, id).await?;
        if !self
            .inner
            .store
            .delete_toolkit(caller.scope(), record.owner, id)
            .await?
        {
            return Err(not_found());
        }
        self.toolkit_changed(true);
        Ok(())
    }

    /// A toolkit's policies or connection patterns, by position then id.
    pub async fn list_toolkit_entries(
        &self,
        caller: &Caller,
        id: &str,
        kind: ToolkitEntryKind,
    ) -> EngineResult<Vec<ToolkitEntryView>> {
        self.toolkit_record(caller, id).await?;
        Ok(self
            .entries_of(caller, id, kind)
            .await?
            .iter()
            .map(entry_view)
            .collect())
    }

    /// A new policy of a toolkit, at the top unless a position is given.
    pub async fn add_toolkit_policy(
        &self,
        caller: &Caller,
        id: &str,
        pattern: &str,
        action: &str,
        position: Option<String>,
    ) -> EngineResult<ToolkitEntryView> {
        let pattern = parse_pattern(ToolkitEntryKind::Policy, pattern)?;
        let action = parse_action(action)?;
        self.add_entry(
            caller,
            id,
            ToolkitEntryKind::Policy,
            pattern,
            Some(action),
            position,
        )
        .await
    }

    /// A new connection pattern of a toolkit; a pattern it already has answers the existing row.
    pub async fn add_toolkit_connection(
        &self,
        caller: &Caller,
        id: &str,
        pattern: &str,
        position: Option<String>,
    ) -> EngineResult<ToolkitEntryView> {
        let pattern = parse_pattern(ToolkitEntryKind::Connection, pattern)?;
        self.add_entry(
            caller,
            id,
            ToolkitEntryKind::Connection,
            pattern,
            None,
            position,
        )
        .await
    }

    pub async fn update_toolkit_policy(
        &self,
        caller: &Caller,
        id: &str,
        policy_id: &str,
        pattern: Option<&str>,
        action: Option<&str>,
        position: Option<String>,
    ) -> EngineResult<ToolkitEntryView> {
        self.toolkit_for_write(caller, id).await?;
        let kind = ToolkitEntryKind::Policy;
        let current = self
            .entries_of(caller, id, kind)
            .await?
            .into_iter()
            .find(|e| e.id == policy_id)
            .ok_or_else(|| entry_not_found(kind))?;
        let pattern = match pattern {
            Some(p) => parse_pattern(kind, p)?.as_str().to_owned(),
            None => current.pattern.clone(),
        };
        let action = match action {
            Some(a) => Some(parse_action(a)?.as_str().to_owned()),
            None => current.action.clone(),
        };
        if let Some(p) = &position {
            check_position(p)?;
        }
        let record = ToolkitEntryRecord {
            pattern,
            action,
            position: position.unwrap_or_else(|| current.position.clone()),
            ..current
        };
        let updated = self
            .inner
            .store
            .update_toolkit_entry(caller.scope(), &record)
            .await?
            .ok_or_else(|| entry_not_found(kind))?;
        self.toolkit_changed(false);
        Ok(entry_view(&updated))
    }

    /// Removes one of a toolkit's policies or connection patterns.
    pub async fn remove_toolkit_entry(
        &self,
        caller: &Caller,
        id: &str,
        kind: ToolkitEntryKind,
        entry_id: &str,
    ) -> EngineResult<()> {
        self.toolkit_for_write(caller, id).await?;
        if !self
            .inner
            .store
            .delete_toolkit_entry(caller.scope(), id, kind, entry_id)
            .await?
        {
            return Err(entry_not_found(kind));
        }
        self.toolkit_changed(kind == ToolkitEntryKind::Connection);
        Ok(())
    }

    /// The tools a toolkit exposes (everything it does not block), with what decides each.
    pub async fn toolkit_tools(&self, caller: &Caller, id: &str) -> EngineResult<Vec<ToolkitTool>> {
        let record = self.toolkit_record(caller, id).await?;
        let inside = caller
            .clone()
            .with_policies(PolicySource::Toolkit(record.slug.clone()));
        let set = self.policy_set(&inside).await?;
        let tools = self
            .list_tools(
                &inside,
                &ToolListFilter {
                    exclude_blocked: true,
                    ..ToolListFilter::default()
                },
            )
            .await?;
        Ok(tools
            .into_iter()
            .map(|tool| {
                let decision = set.resolve(
                    &crate::catalog::policy_id_of(&tool),
                    crate::catalog::summary_requires_approval(&tool),
                );
                ToolkitTool { tool, decision }
            })
            .collect())
    }

    /// After a toolkit write: what its sessions may call changed. A change of what it grants
    /// (connections, its slug, the toolkit itself) also changes the `execute` description, so
    /// agents are told (`tools/list_changed`); a rule change only rebuilds the caches.
    fn toolkit_changed(&self, grants: bool) {
        if grants {
            self.catalog_changed();
        } else {
            self.policies_changed();
        }
    }

    /// The connections an agent of this caller sees: all of them, except that a toolkit-bound
    /// caller sees only connections with a tool the toolkit exposes (spec §1.9).
    pub async fn agent_connections(
        &self,
        caller: &Caller,
        integration: Option<&str>,
        owner: Option<Owner>,
    ) -> EngineResult<Vec<executor_store::ConnectionRecord>> {
        let mut connections = self.list_connections(caller, integration, owner).await?;
        if let Some(visible) = self.toolkit_visible_connections(caller).await? {
            connections
                .retain(|c| visible.contains(&(c.integration.clone(), c.owner, c.name.clone())));
        }
        Ok(connections)
    }

    /// For a toolkit-bound caller, every (integration, owner, connection) with a tool the
    /// toolkit exposes; `None` under global policies (nothing is hidden by reach).
    pub(crate) async fn toolkit_visible_connections(
        &self,
        caller: &Caller,
    ) -> EngineResult<Option<std::collections::HashSet<(String, Owner, String)>>> {
        if caller.toolkit().is_none() {
            return Ok(None);
        }
        // The search index holds exactly the exposed tools and is cached per policy source.
        let index = self.search_index(caller).await?;
        Ok(Some(
            index
                .entries()
                .iter()
                .filter_map(|e| {
                    let mut parts = e.path.splitn(4, '.');
                    let (integration, owner, connection) =
                        (parts.next()?, parts.next()?, parts.next()?);
                    Some((
                        integration.to_owned(),
                        owner.parse().ok()?,
                        connection.to_owned(),
                    ))
                })
                .collect(),
        ))
    }

    /// The policy set of a session bound to toolkit `slug` (spec §1.9): the org's toolkit of
    /// that slug, else the caller's own; none → everything blocked. Built from one snapshot.
    pub(crate) async fn toolkit_policy_set(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<PolicySet> {
        let toolkits = self.inner.store.list_toolkits(caller.scope()).await?;
        let Some(toolkit) = toolkits
            .iter()
            .filter(|t| t.slug == slug)
            .min_by_key(|t| u8::from(t.owner == Owner::User))
        else {
            return Ok(PolicySet::toolkit(None, Vec::new()));
        };
        let entries = self
            .inner
            .store
            .list_toolkit_entries(caller.scope(), &[toolkit.id.as_str()])
            .await?;
        let mut connections = Vec::new();
        let mut rules = Vec::new();
        for entry in &entries {
            let Ok(pattern) = PolicyPattern::parse(&entry.pattern) else {
                tracing::warn!(entry = %entry.id, "ignoring a stored toolkit entry that no longer parses");
                continue;
            };
            match (
                entry.kind,
                entry.action.as_deref().map(str::parse::<PolicyAction>),
            ) {
                (ToolkitEntryKind::Connection, _) => connections.push(pattern),
                (ToolkitEntryKind::Policy, Some(Ok(action))) => rules.push(PolicyRule {
                    id: entry.id.clone(),
                    owner: toolkit.owner,
                    pattern,
                    action,
                    position: entry.position.clone(),
                    author: PolicyAuthor::Person,
                }),
                (ToolkitEntryKind::Policy, _) => {
                    tracing::warn!(entry = %entry.id, "ignoring a toolkit policy without a valid action");
                }
            }
        }
        Ok(PolicySet::toolkit(
            Some(ToolkitGrant {
                owner: toolkit.owner,
                connections,
            }),
            rules,
        ))
    }

    async fn add_entry(
        &self,
        caller: &Caller,
        id: &str,
        kind: ToolkitEntryKind,
        pattern: PolicyPattern,
        action: Option<PolicyAction>,
        position: Option<String>,
    ) -> EngineResult<ToolkitEntryView> {
        self.toolkit_for_write(caller, id).await?;
        let existing = self.entries_of(caller, id, kind).await?;
        if kind == ToolkitEntryKind::Connection
            && let Some(same) = existing.iter().find(|e| e.pattern == pattern.as_str())
        {
            return Ok(entry_view(same));
        }
        if let Some(p) = &position {
            check_position(p)?;
        }
        let now = now_ms();
        let prefix = match kind {
            ToolkitEntryKind::Policy => "tkpol",
            ToolkitEntryKind::Connection => "tkconn",
        };
        let mut record = ToolkitEntryRecord {
            id: prefixed_id(prefix, rand::random(), now),
            toolkit_id: id.to_owned(),
            kind,
            pattern: pattern.as_str().to_owned(),
            action: action.map(|a| a.as_str().to_owned()),
            // New entries go to the top (chosen inside the write) unless placed.
            position: position.clone().unwrap_or_default(),
            created_at: now,
            updated_at: now,
        };
        record.position = self
            .inner
            .store
            .insert_toolkit_entry(caller.scope(), &record, position.is_none())
            .await?;
        self.toolkit_changed(kind == ToolkitEntryKind::Connection);
        Ok(entry_view(&record))
    }

    async fn entries_of(
        &self,
        caller: &Caller,
        id: &str,
        kind: ToolkitEntryKind,
    ) -> EngineResult<Vec<ToolkitEntryRecord>> {
        let mut entries = self
            .inner
            .store
            .list_toolkit_entries(caller.scope(), &[id])
            .await?;
        entries.retain(|e| e.kind == kind);
        Ok(entries)
    }

    /// The toolkit, when the caller may change it (an org toolkit takes an admin).
    async fn toolkit_for_write(&self, caller: &Caller, id: &str) -> EngineResult<ToolkitRecord> {
        let record = self.toolkit_record(caller, id).await?;
        self.ensure_may_write(caller, Some(record.owner), "change workspace toolkits")
            .await?;
        Ok(record)
    }

    async fn toolkit_record(&self, caller: &Caller, id: &str) -> EngineResult<ToolkitRecord> {
        self.inner
            .store
            .list_toolkits(caller.scope())
            .await?
            .into_iter()
            .find(|t| t.id == id)
            .ok_or_else(not_found)
    }

    async fn check_slug_free(
        &self,
        caller: &Caller,
        slug: &str,
        except: Option<&str>,
    ) -> EngineResult<()> {
        let taken = self
            .inner
            .store
            .list_toolkits(caller.scope())
            .await?
            .iter()
            .any(|t| t.slug == slug && Some(t.id.as_str()) != except);
        if taken {
            return Err(slug_taken(slug));
        }
        Ok(())
    }
}

fn toolkit_view(record: &ToolkitRecord, entries: &[ToolkitEntryRecord]) -> ToolkitView {
    let count = |kind| {
        entries
            .iter()
            .filter(|e| e.toolkit_id == record.id && e.kind == kind)
            .count()
    };
    ToolkitView {
        toolkit: record.clone(),
        connection_count: count(ToolkitEntryKind::Connection),
        policy_count: count(ToolkitEntryKind::Policy),
    }
}

fn slug_taken(slug: &str) -> EngineError {
    toolkit_error(format!("Toolkit slug \"{slug}\" is already in use."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_grammar() {
        for good in ["a", "support-tools", "k8s", &"a".repeat(63)] {
            assert!(is_valid_slug(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a b", "é", &"a".repeat(64)] {
            assert!(!is_valid_slug(bad), "{bad}");
        }
    }

    #[test]
    fn a_slug_derives_from_the_name() {
        assert_eq!(slug_from_name("Support tools"), "support-tools");
        assert_eq!(slug_from_name("  Release -- Agent!! "), "release-agent");
        assert_eq!(slug_from_name("!!!"), "");
        let long = slug_from_name(&format!("{}-b", "a".repeat(62)));
        assert_eq!(long, "a".repeat(62));
        assert!(is_valid_slug(&long));
    }
}
