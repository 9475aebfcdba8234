//! The CLI's sign-in (RFC 8628 device authorization): the CLI asks for a code, the person
//! approves it on the console's `/device` page while signed in, the CLI polls and receives a
//! session token of its own.

use executor_core::now_ms;
use executor_store::{GrantKind, GrantRecord, GrantStatus};
use serde_json::json;

use crate::limiter::{DEVICE_CODES_PER_ADDRESS, DEVICE_MISSES_PER_ADDRESS, source};
use crate::{AccountError, AccountResult, Accounts, CLI_SESSION, Identity, SignedIn, secrets};

/// The only device client.
pub const CLI_CLIENT_ID: &str = "executor-cli";
const LIFETIME_SECS: i64 = 600;
/// Seconds between polls; polling faster is `slow_down`.
const INTERVAL_SECS: i64 = 5;
/// Device logins waiting for their person, at most (anyone may start one).
const MAX_PENDING: i64 = 1_000;

#[derive(Debug, Clone)]
pub struct DeviceCode {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: i64,
    pub interval: i64,
}

/// A device code as the `/device` page shows it.
#[derive(Debug, Clone)]
pub struct DeviceStatus {
    pub user_code: String,
    pub client_id: String,
    /// `pending`, `approved`, `denied` or `expired`.
    pub status: &'static str,
}

/// RFC 8628 §3.5 answers while there is no token yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceTokenError {
    AuthorizationPending,
    SlowDown,
    AccessDenied,
    ExpiredToken,
    InvalidGrant,
    InvalidClient,
    UnsupportedGrantType,
    /// This address got too many device codes wrong: 429 with `Retry-After`.
    TooManyAttempts {
        retry_after_secs: u64,
    },
    /// Too many device logins are waiting: 503.
    Busy,
}

impl DeviceTokenError {
    pub fn code(self) -> &'static str {
        match self {
            DeviceTokenError::AuthorizationPending => "authorization_pending",
            DeviceTokenError::SlowDown => "slow_down",
            DeviceTokenError::AccessDenied => "access_denied",
            DeviceTokenError::ExpiredToken => "expired_token",
            DeviceTokenError::InvalidGrant => "invalid_grant",
            DeviceTokenError::InvalidClient => "invalid_client",
            DeviceTokenError::UnsupportedGrantType => "unsupported_grant_type",
            DeviceTokenError::TooManyAttempts { .. } => "slow_down",
            DeviceTokenError::Busy => "temporarily_unavailable",
        }
    }
}

pub const DEVICE_GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:device_code";

fn miss_key(address: Option<&str>) -> (String, i64) {
    (
        format!("device-miss:address:{}", source(address)),
        DEVICE_MISSES_PER_ADDRESS,
    )
}

fn view(grant: GrantRecord) -> DeviceStatus {
    DeviceStatus {
        status: status_of(&grant),
        user_code: grant.user_code.unwrap_or_default(),
        client_id: grant.client_id,
    }
}

fn status_of(grant: &GrantRecord) -> &'static str {
    match grant.status {
        GrantStatus::Pending if grant.expires_at <= now_ms() => "expired",
        GrantStatus::Pending => "pending",
        GrantStatus::Approved | GrantStatus::Used => "approved",
        GrantStatus::Denied => "denied",
    }
}

impl Accounts {
    /// Starts a device login, from `address` (at most `DEVICE_CODES_PER_ADDRESS` a window).
    pub async fn device_code(
        &self,
        client_id: Option<&str>,
        address: Option<&str>,
    ) -> AccountResult<DeviceCode> {
        if client_id.unwrap_or(CLI_CLIENT_ID) != CLI_CLIENT_ID {
            return Err(AccountError::InvalidInput(format!(
                "The only device client is {CLI_CLIENT_ID}."
            )));
        }
        self.reserve(&[(
            format!("device-code:address:{}", source(address)),
            DEVICE_CODES_PER_ADDRESS,
        )])
        .await?;
        let (device_code, hash) = secrets::mint("exd_");
        let user_code = secrets::code(2);
        let now = now_ms();
        let inserted = self
            .store()
            .insert_grant(
                &GrantRecord {
                    id: secrets::new_id("dev"),
                    kind: GrantKind::Device,
                    tenant: self.tenant().to_owned(),
                    code_hash: Some(hash),
                    user_code: Some(user_code.clone()),
                    client_id: CLI_CLIENT_ID.to_owned(),
                    user_id: None,
                    status: GrantStatus::Pending,
                    data: json!({}),
                    created_at: now,
                    expires_at: now + LIFETIME_SECS * 1000,
                    polled_at: None,
                },
                MAX_PENDING,
                MAX_PENDING,
            )
            .await?;
        if !inserted {
            return Err(AccountError::Busy {
                retry_after_secs: 60,
            });
        }
        let verification_uri = format!("{}/device", self.base_url());
        Ok(DeviceCode {
            verification_uri_complete: format!("{verification_uri}?user_code={user_code}"),
            verification_uri,
            device_code,
            user_code,
            expires_in: LIFETIME_SECS,
            interval: INTERVAL_SECS,
        })
    }

    async fn device_grant(&self, user_code: &str) -> AccountResult<GrantRecord> {
        let code =
            secrets::normalise_code(user_code, 2).ok_or(AccountError::NotFound("device code"))?;
        self.store()
            .get_grant_by_user_code(&code)
            .await?
            .filter(|g| g.kind == GrantKind::Device && g.tenant == self.tenant())
            .ok_or(AccountError::NotFound("device code"))
    }

    /// The device grant of a typed `user_code`: every miss from `address` counts against
    /// `DEVICE_MISSES_PER_ADDRESS` (the slot is reserved before the lookup and given back on a
    /// hit), so codes cannot be guessed.
    async fn guarded_device_grant(
        &self,
        user_code: &str,
        address: Option<&str>,
    ) -> AccountResult<GrantRecord> {
        let slot = self.reserve(&[miss_key(address)]).await?;
        let found = self.device_grant(user_code).await;
        if found.is_ok() {
            self.release(&slot).await;
        }
        found
    }

    pub async fn device_status(
        &self,
        user_code: &str,
        address: Option<&str>,
    ) -> AccountResult<DeviceStatus> {
        let grant = self.guarded_device_grant(user_code, address).await?;
        Ok(view(grant))
    }

    pub async fn answer_device(
        &self,
        by: &Identity,
        user_code: &str,
        approve: bool,
        address: Option<&str>,
    ) -> AccountResult<DeviceStatus> {
        crate::require_session(by)?;
        let grant = self.guarded_device_grant(user_code, address).await?;
        if status_of(&grant) != "pending" {
            return Err(AccountError::NotFound("device code"));
        }
        let status = if approve {
            GrantStatus::Approved
        } else {
            GrantStatus::Denied
        };
        if !self
            .store()
            .answer_grant(&grant.id, status, &by.user.id, None)
            .await?
        {
            return Err(AccountError::NotFound("device code"));
        }
        if approve {
            self.audit(
                by,
                "device.approve",
                &grant.id,
                None,
                Some(json!({ "client": grant.client_id })),
            )
            .await;
        }
        Ok(view(self.device_grant(user_code).await?))
    }

    /// The CLI's poll: a session token once approved. Polls with a device code that is not
    /// one count against the address's misses, like typed codes.
    pub async fn device_token(
        &self,
        grant_type: Option<&str>,
        device_code: Option<&str>,
        client_id: Option<&str>,
        address: Option<&str>,
    ) -> Result<SignedIn, DeviceTokenError> {
        if grant_type != Some(DEVICE_GRANT_TYPE) {
            return Err(DeviceTokenError::UnsupportedGrantType);
        }
        if client_id.unwrap_or(CLI_CLIENT_ID) != CLI_CLIENT_ID {
            return Err(DeviceTokenError::InvalidClient);
        }
        let Some(code) = device_code else {
            return Err(DeviceTokenError::InvalidGrant);
        };
        let store = self.store();
        let slot = match self.reserve(&[miss_key(address)]).await {
            Ok(slot) => slot,
            Err(AccountError::TooManyAttempts { retry_after_secs }) => {
                return Err(DeviceTokenError::TooManyAttempts { retry_after_secs });
            }
            Err(e) => {
                tracing::error!(error = %e, "device token limit failed");
                return Err(DeviceTokenError::AuthorizationPending);
            }
        };
        let grant = match store.get_grant_by_code(&secrets::token_hash(code)).await {
            Ok(Some(g)) if g.kind == GrantKind::Device && g.tenant == self.tenant() => {
                self.release(&slot).await;
                g
            }
            Ok(_) => return Err(DeviceTokenError::InvalidGrant),
            Err(e) => {
                tracing::error!(error = %e, "device token lookup failed");
                return Err(DeviceTokenError::AuthorizationPending);
            }
        };
        let now = now_ms();
        if grant.expires_at <= now {
            return Err(DeviceTokenError::ExpiredToken);
        }
        match grant.status {
            GrantStatus::Denied => return Err(DeviceTokenError::AccessDenied),
            GrantStatus::Used => return Err(DeviceTokenError::InvalidGrant),
            GrantStatus::Pending => {
                let previous = store.poll_grant(&grant.id, now).await.ok().flatten();
                // A little slack under the interval: clocks and schedulers are not exact.
                if previous.is_some_and(|p| now - p < INTERVAL_SECS * 1000 - 1000) {
                    return Err(DeviceTokenError::SlowDown);
                }
                return Err(DeviceTokenError::AuthorizationPending);
            }
            GrantStatus::Approved => {}
        }
        if !store.use_grant(&grant.id).await.unwrap_or(false) {
            return Err(DeviceTokenError::InvalidGrant);
        }
        let user = match grant.user_id.as_deref() {
            Some(id) => store.get_user(self.tenant(), id).await.ok().flatten(),
            None => None,
        };
        let Some(user) = user else {
            return Err(DeviceTokenError::AccessDenied);
        };
        self.session_for(user, CLI_CLIENT_ID, CLI_SESSION)
            .await
            .map_err(|_| DeviceTokenError::AuthorizationPending)
    }
}
