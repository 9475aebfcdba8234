//! executor-accounts: the team server's people and credentials (issue #24). Sign-up (the first
//! account owns the organisation, later ones need an invite), sign-in with argon2id passwords
//! (a few hashes at a time) and limits per (account, address) and per address kept in the
//! database (`limiter.rs`), sessions, invites, members and roles,
//! API keys, the OAuth 2.1 authorization server MCP clients sign in with (`oauth.rs`), the
//! device login of the CLI (`device.rs`), and the audit lines of account changes.
//!
//! **Knows nothing of** HTTP, the engine or the sandbox: it turns requests into
//! [`AccountStore`] rows and answers values or [`AccountError`]s the server maps to the wire.

use std::sync::Arc;
use std::time::Duration;

use executor_core::now_ms;
use executor_store::{
    AuditRecord, InviteRecord, MemberChange, Store, StoreError, TokenKind, TokenRecord, UserRecord,
};
use serde_json::{Value, json};

mod device;
mod limiter;
mod oauth;
mod secrets;

pub use device::{CLI_CLIENT_ID, DEVICE_GRANT_TYPE, DeviceCode, DeviceStatus, DeviceTokenError};
pub use oauth::{
    AuthorizeRedirect, AuthorizeRequest, ConsentView, OAuthError, RegisteredClient, SCOPE,
    TokenGrant, TokenResponse,
};
pub use secrets::token_hash;

/// Prefix of API keys.
pub const API_KEY_PREFIX: &str = "exk_";
/// Prefix of session tokens (browser and CLI sign-ins).
pub const SESSION_PREFIX: &str = "exs_";
/// Prefix of OAuth access tokens issued to MCP clients.
pub const ACCESS_PREFIX: &str = "exo_";
/// Prefix of OAuth refresh tokens.
pub const REFRESH_PREFIX: &str = "exr_";

/// How long a browser sign-in lasts.
const BROWSER_SESSION: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long the CLI's sign-in lasts.
pub(crate) const CLI_SESSION: Duration = Duration::from_secs(90 * 24 * 3600);
/// A registered OAuth client that got no token within this is forgotten by the hourly purge.
pub const UNUSED_CLIENT_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// `last_used_at` is stamped at most this often per token (a write per request would queue
/// every request on the database's writer).
const TOUCH_GRANULARITY_MS: i64 = 60_000;

/// The organisation this instance serves.
#[derive(Debug, Clone)]
pub struct Organisation {
    /// The tenant of every row (`EXECUTOR_ORG_SLUG`).
    pub slug: String,
    pub name: String,
}

/// A role of the organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Owner,
    Admin,
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "member" => Some(Role::Member),
            _ => None,
        }
    }

    pub fn is_admin(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }
}

/// What an API key may do. No key manages the account (keys, device logins, OAuth consents,
/// members, invites, roles, password): that takes a signed-in session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope {
    /// MCP, executions and the tool API an agent uses (the default; keys made before scopes).
    Agent,
    /// Everything of the workspace API the member's role allows.
    Workspace,
}

impl KeyScope {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyScope::Agent => "agent",
            KeyScope::Workspace => "workspace",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "agent" => Some(KeyScope::Agent),
            "workspace" => Some(KeyScope::Workspace),
            _ => None,
        }
    }
}

/// How a request proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    Session,
    ApiKey {
        scope: KeyScope,
    },
    /// An access token issued to an MCP client, bound to `resource`.
    OAuth {
        resource: Option<String>,
    },
}

/// A signed-in request's person.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user: UserRecord,
    pub role: Role,
    pub via: Via,
    /// The token's row (sessions: what sign-out removes).
    pub token_id: String,
    /// OAuth access tokens: the grant its access and refresh tokens share, which outlives each
    /// access token (a refresh issues a new one of the same grant).
    pub grant_id: Option<String>,
}

impl Identity {
    /// What this credential is, stable for its life: an OAuth grant (every access token a
    /// refresh of it issues), an API key or a sign-in session, by id. What an agent's MCP
    /// session is bound to.
    pub fn credential(&self) -> String {
        match (&self.via, &self.grant_id) {
            (Via::OAuth { .. }, Some(grant)) => format!("oauth-grant:{grant}"),
            (Via::OAuth { .. }, None) => format!("oauth-token:{}", self.token_id),
            (Via::ApiKey { .. }, _) => format!("api-key:{}", self.token_id),
            (Via::Session, _) => format!("session:{}", self.token_id),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("not signed in")]
    Unauthorized,
    #[error("not signed in")]
    AdminUnauthorized,
    #[error("Only owners and admins may do this.")]
    AdminForbidden,
    #[error("{0}")]
    Forbidden(String),
    #[error("An invite code is required to join this workspace.")]
    InviteRequired,
    #[error("This invite code is invalid, already used, or expired.")]
    InvalidInvite,
    #[error("An account with this email already exists.")]
    EmailTaken,
    #[error("{0}")]
    InvalidInput(String),
    #[error("Wrong email or password.")]
    InvalidCredentials,
    #[error("Too many attempts. Try again in {retry_after_secs} s.")]
    TooManyAttempts { retry_after_secs: u64 },
    #[error("The server is busy checking other passwords. Try again in {retry_after_secs} s.")]
    Busy { retry_after_secs: u64 },
    #[error("{0}")]
    WeakPassword(String),
    #[error("The organisation must keep an owner.")]
    LastOwner,
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("internal: {0}")]
    Internal(String),
}

impl From<StoreError> for AccountError {
    fn from(e: StoreError) -> Self {
        AccountError::Internal(format!("store: {e}"))
    }
}

pub type AccountResult<T> = Result<T, AccountError>;

/// A new sign-in: the token (given once) and whose it is.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: UserRecord,
    pub token: String,
    /// Seconds the session lasts.
    pub max_age: u64,
}

/// An API key as listed, and (once, at creation) its value.
#[derive(Debug, Clone)]
pub struct ApiKey {
    pub record: TokenRecord,
    pub value: Option<String>,
}

/// The account service of one organisation. Cheap to clone.
#[derive(Clone)]
pub struct Accounts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts")
            .field("org", &self.inner.org)
            .field("base_url", &self.inner.base_url)
            .finish_non_exhaustive()
    }
}

struct Inner {
    store: Arc<dyn Store>,
    org: Organisation,
    /// The origin people and agents use (`EXECUTOR_WEB_BASE_URL`), without a trailing slash.
    base_url: String,
    hasher: secrets::Hasher,
}

/// What the password hasher did since the process started (for tests and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashStats {
    /// Hashes running now.
    pub in_flight: usize,
    /// Most that ever ran at once.
    pub peak: usize,
    /// Hashes run.
    pub total: u64,
    /// Requests refused because every slot was taken and the queue full.
    pub refused: u64,
}

impl Accounts {
    pub fn new(store: Arc<dyn Store>, org: Organisation, base_url: &str) -> Self {
        Accounts {
            inner: Arc::new(Inner {
                store,
                org,
                base_url: base_url.trim_end_matches('/').to_owned(),
                hasher: secrets::Hasher::default(),
            }),
        }
    }

    pub fn organisation(&self) -> &Organisation {
        &self.inner.org
    }

    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// What the password hasher did (argon2 runs at most a few at a time).
    pub fn hash_stats(&self) -> HashStats {
        use std::sync::atomic::Ordering::SeqCst;
        let c = self.inner.hasher.counters();
        HashStats {
            in_flight: c.in_flight.load(SeqCst),
            peak: c.peak.load(SeqCst),
            total: c.total.load(SeqCst),
            refused: c.refused.load(SeqCst),
        }
    }

    fn busy() -> AccountError {
        AccountError::Busy {
            retry_after_secs: 1,
        }
    }

    fn store(&self) -> &dyn Store {
        &*self.inner.store
    }

    fn tenant(&self) -> &str {
        &self.inner.org.slug
    }

    pub async fn needs_setup(&self) -> AccountResult<bool> {
        Ok(self.store().count_users(self.tenant()).await? == 0)
    }

    /// Creates the owner from `EXECUTOR_BOOTSTRAP_ADMIN_*` when the organisation has nobody;
    /// `true` when it did.
    pub async fn bootstrap_owner(
        &self,
        email: &str,
        password: &str,
        name: &str,
    ) -> AccountResult<bool> {
        if !self.needs_setup().await? {
            return Ok(false);
        }
        let user = self.new_user(name, email, password, Role::Owner).await?;
        Ok(self.store().insert_first_user(&user).await?)
    }

    async fn new_user(
        &self,
        name: &str,
        email: &str,
        password: &str,
        role: Role,
    ) -> AccountResult<UserRecord> {
        let (email, name) = check_new_user(name, email, password)?;
        let now = now_ms();
        let hash = self
            .inner
            .hasher
            .hash_password(password.to_owned())
            .await
            .map_err(|_| Self::busy())?
            .map_err(AccountError::Internal)?;
        Ok(UserRecord {
            id: secrets::new_id("usr"),
            tenant: self.tenant().to_owned(),
            email,
            name: name.to_owned(),
            password_hash: hash,
            role: role.as_str().to_owned(),
            created_at: now,
            updated_at: now,
        })
    }

    /// `POST /api/auth/sign-up/email`: the first account owns the organisation; later ones
    /// redeem an invite.
    pub async fn sign_up(
        &self,
        name: &str,
        email: &str,
        password: &str,
        invite_code: Option<&str>,
    ) -> AccountResult<SignedIn> {
        let code = invite_code.map(str::trim).filter(|c| !c.is_empty());
        if self.needs_setup().await? {
            let user = self.new_user(name, email, password, Role::Owner).await?;
            if self.store().insert_first_user(&user).await? {
                self.audit_system(&user, "account.setup", &user.email).await;
                return self.session_for(user, "browser", BROWSER_SESSION).await;
            }
            // Another sign-up became the owner a moment ago: this one needs an invite too.
        }
        let Some(code) = code else {
            return Err(AccountError::InviteRequired);
        };
        let Some(code) = secrets::normalise_code(code, 3) else {
            return Err(AccountError::InvalidInvite);
        };
        // Nothing is hashed for a code that cannot be redeemed (the redemption itself is
        // checked again, atomically, with the insert).
        check_new_user(name, email, password)?;
        if !self.invite_valid(&code).await? {
            return Err(AccountError::InvalidInvite);
        }
        let user = self.new_user(name, email, password, Role::Member).await?;
        match self
            .store()
            .insert_invited_user(&user, &code, now_ms())
            .await
        {
            Ok(Some(role)) => {
                let user = UserRecord { role, ..user };
                self.audit_system(&user, "member.join", &user.email).await;
                self.session_for(user, "browser", BROWSER_SESSION).await
            }
            Ok(None) => Err(AccountError::InvalidInvite),
            Err(StoreError::AlreadyExists) => Err(AccountError::EmailTaken),
            Err(e) => Err(e.into()),
        }
    }

    /// `POST /api/auth/sign-in/email`, from the client address `address` when known.
    ///
    /// The attempt takes a slot of its (account, address) pair and of its address before any
    /// hash (`limiter.rs`); past either limit it is refused without hashing. A success gives its
    /// slot back and clears its pair; a failure keeps it until it leaves the window.
    pub async fn sign_in(
        &self,
        email: &str,
        password: &str,
        address: Option<&str>,
    ) -> AccountResult<SignedIn> {
        let email = email.trim().to_lowercase();
        let keys = limiter::sign_in_keys(&email, address);
        let slot = self.reserve(&keys).await?;
        let delay = limiter::delay(slot.before.first().copied().unwrap_or(0));
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        // No password is longer than sign-up allows, nor an email: wrong without hashing.
        if password.len() > 4 * 256 || email.len() > 254 {
            return Err(AccountError::InvalidCredentials);
        }
        let user = self
            .store()
            .get_user_by_email(self.tenant(), &email)
            .await?;
        let stored = user.as_ref().map(|u| u.password_hash.clone());
        let verified = match self
            .inner
            .hasher
            .verify_password(password.to_owned(), stored)
            .await
        {
            Ok(verified) => verified,
            Err(secrets::Busy) => {
                // Not run, so not counted.
                self.release(&slot).await;
                return Err(Self::busy());
            }
        };
        let Some(user) = user.filter(|_| verified) else {
            return Err(AccountError::InvalidCredentials);
        };
        self.release(&slot).await;
        self.clear(&keys[0].0).await;
        self.session_for(user, "browser", BROWSER_SESSION).await
    }

    /// A new session of `user` for `client` (`browser`, `executor-cli`).
    async fn session_for(
        &self,
        user: UserRecord,
        client: &str,
        lifetime: Duration,
    ) -> AccountResult<SignedIn> {
        let (token, hash) = secrets::mint(SESSION_PREFIX);
        let now = now_ms();
        self.store()
            .insert_token(&TokenRecord {
                id: secrets::new_id("ses"),
                token_hash: hash,
                kind: TokenKind::Session,
                tenant: self.tenant().to_owned(),
                user_id: user.id.clone(),
                name: Some(client.to_owned()),
                hint: None,
                client_id: Some(client.to_owned()),
                resource: None,
                scope: None,
                grant_id: None,
                created_at: now,
                updated_at: now,
                last_used_at: Some(now),
                expires_at: Some(now + lifetime.as_millis() as i64),
                used_at: None,
            })
            .await?;
        Ok(SignedIn {
            user,
            token,
            max_age: lifetime.as_secs(),
        })
    }

    /// Who `token` signs in, if anyone: a live session, API key or OAuth access token.
    pub async fn authenticate(&self, token: &str) -> AccountResult<Option<Identity>> {
        let token = token.trim();
        let via = if token.starts_with(SESSION_PREFIX) {
            Via::Session
        } else if token.starts_with(API_KEY_PREFIX) {
            Via::ApiKey {
                scope: KeyScope::Agent,
            }
        } else if token.starts_with(ACCESS_PREFIX) {
            Via::OAuth { resource: None }
        } else {
            return Ok(None);
        };
        let Some((record, user)) = self.store().find_token(&secrets::token_hash(token)).await?
        else {
            return Ok(None);
        };
        let now = now_ms();
        let kind_matches = matches!(
            (&via, record.kind),
            (Via::Session, TokenKind::Session)
                | (Via::ApiKey { .. }, TokenKind::ApiKey)
                | (Via::OAuth { .. }, TokenKind::OAuthAccess)
        );
        if !kind_matches
            || record.tenant != self.tenant()
            || record.expires_at.is_some_and(|at| at <= now)
        {
            return Ok(None);
        }
        let Some(role) = Role::parse(&user.role) else {
            return Ok(None);
        };
        if record
            .last_used_at
            .is_none_or(|at| at < now - TOUCH_GRANULARITY_MS)
        {
            let store = self.inner.store.clone();
            let id = record.id.clone();
            tokio::spawn(async move {
                if let Err(e) = store.touch_token(&id, now, TOUCH_GRANULARITY_MS).await {
                    tracing::debug!(error = %e, "could not stamp a token's last use");
                }
            });
        }
        let via = match via {
            Via::OAuth { .. } => Via::OAuth {
                resource: record.resource.clone(),
            },
            // A key whose scope this build does not know is an agent's (the least).
            Via::ApiKey { .. } => Via::ApiKey {
                scope: record
                    .scope
                    .as_deref()
                    .and_then(KeyScope::parse)
                    .unwrap_or(KeyScope::Agent),
            },
            other => other,
        };
        Ok(Some(Identity {
            user,
            role,
            via,
            token_id: record.id,
            grant_id: record.grant_id,
        }))
    }

    /// Sign-out: ends what `token` is, and nothing else. A session ends; an API key signing
    /// out is revoked (the key, not its owner's other keys or sessions); an OAuth access token
    /// ends (its refresh token is the client's to revoke, RFC 7009). Anything else is ignored.
    pub async fn sign_out(&self, token: &str) -> AccountResult<()> {
        let token = token.trim();
        if token.starts_with(API_KEY_PREFIX) {
            if let Some(identity) = self.authenticate(token).await? {
                let id = identity.token_id.clone();
                if self.delete_api_key(&identity, &id).await? {
                    return Ok(());
                }
            }
            return Ok(());
        }
        if token.starts_with(SESSION_PREFIX) || token.starts_with(ACCESS_PREFIX) {
            self.store()
                .delete_token_by_hash(&secrets::token_hash(token))
                .await?;
        }
        Ok(())
    }

    // ---- members ----

    pub async fn members(&self) -> AccountResult<Vec<UserRecord>> {
        Ok(self.store().list_users(self.tenant()).await?)
    }

    /// Changes `id`'s role: admins and owners may, but only an owner makes or unmakes owners.
    pub async fn set_role(&self, by: &Identity, id: &str, role: &str) -> AccountResult<UserRecord> {
        require_session(by)?;
        require_admin(by)?;
        let Some(role) = Role::parse(role) else {
            return Err(AccountError::InvalidInput(
                "roleSlug must be owner, admin or member.".to_owned(),
            ));
        };
        let Some(target) = self.store().get_user(self.tenant(), id).await? else {
            return Err(AccountError::NotFound("member"));
        };
        let touches_owner = role == Role::Owner || target.role == Role::Owner.as_str();
        if touches_owner && by.role != Role::Owner {
            return Err(AccountError::Forbidden(
                "Only an owner can make or unmake owners.".to_owned(),
            ));
        }
        match self
            .store()
            .set_user_role(self.tenant(), id, role.as_str())
            .await?
        {
            MemberChange::Done => {}
            MemberChange::NotFound => return Err(AccountError::NotFound("member")),
            MemberChange::LastOwner => return Err(AccountError::LastOwner),
        }
        self.audit(
            by,
            "member.role",
            &target.email,
            Some(json!({ "role": target.role })),
            Some(json!({ "role": role.as_str() })),
        )
        .await;
        Ok(UserRecord {
            role: role.as_str().to_owned(),
            ..target
        })
    }

    /// Removes a member (admins; anyone may leave), ending their sessions and keys at once.
    pub async fn remove_member(&self, by: &Identity, id: &str) -> AccountResult<()> {
        require_session(by)?;
        if by.user.id != id {
            require_admin(by)?;
        }
        let Some(target) = self.store().get_user(self.tenant(), id).await? else {
            return Err(AccountError::NotFound("member"));
        };
        if target.role == Role::Owner.as_str() && by.role != Role::Owner {
            return Err(AccountError::Forbidden(
                "Only an owner can remove an owner.".to_owned(),
            ));
        }
        match self.store().delete_user(self.tenant(), id).await? {
            MemberChange::Done => {}
            MemberChange::NotFound => return Err(AccountError::NotFound("member")),
            MemberChange::LastOwner => return Err(AccountError::LastOwner),
        }
        self.audit(
            by,
            "member.remove",
            &target.email,
            Some(json!({ "email": target.email, "role": target.role })),
            None,
        )
        .await;
        Ok(())
    }

    // ---- invites ----

    pub async fn invites(&self, by: &Identity) -> AccountResult<Vec<InviteRecord>> {
        require_session(by)?;
        require_admin(by)?;
        Ok(self.store().list_invites(self.tenant()).await?)
    }

    pub async fn create_invite(
        &self,
        by: &Identity,
        role: Option<&str>,
        label: Option<&str>,
        expires_in_days: Option<i64>,
    ) -> AccountResult<InviteRecord> {
        require_session(by)?;
        require_admin(by)?;
        let role = match role.map(str::trim).filter(|r| !r.is_empty()) {
            None | Some("member") => "member",
            Some("admin") => "admin",
            Some(_) => {
                return Err(AccountError::InvalidInput(
                    "An invite's role is admin or member.".to_owned(),
                ));
            }
        };
        let days = expires_in_days.unwrap_or(7);
        if !(1..=90).contains(&days) {
            return Err(AccountError::InvalidInput(
                "expiresInDays must be between 1 and 90.".to_owned(),
            ));
        }
        let label = label.map(str::trim).filter(|l| !l.is_empty());
        if label.is_some_and(|l| l.chars().count() > 100) {
            return Err(AccountError::InvalidInput(
                "A label is at most 100 characters.".to_owned(),
            ));
        }
        let now = now_ms();
        let mut last = None;
        // A code collision (1 in 32^12 per pair) is retried, not reported.
        for _ in 0..3 {
            let rec = InviteRecord {
                id: secrets::new_id("inv"),
                tenant: self.tenant().to_owned(),
                code: secrets::code(3),
                role: role.to_owned(),
                label: label.map(str::to_owned),
                created_by: by.user.id.clone(),
                created_at: now,
                expires_at: now + days * 24 * 3600 * 1000,
                used_by: None,
                used_by_email: None,
                used_at: None,
            };
            match self.store().insert_invite(&rec).await {
                Ok(()) => {
                    self.audit(
                        by,
                        "invite.create",
                        &rec.id,
                        None,
                        Some(json!({ "role": rec.role, "label": rec.label, "expiresAt": rec.expires_at })),
                    ).await;
                    return Ok(rec);
                }
                Err(StoreError::AlreadyExists) => last = Some(StoreError::AlreadyExists),
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.unwrap_or(StoreError::AlreadyExists).into())
    }

    pub async fn revoke_invite(&self, by: &Identity, id: &str) -> AccountResult<bool> {
        require_session(by)?;
        require_admin(by)?;
        let removed = self.store().delete_unused_invite(self.tenant(), id).await?;
        if removed {
            self.audit(by, "invite.revoke", id, None, None).await;
        }
        Ok(removed)
    }

    /// Whether `code` can be redeemed now (public).
    pub async fn invite_valid(&self, code: &str) -> AccountResult<bool> {
        let Some(code) = secrets::normalise_code(code, 3) else {
            return Ok(false);
        };
        Ok(self
            .store()
            .get_invite_by_code(self.tenant(), &code)
            .await?
            .is_some_and(|i| i.used_at.is_none() && i.expires_at > now_ms()))
    }

    // ---- API keys ----

    pub async fn api_keys(&self, by: &Identity) -> AccountResult<Vec<TokenRecord>> {
        Ok(self
            .store()
            .list_tokens(self.tenant(), &by.user.id, TokenKind::ApiKey)
            .await?)
    }

    /// A new API key of `by` (a signed-in session: no key mints keys), scoped to `scope`
    /// (`agent` unless named).
    pub async fn create_api_key(
        &self,
        by: &Identity,
        name: Option<&str>,
        scope: Option<&str>,
    ) -> AccountResult<ApiKey> {
        require_session(by)?;
        let scope = match scope.map(str::trim).filter(|s| !s.is_empty()) {
            None => KeyScope::Agent,
            Some(s) => KeyScope::parse(s).ok_or_else(|| {
                AccountError::InvalidInput("An API key's scope is agent or workspace.".to_owned())
            })?,
        };
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("API key");
        if name.chars().count() > 100 {
            return Err(AccountError::InvalidInput(
                "An API key's name is at most 100 characters.".to_owned(),
            ));
        }
        let (value, hash) = secrets::mint(API_KEY_PREFIX);
        let now = now_ms();
        let record = TokenRecord {
            id: secrets::new_id("key"),
            token_hash: hash,
            kind: TokenKind::ApiKey,
            tenant: self.tenant().to_owned(),
            user_id: by.user.id.clone(),
            name: Some(name.to_owned()),
            hint: Some(value[..API_KEY_PREFIX.len() + 4].to_owned()),
            client_id: None,
            resource: None,
            scope: Some(scope.as_str().to_owned()),
            grant_id: None,
            created_at: now,
            updated_at: now,
            last_used_at: None,
            expires_at: None,
            used_at: None,
        };
        self.store().insert_token(&record).await?;
        self.audit(
            by,
            "apiKey.create",
            &record.id,
            None,
            Some(json!({ "name": name, "hint": record.hint, "scope": scope.as_str() })),
        )
        .await;
        Ok(ApiKey {
            record,
            value: Some(value),
        })
    }

    /// Revokes one of `by`'s keys: from a session, any of them; from a key, only itself.
    pub async fn delete_api_key(&self, by: &Identity, id: &str) -> AccountResult<bool> {
        if matches!(by.via, Via::ApiKey { .. }) && by.token_id != id {
            return Err(session_required());
        }
        if matches!(by.via, Via::OAuth { .. }) {
            return Err(session_required());
        }
        let removed = self
            .store()
            .delete_token(self.tenant(), &by.user.id, TokenKind::ApiKey, id)
            .await?;
        if removed {
            self.audit(by, "apiKey.delete", id, None, None).await;
        }
        Ok(removed)
    }

    /// Forgets expired tokens and grants, attempts out of their window, and registered
    /// clients that got no token within [`UNUSED_CLIENT_LIFETIME`] (run hourly).
    pub async fn purge_expired(&self) -> AccountResult<u64> {
        let now = now_ms();
        Ok(self
            .store()
            .purge_expired_accounts(
                now,
                now - limiter::WINDOW.as_millis() as i64,
                now - UNUSED_CLIENT_LIFETIME.as_millis() as i64,
            )
            .await?)
    }

    // ---- audit ----

    /// The audit log, newest first (owners and admins).
    pub async fn audit_events(
        &self,
        by: &Identity,
        filter: &executor_store::AuditFilter,
    ) -> AccountResult<Vec<AuditRecord>> {
        require_admin(by)?;
        Ok(self.store().list_audit(self.tenant(), filter).await?)
    }

    async fn audit(
        &self,
        by: &Identity,
        action: &str,
        target: &str,
        before: Option<Value>,
        after: Option<Value>,
    ) {
        let record = AuditRecord {
            id: 0,
            tenant: self.tenant().to_owned(),
            at: now_ms(),
            kind: "change".to_owned(),
            actor_id: Some(by.user.id.clone()),
            actor_email: Some(by.user.email.clone()),
            via: via_name(&by.via).to_owned(),
            action: action.to_owned(),
            target: Some(target.to_owned()),
            before,
            after,
            outcome: "ok".to_owned(),
            detail: None,
        };
        self.append(record).await;
    }

    /// An account event with no signed-in actor (set-up, joining): the new user is the actor.
    async fn audit_system(&self, user: &UserRecord, action: &str, target: &str) {
        self.append(AuditRecord {
            id: 0,
            tenant: self.tenant().to_owned(),
            at: now_ms(),
            kind: "change".to_owned(),
            actor_id: Some(user.id.clone()),
            actor_email: Some(user.email.clone()),
            via: "session".to_owned(),
            action: action.to_owned(),
            target: Some(target.to_owned()),
            before: None,
            after: Some(json!({ "role": user.role })),
            outcome: "ok".to_owned(),
            detail: None,
        })
        .await;
    }

    /// Written before the change's answer: account changes are rare, and the log is their
    /// record. A failed write is logged, not turned into a failed change (the change is done).
    async fn append(&self, record: AuditRecord) {
        if let Err(e) = self.store().append_audit(&[record]).await {
            tracing::error!(error = %e, "could not write an audit event");
        }
    }
}

/// `session`, `api_key` or `oauth`.
pub fn via_name(via: &Via) -> &'static str {
    match via {
        Via::Session => "session",
        Via::ApiKey { .. } => "api_key",
        Via::OAuth { .. } => "oauth",
    }
}

fn session_required() -> AccountError {
    AccountError::Forbidden(
        "Managing the account (API keys, device logins, OAuth consents, members, invites, roles) \
         needs a signed-in session, not an API key or an agent's token."
            .to_owned(),
    )
}

/// Account management is done signed in (a browser's cookie or a session bearer), never with
/// a key or an agent's token.
pub(crate) fn require_session(by: &Identity) -> AccountResult<()> {
    if by.via == Via::Session {
        Ok(())
    } else {
        Err(session_required())
    }
}

/// The weakest password sign-up takes: zxcvbn's score 3 of 4 ("safely unguessable": about
/// 10^10 guesses), which also refuses the common and breached passwords of its lists, and
/// words of the account's own email and name. Only the first 100 characters are rated
/// (zxcvbn's own limit of what is worth the CPU).
const MIN_PASSWORD_SCORE: zxcvbn::Score = zxcvbn::Score::Three;

fn check_strength(password: &str, email: &str, name: &str) -> AccountResult<()> {
    let rated: String = password.chars().take(100).collect();
    let local = email.split('@').next().unwrap_or_default();
    let entropy = zxcvbn::zxcvbn(&rated, &[email, local, name, "executor"]);
    if entropy.score() >= MIN_PASSWORD_SCORE {
        return Ok(());
    }
    let hint = entropy
        .feedback()
        .and_then(|f| {
            f.warning()
                .map(|w| w.to_string())
                .or_else(|| f.suggestions().first().map(|s| s.to_string()))
        })
        .filter(|h| !h.is_empty());
    Err(AccountError::WeakPassword(match hint {
        Some(hint) => format!("This password is too easy to guess: {hint}"),
        None => {
            "This password is too easy to guess: use a longer one, such as a few unrelated words."
                .to_owned()
        }
    }))
}

fn require_admin(by: &Identity) -> AccountResult<()> {
    if by.role.is_admin() {
        Ok(())
    } else {
        Err(AccountError::AdminForbidden)
    }
}

/// The email (lower-cased) and name of a new account, once its name, email and password are
/// acceptable (nothing hashed yet).
fn check_new_user<'a>(
    name: &'a str,
    email: &str,
    password: &str,
) -> AccountResult<(String, &'a str)> {
    let email = check_email(email)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(AccountError::InvalidInput(
            "A name of 1 to 100 characters is required.".to_owned(),
        ));
    }
    let length = password.chars().count();
    if !(8..=256).contains(&length) {
        return Err(AccountError::InvalidInput(
            "The password must be 8 to 256 characters long.".to_owned(),
        ));
    }
    check_strength(password, &email, name)?;
    Ok((email, name))
}

/// A plausible email, lower-cased: one `@` with text on both sides, no spaces, at most 254.
fn check_email(raw: &str) -> AccountResult<String> {
    let email = raw.trim().to_lowercase();
    let ok = email.len() <= 254
        && !email.chars().any(char::is_whitespace)
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@')
        });
    if ok {
        Ok(email)
    } else {
        Err(AccountError::InvalidInput(
            "A valid email address is required.".to_owned(),
        ))
    }
}
