//! OAuth clients, sessions and the OAuth columns of connections (spec §1.7).

use executor_core::{Owner, now_ms};
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{SqlStore, parse_json, parse_owner, stamp, to_json, write_subject};
use crate::{
    ConnectionKey, ConnectionOAuth, OAuthClientRecord, OAuthSessionRecord, Result, Scope,
    StoreError,
};

macro_rules! client_cols {
    () => {
        "owner, slug, authorization_url, token_url, grant_type, client_id, client_secret_item_id, resource, origin_kind, origin_integration, origin_issuer, origin_redirect_uri, token_endpoint_auth_method, created_at, updated_at"
    };
}
macro_rules! session_cols {
    () => {
        "state, owner, client_slug, client_owner, integration, name, template, redirect_url, pkce_verifier, identity_label, payload, expires_at, created_at"
    };
}

fn client_from_row(row: &AnyRow) -> Result<OAuthClientRecord> {
    Ok(OAuthClientRecord {
        owner: parse_owner(row.try_get("owner")?)?,
        slug: row.try_get("slug")?,
        authorization_url: row.try_get("authorization_url")?,
        token_url: row.try_get("token_url")?,
        grant: row.try_get("grant_type")?,
        client_id: row.try_get("client_id")?,
        client_secret_item_id: row.try_get("client_secret_item_id")?,
        resource: row.try_get("resource")?,
        origin_kind: row.try_get("origin_kind")?,
        origin_integration: row.try_get("origin_integration")?,
        origin_issuer: row.try_get("origin_issuer")?,
        origin_redirect_uri: row.try_get("origin_redirect_uri")?,
        token_endpoint_auth_method: row.try_get("token_endpoint_auth_method")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn session_from_row(row: &AnyRow) -> Result<OAuthSessionRecord> {
    Ok(OAuthSessionRecord {
        state: row.try_get("state")?,
        owner: parse_owner(row.try_get("owner")?)?,
        client_slug: row.try_get("client_slug")?,
        client_owner: parse_owner(row.try_get("client_owner")?)?,
        integration: row.try_get("integration")?,
        name: row.try_get("name")?,
        template: row.try_get("template")?,
        redirect_url: row.try_get("redirect_url")?,
        pkce_verifier: row.try_get("pkce_verifier")?,
        identity_label: row.try_get("identity_label")?,
        payload: parse_json(row.try_get::<&str, _>("payload")?)?,
        expires_at: row.try_get("expires_at")?,
        created_at: row.try_get("created_at")?,
    })
}

/// The OAuth columns of a connection row (any connection; see [`connection_oauth_from_row`]).
fn oauth_columns(row: &AnyRow) -> Result<ConnectionOAuth> {
    let client_owner: Option<String> = row.try_get("oauth_client_owner")?;
    let provider_state: Option<String> = row.try_get("provider_state")?;
    let missing_scopes = match provider_state.as_deref() {
        Some(raw) => parse_json(raw)?
            .get("missingOAuthScopes")
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(serde_json::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(ConnectionOAuth {
        client: row.try_get("oauth_client")?,
        client_owner: client_owner.as_deref().map(parse_owner).transpose()?,
        refresh_item_id: row.try_get("refresh_item_id")?,
        expires_at: row.try_get("expires_at")?,
        scope: row.try_get("oauth_scope")?,
        token_url: row.try_get("oauth_token_url")?,
        missing_scopes,
    })
}

/// The OAuth columns of a connection row read with `connection_read_cols!()`: `None` unless
/// OAuth minted it (it has an OAuth client).
pub(super) fn connection_oauth_from_row(row: &AnyRow) -> Result<Option<ConnectionOAuth>> {
    let oauth = oauth_columns(row)?;
    Ok(oauth.client.is_some().then_some(oauth))
}

impl SqlStore {
    pub(super) async fn oauth_list_clients(&self, scope: &Scope) -> Result<Vec<OAuthClientRecord>> {
        let rows = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            client_cols!(),
            " FROM oauth_client WHERE ",
            visible!(),
            " ORDER BY owner, slug"
        )))
        .bind(&scope.tenant)
        .bind(scope.subject.as_deref())
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(client_from_row).collect()
    }

    pub(super) async fn oauth_get_client(
        &self,
        scope: &Scope,
        owner: Owner,
        slug: &str,
    ) -> Result<Option<OAuthClientRecord>> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(None);
        };
        let row = sqlx::query(self.backend.sql(concat!(
            "SELECT ",
            client_cols!(),
            " FROM oauth_client WHERE tenant = ? AND owner = ? AND subject = ? AND slug = ?"
        )))
        .bind(&scope.tenant)
        .bind(owner.as_str())
        .bind(subject)
        .bind(slug)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(client_from_row).transpose()
    }

    pub(super) async fn oauth_upsert_client(
        &self,
        scope: &Scope,
        rec: &OAuthClientRecord,
    ) -> Result<()> {
        let subject = write_subject(scope, rec.owner)?;
        let created = stamp(rec.created_at);
        sqlx::query(self.backend.sql(concat!(
            "INSERT INTO oauth_client (tenant, subject, ",
            client_cols!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant, owner, subject, slug) DO UPDATE SET \
               authorization_url = excluded.authorization_url, token_url = excluded.token_url, \
               grant_type = excluded.grant_type, client_id = excluded.client_id, \
               client_secret_item_id = excluded.client_secret_item_id, \
               resource = excluded.resource, origin_kind = excluded.origin_kind, \
               origin_integration = excluded.origin_integration, \
               origin_issuer = excluded.origin_issuer, \
               origin_redirect_uri = excluded.origin_redirect_uri, \
               token_endpoint_auth_method = excluded.token_endpoint_auth_method, \
               updated_at = excluded.updated_at"
        )))
        .bind(&scope.tenant)
        .bind(subject)
        .bind(rec.owner.as_str())
        .bind(&rec.slug)
        .bind(&rec.authorization_url)
        .bind(&rec.token_url)
        .bind(&rec.grant)
        .bind(&rec.client_id)
        .bind(&rec.client_secret_item_id)
        .bind(&rec.resource)
        .bind(&rec.origin_kind)
        .bind(&rec.origin_integration)
        .bind(&rec.origin_issuer)
        .bind(&rec.origin_redirect_uri)
        .bind(&rec.token_endpoint_auth_method)
        .bind(created)
        .bind(now_ms())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    pub(super) async fn oauth_delete_client(
        &self,
        scope: &Scope,
        owner: Owner,
        slug: &str,
    ) -> Result<bool> {
        let Some(subject) = scope.subject_for(owner) else {
            return Ok(false);
        };
        let done = sqlx::query(self.backend.sql(
            "DELETE FROM oauth_client WHERE tenant = ? AND owner = ? AND subject = ? AND slug = ?",
        ))
        .bind(&scope.tenant)
        .bind(owner.as_str())
        .bind(subject)
        .bind(slug)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn oauth_insert_session(
        &self,
        scope: &Scope,
        rec: &OAuthSessionRecord,
    ) -> Result<()> {
        let subject = write_subject(scope, rec.owner)?;
        let mut tx = self.begin_write(&scope.tenant).await?;
        sqlx::query(
            self.backend
                .sql("DELETE FROM oauth_session WHERE tenant = ? AND expires_at <= ?"),
        )
        .bind(&scope.tenant)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        sqlx::query(self.backend.sql(concat!(
            "INSERT INTO oauth_session (tenant, subject, ",
            session_cols!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )))
        .bind(&scope.tenant)
        .bind(subject)
        .bind(&rec.state)
        .bind(rec.owner.as_str())
        .bind(&rec.client_slug)
        .bind(rec.client_owner.as_str())
        .bind(&rec.integration)
        .bind(&rec.name)
        .bind(&rec.template)
        .bind(&rec.redirect_url)
        .bind(&rec.pkce_verifier)
        .bind(&rec.identity_label)
        .bind(to_json(&rec.payload)?)
        .bind(rec.expires_at)
        .bind(stamp(rec.created_at))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(super) async fn oauth_take_session(
        &self,
        scope: &Scope,
        state: &str,
    ) -> Result<Option<OAuthSessionRecord>> {
        let row = sqlx::query(self.backend.sql(concat!(
            "DELETE FROM oauth_session WHERE ",
            visible!(),
            " AND state = ? RETURNING ",
            session_cols!()
        )))
        .bind(&scope.tenant)
        .bind(scope.subject.as_deref())
        .bind(state)
        .fetch_optional(&self.writer)
        .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    pub(super) async fn oauth_get_connection(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
    ) -> Result<Option<ConnectionOAuth>> {
        let Some(subject) = scope.subject_for(key.owner) else {
            return Ok(None);
        };
        let row = sqlx::query(self.backend.sql(concat!(
            "SELECT oauth_client, oauth_client_owner, refresh_item_id, expires_at, oauth_scope, \
               oauth_token_url, provider_state FROM connection WHERE ",
            conn_key!("name")
        )))
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(oauth_columns).transpose()
    }

    pub(super) async fn oauth_save_tokens(
        &self,
        scope: &Scope,
        key: &ConnectionKey,
        secrets: &[(String, String)],
        oauth: &ConnectionOAuth,
    ) -> Result<()> {
        let subject = write_subject(scope, key.owner)?;
        let sealed: Vec<(&str, String)> = secrets
            .iter()
            .map(|(item, value)| {
                let sealed = self.key.seal_owned(&scope.tenant, subject, item, value)?;
                Ok((item.as_str(), sealed))
            })
            .collect::<Result<_>>()?;
        let now = now_ms();
        let mut tx = self.begin_write(&scope.tenant).await?;
        let updated = sqlx::query(self.backend.sql(format!(
            "UPDATE connection SET oauth_client = ?, oauth_client_owner = ?, refresh_item_id = ?, \
               expires_at = ?, oauth_scope = ?, oauth_token_url = ?, \
               provider_state = {}, updated_at = ? WHERE {}",
            self.backend
                .json_set_bound("provider_state", "missingOAuthScopes"),
            conn_key!("name")
        )))
        .bind(&oauth.client)
        .bind(oauth.client_owner.map(Owner::as_str))
        .bind(&oauth.refresh_item_id)
        .bind(oauth.expires_at)
        .bind(&oauth.scope)
        .bind(&oauth.token_url)
        .bind(serde_json::to_string(&oauth.missing_scopes)?)
        .bind(now)
        .bind(&scope.tenant)
        .bind(&key.integration)
        .bind(key.owner.as_str())
        .bind(subject)
        .bind(&key.name)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated == 0 {
            return Err(StoreError::NotFound);
        }
        for (item, value) in sealed {
            sqlx::query(self.backend.sql(
                "INSERT INTO secret (tenant, subject, item_id, value, created_at, updated_at) \
                 VALUES (?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (tenant, subject, item_id) DO UPDATE SET \
                   value = excluded.value, updated_at = excluded.updated_at",
            ))
            .bind(&scope.tenant)
            .bind(subject)
            .bind(item)
            .bind(value)
            .bind(now)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
