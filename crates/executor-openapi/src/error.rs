use thiserror::Error;

/// Why a spec could not be loaded. `Display` is the person-readable message; the HTTP layer maps
/// every variant to `OpenApiParseError{message}` (see [`OpenApiError::tag`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpenApiError {
    /// The text is not a JSON/YAML OpenAPI 3.x or Swagger 2.0 document.
    #[error("{0}")]
    Parse(String),
    /// The spec URL could not be fetched (unreachable, non-2xx, too large, timeout).
    #[error("{0}")]
    Fetch(String),
    /// A `specOverrides` operation could not be applied.
    #[error("{message}")]
    Override {
        operation_index: usize,
        operation: String,
        path: String,
        message: String,
    },
}

impl OpenApiError {
    /// The wire `_tag` of the error (spec §3.10).
    pub fn tag(&self) -> &'static str {
        match self {
            OpenApiError::Override { .. } => "OpenApiSpecOverrideError",
            _ => "OpenApiParseError",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            OpenApiError::Parse(m) | OpenApiError::Fetch(m) => m,
            OpenApiError::Override { message, .. } => message,
        }
    }
}
