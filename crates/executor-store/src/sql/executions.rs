//! [`ExecutionStore`] on SQLite.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Backend, SqlStore, opt_json, opt_to_json, parse_json, to_json};
use crate::executions::{
    ExecutionCallRecord, ExecutionFilter, ExecutionRecord, ExecutionStatus, ExecutionStore,
    ExecutionSummary,
};
use crate::{MasterKey, Result, Scope, StoreError};

macro_rules! execution_cols {
    () => {
        "id, code, auto_approve, status, seed, started_at, updated_at, finished_at, expires_at, duration_ms, tool_calls, clock, pending, outcome"
    };
}
macro_rules! call_cols {
    () => {
        "seq, path, args, args_hash, outcome, pause, started_at, duration_ms"
    };
}

const INSERT_EXECUTION_HEAD: &str = concat!(
    "INSERT INTO execution (tenant, subject, ",
    execution_cols!(),
    ") VALUES "
);
const EXECUTION_VALUES: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
const EXECUTION_CONFLICT: &str = " ON CONFLICT (id) DO UPDATE SET \
       status = excluded.status, updated_at = excluded.updated_at, \
       finished_at = excluded.finished_at, expires_at = excluded.expires_at, \
       duration_ms = excluded.duration_ms, tool_calls = excluded.tool_calls, \
       clock = excluded.clock, pending = excluded.pending, outcome = excluded.outcome \
     WHERE execution.status IN ('running', 'paused')";
/// Rows per multi-row insert of the history writer's batches (greedy: 64, 16, 4, 1), so a batch
/// costs a few statements and every statement shape stays in the statement cache.
const CHUNKS: [usize; 4] = [64, 16, 4, 1];

/// Upsert of an execution row that never touches a settled row.
const UPSERT_EXECUTION: &str = concat!(
    "INSERT INTO execution (tenant, subject, ",
    execution_cols!(),
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
     ON CONFLICT (id) DO UPDATE SET \
       status = excluded.status, updated_at = excluded.updated_at, \
       finished_at = excluded.finished_at, expires_at = excluded.expires_at, \
       duration_ms = excluded.duration_ms, tool_calls = excluded.tool_calls, \
       clock = excluded.clock, pending = excluded.pending, outcome = excluded.outcome \
     WHERE execution.status IN ('running', 'paused')"
);

/// Upsert of a call that never forgets a stored outcome or pause.
const UPSERT_CALL: &str = concat!(
    "INSERT INTO execution_call (execution_id, ",
    call_cols!(),
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
     ON CONFLICT (execution_id, seq) DO UPDATE SET \
       outcome = coalesce(excluded.outcome, execution_call.outcome), \
       pause = coalesce(excluded.pause, execution_call.pause), \
       duration_ms = coalesce(excluded.duration_ms, execution_call.duration_ms)"
);

fn subject(scope: &Scope) -> &str {
    scope.subject.as_deref().unwrap_or("")
}

fn status_from(text: &str) -> Result<ExecutionStatus> {
    ExecutionStatus::parse(text).ok_or_else(|| StoreError::Corrupt(format!("status {text:?}")))
}

fn execution_from_row(row: &AnyRow) -> Result<ExecutionRecord> {
    Ok(ExecutionRecord {
        id: row.try_get("id")?,
        code: row.try_get("code")?,
        auto_approve: super::flag(row, "auto_approve")?,
        status: status_from(row.try_get("status")?)?,
        seed: row.try_get::<i64, _>("seed")? as u64,
        started_at: row.try_get("started_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
        expires_at: row.try_get("expires_at")?,
        duration_ms: row.try_get("duration_ms")?,
        tool_calls: row.try_get("tool_calls")?,
        clock: parse_json(row.try_get::<&str, _>("clock")?)?,
        pending: opt_json(row.try_get("pending")?)?,
        outcome: opt_json(row.try_get("outcome")?)?,
    })
}

fn call_from_row(key: &MasterKey, execution_id: &str, row: &AnyRow) -> Result<ExecutionCallRecord> {
    let seq: i64 = row.try_get("seq")?;
    let open = |field: &str, text: String| open_call_field(key, execution_id, seq, field, text);
    Ok(ExecutionCallRecord {
        seq,
        path: row.try_get("path")?,
        args: parse_json(&open("args", row.try_get("args")?)?)?,
        args_hash: row.try_get("args_hash")?,
        outcome: opt_json(
            row.try_get::<Option<String>, _>("outcome")?
                .map(|t| open("outcome", t))
                .transpose()?,
        )?,
        pause: opt_json(
            row.try_get::<Option<String>, _>("pause")?
                .map(|t| open("pause", t))
                .transpose()?,
        )?,
        started_at: row.try_get("started_at")?,
        duration_ms: row.try_get("duration_ms")?,
    })
}

/// The vault item id a journaled call's field is sealed under (its associated data). The
/// journal is written without a tenant at hand; execution ids are unique across tenants.
fn call_item(execution_id: &str, seq: i64, field: &str) -> String {
    format!("execution:{execution_id}:call:{seq}:{field}")
}

/// Arguments, outcomes and pauses carry what tools were given and answered (tokens pasted into
/// arguments, the data a tool returned), so they are sealed at rest like the code.
fn seal_call_field(
    key: &MasterKey,
    execution_id: &str,
    seq: i64,
    field: &str,
    json: String,
) -> Result<String> {
    key.seal("", &call_item(execution_id, seq, field), &json)
}

/// Rows written before the journal was sealed hold JSON, which never starts with the prefix.
fn open_call_field(
    key: &MasterKey,
    execution_id: &str,
    seq: i64,
    field: &str,
    text: String,
) -> Result<String> {
    if text.starts_with(crate::vault::SEALED_PREFIX) {
        key.open("", &call_item(execution_id, seq, field), &text)
    } else {
        Ok(text)
    }
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>;

/// The vault item id an execution's code is sealed under (its associated data).
fn code_item(execution_id: &str) -> String {
    format!("execution:{execution_id}:code")
}

impl SqlStore {
    /// Code is kept for resuming after a restart, and agents paste credentials into it (a
    /// `connections.create` call carries the value in its source), so it is sealed at rest.
    fn seal_code(&self, scope: &Scope, rec: &ExecutionRecord) -> Result<String> {
        self.key.seal(&scope.tenant, &code_item(&rec.id), &rec.code)
    }

    /// Rows written before code was sealed hold it in clear.
    fn open_code(&self, scope: &Scope, rec: &mut ExecutionRecord) {
        if rec.code.starts_with(crate::vault::SEALED_PREFIX)
            && let Ok(code) = self.key.open(&scope.tenant, &code_item(&rec.id), &rec.code)
        {
            rec.code = code;
        }
    }
}

fn bind_execution<'q>(
    query: Query<'q>,
    scope: &'q Scope,
    rec: &'q ExecutionRecord,
    code: String,
    clock: String,
    pending: Option<String>,
    outcome: Option<String>,
) -> Query<'q> {
    query
        .bind(&scope.tenant)
        .bind(subject(scope))
        .bind(&rec.id)
        .bind(code)
        .bind(i64::from(rec.auto_approve))
        .bind(rec.status.as_str())
        .bind(rec.seed as i64)
        .bind(rec.started_at)
        .bind(rec.updated_at)
        .bind(rec.finished_at)
        .bind(rec.expires_at)
        .bind(rec.duration_ms)
        .bind(rec.tool_calls)
        .bind(clock)
        .bind(pending)
        .bind(outcome)
}

fn bind_call<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    key: &MasterKey,
    execution_id: &'q str,
    call: &'q ExecutionCallRecord,
) -> Result<sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>> {
    let seal =
        |field: &str, json: String| seal_call_field(key, execution_id, call.seq, field, json);
    Ok(query
        .bind(execution_id)
        .bind(call.seq)
        .bind(&call.path)
        .bind(seal("args", to_json(&call.args)?)?)
        .bind(&call.args_hash)
        .bind(
            opt_to_json(call.outcome.as_ref())?
                .map(|j| seal("outcome", j))
                .transpose()?,
        )
        .bind(
            opt_to_json(call.pause.as_ref())?
                .map(|j| seal("pause", j))
                .transpose()?,
        )
        .bind(call.started_at)
        .bind(call.duration_ms))
}

const INSERT_CALL_HEAD: &str = concat!(
    "INSERT INTO execution_call (execution_id, ",
    call_cols!(),
    ") VALUES "
);
const CALL_VALUES: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?)";
const CALL_CONFLICT: &str = " ON CONFLICT (execution_id, seq) DO UPDATE SET \
       outcome = coalesce(excluded.outcome, execution_call.outcome), \
       pause = coalesce(excluded.pause, execution_call.pause), \
       duration_ms = coalesce(excluded.duration_ms, execution_call.duration_ms)";

/// Upserts calls (of one or several executions) in multi-row statements of [`CHUNKS`] rows, so a
/// 100-call execution costs 4 statements (each a round trip to SQLite's thread), not 100.
async fn insert_calls(
    backend: Backend,
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    key: &MasterKey,
    calls: &[(&str, &ExecutionCallRecord)],
) -> Result<()> {
    let mut rest = calls;
    while !rest.is_empty() {
        let n = CHUNKS.into_iter().find(|c| *c <= rest.len()).unwrap_or(1);
        let (chunk, tail) = rest.split_at(n);
        let mut sql = String::from(INSERT_CALL_HEAD);
        for i in 0..n {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(CALL_VALUES);
        }
        sql.push_str(CALL_CONFLICT);
        let mut query = sqlx::query(backend.sql(sql));
        for (id, call) in chunk {
            query = bind_call(query, key, id, call)?;
        }
        query.execute(&mut **tx).await?;
        rest = tail;
    }
    Ok(())
}

#[async_trait]
impl ExecutionStore for SqlStore {
    async fn save_execution(
        &self,
        scope: &Scope,
        rec: &ExecutionRecord,
        calls: &[ExecutionCallRecord],
    ) -> Result<()> {
        let code = self.seal_code(scope, rec)?;
        let clock = to_json(&rec.clock)?;
        let pending = opt_to_json(rec.pending.as_ref())?;
        let outcome = opt_to_json(rec.outcome.as_ref())?;
        let row = bind_execution(
            sqlx::query(self.backend.sql(UPSERT_EXECUTION)),
            scope,
            rec,
            code,
            clock,
            pending,
            outcome,
        );
        if calls.is_empty() {
            // The common case (no tool calls): one statement, no explicit transaction.
            row.execute(&self.writer).await?;
            return Ok(());
        }
        let calls: Vec<(&str, &ExecutionCallRecord)> =
            calls.iter().map(|c| (rec.id.as_str(), c)).collect();
        let mut tx = self.begin_journal().await?;
        row.execute(&mut *tx).await?;
        insert_calls(self.backend, &mut tx, &self.key, &calls).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn save_executions(
        &self,
        scope: &Scope,
        batch: &[(ExecutionRecord, Vec<ExecutionCallRecord>)],
    ) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let rows = batch
            .iter()
            .map(|(rec, _)| {
                Ok((
                    self.seal_code(scope, rec)?,
                    to_json(&rec.clock)?,
                    opt_to_json(rec.pending.as_ref())?,
                    opt_to_json(rec.outcome.as_ref())?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut tx = self.begin_journal().await?;
        let mut rest: &[(ExecutionRecord, Vec<ExecutionCallRecord>)] = batch;
        let mut encoded = rows.into_iter();
        while !rest.is_empty() {
            let n = CHUNKS.into_iter().find(|c| *c <= rest.len()).unwrap_or(1);
            let (chunk, tail) = rest.split_at(n);
            let mut sql = String::from(INSERT_EXECUTION_HEAD);
            for i in 0..n {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(EXECUTION_VALUES);
            }
            sql.push_str(EXECUTION_CONFLICT);
            let mut query = sqlx::query(self.backend.sql(sql));
            for (rec, _) in chunk {
                let (code, clock, pending, outcome) = encoded.next().unwrap_or_default();
                query = bind_execution(query, scope, rec, code, clock, pending, outcome);
            }
            query.execute(&mut *tx).await?;
            let calls: Vec<(&str, &ExecutionCallRecord)> = chunk
                .iter()
                .flat_map(|(rec, calls)| calls.iter().map(move |c| (rec.id.as_str(), c)))
                .collect();
            insert_calls(self.backend, &mut tx, &self.key, &calls).await?;
            rest = tail;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn save_execution_call(
        &self,
        execution_id: &str,
        call: &ExecutionCallRecord,
    ) -> Result<()> {
        bind_call(
            sqlx::query(self.backend.sql(UPSERT_CALL)),
            &self.key,
            execution_id,
            call,
        )?
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn get_execution(&self, scope: &Scope, id: &str) -> Result<Option<ExecutionRecord>> {
        let row = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            execution_cols!(),
            " FROM execution WHERE id = ? AND tenant = ? AND subject = ?"
        )))
        .bind(id)
        .bind(&scope.tenant)
        .bind(subject(scope))
        .fetch_optional(&self.reader)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let mut rec = execution_from_row(&row)?;
        self.open_code(scope, &mut rec);
        Ok(Some(rec))
    }

    async fn execution_calls(&self, execution_id: &str) -> Result<Vec<ExecutionCallRecord>> {
        let rows = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            call_cols!(),
            " FROM execution_call WHERE execution_id = ? ORDER BY seq"
        )))
        .bind(execution_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| call_from_row(&self.key, execution_id, row))
            .collect()
    }

    async fn claim_paused_execution(&self, scope: &Scope, id: &str, now: i64) -> Result<bool> {
        let claimed = sqlx::query(self.backend.sql(
            "UPDATE execution SET status = 'running', updated_at = ? \
             WHERE id = ? AND tenant = ? AND subject = ? AND status = 'paused' \
               AND (expires_at IS NULL OR expires_at > ?)",
        ))
        .bind(now)
        .bind(id)
        .bind(&scope.tenant)
        .bind(subject(scope))
        .bind(now)
        .execute(&self.writer)
        .await?
        .rows_affected();
        Ok(claimed > 0)
    }

    async fn list_executions(
        &self,
        scope: &Scope,
        filter: &ExecutionFilter,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<ExecutionSummary>> {
        // `?3`/`?4` are NULL when the filter is unset; a call of the integration has a path
        // that is its slug or starts with `<slug>.` (compared as text: slugs may hold `_`,
        // which LIKE would read as a wildcard).
        let rows = sqlx::query(self.backend.sql(format!(
            "SELECT id, status, started_at, finished_at, duration_ms, tool_calls, \
               {} AS is_error \
             FROM execution e WHERE tenant = ?1 AND subject = ?2 \
               AND (?3 IS NULL OR status = ?3) \
               AND (?4 IS NULL OR EXISTS (SELECT 1 FROM execution_call c \
                    WHERE c.execution_id = e.id \
                      AND (c.path = ?4 OR substr(c.path, 1, length(?4) + 1) = ?4 || '.'))) \
             ORDER BY started_at DESC, id DESC LIMIT ?5 OFFSET ?6",
            self.backend.json_flag("outcome", "isError")
        )))
        .bind(&scope.tenant)
        .bind(subject(scope))
        .bind(filter.status.map(|s| s.as_str()))
        .bind(filter.integration.as_deref())
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ExecutionSummary {
                    id: row.try_get("id")?,
                    status: status_from(row.try_get("status")?)?,
                    started_at: row.try_get("started_at")?,
                    finished_at: row.try_get("finished_at")?,
                    duration_ms: row.try_get("duration_ms")?,
                    tool_calls: row.try_get("tool_calls")?,
                    is_error: row.try_get::<Option<i64>, _>("is_error")?.map(|v| v != 0),
                })
            })
            .collect()
    }

    async fn expire_paused_executions(&self, now: i64, outcome: &Value) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(self.backend.sql(
            "UPDATE execution SET status = 'expired', updated_at = ?, finished_at = ?, \
               pending = NULL, outcome = ? \
             WHERE status = 'paused' AND expires_at IS NOT NULL AND expires_at <= ? \
             RETURNING id",
        ))
        .bind(now)
        .bind(now)
        .bind(to_json(outcome)?)
        .bind(now)
        .fetch_all(&self.writer)
        .await?)
    }

    async fn fail_running_executions(
        &self,
        now: i64,
        updated_before: i64,
        outcome: &Value,
    ) -> Result<u64> {
        Ok(sqlx::query(self.backend.sql(
            "UPDATE execution SET status = 'failed', updated_at = ?, finished_at = ?, \
               pending = NULL, outcome = ? \
             WHERE status = 'running' AND updated_at <= ?",
        ))
        .bind(now)
        .bind(now)
        .bind(to_json(outcome)?)
        .bind(updated_before)
        .execute(&self.writer)
        .await?
        .rows_affected())
    }

    async fn delete_settled_executions(&self, before: i64) -> Result<u64> {
        let mut tx = self.begin_journal().await?;
        sqlx::query(self.backend.sql(
            "DELETE FROM execution_call WHERE execution_id IN \
               (SELECT id FROM execution WHERE status IN ('completed', 'failed', 'expired') \
                  AND finished_at < ?)",
        ))
        .bind(before)
        .execute(&mut *tx)
        .await?;
        let deleted = sqlx::query(self.backend.sql(
            "DELETE FROM execution WHERE status IN ('completed', 'failed', 'expired') \
               AND finished_at < ?",
        ))
        .bind(before)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(deleted)
    }
}
