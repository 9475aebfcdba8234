//! How the engine names connections: a normalised name (or a 400 that says what names may
//! hold), and the `<integration>/<owner>/<name>` path messages and logs use.

use executor_core::{CONNECTION_NAME_RULE, MAX_CONNECTION_NAME_CHARS, normalize_connection_name};
use executor_store::ConnectionKey;

use crate::error::{EngineError, EngineResult};

/// The stored name of a connection: normalised (spec §1.4), bounded, never empty.
pub(crate) fn connection_name(raw: &str) -> EngineResult<String> {
    let invalid = |message: String| EngineError::InvalidConnectionInput { message };
    if raw.chars().count() > MAX_CONNECTION_NAME_CHARS {
        return Err(invalid(format!(
            "A connection name has at most {MAX_CONNECTION_NAME_CHARS} characters."
        )));
    }
    normalize_connection_name(raw).ok_or_else(|| invalid(CONNECTION_NAME_RULE.to_owned()))
}

/// How messages and logs name a connection: `<integration>/<owner>/<name>`.
pub(crate) fn connection_path(key: &ConnectionKey) -> String {
    format!("{}/{}/{}", key.integration, key.owner, key.name)
}
