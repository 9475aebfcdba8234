//! The team server's accounts as stored (issue #24): users with their role, the tokens that
//! sign requests in (only their SHA-256 is kept), invites, grants in progress (an MCP client's
//! authorization, a CLI's device login), dynamically registered MCP clients, and the
//! append-only audit log. The rules (who may do what, how tokens are made) are the caller's;
//! the store keeps rows consistent (one first account, single-use invites and codes, the last
//! owner kept) in single statements or transactions, so replicas racing agree.

use async_trait::async_trait;

use crate::Result;

/// A person of the organisation; one organisation per instance, so the row is also the
/// membership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: String,
    pub tenant: String,
    /// Lower-cased.
    pub email: String,
    pub name: String,
    pub password_hash: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// A browser's or the CLI's sign-in.
    Session,
    /// A user's API key.
    ApiKey,
    /// An access token issued to an MCP client.
    OAuthAccess,
    /// The refresh token of an MCP client's grant (used once).
    OAuthRefresh,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Session => "session",
            TokenKind::ApiKey => "api_key",
            TokenKind::OAuthAccess => "oauth_access",
            TokenKind::OAuthRefresh => "oauth_refresh",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            TokenKind::Session,
            TokenKind::ApiKey,
            TokenKind::OAuthAccess,
            TokenKind::OAuthRefresh,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: String,
    /// SHA-256 (hex) of the token; the token itself is never stored.
    pub token_hash: String,
    pub kind: TokenKind,
    pub tenant: String,
    pub user_id: String,
    pub name: Option<String>,
    pub hint: Option<String>,
    pub client_id: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
    pub grant_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub used_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InviteRecord {
    pub id: String,
    pub tenant: String,
    pub code: String,
    /// `admin` or `member`.
    pub role: String,
    pub label: Option<String>,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub used_by: Option<String>,
    pub used_by_email: Option<String>,
    pub used_at: Option<i64>,
}

/// What a grant in progress is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantKind {
    /// An MCP client's authorization request, then its code.
    Authorization,
    /// A device authorization (RFC 8628).
    Device,
}

impl GrantKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantKind::Authorization => "authorization",
            GrantKind::Device => "device",
        }
    }
}

/// Where a grant is: waiting for the person, answered, or exchanged for tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantStatus {
    Pending,
    Approved,
    Denied,
    Used,
}

impl GrantStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantStatus::Pending => "pending",
            GrantStatus::Approved => "approved",
            GrantStatus::Denied => "denied",
            GrantStatus::Used => "used",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            GrantStatus::Pending,
            GrantStatus::Approved,
            GrantStatus::Denied,
            GrantStatus::Used,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GrantRecord {
    pub id: String,
    pub kind: GrantKind,
    pub tenant: String,
    pub code_hash: Option<String>,
    pub user_code: Option<String>,
    pub client_id: String,
    pub user_id: Option<String>,
    pub status: GrantStatus,
    pub data: serde_json::Value,
    pub created_at: i64,
    pub expires_at: i64,
    pub polled_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRecord {
    pub client_id: String,
    pub tenant: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub created_at: i64,
}

/// One line of the audit log. `id` is assigned by the store (increasing).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    pub id: i64,
    pub tenant: String,
    pub at: i64,
    /// `change` or `tool_call`.
    pub kind: String,
    pub actor_id: Option<String>,
    pub actor_email: Option<String>,
    /// `session`, `api_key`, `oauth` or `system`.
    pub via: String,
    pub action: String,
    pub target: Option<String>,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    /// `ok`, `error`, `denied` or `paused`.
    pub outcome: String,
    pub detail: Option<serde_json::Value>,
}

/// Which audit events to list: newest first, before `before` (an id), at most `limit`.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub before: Option<i64>,
    pub limit: u32,
    pub actor_id: Option<String>,
    pub kind: Option<String>,
    /// A substring of the action.
    pub action: Option<String>,
}

/// A limit an attempt counts against: at most `limit` admitted attempts under `key` (any
/// text: the store keeps its SHA-256) within the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptLimit {
    pub key: String,
    pub limit: i64,
}

/// What [`AccountStore::reserve_attempt`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// A slot of every limit is held by the attempt; `before[i]` attempts of limit `i` were
    /// already in the window.
    Reserved { before: Vec<i64> },
    /// A limit is full: nothing was reserved; its oldest slot frees in this many ms.
    Refused { retry_after_ms: i64 },
}

/// The outcome of a role change or a removal that must keep an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    Done,
    NotFound,
    /// It would leave the organisation without an owner.
    LastOwner,
}

#[async_trait]
pub trait AccountStore: Send + Sync {
    async fn count_users(&self, tenant: &str) -> Result<i64>;
    /// Inserts the organisation's first account: `Ok(false)` when it already has one (another
    /// sign-up won), `Err(AlreadyExists)` never (the email cannot be taken in an empty org).
    async fn insert_first_user(&self, rec: &UserRecord) -> Result<bool>;
    /// Redeems the invite `code` (unused, not expired at `now`) and inserts the user with its
    /// role, in one transaction: `Ok(None)` when the code cannot be redeemed;
    /// `Err(AlreadyExists)` when the email is taken (the code stays unused).
    async fn insert_invited_user(
        &self,
        rec: &UserRecord,
        code: &str,
        now: i64,
    ) -> Result<Option<String>>;
    async fn get_user(&self, tenant: &str, id: &str) -> Result<Option<UserRecord>>;
    async fn get_user_by_email(&self, tenant: &str, email: &str) -> Result<Option<UserRecord>>;
    /// Oldest first.
    async fn list_users(&self, tenant: &str) -> Result<Vec<UserRecord>>;
    async fn set_user_role(&self, tenant: &str, id: &str, role: &str) -> Result<MemberChange>;
    /// Removes the user with every token of theirs, in one transaction.
    async fn delete_user(&self, tenant: &str, id: &str) -> Result<MemberChange>;

    async fn insert_token(&self, rec: &TokenRecord) -> Result<()>;
    /// The token with this hash and its user, if neither is gone (expiry is the caller's).
    async fn find_token(&self, token_hash: &str) -> Result<Option<(TokenRecord, UserRecord)>>;
    /// Stamps `last_used_at = now` unless it was stamped less than `granularity_ms` ago.
    async fn touch_token(&self, id: &str, now: i64, granularity_ms: i64) -> Result<()>;
    /// A user's tokens of one kind, newest first.
    async fn list_tokens(
        &self,
        tenant: &str,
        user_id: &str,
        kind: TokenKind,
    ) -> Result<Vec<TokenRecord>>;
    /// Whether the user's token `id` of `kind` was removed.
    async fn delete_token(
        &self,
        tenant: &str,
        user_id: &str,
        kind: TokenKind,
        id: &str,
    ) -> Result<bool>;
    /// Whether a token with this hash was removed.
    async fn delete_token_by_hash(&self, token_hash: &str) -> Result<bool>;
    /// Marks the refresh token used at `now`: `Ok(None)` when it was used already (a replay)
    /// or does not exist.
    async fn use_refresh_token(&self, token_hash: &str, now: i64) -> Result<Option<TokenRecord>>;
    /// Removes every token of the grant; returns how many.
    async fn revoke_grant_tokens(&self, grant_id: &str) -> Result<u64>;
    /// Forgets tokens expired before `now`, grants expired before `now`, attempts older than
    /// `attempts_before`, and registered clients created before `unused_clients_before` that
    /// hold no token and no grant.
    async fn purge_expired_accounts(
        &self,
        now: i64,
        attempts_before: i64,
        unused_clients_before: i64,
    ) -> Result<u64>;

    /// Reserves, in one transaction (across replicas too), a slot of each limit for the
    /// attempt `attempt_id` at `now`, counting the slots held in `(now - window_ms, now]`:
    /// either every limit has room and each gets a row, or none is reserved.
    async fn reserve_attempt(
        &self,
        attempt_id: &str,
        limits: &[AttemptLimit],
        now: i64,
        window_ms: i64,
    ) -> Result<Reservation>;
    /// Gives back the slots of an attempt (it did not count: it succeeded, or was not run).
    async fn release_attempt(&self, attempt_id: &str) -> Result<()>;
    /// Frees every slot held under `key` (a success clears its failures).
    async fn clear_attempts(&self, key: &str) -> Result<()>;

    async fn insert_invite(&self, rec: &InviteRecord) -> Result<()>;
    /// Newest first.
    async fn list_invites(&self, tenant: &str) -> Result<Vec<InviteRecord>>;
    async fn get_invite_by_code(&self, tenant: &str, code: &str) -> Result<Option<InviteRecord>>;
    /// Whether an unused invite was removed.
    async fn delete_unused_invite(&self, tenant: &str, id: &str) -> Result<bool>;

    /// Inserts the grant unless its client already has `per_client` pending grants of its kind,
    /// or the tenant `total` (expired ones do not count, and go first): `false` when refused.
    async fn insert_grant(&self, rec: &GrantRecord, per_client: i64, total: i64) -> Result<bool>;
    async fn get_grant(&self, id: &str) -> Result<Option<GrantRecord>>;
    async fn get_grant_by_user_code(&self, user_code: &str) -> Result<Option<GrantRecord>>;
    async fn get_grant_by_code(&self, code_hash: &str) -> Result<Option<GrantRecord>>;
    /// Answers a pending grant: status, the person, and (authorization) the code's hash.
    /// `false` when it was not pending any more.
    async fn answer_grant(
        &self,
        id: &str,
        status: GrantStatus,
        user_id: &str,
        code_hash: Option<&str>,
    ) -> Result<bool>;
    /// Marks an approved grant used: `false` when it was not approved (used already, denied).
    async fn use_grant(&self, id: &str) -> Result<bool>;
    /// Stamps a device grant's poll at `now` and returns the previous stamp.
    async fn poll_grant(&self, id: &str, now: i64) -> Result<Option<i64>>;

    async fn insert_client(&self, rec: &ClientRecord) -> Result<()>;
    async fn get_client(&self, client_id: &str) -> Result<Option<ClientRecord>>;

    /// Appends events (their `id` is ignored).
    async fn append_audit(&self, events: &[AuditRecord]) -> Result<()>;
    async fn list_audit(&self, tenant: &str, filter: &AuditFilter) -> Result<Vec<AuditRecord>>;
}
