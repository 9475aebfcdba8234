//! [`ToolkitStore`] on SQLite.

use async_trait::async_trait;
use executor_core::{Owner, now_ms};
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{SqlStore, is_unique_violation, owner_col, stamp, write_subject};
use crate::{
    Result, Scope, StoreError, ToolkitEntryKind, ToolkitEntryRecord, ToolkitRecord, ToolkitStore,
};

const TOOLKIT_COLS: &str = "id, owner, slug, name, created_at, updated_at";
const ENTRY_COLS: &str = "id, toolkit_id, kind, pattern, action, position, created_at, updated_at";

fn toolkit_from_row(row: &AnyRow) -> Result<ToolkitRecord> {
    Ok(ToolkitRecord {
        id: row.try_get("id")?,
        owner: owner_col(row, "toolkit")?,
        slug: row.try_get("slug")?,
        name: row.try_get("name")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn entry_from_row(row: &AnyRow) -> Result<ToolkitEntryRecord> {
    let kind: String = row.try_get("kind")?;
    Ok(ToolkitEntryRecord {
        id: row.try_get("id")?,
        toolkit_id: row.try_get("toolkit_id")?,
        kind: match kind.as_str() {
            "policy" => ToolkitEntryKind::Policy,
            "connection" => ToolkitEntryKind::Connection,
            other => return Err(StoreError::Corrupt(format!("toolkit entry kind {other:?}"))),
        },
        pattern: row.try_get("pattern")?,
        action: row.try_get("action")?,
        position: row.try_get("position")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn taken(e: sqlx::Error) -> StoreError {
    if is_unique_violation(&e) {
        StoreError::AlreadyExists
    } else {
        e.into()
    }
}

#[async_trait]
impl ToolkitStore for SqlStore {
    async fn list_toolkits(&self, scope: &Scope) -> Result<Vec<ToolkitRecord>> {
        let sql = format!(
            "SELECT {TOOLKIT_COLS} FROM toolkit WHERE {}",
            super::visible_sql()
        );
        let rows = sqlx::query(self.backend.sql(sql))
            .bind(&scope.tenant)
            .bind(scope.subject.as_deref())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(toolkit_from_row).collect()
    }

    async fn insert_toolkit(&self, scope: &Scope, rec: &ToolkitRecord) -> Result<()> {
        let subject = write_subject(scope, rec.owner)?;
        sqlx::query(self.backend.sql(
            "INSERT INTO toolkit (tenant, owner, subject, id, slug, name, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ))
        .bind(&scope.tenant)
        .bind(rec.owner.as_str())
        .bind(subject)
        .bind(&rec.id)
        .bind(&rec.slug)
        .bind(&rec.name)
        .bind(stamp(rec.created_at))
        .bind(stamp(rec.updated_at))
        .execute(&self.writer)
        .await
        .map_err(taken)?;
        Ok(())
    }

    async fn update_toolkit(
        &self,
        scope: &Scope,
        rec: &ToolkitRecord,
    ) -> Result<Option<ToolkitRecord>> {
        let Some(subject) = scope.subject_for(rec.owner) else {
            return Ok(None);
        };
        let sql = format!(
            "UPDATE toolkit SET slug = ?, name = ?, updated_at = ? \
             WHERE tenant = ? AND owner = ? AND subject = ? AND id = ? RETURNING {TOOLKIT_COLS}"
        );
        let row = sqlx::query(self.backend.sql(sql))
            .bind(&rec.slug)
            .bind(&rec.name)
            .bind(now_ms())
            .bind(&scope.tenant)
            .bind(rec.owner.as_str())
            .bind(subject)
            .bind(&rec.id)
            .fetch_optional(&self.writer)
            .await
            .map_err(taken)?;
        row.as_ref().map(toolkit_from_row).transpose()
    }

    async fn delete_toolkit(&self, scope: &Scope, owner: Owner, id: &str) -> Result<bool> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(false);
        };
        let mut tx = self.begin_write(&scope.tenant).await?;
        let done =
            sqlx::query(self.backend.sql(
                "DELETE FROM toolkit WHERE tenant = ? AND owner = ? AND subject = ? AND id = ?",
            ))
            .bind(&scope.tenant)
            .bind(owner.as_str())
            .bind(subject)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query(
            self.backend
                .sql("DELETE FROM toolkit_entry WHERE tenant = ? AND toolkit_id = ?"),
        )
        .bind(&scope.tenant)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn list_toolkit_entries(
        &self,
        scope: &Scope,
        toolkit_ids: &[&str],
    ) -> Result<Vec<ToolkitEntryRecord>> {
        if toolkit_ids.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; toolkit_ids.len()].join(", ");
        let sql = format!(
            "SELECT {ENTRY_COLS} FROM toolkit_entry WHERE tenant = ? AND toolkit_id IN ({marks}) \
             ORDER BY position, id"
        );
        let mut query = sqlx::query(self.backend.sql(sql)).bind(&scope.tenant);
        for id in toolkit_ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&self.reader).await?;
        rows.iter().map(entry_from_row).collect()
    }

    async fn insert_toolkit_entry(
        &self,
        scope: &Scope,
        rec: &ToolkitEntryRecord,
        at_top: bool,
    ) -> Result<String> {
        let mut tx = self.begin_write(&scope.tenant).await?;
        let position = if at_top {
            let first: Option<String> = sqlx::query_scalar(self.backend.sql(
                "SELECT min(position) FROM toolkit_entry WHERE tenant = ? AND toolkit_id = ? AND kind = ?",
            ))
            .bind(&scope.tenant)
            .bind(&rec.toolkit_id)
            .bind(rec.kind.as_str())
            .fetch_one(&mut *tx)
            .await?;
            executor_core::policy::key_between(None, first.as_deref())
                .or_else(|_| executor_core::policy::key_between(None, None))
                .map_err(|e| StoreError::Corrupt(format!("toolkit entry positions: {e}")))?
        } else {
            rec.position.clone()
        };
        sqlx::query(self.backend.sql(
            "INSERT INTO toolkit_entry (tenant, toolkit_id, kind, id, pattern, action, position, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ))
        .bind(&scope.tenant)
        .bind(&rec.toolkit_id)
        .bind(rec.kind.as_str())
        .bind(&rec.id)
        .bind(&rec.pattern)
        .bind(rec.action.as_deref())
        .bind(&position)
        .bind(stamp(rec.created_at))
        .bind(stamp(rec.updated_at))
        .execute(&mut *tx)
        .await
        .map_err(taken)?;
        tx.commit().await?;
        Ok(position)
    }

    async fn update_toolkit_entry(
        &self,
        scope: &Scope,
        rec: &ToolkitEntryRecord,
    ) -> Result<Option<ToolkitEntryRecord>> {
        let sql = format!(
            "UPDATE toolkit_entry SET pattern = ?, action = ?, position = ?, updated_at = ? \
             WHERE tenant = ? AND toolkit_id = ? AND kind = ? AND id = ? RETURNING {ENTRY_COLS}"
        );
        let row = sqlx::query(self.backend.sql(sql))
            .bind(&rec.pattern)
            .bind(rec.action.as_deref())
            .bind(&rec.position)
            .bind(now_ms())
            .bind(&scope.tenant)
            .bind(&rec.toolkit_id)
            .bind(rec.kind.as_str())
            .bind(&rec.id)
            .fetch_optional(&self.writer)
            .await?;
        row.as_ref().map(entry_from_row).transpose()
    }

    async fn delete_toolkit_entry(
        &self,
        scope: &Scope,
        toolkit_id: &str,
        kind: ToolkitEntryKind,
        id: &str,
    ) -> Result<bool> {
        let done = sqlx::query(self.backend.sql(
            "DELETE FROM toolkit_entry WHERE tenant = ? AND toolkit_id = ? AND kind = ? AND id = ?",
        ))
        .bind(&scope.tenant)
        .bind(toolkit_id)
        .bind(kind.as_str())
        .bind(id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
