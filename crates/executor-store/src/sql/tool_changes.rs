//! Tool definition fingerprints and the changes between two listings (`tool_change`, `0014`).
//!
//! [`compare_listing`] runs inside `replace_tools`' transaction: it reads the connection's tools
//! as they are, compares each with its new definition (`executor_core::tool_change`) and writes
//! a `tool_change` row for every tool added, removed or changed, so two refreshes racing each
//! other never record one change twice or miss one.

use std::collections::{HashMap, HashSet};

use executor_core::tool_change::{ToolDefinition, compare};
use executor_core::{ToolAddress, now_ms};
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::{SqlStore, flag, opt_json, owner_col, parse_json, to_json};
use crate::{
    ConnectionKey, Result, Scope, StoreError, ToolChangeFilter, ToolChangeRecord, ToolRecord,
};

/// Most changes one listing answers.
const MAX_LISTED: u32 = 500;

const CHANGE_COLS: &str = "id, integration, owner, connection, tool, kind, fields, \
    before_definition, after_definition, before_fingerprint, after_fingerprint, escalated, \
    requires_acceptance, detected_at, accepted_at, accepted_by";

/// What a new tool row carries over from the comparison: its fingerprint, the one a person
/// accepted, and the change it waits for.
#[derive(Default)]
pub(crate) struct Carried {
    pub(crate) fingerprint: String,
    pub(crate) approved: Option<String>,
    pub(crate) pending: Option<String>,
}

/// A stored tool as the comparison needs it.
struct Previous {
    definition: ToolDefinition,
    approved: Option<String>,
    pending: Option<String>,
}

fn new_id() -> String {
    format!("tch_{}", uuid::Uuid::now_v7().simple())
}

impl SqlStore {
    /// Compares the connection's stored tools with `tools` and records the differences (none
    /// while the connection's first sync is pending). Answers the recorded changes and, per new
    /// tool name, what its row carries.
    pub(crate) async fn compare_listing(
        &self,
        tx: &mut Transaction<'static, Any>,
        scope: &Scope,
        subject: &str,
        key: &ConnectionKey,
        tools: &[ToolRecord],
    ) -> Result<(Vec<ToolChangeRecord>, HashMap<String, Carried>)> {
        let pending_create: Option<i64> = sqlx::query(self.backend.sql(concat!(
            "SELECT pending_create FROM connection WHERE ",
            conn_key!("name")
        )))
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .fetch_optional(&mut **tx)
        .await?
        .map(|row| row.try_get(0))
        .transpose()?;
        let Some(pending_create) = pending_create else {
            return Err(StoreError::NotFound);
        };
        let rows = sqlx::query(self.backend.sql(concat!(
            "SELECT name, description, annotations, input_schema, output_schema, \
               approved_fingerprint, pending_change FROM tool WHERE ",
            conn_key!("connection")
        )))
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .fetch_all(&mut **tx)
        .await?;
        let mut previous: HashMap<String, Previous> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let name: String = row.try_get("name")?;
            previous.insert(
                name.clone(),
                Previous {
                    definition: ToolDefinition {
                        name,
                        description: row.try_get("description")?,
                        input_schema: opt_json(row.try_get("input_schema")?)?,
                        output_schema: opt_json(row.try_get("output_schema")?)?,
                        annotations: opt_json(row.try_get("annotations")?)?,
                    },
                    approved: row.try_get("approved_fingerprint")?,
                    pending: row.try_get("pending_change")?,
                },
            );
        }
        // A connection's first listing is no change of anything.
        let record = pending_create == 0;
        let now = now_ms();
        let change = |tool: &str, kind: &str| ToolChangeRecord {
            id: new_id(),
            integration: key.integration.clone(),
            owner: key.owner,
            connection: key.name.clone(),
            tool: tool.to_owned(),
            kind: kind.to_owned(),
            fields: Vec::new(),
            before: None,
            after: None,
            before_fingerprint: None,
            after_fingerprint: None,
            escalated: false,
            requires_acceptance: false,
            detected_at: now,
            accepted_at: None,
            accepted_by: None,
        };
        let mut changes = Vec::new();
        let mut carried = HashMap::with_capacity(tools.len());
        let mut listed = HashSet::with_capacity(tools.len());
        for tool in tools {
            listed.insert(tool.name.as_str());
            let after = crate::tool_definition(tool);
            let fingerprint = after.fingerprint();
            let Some(before) = previous.get(&tool.name) else {
                if record {
                    changes.push(ToolChangeRecord {
                        after: Some(after.to_json()),
                        after_fingerprint: Some(fingerprint.clone()),
                        ..change(&tool.name, "added")
                    });
                }
                carried.insert(
                    tool.name.clone(),
                    Carried {
                        fingerprint,
                        ..Carried::default()
                    },
                );
                continue;
            };
            let comparison = compare(&before.definition, &after);
            if comparison.fields.is_empty() {
                carried.insert(
                    tool.name.clone(),
                    Carried {
                        fingerprint,
                        approved: before.approved.clone(),
                        pending: before.pending.clone(),
                    },
                );
                continue;
            }
            // More dangerous now, no longer what a person accepted, or still waiting.
            let requires_acceptance = comparison.escalated
                || before.approved.as_ref().is_some_and(|a| *a != fingerprint)
                || before.pending.is_some();
            let recorded = ToolChangeRecord {
                fields: comparison.fields.iter().map(|f| (*f).to_owned()).collect(),
                before: Some(before.definition.to_json()),
                after: Some(after.to_json()),
                before_fingerprint: Some(before.definition.fingerprint()),
                after_fingerprint: Some(fingerprint.clone()),
                escalated: comparison.escalated,
                requires_acceptance,
                ..change(&tool.name, "changed")
            };
            carried.insert(
                tool.name.clone(),
                Carried {
                    fingerprint,
                    approved: before.approved.clone(),
                    pending: if requires_acceptance {
                        Some(recorded.id.clone())
                    } else {
                        None
                    },
                },
            );
            changes.push(recorded);
        }
        if record {
            let mut removed: Vec<&Previous> = previous
                .values()
                .filter(|p| !listed.contains(p.definition.name.as_str()))
                .collect();
            removed.sort_by(|a, b| a.definition.name.cmp(&b.definition.name));
            for gone in removed {
                changes.push(ToolChangeRecord {
                    before: Some(gone.definition.to_json()),
                    before_fingerprint: Some(gone.definition.fingerprint()),
                    ..change(&gone.definition.name, "removed")
                });
            }
        }
        for c in &changes {
            let fields = to_json(&Value::from(c.fields.clone()))?;
            let before = c.before.as_ref().map(to_json).transpose()?;
            let after = c.after.as_ref().map(to_json).transpose()?;
            sqlx::query(self.backend.sql(
                "INSERT INTO tool_change (id, tenant, integration, owner, subject, connection, \
                   tool, kind, fields, before_definition, after_definition, before_fingerprint, \
                   after_fingerprint, escalated, requires_acceptance, detected_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ))
            .bind(&c.id)
            .bind(&scope.tenant)
            .bind(&key.integration)
            .bind(key.owner.as_str())
            .bind(subject)
            .bind(&key.name)
            .bind(&c.tool)
            .bind(&c.kind)
            .bind(fields)
            .bind(before)
            .bind(after)
            .bind(c.before_fingerprint.clone())
            .bind(c.after_fingerprint.clone())
            .bind(i64::from(c.escalated))
            .bind(i64::from(c.requires_acceptance))
            .bind(c.detected_at)
            .execute(&mut **tx)
            .await?;
        }
        Ok((changes, carried))
    }

    pub(crate) async fn list_tool_changes_sql(
        &self,
        scope: &Scope,
        filter: &ToolChangeFilter,
    ) -> Result<Vec<ToolChangeRecord>> {
        let mut sql = format!(
            "SELECT {CHANGE_COLS} FROM tool_change WHERE {}",
            super::visible_sql()
        );
        let mut binds: Vec<Option<String>> =
            vec![Some(scope.tenant.clone()), scope.subject.clone()];
        if let Some(id) = &filter.id {
            sql.push_str(" AND id = ?");
            binds.push(Some(id.clone()));
        }
        super::push_address_filter(
            &mut sql,
            &mut binds,
            filter.integration.as_deref(),
            filter.owner,
            filter.connection.as_deref(),
        );
        if filter.pending_only {
            sql.push_str(" AND requires_acceptance = 1 AND accepted_at IS NULL");
        }
        let limit = filter.limit.unwrap_or(MAX_LISTED).min(MAX_LISTED);
        sql.push_str(&format!(
            " ORDER BY detected_at DESC, id DESC LIMIT {limit}"
        ));
        let mut query = sqlx::query(self.backend.sql(sql));
        for bind in binds {
            query = query.bind(bind);
        }
        let rows = query.fetch_all(&self.reader).await?;
        rows.iter().map(change_from_row).collect()
    }

    pub(crate) async fn pending_tool_changes_sql(
        &self,
        scope: &Scope,
    ) -> Result<Vec<(ToolAddress, String)>> {
        let sql = format!(
            "SELECT integration, owner, connection, name, pending_change FROM tool WHERE {} \
             AND pending_change IS NOT NULL",
            super::visible_sql()
        );
        let rows = sqlx::query(self.backend.sql(sql))
            .bind(&scope.tenant)
            .bind(scope.subject.clone())
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    ToolAddress {
                        integration: row.try_get("integration")?,
                        owner: owner_col(row, "tool")?,
                        connection: row.try_get("connection")?,
                        tool: row.try_get("name")?,
                    },
                    row.try_get("pending_change")?,
                ))
            })
            .collect()
    }

    pub(crate) async fn accept_tool_change_sql(
        &self,
        scope: &Scope,
        id: &str,
        by: &str,
    ) -> Result<Option<ToolChangeRecord>> {
        let mut tx = self.begin_write(&scope.tenant).await?;
        let sql = format!(
            "SELECT {CHANGE_COLS}, subject FROM tool_change WHERE {} AND id = ?",
            super::visible_sql()
        );
        let row = sqlx::query(self.backend.sql(sql))
            .bind(&scope.tenant)
            .bind(scope.subject.clone())
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let mut change = change_from_row(&row)?;
        if change.accepted_at.is_some() {
            return Ok(Some(change));
        }
        let subject: String = row.try_get("subject")?;
        let now = now_ms();
        sqlx::query(self.backend.sql(
            "UPDATE tool_change SET accepted_at = ?, accepted_by = ? WHERE tenant = ? AND id = ?",
        ))
        .bind(now)
        .bind(by)
        .bind(&scope.tenant)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        // The tool as it is now, if this change made it so, is what a person accepted.
        sqlx::query(self.backend.sql(concat!(
            "UPDATE tool SET pending_change = CASE WHEN pending_change = ? THEN NULL \
               ELSE pending_change END, \
               approved_fingerprint = CASE WHEN fingerprint = ? THEN fingerprint \
               ELSE approved_fingerprint END \
             WHERE ",
            conn_key!("connection"),
            " AND name = ?"
        )))
        .bind(id)
        .bind(change.after_fingerprint.clone())
        .bind(&scope.tenant)
        .bind(&change.integration)
        .bind(change.owner.as_str())
        .bind(&subject)
        .bind(&change.connection)
        .bind(&change.tool)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        change.accepted_at = Some(now);
        change.accepted_by = Some(by.to_owned());
        Ok(Some(change))
    }

    pub(crate) async fn approve_tool_definition_sql(
        &self,
        scope: &Scope,
        address: &ToolAddress,
        fingerprint: &str,
    ) -> Result<()> {
        let Some(subject) = scope.subject_for(address.owner) else {
            return Ok(());
        };
        sqlx::query(self.backend.sql(concat!(
            "UPDATE tool SET approved_fingerprint = fingerprint WHERE ",
            conn_key!("connection"),
            " AND name = ? AND fingerprint = ? \
               AND (approved_fingerprint IS NULL OR approved_fingerprint <> fingerprint)"
        )))
        .bind(&scope.tenant)
        .bind(&address.integration)
        .bind(address.owner.as_str())
        .bind(subject)
        .bind(&address.connection)
        .bind(&address.tool)
        .bind(fingerprint)
        .execute(&self.writer)
        .await?;
        Ok(())
    }
}

fn change_from_row(row: &AnyRow) -> Result<ToolChangeRecord> {
    let fields: Vec<String> = serde_json::from_value(parse_json(row.try_get("fields")?)?)?;
    Ok(ToolChangeRecord {
        id: row.try_get("id")?,
        integration: row.try_get("integration")?,
        owner: owner_col(row, "tool change")?,
        connection: row.try_get("connection")?,
        tool: row.try_get("tool")?,
        kind: row.try_get("kind")?,
        fields,
        before: opt_json(row.try_get("before_definition")?)?,
        after: opt_json(row.try_get("after_definition")?)?,
        before_fingerprint: row.try_get("before_fingerprint")?,
        after_fingerprint: row.try_get("after_fingerprint")?,
        escalated: flag(row, "escalated")?,
        requires_acceptance: flag(row, "requires_acceptance")?,
        detected_at: row.try_get("detected_at")?,
        accepted_at: row.try_get("accepted_at")?,
        accepted_by: row.try_get("accepted_by")?,
    })
}
