//! Engine errors: each variant is one of the spec's tagged errors; `Internal` is the opaque rest.

use executor_core::Owner;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("integration not found: {slug}")]
    IntegrationNotFound { slug: String },
    #[error("integration already exists: {slug}")]
    IntegrationAlreadyExists { slug: String },
    #[error("integration cannot be removed: {slug}")]
    IntegrationRemovalNotAllowed { slug: String },
    #[error("connection not found: {owner}/{integration}/{name}")]
    ConnectionNotFound {
        owner: Owner,
        integration: String,
        name: String,
    },
    /// A create without `replace` whose (normalised) name is taken.
    #[error("connection already exists: {owner}/{integration}/{name}")]
    ConnectionAlreadyExists {
        owner: Owner,
        integration: String,
        name: String,
    },
    #[error("tool not found: {address}")]
    ToolNotFound {
        address: String,
        suggestions: Vec<String>,
    },
    #[error("execution not found: {execution_id}")]
    ExecutionNotFound { execution_id: String },
    #[error("{message}")]
    InvalidConnectionInput { message: String },
    #[error("credential provider not registered: {provider}")]
    CredentialProviderNotRegistered { provider: String },
    /// A policy pattern, action or position that does not parse.
    #[error("{message}")]
    InvalidPolicy { message: String },
    /// A toolkit request that cannot be done (bad slug or pattern, not found): a sentence.
    #[error("{message}")]
    Toolkit { message: String },
    #[error("policy not found: {id}")]
    PolicyNotFound { id: String },
    /// No recorded tool change of this id is visible to the caller.
    #[error("tool change not found: {id}")]
    ToolChangeNotFound { id: String },
    /// Bad input that the wire layer reports as a schema error.
    #[error("{message}")]
    InvalidInput { message: String },
    #[error("{message}")]
    McpConnection {
        transport: String,
        message: String,
        http_status: Option<u16>,
        /// The server answered 403 with an RFC 6750 `insufficient_scope` challenge: the
        /// credentials are valid but lack a scope.
        insufficient_scope: bool,
    },
    #[error("{message}")]
    McpToolDiscovery {
        stage: &'static str,
        message: String,
        http_status: Option<u16>,
    },
    /// An OpenAPI document that cannot be fetched or read (nothing was stored).
    #[error("{message}")]
    OpenApiParse { message: String },
    /// An OpenAPI document whose operations cannot be turned into tools.
    #[error("{message}")]
    OpenApiExtraction { message: String },
    /// A `specOverrides` operation (RFC 6902) that cannot be applied to the spec.
    #[error("{message}")]
    OpenApiSpecOverride {
        operation_index: usize,
        operation: String,
        path: String,
        message: String,
    },
    /// A GraphQL endpoint (or supplied introspection JSON) that yields no schema.
    #[error("{message}")]
    GraphqlIntrospection { message: String },
    /// A GraphQL schema whose fields cannot be turned into tools.
    #[error("{message}")]
    GraphqlExtraction { message: String },
    /// An OAuth step that failed for a reason a person can act on; `tag` names it on the wire
    /// (`OAuthStartError`, `OAuthCompleteError`, `OAuthRegistrationError`, `OAuthProbeError`).
    #[error("{message}")]
    OAuth { tag: &'static str, message: String },
    /// No pending OAuth session with this state (never started, used, cancelled or expired).
    #[error("OAuth session not found or expired")]
    OAuthSessionNotFound { state: String },
    /// Every execution slot is taken and the queue is full, or the wait for a slot ran out.
    #[error("the server is busy: {running} executions are running and {waiting} waiting")]
    Busy {
        running: usize,
        waiting: usize,
        retry_after_secs: u64,
    },
    /// A team member without an admin role tried to change the workspace (spec #1919).
    #[error("{message}")]
    OrgWriteDenied { message: String },
    /// The database does not answer (it is down or every connection is busy): retry later.
    #[error("The database does not answer; try again in {retry_after_secs} s.")]
    Unavailable { retry_after_secs: u64 },
    /// A stdio MCP server was to be added, configured or spawned where they are off (the team
    /// server unless its operator allows them); nothing was spawned or stored.
    #[error("{message}")]
    StdioMcpDisabled { message: String },
    /// A defect or storage failure. The message is for logs only, never for callers.
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a request refused for an unavailable database is told to wait.
pub const DATABASE_RETRY_AFTER_SECS: u64 = 2;

impl From<executor_store::StoreError> for EngineError {
    fn from(e: executor_store::StoreError) -> Self {
        if e.is_unavailable() {
            tracing::warn!(error = %e, "the database did not answer");
            return EngineError::Unavailable {
                retry_after_secs: DATABASE_RETRY_AFTER_SECS,
            };
        }
        EngineError::Internal(format!("store: {e}"))
    }
}

pub type EngineResult<T> = Result<T, EngineError>;

/// Logs the cause under a correlation id and returns the opaque message the sandbox sees.
pub(crate) fn internal_tool_error(cause: &str) -> String {
    let id = format!("{:08x}", rand::random::<u32>());
    tracing::error!(correlation_id = %id, %cause, "tool call failed");
    format!("Internal tool error [{id}]")
}

/// Whether an object key names something secret (`password`, `apiKey`, `access_token`,
/// `Authorization`, `cookie`, `clientSecret`, `key`, …).
pub(crate) fn is_secret_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    const EXACT: [&str; 4] = ["key", "auth", "pwd", "pass"];
    const PARTS: [&str; 14] = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "privatekey",
        "accesskey",
        "signingkey",
        "sessionid",
        "bearer",
    ];
    EXACT.contains(&k.as_str()) || PARTS.iter().any(|p| k.contains(p))
}

pub(crate) fn connection_not_found(key: &executor_store::ConnectionKey) -> EngineError {
    EngineError::ConnectionNotFound {
        owner: key.owner,
        integration: key.integration.clone(),
        name: key.name.clone(),
    }
}
