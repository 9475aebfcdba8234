//! The value every tool call resolves to inside the sandbox (spec §4.3):
//! `{ok:true, data, http?}` | `{ok:false, error:{code, message, status?, details?, retryable?}}`.

use serde::Serialize;
use serde_json::Value;

/// An expected tool failure, given to the agent's code as a value (never thrown).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolError {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

impl ToolError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            status: None,
            details: None,
            retryable: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = Some(retryable);
        self
    }
}

/// The result union of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    Ok { data: Value, http: Option<Value> },
    Err(ToolError),
}

impl ToolOutcome {
    pub fn ok(data: Value) -> Self {
        ToolOutcome::Ok { data, http: None }
    }

    /// The JSON the sandbox sees.
    pub fn to_json(&self) -> Value {
        match self {
            ToolOutcome::Ok { data, http } => {
                let mut map = serde_json::Map::new();
                map.insert("ok".into(), Value::Bool(true));
                map.insert("data".into(), data.clone());
                if let Some(http) = http {
                    map.insert("http".into(), http.clone());
                }
                Value::Object(map)
            }
            ToolOutcome::Err(error) => serde_json::json!({ "ok": false, "error": error }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_both_arms() {
        assert_eq!(
            ToolOutcome::ok(json!({"a":1})).to_json(),
            json!({"ok":true,"data":{"a":1}})
        );
        let err = ToolError::new("tool_not_found", "Tool not found: a.b")
            .with_details(json!({"path":"a.b"}));
        assert_eq!(
            ToolOutcome::Err(err).to_json(),
            json!({"ok":false,"error":{"code":"tool_not_found","message":"Tool not found: a.b","details":{"path":"a.b"}}})
        );
    }
}
