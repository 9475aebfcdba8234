//! The team server's rules in the engine: a member's workspace writes take an admin role, read
//! at each decision (over the public methods and from the sandbox's core tools alike), while
//! their own rows stay theirs; and what members change and call lands in the audit log.

use std::sync::Arc;
use std::time::Duration;

use executor_core::Owner;
use executor_engine::{Caller, Engine, EngineConfig, EngineError, ExecutionOutcome, Principal};
use executor_store::{AccountStore, AuditFilter, SqlStore, Store, UserRecord};
use serde_json::Value;

async fn engine() -> (Engine, Arc<SqlStore>, tempfile::TempDir) {
    engine_with(EngineConfig::with_js_timeout(Duration::from_secs(10))).await
}

async fn engine_with(config: EngineConfig) -> (Engine, Arc<SqlStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqlStore::open(dir.path()).await.unwrap());
    for (id, role, first) in [("usr_owner", "owner", true), ("usr_max", "member", false)] {
        let user = UserRecord {
            id: id.to_owned(),
            tenant: "acme".to_owned(),
            email: format!("{id}@x.io"),
            name: id.to_owned(),
            password_hash: "x".to_owned(),
            role: role.to_owned(),
            created_at: 1,
            updated_at: 1,
        };
        if first {
            assert!(store.insert_first_user(&user).await.unwrap());
        } else {
            store
                .insert_invite(&executor_store::InviteRecord {
                    id: "inv".into(),
                    tenant: "acme".into(),
                    code: "AAAA-AAAA-AAAA".into(),
                    role: "member".into(),
                    label: None,
                    created_by: "usr_owner".into(),
                    created_at: 1,
                    expires_at: i64::MAX,
                    used_by: None,
                    used_by_email: None,
                    used_at: None,
                })
                .await
                .unwrap();
            store
                .insert_invited_user(&user, "AAAA-AAAA-AAAA", 2)
                .await
                .unwrap();
        }
    }
    let shared: Arc<dyn Store> = store.clone();
    let engine = Engine::new(shared, config);
    (engine, store, dir)
}

fn member(id: &str) -> Caller {
    Caller::member("acme", id, &format!("{id}@x.io"), Principal::UserSession)
}

async fn run(engine: &Engine, caller: &Caller, code: &str) -> Value {
    match engine.execute(caller, code.to_owned(), true).await.unwrap() {
        ExecutionOutcome::Completed(c) => c.structured["result"].clone(),
        ExecutionOutcome::Paused(p) => panic!("paused: {}", p.text),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_change_only_their_own_rows_until_promoted() {
    let (engine, store, _dir) = engine().await;
    let max = member("usr_max");
    let denied = engine
        .create_policy(&max, Owner::Org, "*", "block", None)
        .await
        .unwrap_err();
    assert!(
        matches!(denied, EngineError::OrgWriteDenied { .. }),
        "{denied:?}"
    );
    assert!(
        engine.list_policies(&max).await.unwrap().is_empty(),
        "nothing written"
    );
    // Their own rule is theirs to write.
    engine
        .create_policy(&max, Owner::User, "executor.*", "approve", None)
        .await
        .unwrap();
    // From the sandbox: the same refusal, as a tool error value.
    let result = run(
        &engine,
        &max,
        "return await tools.executor.coreTools.policies.create({owner: 'org', pattern: 'x.*', action: 'block'})",
    )
    .await;
    assert_eq!(result["ok"], Value::Bool(false), "{result}");
    assert_eq!(result["error"]["code"], "org_write_denied", "{result}");
    // The role is read at the decision: a promotion counts at once.
    store
        .set_user_role("acme", "usr_max", "admin")
        .await
        .unwrap();
    engine
        .create_policy(&max, Owner::Org, "x.*", "block", None)
        .await
        .unwrap();
    store
        .set_user_role("acme", "usr_max", "member")
        .await
        .unwrap();
    let policies = engine.list_policies(&max).await.unwrap();
    let org = policies.iter().find(|p| p.owner == Owner::Org).unwrap();
    assert!(matches!(
        engine.remove_policy(&max, Owner::Org, &org.id).await,
        Err(EngineError::OrgWriteDenied { .. })
    ));
    // A caller that is no member (a removed one reads as none) cannot write either.
    let gone = member("usr_gone");
    assert!(matches!(
        engine
            .create_policy(&gone, Owner::Org, "*", "block", None)
            .await,
        Err(EngineError::OrgWriteDenied { .. })
    ));
    // The local owner is not a member and is never asked.
    engine
        .create_policy(&Caller::local("acme"), Owner::Org, "y.*", "block", None)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_changes_and_calls_are_audited_and_the_local_owner_is_not() {
    let (engine, store, _dir) = engine().await;
    let owner = member("usr_owner");
    let created = engine
        .create_policy(&owner, Owner::Org, "a.*", "block", None)
        .await
        .unwrap();
    engine
        .update_policy(&owner, &created.id, Owner::Org, None, Some("approve"), None)
        .await
        .unwrap();
    run(
        &engine,
        &owner,
        "return await tools.executor.coreTools.policies.list({})",
    )
    .await;
    let _ = engine
        .create_policy(&member("usr_max"), Owner::Org, "*", "block", None)
        .await;
    engine
        .create_policy(&Caller::local("acme"), Owner::Org, "z.*", "block", None)
        .await
        .unwrap();
    engine.flush_audit().await;
    let events = store
        .list_audit(
            "acme",
            &AuditFilter {
                limit: 50,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let actions: Vec<(&str, &str, &str)> = events
        .iter()
        .rev()
        .map(|e| {
            (
                e.action.as_str(),
                e.outcome.as_str(),
                e.actor_id.as_deref().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            ("policy.create", "ok", "usr_owner"),
            ("policy.update", "ok", "usr_owner"),
            ("executor.coreTools.policies.list", "ok", "usr_owner"),
            ("workspace.write", "denied", "usr_max"),
        ],
        "{events:#?}"
    );
    let update = events.iter().find(|e| e.action == "policy.update").unwrap();
    assert_eq!(update.before.as_ref().unwrap()["action"], "block");
    assert_eq!(update.after.as_ref().unwrap()["action"], "approve");
    let call = events.iter().find(|e| e.kind == "tool_call").unwrap();
    assert_eq!(call.after, None, "a call's answer is never kept");
}

/// An HTTP API that answers every request with the `X-Api-Key` it carried.
async fn key_echo() -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&seen).into_owned();
                let key = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("x-api-key")
                            .then(|| value.trim().to_owned())
                    })
                    .unwrap_or_default();
                let body = serde_json::json!({ "key": key }).to_string();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    base
}

/// Issue #39: members' personal credentials lived under one vault id with no user in it, so a
/// member could list another's item, use it through `from`, overwrite it with a same-named
/// connection and delete it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_personal_secret_is_theirs_alone() {
    use executor_engine::{AddOpenApiSpec, ConnectionInput, CredentialOrigin, OpenApiSpecSource};
    let (engine, store, _dir) = engine().await;
    let owner = member("usr_owner");
    let (alice, max) = (member("usr_owner"), member("usr_max"));
    let base = key_echo().await;
    let spec = serde_json::json!({
        "openapi": "3.1.0",
        "info": {"title": "Keys", "version": "1"},
        "servers": [{"url": base}],
        "security": [{"key": []}],
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "paths": {"/whoami": {"get": {"operationId": "whoami", "tags": ["keys"], "responses": {"200": {"description": "ok"}}}}}
    });
    engine
        .add_openapi_spec(
            &owner,
            AddOpenApiSpec {
                spec: OpenApiSpecSource::Text(spec.to_string()),
                slug: Some("keys".into()),
                name: None,
                description: None,
                base_url: None,
                headers: Default::default(),
                query_params: Default::default(),
                authentication_template: None,
                spec_overrides: None,
                health_check: None,
            },
        )
        .await
        .unwrap();
    let template = engine
        .get_integration(&owner, "keys")
        .await
        .unwrap()
        .auth_methods[0]
        .slug()
        .to_owned();
    let input = |name: &str, origin: CredentialOrigin| ConnectionInput {
        owner: Owner::User,
        name: name.into(),
        integration: "keys".into(),
        template: template.clone(),
        identity_label: None,
        description: None,
        origin,
        replace: false,
    };
    engine
        .create_connection(
            &alice,
            input("main", CredentialOrigin::Value("alice-key".into())),
        )
        .await
        .unwrap();
    let item = "connection:user:keys:main:token";
    let whoami = "return (await tools.keys.user.main.keys.whoami({})).data.key";
    assert_eq!(run(&engine, &alice, whoami).await, "alice-key");

    // Max lists nothing of Alice's (HTTP and the core tool read the same list).
    let listed = engine.provider_items(&max, "vault").await.unwrap();
    assert!(listed.iter().all(|i| i.id != item), "{listed:?}");
    let from_sandbox = run(
        &engine,
        &max,
        r#"return await tools.executor.coreTools.providers.items({ provider: "vault" })"#,
    )
    .await;
    assert!(!from_sandbox.to_string().contains(item), "{from_sandbox}");
    assert!(
        engine
            .provider_items(&alice, "vault")
            .await
            .unwrap()
            .iter()
            .any(|i| i.id == item)
    );

    // Max cannot use it through `from`: refused before anything is written.
    let stolen = engine
        .create_connection(
            &max,
            input(
                "stolen",
                CredentialOrigin::From {
                    provider: "vault".into(),
                    id: item.into(),
                },
            ),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(stolen, EngineError::InvalidConnectionInput { .. }),
        "{stolen:?}"
    );
    assert!(
        engine
            .list_connections(&max, Some("keys"), Some(Owner::User))
            .await
            .unwrap()
            .is_empty()
    );

    // Max's same-named connection holds his own value, and removing it leaves Alice's.
    engine
        .create_connection(
            &max,
            input("main", CredentialOrigin::Value("max-key".into())),
        )
        .await
        .unwrap();
    assert_eq!(run(&engine, &max, whoami).await, "max-key");
    assert_eq!(run(&engine, &alice, whoami).await, "alice-key");
    engine
        .remove_connection(
            &max,
            &executor_store::ConnectionKey::new(Owner::User, "keys", "main"),
        )
        .await
        .unwrap();
    assert_eq!(run(&engine, &alice, whoami).await, "alice-key");
    assert_eq!(
        store
            .get_secret(alice.scope(), Owner::User, item)
            .await
            .unwrap()
            .as_deref(),
        Some("alice-key")
    );
}

fn stdio_config(allow_stdio: bool) -> EngineConfig {
    EngineConfig {
        mcp: executor_mcp::McpClientConfig {
            allow_stdio,
            discovery_timeout: Duration::from_secs(5),
            ..executor_mcp::McpClientConfig::default()
        },
        ..EngineConfig::with_js_timeout(Duration::from_secs(10))
    }
}

/// A stdio server's command: `sh -c <script>` (it need not speak MCP: what matters is whether
/// and when it runs).
fn shell(name: &str, script: String) -> executor_engine::AddStdioMcpServer {
    executor_engine::AddStdioMcpServer {
        name: name.to_owned(),
        command: "sh".to_owned(),
        args: vec!["-c".to_owned(), script],
        ..Default::default()
    }
}

async fn audit_events(store: &SqlStore) -> Vec<executor_store::AuditRecord> {
    store
        .list_audit(
            "acme",
            &AuditFilter {
                limit: 50,
                ..Default::default()
            },
        )
        .await
        .unwrap()
}

/// Issue #39: where stdio servers are off (the team server by default), adding or configuring
/// one is refused before anything runs, for owners too; the attempt is on record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_servers_off_spawn_nothing_for_anyone() {
    let (engine, store, dir) = engine_with(stdio_config(false)).await;
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    for who in ["usr_owner", "usr_max"] {
        let refused = engine
            .add_stdio_mcp_server(&member(who), shell("evil", touch.clone()))
            .await
            .unwrap_err();
        assert!(
            matches!(refused, EngineError::StdioMcpDisabled { .. }),
            "{who}: {refused:?}"
        );
        assert!(
            refused.to_string().contains("--allow-stdio-mcp"),
            "{refused}"
        );
    }
    // Nor can an existing integration be turned into one.
    let remote = engine
        .set_mcp_config(
            &member("usr_owner"),
            "nope",
            &serde_json::json!({"transport": "stdio", "command": "sh", "args": ["-c", touch]}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(remote, EngineError::StdioMcpDisabled { .. }),
        "{remote:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "the command ran");
    assert!(
        engine
            .list_integrations(&member("usr_owner"))
            .await
            .unwrap()
            .iter()
            .all(|i| i.slug != "evil")
    );
    engine.flush_audit().await;
    let denied: Vec<_> = audit_events(&store)
        .await
        .into_iter()
        .filter(|e| e.action == "mcp.stdio" && e.outcome == "denied")
        .map(|e| e.actor_id.unwrap_or_default())
        .collect();
    assert!(denied.contains(&"usr_owner".to_owned()), "{denied:?}");
}

/// Issue #39: where stdio servers are on, only admins and owners add them, and the command is
/// in the audit log before it runs, whether or not the add then succeeds. The command copies
/// the database as it is when it starts; the copy already holds the line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_commands_are_audited_before_they_run_and_members_cannot_add_them() {
    let (engine, _store, dir) = engine_with(stdio_config(true)).await;
    let marker = dir.path().join("member-ran");
    let refused = engine
        .add_stdio_mcp_server(
            &member("usr_max"),
            shell("evil", format!("touch {}", marker.display())),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, EngineError::OrgWriteDenied { .. }),
        "{refused:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "a member's command ran");

    let snapshot = tempfile::tempdir().unwrap();
    let script = format!(
        "cp {}/data.db* {}/ && touch {}/copied",
        dir.path().display(),
        snapshot.path().display(),
        snapshot.path().display()
    );
    // Not an MCP server: the add fails after the command ran.
    let failed = engine
        .add_stdio_mcp_server(&member("usr_owner"), shell("copier", script))
        .await
        .unwrap_err();
    assert!(
        matches!(
            failed,
            EngineError::McpConnection { .. } | EngineError::McpToolDiscovery { .. }
        ),
        "{failed:?}"
    );
    assert!(snapshot.path().join("copied").exists(), "the command ran");
    std::fs::remove_file(snapshot.path().join("data.db.owner-lock")).ok();
    let copy = SqlStore::open(snapshot.path()).await.unwrap();
    let events = audit_events(&copy).await;
    let line = events
        .iter()
        .find(|e| e.action == "mcp.stdio.add")
        .unwrap_or_else(|| panic!("no audit line before the command ran: {events:#?}"));
    assert_eq!(line.actor_id.as_deref(), Some("usr_owner"));
    assert_eq!(line.target.as_deref(), Some("copier"));
    let after = line.after.as_ref().unwrap();
    assert_eq!(after["command"], "sh");
    assert!(
        after["args"][1].as_str().unwrap().contains("copied"),
        "{after}"
    );
}
