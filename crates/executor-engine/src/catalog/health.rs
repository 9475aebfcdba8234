//! Connection health checks (spec §1.8): an integration declares a probe (`HealthCheckSpec`),
//! a connection is checked with it (the verdict is kept on the connection), and unsaved
//! credentials can be tried before a connection is created.
//!
//! Checkers: OpenAPI runs the declared read-only operation with pinned arguments; MCP checks
//! liveness (connect and list tools); other kinds answer `unknown`. Verdicts: 2xx healthy,
//! 401/403 expired, anything else degraded. Credential values never appear in a `detail`.
//!
//! `health.rs` runs health checks (§1.8): the probe an integration declares (kept in its config
//! under `healthCheck`), ranked candidates from an OpenAPI spec, the OpenAPI `GET` probe and MCP
//! liveness, verdicts kept on the connection (`last_health`), credential values scrubbed from
//! details.

use std::collections::BTreeMap;

use executor_core::ToolOutcome;
use executor_core::auth::{AuthMethod, Rendered, render, select_method};
use executor_core::{Owner, now_ms};
use executor_openapi::Binding;
use executor_store::{ConnectionKey, IntegrationRecord};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::IntegrationView;
use super::ResolvedInputs;
use crate::caller::Caller;
use crate::error::{EngineError, EngineResult};
use crate::kinds::Kind;
use crate::kinds::{mcp, openapi};
use crate::{CredentialOrigin, Engine};

/// The probe an integration declares: an operation, pinned arguments, and where the identity
/// of the account is in the response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckSpec {
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// Dot path into the response body (`a.b.0.c`); numeric segments index arrays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_field: Option<String>,
}

/// A probe's verdict, as stored on the connection (`lastHealth`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckResult {
    /// `healthy`, `expired`, `degraded` or `unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    pub checked_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_sample: Option<Vec<SampleField>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleField {
    pub path: String,
    pub value: Value,
}

/// An operation that could serve as the integration's probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckCandidate {
    pub operation: String,
    pub method: String,
    pub required_arg_count: usize,
    pub destructive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<CandidateParameter>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub response_fields: Vec<ResponseField>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateParameter {
    pub name: String,
    pub location: String,
    pub required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseField {
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// Input of `POST /api/connections/validate`: credentials to try, nothing saved.
#[derive(Debug, Clone)]
pub struct ValidateConnection {
    pub owner: Owner,
    pub integration: String,
    pub template: String,
    /// Overrides the integration's declared probe.
    pub spec: Option<HealthCheckSpec>,
    pub origin: CredentialOrigin,
}

impl HealthCheckResult {
    fn new(status: &str, detail: Option<String>) -> Self {
        HealthCheckResult {
            status: status.to_owned(),
            http_status: None,
            identity: None,
            checked_at: now_ms(),
            detail,
            response_sample: None,
        }
    }

    /// Replaces every credential value in `detail` with `***`.
    fn scrubbed(mut self, secrets: &[String]) -> Self {
        if let Some(detail) = &mut self.detail {
            for secret in secrets.iter().filter(|s| s.len() >= 3) {
                *detail = detail.replace(secret.as_str(), "***");
            }
        }
        self
    }
}

/// The declared probe in a stored config (every kind keeps it under `healthCheck`).
fn declared_spec(record: &IntegrationRecord) -> Option<HealthCheckSpec> {
    record
        .config
        .get("healthCheck")
        .filter(|v| !v.is_null())
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Reads a dot path (numeric segments index arrays) to a scalar.
pub(crate) fn identity_at(data: &Value, path: &str) -> Option<String> {
    let mut at = data;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        at = match at {
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            Value::Object(o) => o.get(segment)?,
            _ => return None,
        };
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Up to 8 scalar leaves of a response (depth first, at most 4 levels), to help people pick an
/// identity field.
fn sample(data: &Value) -> Vec<SampleField> {
    fn walk(v: &Value, path: &str, depth: usize, out: &mut Vec<SampleField>) {
        if out.len() >= 8 {
            return;
        }
        match v {
            Value::Object(o) if depth < 4 => {
                for (k, child) in o {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(child, &p, depth + 1, out);
                }
            }
            Value::Array(items) if depth < 4 => {
                if let Some(first) = items.first() {
                    let p = if path.is_empty() {
                        "0".to_owned()
                    } else {
                        format!("{path}.0")
                    };
                    walk(first, &p, depth + 1, out);
                }
            }
            Value::String(s) => out.push(SampleField {
                path: path.to_owned(),
                value: Value::String(s.chars().take(100).collect()),
            }),
            Value::Number(_) | Value::Bool(_) => out.push(SampleField {
                path: path.to_owned(),
                value: v.clone(),
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(data, "", 0, &mut out);
    out
}

fn verdict_for_status(status: u16) -> &'static str {
    match status {
        200..=299 => "healthy",
        401 | 403 => "expired",
        _ => "degraded",
    }
}

/// How strongly a candidate's response names the account: email > login > name.
fn identity_rank(fields: &[ResponseField]) -> u8 {
    fields
        .iter()
        .filter(|f| f.kind == "string")
        .map(|f| match f.path.rsplit('.').next().unwrap_or("") {
            "email" => 3,
            "login" | "username" => 2,
            "name" => 1,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Follows `#/$defs/X` references into the shared definitions (bounded).
fn deref<'a>(mut schema: &'a Value, definitions: &'a Map<String, Value>) -> &'a Value {
    for _ in 0..8 {
        match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| definitions.get(name))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

fn schema_type(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("any")
            .to_owned(),
        _ if schema.get("properties").is_some() => "object".to_owned(),
        _ => "any".to_owned(),
    }
}

/// Scalar fields of a response schema, two levels deep (`login`, `owner.login`, `0.name`).
fn response_fields(schema: Option<&Value>, definitions: &Map<String, Value>) -> Vec<ResponseField> {
    fn walk(
        schema: &Value,
        definitions: &Map<String, Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<ResponseField>,
    ) {
        if out.len() >= 40 || depth > 2 {
            return;
        }
        let schema = deref(schema, definitions);
        let kind = schema_type(schema);
        if kind == "array" {
            if let Some(items) = schema.get("items") {
                let p = if path.is_empty() {
                    "0".to_owned()
                } else {
                    format!("{path}.0")
                };
                walk(items, definitions, &p, depth + 1, out);
            }
            return;
        }
        if let Some(Value::Object(props)) = schema.get("properties") {
            for (name, prop) in props {
                let p = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                let prop = deref(prop, definitions);
                let t = schema_type(prop);
                if t == "object" || t == "array" {
                    walk(prop, definitions, &p, depth + 1, out);
                } else {
                    out.push(ResponseField { path: p, kind: t });
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Some(s) = schema {
        walk(s, definitions, "", 0, &mut out);
    }
    out
}

/// Every operation of a compiled spec as a candidate, best first: non-destructive, then
/// identity-bearing responses (email > login > name), then fewest required arguments, `GET`
/// first, then by name.
pub(crate) fn openapi_candidates(
    extraction: &executor_openapi::Extraction,
) -> Vec<HealthCheckCandidate> {
    let mut out: Vec<HealthCheckCandidate> = extraction
        .tools
        .iter()
        .filter_map(|tool| {
            let binding = Binding::deserialize(&tool.binding).ok()?;
            let props = tool.input_schema.get("properties");
            let parameters: Vec<CandidateParameter> = binding
                .parameters
                .iter()
                .map(|p| CandidateParameter {
                    name: p.name.clone(),
                    location: p.location.as_str().to_owned(),
                    required: p.required,
                    description: props
                        .and_then(|ps| ps.get(&p.name))
                        .and_then(|s| s.get("description"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
                .collect();
            let required_arg_count = parameters.iter().filter(|p| p.required).count()
                + usize::from(binding.body.as_ref().is_some_and(|b| b.required));
            let method = binding.method.to_ascii_uppercase();
            let summary = tool
                .description
                .lines()
                .next()
                .map(|l| l.chars().take(200).collect::<String>())
                .filter(|l| !l.trim().is_empty());
            Some(HealthCheckCandidate {
                operation: tool.name.clone(),
                destructive: !matches!(method.as_str(), "GET" | "HEAD"),
                method,
                required_arg_count,
                summary,
                parameters,
                response_fields: response_fields(
                    tool.output_schema.as_ref(),
                    &extraction.definitions,
                ),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        a.destructive
            .cmp(&b.destructive)
            .then(identity_rank(&b.response_fields).cmp(&identity_rank(&a.response_fields)))
            .then(a.required_arg_count.cmp(&b.required_arg_count))
            .then((a.method != "GET").cmp(&(b.method != "GET")))
            .then(a.operation.cmp(&b.operation))
    });
    out
}

/// Credentials to probe with: the method the template names, rendered, and the raw values
/// (to scrub from messages).
struct Probe {
    rendered: Rendered,
    secrets: Vec<String>,
    /// Shown in messages: `org/slug/name` or `(unsaved)`.
    label: String,
}

impl Engine {
    /// The integration's declared probe; `None` when there is none.
    pub async fn health_check_spec(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<HealthCheckSpec>> {
        let record = self.integration_record(caller, slug).await?;
        Ok(declared_spec(&record))
    }

    /// Declares (or with `None` removes) the integration's probe. For OpenAPI the operation
    /// must exist.
    pub async fn set_health_check_spec(
        &self,
        caller: &Caller,
        slug: &str,
        spec: Option<HealthCheckSpec>,
    ) -> EngineResult<()> {
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
        let mut record = self.integration_record(caller, slug).await?;
        if let Some(spec) = &spec {
            if spec.operation.trim().is_empty() {
                return Err(EngineError::InvalidInput {
                    message: "spec.operation must not be empty.".to_owned(),
                });
            }
            if Kind::of(&record.plugin_id) == Some(Kind::OpenApi) {
                let candidates = self.health_check_candidates(caller, slug).await?;
                if !candidates.iter().any(|c| c.operation == spec.operation) {
                    return Err(EngineError::InvalidInput {
                        message: format!(
                            "The integration {slug} has no operation {:?}; see GET /api/integrations/{slug}/health-check/candidates.",
                            spec.operation
                        ),
                    });
                }
            }
        }
        let Value::Object(config) = &mut record.config else {
            return Err(EngineError::Internal(format!(
                "integration {slug} has a non-object config"
            )));
        };
        match &spec {
            Some(spec) => {
                config.insert(
                    "healthCheck".to_owned(),
                    serde_json::to_value(spec).map_err(|e| EngineError::Internal(e.to_string()))?,
                );
            }
            None => {
                config.remove("healthCheck");
            }
        }
        record.updated_at = now_ms();
        self.inner
            .store
            .upsert_integration(caller.scope(), &record)
            .await?;
        Ok(())
    }

    /// Operations that could serve as the probe, best first (OpenAPI only; other kinds have
    /// none).
    pub async fn health_check_candidates(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Vec<HealthCheckCandidate>> {
        let record = self.integration_record(caller, slug).await?;
        if Kind::of(&record.plugin_id) != Some(Kind::OpenApi) {
            return Ok(Vec::new());
        }
        let config = openapi::OpenApiConfig::from_record(&record)?;
        let extraction = openapi::compiled(&self.inner.kind_env(caller), &config)
            .await
            .map_err(|message| EngineError::OpenApiParse { message })?;
        Ok(openapi_candidates(&extraction))
    }

    /// Checks a saved connection and keeps the verdict on it. With `if_stale_ms`, a verdict
    /// younger than that is returned without probing.
    pub async fn check_connection_health(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
        if_stale_ms: Option<i64>,
    ) -> EngineResult<HealthCheckResult> {
        let connection = self.get_connection(caller, key).await?;
        if let (Some(max_age), Some(last)) = (if_stale_ms, &connection.last_health)
            && let Ok(last) = serde_json::from_value::<HealthCheckResult>(last.clone())
            && now_ms() - last.checked_at < max_age
        {
            return Ok(last);
        }
        let integration = self.integration_record(caller, &key.integration).await?;
        let methods = IntegrationView::from_record(&integration).auth_methods;
        // An unregistered provider yields no values: the verdict is `expired` (missing values).
        let values = self
            .inner
            .providers
            .connection_values(caller, &connection)
            .await?
            .unwrap_or_default();
        let label = crate::kinds::mcp::session_label(caller.scope(), key);
        let result = match self.probe_credentials(&methods, &connection.template, values, label) {
            Ok(probe) => {
                self.run_probe(caller, &integration, declared_spec(&integration), probe)
                    .await?
            }
            Err(missing) => missing,
        };
        let mut connection = self.get_connection(caller, key).await?;
        connection.last_health =
            Some(serde_json::to_value(&result).map_err(|e| EngineError::Internal(e.to_string()))?);
        self.inner
            .store
            .upsert_connection(caller.scope(), &connection)
            .await?;
        Ok(result)
    }

    /// Tries credentials without saving anything.
    pub async fn validate_connection(
        &self,
        caller: &Caller,
        input: ValidateConnection,
    ) -> EngineResult<HealthCheckResult> {
        let integration = self.integration_record(caller, &input.integration).await?;
        let methods = IntegrationView::from_record(&integration).auth_methods;
        if input.template != "none" && !methods.iter().any(|m| m.slug() == input.template) {
            return Err(EngineError::InvalidConnectionInput {
                message: format!(
                    "Unknown auth method {:?} for integration {:?}.",
                    input.template, input.integration
                ),
            });
        }
        if input.owner == Owner::User && caller.scope().subject.is_none() {
            return Err(EngineError::InvalidConnectionInput {
                message: "Cannot check a personal connection: this context has no user subject."
                    .to_owned(),
            });
        }
        // The same input rules as creating the connection; references are read, not copied.
        let values: BTreeMap<String, String> = match input.origin.resolve(&input.template)? {
            ResolvedInputs::Pasted(values) => values,
            ResolvedInputs::External { provider, items } => {
                let source = self.inner.providers.get(caller, &provider).ok_or_else(|| {
                    EngineError::CredentialProviderNotRegistered {
                        provider: provider.clone(),
                    }
                })?;
                self.check_referenced_items(caller, source, input.owner, items.values())
                    .await?;
                let mut values = BTreeMap::new();
                for (variable, id) in items {
                    let value = source
                        .get(caller.scope(), input.owner, &id)
                        .await?
                        .ok_or_else(|| EngineError::InvalidConnectionInput {
                            message: format!("The provider {provider} has no item {id:?}."),
                        })?;
                    values.insert(variable, value);
                }
                values
            }
        };
        let label = format!("{}/{}/(unsaved)", input.integration, input.owner);
        let spec = input.spec.or_else(|| declared_spec(&integration));
        match self.probe_credentials(&methods, &input.template, values, label) {
            Ok(probe) => self.run_probe(caller, &integration, spec, probe).await,
            Err(missing) => Ok(missing),
        }
    }

    /// Renders the template's method; a missing value is an `expired` verdict.
    fn probe_credentials(
        &self,
        methods: &[AuthMethod],
        template: &str,
        values: BTreeMap<String, String>,
        label: String,
    ) -> Result<Probe, HealthCheckResult> {
        let secrets: Vec<String> = values.values().cloned().collect();
        let mut rendered = Rendered::default();
        if let Some(method) =
            select_method(methods, template).filter(|m| template != "none" || m.slug() == "none")
        {
            let missing: Vec<String> = method
                .variables()
                .into_iter()
                .filter(|v| !values.contains_key(v))
                .collect();
            if !missing.is_empty() {
                return Err(HealthCheckResult::new(
                    "expired",
                    Some(format!(
                        "Connection {label} has no value for {}.",
                        missing.join(", ")
                    )),
                ));
            }
            rendered = render(method, &values);
        }
        Ok(Probe {
            rendered,
            secrets,
            label,
        })
    }

    async fn run_probe(
        &self,
        caller: &Caller,
        integration: &IntegrationRecord,
        spec: Option<HealthCheckSpec>,
        probe: Probe,
    ) -> EngineResult<HealthCheckResult> {
        let secrets = probe.secrets.clone();
        let result = match Kind::of(&integration.plugin_id) {
            Some(Kind::OpenApi) => self.probe_openapi(caller, integration, spec, probe).await?,
            Some(Kind::Mcp) => self.probe_mcp_liveness(caller, integration, probe).await?,
            _ => HealthCheckResult::new(
                "unknown",
                Some(format!(
                    "Integrations of kind {:?} have no health check.",
                    integration.plugin_id
                )),
            ),
        };
        Ok(result.scrubbed(&secrets))
    }

    async fn probe_openapi(
        &self,
        caller: &Caller,
        integration: &IntegrationRecord,
        spec: Option<HealthCheckSpec>,
        probe: Probe,
    ) -> EngineResult<HealthCheckResult> {
        let Some(spec) = spec else {
            return Ok(HealthCheckResult::new(
                "unknown",
                Some(format!(
                    "No health check is configured for {}; pick one of GET /api/integrations/{}/health-check/candidates.",
                    integration.slug, integration.slug
                )),
            ));
        };
        let config = openapi::OpenApiConfig::from_record(integration)?;
        let extraction = match openapi::compiled(&self.inner.kind_env(caller), &config).await {
            Ok(e) => e,
            Err(e) => {
                return Ok(HealthCheckResult::new(
                    "degraded",
                    Some(format!("The spec could not be read: {e}")),
                ));
            }
        };
        let Some(tool) = extraction.tools.iter().find(|t| t.name == spec.operation) else {
            return Ok(HealthCheckResult::new(
                "unknown",
                Some(format!(
                    "The health check's operation {:?} is not in the spec.",
                    spec.operation
                )),
            ));
        };
        let method = tool
            .binding
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_uppercase();
        if !matches!(method.as_str(), "GET" | "HEAD") {
            return Ok(HealthCheckResult::new(
                "unknown",
                Some(format!(
                    "The health check's operation {} is a {method}; only read-only operations are run as probes.",
                    spec.operation
                )),
            ));
        }
        let connected =
            openapi::connected_with(config, probe.rendered, self.inner.mcp.config().network);
        let args = Value::Object(spec.args.clone().unwrap_or_default());
        let outcome = connected
            .invoke_binding(&self.inner.kind_env(caller), &tool.binding, args)
            .await;
        Ok(match outcome {
            ToolOutcome::Ok { data, http } => {
                let status = http
                    .as_ref()
                    .and_then(|h| h.get("status"))
                    .and_then(Value::as_u64)
                    .map(|s| s as u16)
                    .unwrap_or(200);
                let mut result = HealthCheckResult::new(verdict_for_status(status), None);
                result.http_status = Some(status);
                result.identity = spec
                    .identity_field
                    .as_deref()
                    .and_then(|p| identity_at(&data, p));
                let sampled = sample(&data);
                if !sampled.is_empty() {
                    result.response_sample = Some(sampled);
                }
                result
            }
            ToolOutcome::Err(e) => {
                let status = e.status;
                let verdict = match (e.code.as_str(), status) {
                    (_, Some(s)) => verdict_for_status(s),
                    ("invalid_tool_arguments", None) => "unknown",
                    ("connection_value_missing", None) => "expired",
                    _ => "degraded",
                };
                let mut result = HealthCheckResult::new(
                    verdict,
                    Some(format!("{} ({}): {}", probe.label, e.code, e.message)),
                );
                result.http_status = status;
                result
            }
        })
    }

    async fn probe_mcp_liveness(
        &self,
        caller: &Caller,
        integration: &IntegrationRecord,
        probe: Probe,
    ) -> EngineResult<HealthCheckResult> {
        let config = mcp::unsealed_config(&self.inner.kind_env(caller), integration).await?;
        let target = config.target_with(&probe.rendered);
        Ok(match self.inner.mcp.discover(&target).await {
            Ok(found) => {
                let mut result = HealthCheckResult::new(
                    "healthy",
                    Some(format!("Connected; {} tools listed.", found.tools.len())),
                );
                result.identity = found.server_name;
                result
            }
            Err(e) => {
                let status = e.http_status();
                let mut result = HealthCheckResult::new(
                    match status {
                        Some(401 | 403) => "expired",
                        _ => "degraded",
                    },
                    Some(format!("{}: {e}", probe.label)),
                );
                result.http_status = status;
                result
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_paths_and_samples() {
        let data = json!({"user": {"emails": [{"address": "a@b.c"}], "id": 7, "ok": true}});
        assert_eq!(
            identity_at(&data, "user.emails.0.address").as_deref(),
            Some("a@b.c")
        );
        assert_eq!(identity_at(&data, "user.id").as_deref(), Some("7"));
        assert_eq!(identity_at(&data, "user"), None, "scalars only");
        assert_eq!(identity_at(&data, "user.emails.3.address"), None);
        let s = sample(&data);
        assert_eq!(s[0].path, "user.emails.0.address");
        assert_eq!(s.len(), 3);
        let r = HealthCheckResult::new("degraded", Some("token s3cret was refused".into()))
            .scrubbed(&["s3cret".to_owned()]);
        assert_eq!(r.detail.as_deref(), Some("token *** was refused"));
    }

    #[test]
    fn candidates_rank() {
        let spec = executor_openapi::parse_spec(
            r#"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{
              "/me":{"get":{"operationId":"me","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"email":{"type":"string"}}}}}}}}},
              "/things":{"get":{"operationId":"list","responses":{"200":{"description":"ok"}}},
                         "post":{"operationId":"create","responses":{"201":{"description":"ok"}}}},
              "/users/{id}":{"get":{"operationId":"user","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],
                 "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"login":{"type":"string"}}}}}}}}}
            }}"#,
        )
        .unwrap();
        let candidates = openapi_candidates(&executor_openapi::extract(&spec));
        let order: Vec<(&str, usize, bool)> = candidates
            .iter()
            .map(|c| (c.method.as_str(), c.required_arg_count, c.destructive))
            .collect();
        assert_eq!(
            order,
            vec![
                ("GET", 0, false),
                ("GET", 1, false),
                ("GET", 0, false),
                ("POST", 0, true)
            ],
            "{candidates:#?}"
        );
        assert_eq!(candidates[0].response_fields[0].path, "email");
        assert_eq!(candidates[1].parameters[0].location, "path");
    }
}
