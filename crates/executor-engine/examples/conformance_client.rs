//! The client under test of the MCP conformance suite's client scenarios
//! (`@modelcontextprotocol/conformance client --command …`, see `tests/conformance/run.sh`).
//! The suite runs it once per scenario with the scenario server's URL as its last argument,
//! the scenario in `MCP_CONFORMANCE_SCENARIO` and extra context (pre-registered client
//! credentials) as JSON in `MCP_CONFORMANCE_CONTEXT`.
//!
//! It drives our downstream client the way a person and an agent do, through the engine on a
//! throwaway data dir: probe the server; when it wants OAuth, discover, register (or use the
//! pre-registered client), authorise (the suite's authorization server approves at once, so
//! the redirect is read instead of a browser) and complete; add the integration and its
//! connection (which lists its tools); then call tools from an execution, answering every
//! elicitation by accepting with no content (SEP-1034: the schema's defaults are filled in).
//! Exit 0 when all of that worked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use executor_core::Owner;
use executor_engine::{
    AddMcpServer, Caller, ConnectionInput, CredentialOrigin, Engine, EngineConfig,
    ExecutionOutcome, McpAuthShorthand, OAuthClientInput, OAuthStart, OAuthStarted,
    RegisterDynamicClient, ResumeAction, ToolListFilter,
};
use executor_mcp::RemoteTransport;
use executor_store::SqlStore;
use serde_json::Value;

/// Why the run failed (the engine crate has no `anyhow`).
struct Fail(String);

impl<E: std::fmt::Display> From<E> for Fail {
    fn from(e: E) -> Self {
        Fail(e.to_string())
    }
}

const SLUG: &str = "conf";
const REDIRECT_URI: &str = "http://localhost:3000/callback";

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(Fail(message)) => {
            eprintln!("conformance client: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Fail> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .ok_or_else(|| Fail("usage: conformance_client <server-url>".into()))?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let dir = tempfile::tempdir()?;
    let store = Arc::new(SqlStore::open(dir.path()).await?);
    let caller = Caller::local("conformance");
    let engine = Engine::new(
        store,
        EngineConfig {
            providers: executor_engine::ProvidersConfig {
                auth_file: Some(dir.path().join("auth.json")),
                keychain: false,
            },
            ..EngineConfig::with_js_timeout(Duration::from_secs(20))
        },
    );
    let probe = engine
        .probe_mcp(&caller, &url, BTreeMap::new(), BTreeMap::new())
        .await?;
    eprintln!(
        "probe: connected={} requiresOAuth={}",
        probe.connected, probe.requires_oauth
    );
    let oauth = !probe.connected && probe.requires_authentication;
    engine
        .add_mcp_server(
            &caller,
            AddMcpServer {
                name: "Conformance".into(),
                description: None,
                endpoint: url.clone(),
                remote_transport: RemoteTransport::StreamableHttp,
                slug: Some(SLUG.into()),
                query_params: BTreeMap::new(),
                headers: BTreeMap::new(),
                authentication_template: None,
                auth: Some(if oauth {
                    McpAuthShorthand::Oauth2
                } else {
                    McpAuthShorthand::None
                }),
            },
        )
        .await?;
    if oauth {
        authorise(&engine, &caller, &url, &scenario, &context).await?;
    } else {
        engine
            .create_connection(
                &caller,
                ConnectionInput {
                    owner: Owner::Org,
                    name: "main".into(),
                    integration: SLUG.into(),
                    template: "none".into(),
                    identity_label: None,
                    description: None,
                    origin: CredentialOrigin::Value(String::new()),
                    replace: false,
                },
            )
            .await?;
    }
    let tools = engine
        .list_tools(
            &caller,
            &ToolListFilter {
                integration: Some(SLUG.into()),
                ..ToolListFilter::default()
            },
        )
        .await?;
    eprintln!(
        "tools: {:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    for tool in tools {
        let args = match (scenario.as_str(), tool.name.as_str()) {
            (_, "add_numbers") => r#"{a: 5, b: 3}"#,
            ("tools_call" | "elicitation-sep1034-client-defaults", _) => "{}",
            // Auth scenarios check the authorised session; calls are not their subject.
            _ => continue,
        };
        call(&engine, &caller, &tool.name, args).await?;
    }
    Ok(())
}

/// Discovery, client registration, the authorization-code flow (or client credentials).
async fn authorise(
    engine: &Engine,
    caller: &Caller,
    url: &str,
    scenario: &str,
    context: &Value,
) -> Result<(), Fail> {
    let probe = engine.probe_oauth(caller, url).await?;
    eprintln!(
        "oauth: authorize={} token={} register={:?} methods={:?}",
        probe.authorization_url,
        probe.token_url,
        probe.registration_endpoint,
        probe.token_endpoint_auth_methods_supported
    );
    let pre_registered = context.get("client_id").and_then(Value::as_str);
    // A machine client (the SEP-1046 scenarios) is registered with the grant it has, as a
    // person configuring one would.
    let machine = scenario.starts_with("auth/client-credentials");
    let client = match (pre_registered, &probe.registration_endpoint) {
        (Some(client_id), _) => {
            let grant = if machine {
                executor_engine::GRANT_CLIENT_CREDENTIALS
            } else {
                executor_engine::GRANT_AUTHORIZATION_CODE
            };
            engine
                .put_oauth_client(
                    caller,
                    OAuthClientInput {
                        owner: Owner::Org,
                        slug: "pre".into(),
                        authorization_url: probe.authorization_url.clone(),
                        token_url: probe.token_url.clone(),
                        grant: grant.into(),
                        client_id: client_id.into(),
                        client_secret: context
                            .get("client_secret")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        resource: probe.resource.clone(),
                        origin_integration: Some(SLUG.into()),
                        token_endpoint_auth_method: None,
                    },
                )
                .await?
        }
        (None, Some(registration)) => {
            engine
                .register_dynamic_client(
                    caller,
                    RegisterDynamicClient {
                        owner: Owner::Org,
                        slug: None,
                        issuer: probe.issuer.clone(),
                        registration_endpoint: registration.clone(),
                        authorization_url: probe.authorization_url.clone(),
                        token_url: probe.token_url.clone(),
                        resource: probe.resource.clone(),
                        scopes: Vec::new(),
                        token_endpoint_auth_methods_supported: probe
                            .token_endpoint_auth_methods_supported
                            .clone(),
                        client_name: None,
                        redirect_uri: REDIRECT_URI.into(),
                        origin_integration: Some(SLUG.into()),
                    },
                )
                .await?
        }
        (None, None) => return Err(Fail("no registration endpoint and no client".into())),
    };
    let started = engine
        .start_oauth(
            caller,
            OAuthStart {
                client,
                client_owner: Owner::Org,
                owner: Owner::Org,
                name: "main".into(),
                integration: SLUG.into(),
                template: "oauth2".into(),
                identity_label: None,
                redirect_uri: REDIRECT_URI.into(),
                scopes: Vec::new(),
            },
        )
        .await?;
    let (authorization_url, state) = match started {
        OAuthStarted::Connected(_) => return Ok(()),
        OAuthStarted::Redirect {
            authorization_url,
            state,
        } => (authorization_url, state),
    };
    eprintln!("authorize: {authorization_url}");
    // The suite's authorization server approves at once: its redirect carries the code.
    let answer = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?
        .get(&authorization_url)
        .send()
        .await?;
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .ok_or_else(|| {
            Fail(format!(
                "authorize answered {} without a redirect",
                answer.status()
            ))
        })?;
    let location = url::Url::parse(location)?;
    let code = location
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .ok_or_else(|| Fail(format!("no code in {location}")))?;
    let returned = location
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if returned != state {
        return Err(Fail(
            "the authorization server returned another state".into(),
        ));
    }
    engine.complete_oauth(caller, &state, &code).await?;
    Ok(())
}

/// Calls one tool from an execution, accepting every elicitation with no content.
async fn call(engine: &Engine, caller: &Caller, tool: &str, args: &str) -> Result<(), Fail> {
    let code = format!("return await tools.{SLUG}.org.main.{tool}({args})");
    let mut outcome = engine.execute(caller, code, true).await?;
    loop {
        match outcome {
            ExecutionOutcome::Completed(done) => {
                eprintln!("{tool}: {}", done.text);
                return Ok(());
            }
            ExecutionOutcome::Paused(paused) => {
                eprintln!(
                    "{tool}: paused: {}",
                    paused.text.lines().next().unwrap_or("")
                );
                outcome = engine
                    .resume(caller, &paused.execution_id, ResumeAction::Accept, None)
                    .await?;
            }
        }
    }
}
