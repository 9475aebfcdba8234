//! [`AccountStore`] on SQLite and PostgreSQL.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{SqlStore, is_unique_violation, parse_json, to_json};
use crate::accounts::{
    AccountStore, AttemptLimit, AuditFilter, AuditRecord, ClientRecord, GrantKind, GrantRecord,
    GrantStatus, InviteRecord, MemberChange, Reservation, TokenKind, TokenRecord, UserRecord,
};
use crate::{Result, StoreError};

const USER_COLS: &str = "id, tenant, email, name, password_hash, role, created_at, updated_at";
const TOKEN_COLS: &str = "id, token_hash, kind, tenant, user_id, name, hint, client_id, resource, \
     scope, grant_id, created_at, updated_at, last_used_at, expires_at, used_at";
const INVITE_COLS: &str = "id, tenant, code, role, label, created_by, created_at, expires_at, \
     used_by, used_by_email, used_at";
const GRANT_COLS: &str = "id, kind, tenant, code_hash, user_code, client_id, user_id, status, \
     data, created_at, expires_at, polled_at";
/// A token and its user, the user's columns prefixed `u_` (their names overlap).
const FIND_TOKEN: &str = "SELECT t.id AS id, t.token_hash AS token_hash, t.kind AS kind, \
     t.tenant AS tenant, t.user_id AS user_id, t.name AS name, t.hint AS hint, \
     t.client_id AS client_id, t.resource AS resource, t.scope AS scope, t.grant_id AS grant_id, \
     t.created_at AS created_at, t.updated_at AS updated_at, t.last_used_at AS last_used_at, \
     t.expires_at AS expires_at, t.used_at AS used_at, \
     u.id AS u_id, u.tenant AS u_tenant, u.email AS u_email, u.name AS u_name, \
     u.password_hash AS u_password_hash, u.role AS u_role, u.created_at AS u_created_at, \
     u.updated_at AS u_updated_at \
     FROM account_token t JOIN account_user u ON u.id = t.user_id AND u.tenant = t.tenant \
     WHERE t.token_hash = ?";
const AUDIT_COLS: &str = "id, tenant, at, kind, actor_id, actor_email, via, action, target, \
     before, after, outcome, detail";

fn user_from(row: &AnyRow, prefix: &str) -> Result<UserRecord> {
    let col = |c: &str| format!("{prefix}{c}");
    Ok(UserRecord {
        id: row.try_get(col("id").as_str())?,
        tenant: row.try_get(col("tenant").as_str())?,
        email: row.try_get(col("email").as_str())?,
        name: row.try_get(col("name").as_str())?,
        password_hash: row.try_get(col("password_hash").as_str())?,
        role: row.try_get(col("role").as_str())?,
        created_at: row.try_get(col("created_at").as_str())?,
        updated_at: row.try_get(col("updated_at").as_str())?,
    })
}

fn token_from(row: &AnyRow) -> Result<TokenRecord> {
    let kind: String = row.try_get("kind")?;
    Ok(TokenRecord {
        id: row.try_get("id")?,
        token_hash: row.try_get("token_hash")?,
        kind: TokenKind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("token kind {kind:?}")))?,
        tenant: row.try_get("tenant")?,
        user_id: row.try_get("user_id")?,
        name: row.try_get("name")?,
        hint: row.try_get("hint")?,
        client_id: row.try_get("client_id")?,
        resource: row.try_get("resource")?,
        scope: row.try_get("scope")?,
        grant_id: row.try_get("grant_id")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_used_at: row.try_get("last_used_at")?,
        expires_at: row.try_get("expires_at")?,
        used_at: row.try_get("used_at")?,
    })
}

fn invite_from(row: &AnyRow) -> Result<InviteRecord> {
    Ok(InviteRecord {
        id: row.try_get("id")?,
        tenant: row.try_get("tenant")?,
        code: row.try_get("code")?,
        role: row.try_get("role")?,
        label: row.try_get("label")?,
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        used_by: row.try_get("used_by")?,
        used_by_email: row.try_get("used_by_email")?,
        used_at: row.try_get("used_at")?,
    })
}

fn grant_from(row: &AnyRow) -> Result<GrantRecord> {
    let kind: String = row.try_get("kind")?;
    let status: String = row.try_get("status")?;
    Ok(GrantRecord {
        id: row.try_get("id")?,
        kind: match kind.as_str() {
            "authorization" => GrantKind::Authorization,
            "device" => GrantKind::Device,
            other => return Err(StoreError::Corrupt(format!("grant kind {other:?}"))),
        },
        tenant: row.try_get("tenant")?,
        code_hash: row.try_get("code_hash")?,
        user_code: row.try_get("user_code")?,
        client_id: row.try_get("client_id")?,
        user_id: row.try_get("user_id")?,
        status: GrantStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("grant status {status:?}")))?,
        data: parse_json(row.try_get::<&str, _>("data")?)?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        polled_at: row.try_get("polled_at")?,
    })
}

fn audit_from(row: &AnyRow) -> Result<AuditRecord> {
    let json = |c: &str| -> Result<Option<serde_json::Value>> {
        row.try_get::<Option<&str>, _>(c)?
            .map(parse_json)
            .transpose()
    };
    Ok(AuditRecord {
        id: row.try_get("id")?,
        tenant: row.try_get("tenant")?,
        at: row.try_get("at")?,
        kind: row.try_get("kind")?,
        actor_id: row.try_get("actor_id")?,
        actor_email: row.try_get("actor_email")?,
        via: row.try_get("via")?,
        action: row.try_get("action")?,
        target: row.try_get("target")?,
        before: json("before")?,
        after: json("after")?,
        outcome: row.try_get("outcome")?,
        detail: json("detail")?,
    })
}

fn taken(e: sqlx::Error) -> StoreError {
    if is_unique_violation(&e) {
        StoreError::AlreadyExists
    } else {
        e.into()
    }
}

/// How a limit's key is stored: its SHA-256, so any text makes a row of the same size.
fn attempt_key(key: &str) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(key.as_bytes()))
}

fn opt_json(value: &Option<serde_json::Value>) -> Result<Option<String>> {
    value.as_ref().map(to_json).transpose()
}

impl SqlStore {
    async fn insert_user_in(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        rec: &UserRecord,
        first: bool,
    ) -> std::result::Result<(), sqlx::Error> {
        sqlx::query(self.backend.sql(format!(
            "INSERT INTO account_user ({USER_COLS}, first) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )))
        .bind(&rec.id)
        .bind(&rec.tenant)
        .bind(&rec.email)
        .bind(&rec.name)
        .bind(&rec.password_hash)
        .bind(&rec.role)
        .bind(rec.created_at)
        .bind(rec.updated_at)
        .bind(i64::from(first))
        .execute(&mut **tx)
        .await
        .map(|_| ())
    }

    /// Whether the tenant keeps an owner other than `id`.
    async fn other_owner(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        tenant: &str,
        id: &str,
    ) -> Result<bool> {
        let row = sqlx::query(self.backend.sql(
            "SELECT COUNT(*) AS n FROM account_user WHERE tenant = ? AND role = 'owner' AND id <> ?",
        ))
        .bind(tenant)
        .bind(id)
        .fetch_one(&mut **tx)
        .await?;
        Ok(row.try_get::<i64, _>("n")? > 0)
    }

    /// The grant whose unique `column` (`id`, `user_code`, `code_hash`) is `value`; read on
    /// the writer, which just answered or polled it.
    async fn grant_where(&self, column: &'static str, value: &str) -> Result<Option<GrantRecord>> {
        let row = sqlx::query(self.backend.sql(format!(
            "SELECT {GRANT_COLS} FROM account_grant WHERE {column} = ?"
        )))
        .bind(value)
        .fetch_optional(&self.writer)
        .await?;
        row.map(|r| grant_from(&r)).transpose()
    }

    /// A transaction in which the tenant's members change one at a time (PostgreSQL: an
    /// advisory lock, so two owners demoting each other cannot both pass the last-owner check).
    async fn begin_members(&self, tenant: &str) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        self.begin_write(&format!("members:{tenant}")).await
    }
}

#[async_trait]
impl AccountStore for SqlStore {
    async fn count_users(&self, tenant: &str) -> Result<i64> {
        let row = sqlx::query(
            self.backend
                .sql("SELECT COUNT(*) AS n FROM account_user WHERE tenant = ?"),
        )
        .bind(tenant)
        .fetch_one(&self.reader)
        .await?;
        Ok(row.try_get("n")?)
    }

    async fn insert_first_user(&self, rec: &UserRecord) -> Result<bool> {
        let mut tx = self.begin_members(&rec.tenant).await?;
        let row = sqlx::query(
            self.backend
                .sql("SELECT COUNT(*) AS n FROM account_user WHERE tenant = ?"),
        )
        .bind(&rec.tenant)
        .fetch_one(&mut *tx)
        .await?;
        if row.try_get::<i64, _>("n")? > 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        match self.insert_user_in(&mut tx, rec, true).await {
            Ok(()) => {
                tx.commit().await?;
                Ok(true)
            }
            Err(e) if is_unique_violation(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn insert_invited_user(
        &self,
        rec: &UserRecord,
        code: &str,
        now: i64,
    ) -> Result<Option<String>> {
        let mut tx = self.begin_members(&rec.tenant).await?;
        let row = sqlx::query(self.backend.sql(
            "UPDATE account_invite SET used_by = ?, used_by_email = ?, used_at = ? \
             WHERE tenant = ? AND code = ? AND used_at IS NULL AND expires_at > ? RETURNING role",
        ))
        .bind(&rec.id)
        .bind(&rec.email)
        .bind(now)
        .bind(&rec.tenant)
        .bind(code)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(None);
        };
        let role: String = row.try_get("role")?;
        let rec = UserRecord {
            role: role.clone(),
            ..rec.clone()
        };
        self.insert_user_in(&mut tx, &rec, false)
            .await
            .map_err(taken)?;
        tx.commit().await?;
        Ok(Some(role))
    }

    async fn get_user(&self, tenant: &str, id: &str) -> Result<Option<UserRecord>> {
        let row = sqlx::query(self.backend.sql(format!(
            "SELECT {USER_COLS} FROM account_user WHERE tenant = ? AND id = ?"
        )))
        .bind(tenant)
        .bind(id)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|r| user_from(&r, "")).transpose()
    }

    async fn get_user_by_email(&self, tenant: &str, email: &str) -> Result<Option<UserRecord>> {
        let row = sqlx::query(self.backend.sql(format!(
            "SELECT {USER_COLS} FROM account_user WHERE tenant = ? AND email = ?"
        )))
        .bind(tenant)
        .bind(email)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|r| user_from(&r, "")).transpose()
    }

    async fn list_users(&self, tenant: &str) -> Result<Vec<UserRecord>> {
        let rows = sqlx::query(self.backend.sql(format!(
            "SELECT {USER_COLS} FROM account_user WHERE tenant = ? ORDER BY created_at, id"
        )))
        .bind(tenant)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(|r| user_from(r, "")).collect()
    }

    async fn set_user_role(&self, tenant: &str, id: &str, role: &str) -> Result<MemberChange> {
        let mut tx = self.begin_members(tenant).await?;
        let Some(current) = sqlx::query(
            self.backend
                .sql("SELECT role FROM account_user WHERE tenant = ? AND id = ?"),
        )
        .bind(tenant)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            tx.rollback().await?;
            return Ok(MemberChange::NotFound);
        };
        let current: String = current.try_get("role")?;
        if current == "owner" && role != "owner" && !self.other_owner(&mut tx, tenant, id).await? {
            tx.rollback().await?;
            return Ok(MemberChange::LastOwner);
        }
        sqlx::query(
            self.backend.sql(
                "UPDATE account_user SET role = ?, updated_at = ? WHERE tenant = ? AND id = ?",
            ),
        )
        .bind(role)
        .bind(executor_core::now_ms())
        .bind(tenant)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(MemberChange::Done)
    }

    async fn delete_user(&self, tenant: &str, id: &str) -> Result<MemberChange> {
        let mut tx = self.begin_members(tenant).await?;
        let Some(current) = sqlx::query(
            self.backend
                .sql("SELECT role FROM account_user WHERE tenant = ? AND id = ?"),
        )
        .bind(tenant)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            tx.rollback().await?;
            return Ok(MemberChange::NotFound);
        };
        let current: String = current.try_get("role")?;
        if current == "owner" && !self.other_owner(&mut tx, tenant, id).await? {
            tx.rollback().await?;
            return Ok(MemberChange::LastOwner);
        }
        sqlx::query(
            self.backend
                .sql("DELETE FROM account_token WHERE tenant = ? AND user_id = ?"),
        )
        .bind(tenant)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            self.backend
                .sql("DELETE FROM account_user WHERE tenant = ? AND id = ?"),
        )
        .bind(tenant)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(MemberChange::Done)
    }

    async fn insert_token(&self, rec: &TokenRecord) -> Result<()> {
        sqlx::query(self.backend.sql(format!(
            "INSERT INTO account_token ({TOKEN_COLS}) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )))
        .bind(&rec.id)
        .bind(&rec.token_hash)
        .bind(rec.kind.as_str())
        .bind(&rec.tenant)
        .bind(&rec.user_id)
        .bind(&rec.name)
        .bind(&rec.hint)
        .bind(&rec.client_id)
        .bind(&rec.resource)
        .bind(&rec.scope)
        .bind(&rec.grant_id)
        .bind(rec.created_at)
        .bind(rec.updated_at)
        .bind(rec.last_used_at)
        .bind(rec.expires_at)
        .bind(rec.used_at)
        .execute(&self.writer)
        .await
        .map_err(taken)?;
        Ok(())
    }

    async fn find_token(&self, token_hash: &str) -> Result<Option<(TokenRecord, UserRecord)>> {
        // Every signed-in request asks this: the statement is a constant, not rebuilt per call.
        let row = sqlx::query(self.backend.sql(FIND_TOKEN))
            .bind(token_hash)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|r| Ok((token_from(&r)?, user_from(&r, "u_")?)))
            .transpose()
    }

    async fn touch_token(&self, id: &str, now: i64, granularity_ms: i64) -> Result<()> {
        sqlx::query(self.backend.sql(
            "UPDATE account_token SET last_used_at = ? \
             WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
        ))
        .bind(now)
        .bind(id)
        .bind(now - granularity_ms)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn list_tokens(
        &self,
        tenant: &str,
        user_id: &str,
        kind: TokenKind,
    ) -> Result<Vec<TokenRecord>> {
        let rows = sqlx::query(self.backend.sql(format!(
            "SELECT {TOKEN_COLS} FROM account_token WHERE tenant = ? AND user_id = ? AND kind = ? \
             ORDER BY created_at DESC, id"
        )))
        .bind(tenant)
        .bind(user_id)
        .bind(kind.as_str())
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(token_from).collect()
    }

    async fn delete_token(
        &self,
        tenant: &str,
        user_id: &str,
        kind: TokenKind,
        id: &str,
    ) -> Result<bool> {
        Ok(sqlx::query(self.backend.sql(
            "DELETE FROM account_token WHERE tenant = ? AND user_id = ? AND kind = ? AND id = ?",
        ))
        .bind(tenant)
        .bind(user_id)
        .bind(kind.as_str())
        .bind(id)
        .execute(&self.writer)
        .await?
        .rows_affected()
            > 0)
    }

    async fn delete_token_by_hash(&self, token_hash: &str) -> Result<bool> {
        Ok(sqlx::query(
            self.backend
                .sql("DELETE FROM account_token WHERE token_hash = ?"),
        )
        .bind(token_hash)
        .execute(&self.writer)
        .await?
        .rows_affected()
            > 0)
    }

    async fn use_refresh_token(&self, token_hash: &str, now: i64) -> Result<Option<TokenRecord>> {
        let row = sqlx::query(self.backend.sql(format!(
            "UPDATE account_token SET used_at = ? \
             WHERE token_hash = ? AND kind = 'oauth_refresh' AND used_at IS NULL \
             RETURNING {TOKEN_COLS}"
        )))
        .bind(now)
        .bind(token_hash)
        .fetch_optional(&self.writer)
        .await?;
        row.map(|r| token_from(&r)).transpose()
    }

    async fn revoke_grant_tokens(&self, grant_id: &str) -> Result<u64> {
        Ok(sqlx::query(
            self.backend
                .sql("DELETE FROM account_token WHERE grant_id = ?"),
        )
        .bind(grant_id)
        .execute(&self.writer)
        .await?
        .rows_affected())
    }

    async fn purge_expired_accounts(
        &self,
        now: i64,
        attempts_before: i64,
        unused_clients_before: i64,
    ) -> Result<u64> {
        // A used refresh token is kept until its expiry: presenting it again must still be
        // recognised as a replay (and revoke its grant).
        let tokens = sqlx::query(
            self.backend
                .sql("DELETE FROM account_token WHERE expires_at IS NOT NULL AND expires_at < ?"),
        )
        .bind(now)
        .execute(&self.writer)
        .await?
        .rows_affected();
        let grants = sqlx::query(
            self.backend
                .sql("DELETE FROM account_grant WHERE expires_at < ?"),
        )
        .bind(now)
        .execute(&self.writer)
        .await?
        .rows_affected();
        let attempts = sqlx::query(self.backend.sql("DELETE FROM account_attempt WHERE at < ?"))
            .bind(attempts_before)
            .execute(&self.writer)
            .await?
            .rows_affected();
        // Anyone may register a client: one that never got a token is forgotten after a while.
        let clients = sqlx::query(self.backend.sql(
            "DELETE FROM account_client WHERE created_at < ? \
             AND NOT EXISTS (SELECT 1 FROM account_token t WHERE t.client_id = account_client.client_id) \
             AND NOT EXISTS (SELECT 1 FROM account_grant g WHERE g.client_id = account_client.client_id)",
        ))
        .bind(unused_clients_before)
        .execute(&self.writer)
        .await?
        .rows_affected();
        Ok(tokens + grants + attempts + clients)
    }

    async fn reserve_attempt(
        &self,
        attempt_id: &str,
        limits: &[AttemptLimit],
        now: i64,
        window_ms: i64,
    ) -> Result<Reservation> {
        let keys: Vec<String> = limits.iter().map(|l| attempt_key(&l.key)).collect();
        // One writer at a time (SQLite's lock, PostgreSQL's advisory lock): two attempts
        // cannot both take the last slot, on one server or on two.
        let mut tx = self.begin_write("account-attempts").await?;
        let since = now - window_ms;
        sqlx::query(
            self.backend
                .sql("DELETE FROM account_attempt WHERE at <= ?"),
        )
        .bind(since)
        .execute(&mut *tx)
        .await?;
        let mut before = Vec::with_capacity(limits.len());
        let mut wait: Option<i64> = None;
        for (key, limit) in keys.iter().zip(limits) {
            let row = sqlx::query(self.backend.sql(
                "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM account_attempt WHERE limit_key = ?",
            ))
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
            let n: i64 = row.try_get("n")?;
            if n >= limit.limit {
                let oldest: Option<i64> = row.try_get("oldest")?;
                let frees = oldest.map_or(1, |o| (o + window_ms - now).max(1));
                wait = Some(wait.map_or(frees, |w| w.max(frees)));
            }
            before.push(n);
        }
        if let Some(retry_after_ms) = wait {
            tx.rollback().await?;
            return Ok(Reservation::Refused { retry_after_ms });
        }
        for key in &keys {
            sqlx::query(
                self.backend.sql(
                    "INSERT INTO account_attempt (attempt_id, limit_key, at) VALUES (?, ?, ?)",
                ),
            )
            .bind(attempt_id)
            .bind(key)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Reservation::Reserved { before })
    }

    async fn release_attempt(&self, attempt_id: &str) -> Result<()> {
        sqlx::query(
            self.backend
                .sql("DELETE FROM account_attempt WHERE attempt_id = ?"),
        )
        .bind(attempt_id)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn clear_attempts(&self, key: &str) -> Result<()> {
        sqlx::query(
            self.backend
                .sql("DELETE FROM account_attempt WHERE limit_key = ?"),
        )
        .bind(attempt_key(key))
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn insert_invite(&self, rec: &InviteRecord) -> Result<()> {
        sqlx::query(self.backend.sql(format!(
            "INSERT INTO account_invite ({INVITE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )))
        .bind(&rec.id)
        .bind(&rec.tenant)
        .bind(&rec.code)
        .bind(&rec.role)
        .bind(&rec.label)
        .bind(&rec.created_by)
        .bind(rec.created_at)
        .bind(rec.expires_at)
        .bind(&rec.used_by)
        .bind(&rec.used_by_email)
        .bind(rec.used_at)
        .execute(&self.writer)
        .await
        .map_err(taken)?;
        Ok(())
    }

    async fn list_invites(&self, tenant: &str) -> Result<Vec<InviteRecord>> {
        let rows = sqlx::query(self.backend.sql(format!(
            "SELECT {INVITE_COLS} FROM account_invite WHERE tenant = ? \
             ORDER BY created_at DESC, id"
        )))
        .bind(tenant)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(invite_from).collect()
    }

    async fn get_invite_by_code(&self, tenant: &str, code: &str) -> Result<Option<InviteRecord>> {
        let row = sqlx::query(self.backend.sql(format!(
            "SELECT {INVITE_COLS} FROM account_invite WHERE tenant = ? AND code = ?"
        )))
        .bind(tenant)
        .bind(code)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|r| invite_from(&r)).transpose()
    }

    async fn delete_unused_invite(&self, tenant: &str, id: &str) -> Result<bool> {
        Ok(sqlx::query(
            self.backend
                .sql("DELETE FROM account_invite WHERE tenant = ? AND id = ? AND used_at IS NULL"),
        )
        .bind(tenant)
        .bind(id)
        .execute(&self.writer)
        .await?
        .rows_affected()
            > 0)
    }

    async fn insert_grant(&self, rec: &GrantRecord, per_client: i64, total: i64) -> Result<bool> {
        // Anyone may start a grant: expired ones go at each insert, and the pending ones are
        // capped, counted and inserted under one lock.
        let mut tx = self.begin_write(&format!("grants:{}", rec.tenant)).await?;
        sqlx::query(
            self.backend
                .sql("DELETE FROM account_grant WHERE expires_at < ?"),
        )
        .bind(rec.created_at)
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query(self.backend.sql(
            "SELECT COUNT(*) AS total, \
             COALESCE(SUM(CASE WHEN client_id = ? THEN 1 ELSE 0 END), 0) AS mine \
             FROM account_grant WHERE tenant = ? AND kind = ? AND status = 'pending'",
        ))
        .bind(&rec.client_id)
        .bind(&rec.tenant)
        .bind(rec.kind.as_str())
        .fetch_one(&mut *tx)
        .await?;
        let (all, mine): (i64, i64) = (row.try_get("total")?, row.try_get("mine")?);
        if all >= total || mine >= per_client {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(self.backend.sql(format!(
            "INSERT INTO account_grant ({GRANT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )))
        .bind(&rec.id)
        .bind(rec.kind.as_str())
        .bind(&rec.tenant)
        .bind(&rec.code_hash)
        .bind(&rec.user_code)
        .bind(&rec.client_id)
        .bind(&rec.user_id)
        .bind(rec.status.as_str())
        .bind(to_json(&rec.data)?)
        .bind(rec.created_at)
        .bind(rec.expires_at)
        .bind(rec.polled_at)
        .execute(&mut *tx)
        .await
        .map_err(taken)?;
        tx.commit().await?;
        Ok(true)
    }

    async fn get_grant(&self, id: &str) -> Result<Option<GrantRecord>> {
        self.grant_where("id", id).await
    }

    async fn get_grant_by_user_code(&self, user_code: &str) -> Result<Option<GrantRecord>> {
        self.grant_where("user_code", user_code).await
    }

    async fn get_grant_by_code(&self, code_hash: &str) -> Result<Option<GrantRecord>> {
        self.grant_where("code_hash", code_hash).await
    }

    async fn answer_grant(
        &self,
        id: &str,
        status: GrantStatus,
        user_id: &str,
        code_hash: Option<&str>,
    ) -> Result<bool> {
        Ok(sqlx::query(self.backend.sql(
            "UPDATE account_grant SET status = ?, user_id = ?, code_hash = coalesce(?, code_hash) \
             WHERE id = ? AND status = 'pending'",
        ))
        .bind(status.as_str())
        .bind(user_id)
        .bind(code_hash)
        .bind(id)
        .execute(&self.writer)
        .await?
        .rows_affected()
            > 0)
    }

    async fn use_grant(&self, id: &str) -> Result<bool> {
        Ok(sqlx::query(
            self.backend.sql(
                "UPDATE account_grant SET status = 'used' WHERE id = ? AND status = 'approved'",
            ),
        )
        .bind(id)
        .execute(&self.writer)
        .await?
        .rows_affected()
            > 0)
    }

    async fn poll_grant(&self, id: &str, now: i64) -> Result<Option<i64>> {
        let mut tx = self.begin_journal().await?;
        let row = sqlx::query(
            self.backend
                .sql("SELECT polled_at FROM account_grant WHERE id = ?"),
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let before = match row {
            Some(row) => row.try_get::<Option<i64>, _>("polled_at")?,
            None => None,
        };
        sqlx::query(
            self.backend
                .sql("UPDATE account_grant SET polled_at = ? WHERE id = ?"),
        )
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(before)
    }

    async fn insert_client(&self, rec: &ClientRecord) -> Result<()> {
        sqlx::query(self.backend.sql(
            "INSERT INTO account_client (client_id, tenant, client_name, redirect_uris, created_at) \
             VALUES (?, ?, ?, ?, ?)",
        ))
        .bind(&rec.client_id)
        .bind(&rec.tenant)
        .bind(&rec.client_name)
        .bind(to_json(&serde_json::json!(rec.redirect_uris))?)
        .bind(rec.created_at)
        .execute(&self.writer)
        .await
        .map_err(taken)?;
        Ok(())
    }

    async fn get_client(&self, client_id: &str) -> Result<Option<ClientRecord>> {
        let row = sqlx::query(self.backend.sql(
            "SELECT client_id, tenant, client_name, redirect_uris, created_at \
             FROM account_client WHERE client_id = ?",
        ))
        .bind(client_id)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|r| {
            let uris = parse_json(r.try_get::<&str, _>("redirect_uris")?)?;
            Ok(ClientRecord {
                client_id: r.try_get("client_id")?,
                tenant: r.try_get("tenant")?,
                client_name: r.try_get("client_name")?,
                redirect_uris: serde_json::from_value(uris)
                    .map_err(|e| StoreError::Corrupt(format!("redirect uris: {e}")))?,
                created_at: r.try_get("created_at")?,
            })
        })
        .transpose()
    }

    async fn append_audit(&self, events: &[AuditRecord]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_journal().await?;
        for e in events {
            sqlx::query(self.backend.sql(
                "INSERT INTO audit_event (tenant, at, kind, actor_id, actor_email, via, action, \
                 target, before, after, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ))
            .bind(&e.tenant)
            .bind(e.at)
            .bind(&e.kind)
            .bind(&e.actor_id)
            .bind(&e.actor_email)
            .bind(&e.via)
            .bind(&e.action)
            .bind(&e.target)
            .bind(opt_json(&e.before)?)
            .bind(opt_json(&e.after)?)
            .bind(&e.outcome)
            .bind(opt_json(&e.detail)?)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn list_audit(&self, tenant: &str, filter: &AuditFilter) -> Result<Vec<AuditRecord>> {
        let mut sql = format!("SELECT {AUDIT_COLS} FROM audit_event WHERE tenant = ?");
        if filter.before.is_some() {
            sql.push_str(" AND id < ?");
        }
        if filter.actor_id.is_some() {
            sql.push_str(" AND actor_id = ?");
        }
        if filter.kind.is_some() {
            sql.push_str(" AND kind = ?");
        }
        if filter.action.is_some() {
            sql.push_str(&format!(" AND {}", self.backend.contains_bound("action")));
        }
        sql.push_str(" ORDER BY id DESC LIMIT ?");
        let mut query = sqlx::query(self.backend.sql(sql)).bind(tenant);
        if let Some(before) = filter.before {
            query = query.bind(before);
        }
        if let Some(actor) = &filter.actor_id {
            query = query.bind(actor);
        }
        if let Some(kind) = &filter.kind {
            query = query.bind(kind);
        }
        if let Some(action) = &filter.action {
            query = query.bind(action);
        }
        let rows = query
            .bind(i64::from(filter.limit.clamp(1, 500)))
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(audit_from).collect()
    }
}
