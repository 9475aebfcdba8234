//! Tenant and subject isolation through ONE engine: two tenants (`acme`, `globex`) and two
//! subjects of one tenant (`alice`, `bob`, plus an org-only caller) share a real SQLite store,
//! the caches and the downstream MCP session pool, against the real session-stateful rmcp
//! fixture. Each test warms what it checks as the first caller, checks as the second, then
//! checks that the first still works: a cache keyed too coarsely shows up as a leak, a cache
//! keyed too finely would not (and is not what these tests are for).

mod support;

use std::collections::BTreeMap;

use executor_core::{Completed, Owner};
use executor_engine::{
    AddMcpServer, Caller, ConnectionInput, CredentialOrigin, Engine, EngineError, ExecutionOutcome,
    McpAuthShorthand, Principal, ResumeAction, ToolListFilter,
};
use executor_mcp::RemoteTransport;
use executor_mcp::testing::{StatefulMcpServer, serve_stateful};
use executor_store::ConnectionKey;
use serde_json::{Value, json};
use support::Harness;

/// A's pasted bearer value: nothing B sees may contain it.
const A_SECRET: &str = "acme-bearer-7f3c9e";
const GET: &str = "get_workspace";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenant_sees_and_calls_nothing_of_a_tenants_integration_even_with_caches_warm() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (a, b) = (acme(), globex());
    add_integration(&h.engine, &a, &fixture, "fx").await;
    connect(&h.engine, &a, "fx", Owner::Org, "main", Some(A_SECRET)).await;
    let address = "tools.fx.org.main.get_workspace";

    // A warms the tool cache and the connection cache, and its bearer reaches upstream.
    fixture.clear_requests();
    let first = call(&h.engine, &a, address).await;
    assert_eq!(first["ok"], true, "{first}");
    assert!(bearers(&fixture).contains(&format!("Bearer {A_SECRET}")));

    let a_sessions: Vec<String> = fixture
        .requests()
        .into_iter()
        .filter_map(|e| e.session_id)
        .collect();
    fixture.clear_requests();
    let refused = call(&h.engine, &b, address).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(refused["error"]["code"], "tool_not_found", "{refused}");
    assert!(
        refused["error"]["details"].get("suggestions").is_none(),
        "B must not be offered A's tools: {refused}"
    );
    // A's session may still be opening its background GET stream; anything else (a new
    // session, or a call on A's) is B's call reaching A's server.
    let reached: Vec<_> = fixture
        .requests()
        .into_iter()
        .filter(|e| {
            e.rpc_method.is_some()
                || e.session_id
                    .as_ref()
                    .is_none_or(|id| !a_sessions.contains(id))
        })
        .collect();
    assert!(
        reached.is_empty(),
        "B's call reached A's server: {reached:?}"
    );

    // B's catalog reads: nothing of A's.
    let integrations = h.engine.list_integrations(&b).await.unwrap();
    assert!(
        !integrations.iter().any(|i| i.slug == "fx"),
        "{integrations:?}"
    );
    let connections = h.engine.list_connections(&b, None, None).await.unwrap();
    assert!(connections.is_empty(), "{connections:?}");
    let tools = h
        .engine
        .list_tools(&b, &ToolListFilter::default())
        .await
        .unwrap();
    assert!(!tools.iter().any(|t| t.integration == "fx"), "{tools:?}");
    let schema = h.engine.tool_schema(&b, address).await;
    assert!(
        matches!(schema, Err(EngineError::ToolNotFound { .. })),
        "{schema:?}"
    );
    let key = ConnectionKey::new(Owner::Org, "fx".to_owned(), "main".to_owned());
    let connection = h.engine.get_connection(&b, &key).await;
    assert!(
        matches!(connection, Err(EngineError::ConnectionNotFound { .. })),
        "{connection:?}"
    );
    let a_items = h.engine.provider_items(&a, "vault").await.unwrap();
    assert!(!a_items.is_empty(), "A's pasted value is not in the vault");
    let b_items = h.engine.provider_items(&b, "vault").await.unwrap();
    assert!(b_items.is_empty(), "{b_items:?}");
    assert!(finds(&h.engine, &a, GET).await);
    assert!(
        !finds(&h.engine, &b, GET).await,
        "B's search index holds A's tool"
    );

    let seen = format!(
        "{integrations:?}{connections:?}{tools:?}{schema:?}{b_items:?}{refused}{:?}",
        h.engine.list_policies(&b).await.unwrap()
    );
    assert!(!seen.contains(A_SECRET), "B saw A's secret: {seen}");

    // A, after all that, still reaches its tool with its own credentials.
    fixture.clear_requests();
    assert_eq!(call(&h.engine, &a, address).await["ok"], true);
    assert_eq!(bearers(&fixture), vec![format!("Bearer {A_SECRET}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_with_the_same_address_never_share_a_downstream_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (a, b) = (acme(), globex());
    for caller in [&a, &b] {
        // Same slug, same connection name, same endpoint, no credentials: only the caller
        // tells the two apart.
        add_integration(&h.engine, caller, &fixture, "fx").await;
        connect(&h.engine, caller, "fx", Owner::Org, "main", None).await;
    }
    assert_sessions_apart(&h.engine, &fixture, (&a, "org.main"), (&b, "org.main")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_with_same_named_personal_connections_never_share_a_downstream_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (alice, bob) = (alice(), bob());
    add_integration(&h.engine, &alice, &fixture, "fx").await;
    for caller in [&alice, &bob] {
        connect(&h.engine, caller, "fx", Owner::User, "mine", None).await;
    }
    assert_sessions_apart(
        &h.engine,
        &fixture,
        (&alice, "user.mine"),
        (&bob, "user.mine"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_block_rule_neither_blocks_nor_hides_the_same_tool_of_another_tenant() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (a, b) = (acme(), globex());
    for caller in [&a, &b] {
        add_integration(&h.engine, caller, &fixture, "fx").await;
        connect(&h.engine, caller, "fx", Owner::Org, "main", None).await;
        // Both search indexes and policy sets are built before the rule exists.
        assert!(finds(&h.engine, caller, GET).await);
    }
    h.engine
        .create_policy(&a, Owner::Org, "fx.*.*.get_workspace", "block", None)
        .await
        .unwrap();
    let address = "tools.fx.org.main.get_workspace";

    // A warms its blocked policy set and search index, then B reads through the same caches.
    assert_eq!(
        call(&h.engine, &a, address).await["error"]["code"],
        "tool_blocked"
    );
    assert!(!finds(&h.engine, &a, GET).await);
    let b_call = call(&h.engine, &b, address).await;
    assert_eq!(b_call["ok"], true, "{b_call}");
    assert!(finds(&h.engine, &b, GET).await, "B's search lost the tool");
    assert!(h.engine.tool_schema(&b, address).await.is_ok());
    assert!(h.engine.list_policies(&b).await.unwrap().is_empty());
    assert_eq!(
        call(&h.engine, &a, address).await["error"]["code"],
        "tool_blocked"
    );
    assert!(!finds(&h.engine, &a, GET).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_own_block_rule_applies_to_them_only() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (alice, bob, org) = (alice(), bob(), org_only());
    add_integration(&h.engine, &alice, &fixture, "fx").await;
    connect(&h.engine, &alice, "fx", Owner::Org, "main", None).await;
    let rule = h
        .engine
        .create_policy(
            &alice,
            Owner::User,
            "fx.org.main.get_workspace",
            "block",
            None,
        )
        .await
        .unwrap();
    let address = "tools.fx.org.main.get_workspace";

    assert_eq!(
        call(&h.engine, &alice, address).await["error"]["code"],
        "tool_blocked"
    );
    assert!(!finds(&h.engine, &alice, GET).await);
    for other in [&bob, &org] {
        let called = call(&h.engine, other, address).await;
        assert_eq!(called["ok"], true, "{other:?}: {called}");
        assert!(finds(&h.engine, other, GET).await, "{other:?}");
        let policies = h.engine.list_policies(other).await.unwrap();
        assert!(!policies.iter().any(|p| p.id == rule.id), "{policies:?}");
    }
    assert_eq!(
        call(&h.engine, &alice, address).await["error"]["code"],
        "tool_blocked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_personal_connection_is_theirs_alone_and_org_connections_are_everyones() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let (alice, bob, org) = (alice(), bob(), org_only());
    add_integration(&h.engine, &alice, &fixture, "fx").await;
    connect(&h.engine, &alice, "fx", Owner::User, "mine", Some(A_SECRET)).await;
    connect(&h.engine, &alice, "fx", Owner::Org, "team", None).await;
    let personal = "tools.fx.user.mine.get_workspace";
    let team = "tools.fx.org.team.get_workspace";

    assert_eq!(call(&h.engine, &alice, personal).await["ok"], true);
    for other in [&bob, &org] {
        fixture.clear_requests();
        let refused = call(&h.engine, other, personal).await;
        assert_eq!(
            refused["error"]["code"], "tool_not_found",
            "{other:?}: {refused}"
        );
        assert!(
            fixture.requests().is_empty(),
            "{other:?} reached alice's server"
        );
        let key = ConnectionKey::new(Owner::User, "fx".to_owned(), "mine".to_owned());
        assert!(h.engine.get_connection(other, &key).await.is_err());
        let names = connection_names(&h.engine, other).await;
        assert_eq!(names, vec!["org/team".to_owned()], "{other:?}");
        let tools = h
            .engine
            .list_tools(other, &ToolListFilter::default())
            .await
            .unwrap();
        let personal_tools = tools
            .iter()
            .filter(|t| t.owner == Owner::User && t.integration == "fx");
        assert_eq!(personal_tools.count(), 0, "{tools:?}");
        assert!(!format!("{refused}{tools:?}").contains(A_SECRET));
        assert_eq!(call(&h.engine, other, team).await["ok"], true, "{other:?}");
    }
    assert_eq!(
        connection_names(&h.engine, &alice).await,
        vec!["org/team".to_owned(), "user/mine".to_owned()]
    );
    fixture.clear_requests();
    assert_eq!(call(&h.engine, &alice, personal).await["ok"], true);
    assert_eq!(bearers(&fixture), vec![format!("Bearer {A_SECRET}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_execution_is_seen_and_resumed_only_by_whoever_started_it() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let alice = alice();
    // Same subject in another tenant, another subject and the org of the same tenant.
    let strangers = [
        Caller::user("globex", Some("alice".into())),
        bob(),
        org_only(),
    ];
    add_integration(&h.engine, &alice, &fixture, "fx").await;
    connect(&h.engine, &alice, "fx", Owner::Org, "main", None).await;
    let code = "return (await tools.fx.org.main.delete_everything({})).data.content[0].text";

    let ExecutionOutcome::Paused(paused) = h
        .engine
        .execute(&alice, code.to_owned(), false)
        .await
        .unwrap()
    else {
        panic!("a destructive call must pause");
    };
    let id = paused.execution_id.as_str();
    assert!(h.engine.paused_execution(&alice, id).await.is_ok());
    for stranger in &strangers {
        assert_not_found(h.engine.paused_execution(stranger, id).await, stranger);
        let resumed = h
            .engine
            .resume(stranger, id, ResumeAction::Accept, None)
            .await;
        assert_not_found(resumed, stranger);
    }
    assert!(
        !fixture
            .requests()
            .iter()
            .any(|r| r.rpc_method.as_deref() == Some("tools/call")),
        "a stranger's accept ran the call"
    );

    let done = completed(
        h.engine
            .resume(&alice, id, ResumeAction::Accept, None)
            .await,
    );
    assert_eq!(done.text, "deleted", "{done:?}");
    // Settled: alice replays her answer, strangers still find nothing (settled-replay cache).
    let replayed = completed(
        h.engine
            .resume(&alice, id, ResumeAction::Accept, None)
            .await,
    );
    assert_eq!(replayed.text, "deleted");
    for stranger in &strangers {
        let resumed = h
            .engine
            .resume(stranger, id, ResumeAction::Accept, None)
            .await;
        assert_not_found(resumed, stranger);
        assert_not_found(h.engine.paused_execution(stranger, id).await, stranger);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_lists_only_its_own_executions() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    let callers = [
        alice(),
        bob(),
        org_only(),
        Caller::user("globex", Some("alice".into())),
    ];
    add_integration(&h.engine, &callers[0], &fixture, "fx").await;
    connect(&h.engine, &callers[0], "fx", Owner::Org, "main", None).await;
    let ExecutionOutcome::Paused(paused) = h
        .engine
        .execute(
            &callers[0],
            "return await tools.fx.org.main.delete_everything({})".to_owned(),
            false,
        )
        .await
        .unwrap()
    else {
        panic!("a destructive call must pause");
    };
    // A distinct number of executions each: alice her pause, the others 2, 3 and 4 runs.
    for (i, caller) in callers.iter().enumerate().skip(1) {
        for _ in 0..=i {
            run(&h.engine, caller, "return 1").await;
        }
    }
    for (i, caller) in callers.iter().enumerate() {
        let listed = h
            .engine
            .list_executions(caller, &Default::default(), 100, 0)
            .await
            .unwrap();
        assert_eq!(listed.len(), i + 1, "{caller:?}: {listed:?}");
        let has_pause = listed.iter().any(|e| e.id == paused.execution_id);
        assert_eq!(has_pause, i == 0, "{caller:?}: {listed:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_local_owner_may_use_the_machines_file_provider() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    std::fs::write(
        h.data_dir().join(executor_engine::AUTH_FILE_NAME),
        json!({"TOKEN": "file-secret-42"}).to_string(),
    )
    .unwrap();
    let local = Caller::local("acme");
    let user = alice();
    let api_key = Caller::local("acme").with_principal(Principal::ApiKey);
    add_integration(&h.engine, &local, &fixture, "fx").await;

    assert_eq!(h.engine.list_providers(&local), vec!["vault", "file"]);
    assert_eq!(
        h.engine.provider_items(&local, "file").await.unwrap().len(),
        1
    );
    for other in [&user, &api_key] {
        assert_eq!(h.engine.list_providers(other), vec!["vault"], "{other:?}");
        let items = h.engine.provider_items(other, "file").await.unwrap();
        assert!(items.is_empty(), "{other:?}: {items:?}");
        let refused = h
            .engine
            .create_connection(other, file_connection(Owner::User, "theirs"))
            .await;
        assert!(
            matches!(
                &refused,
                Err(EngineError::CredentialProviderNotRegistered { provider }) if provider == "file"
            ),
            "{other:?}: {refused:?}"
        );
    }

    // The local owner's org connection reads the file; another principal of the tenant that
    // calls it must not ride those machine credentials.
    h.engine
        .create_connection(&local, file_connection(Owner::Org, "fromfile"))
        .await
        .unwrap();
    let address = "tools.fx.org.fromfile.get_workspace";
    fixture.clear_requests();
    assert_eq!(call(&h.engine, &local, address).await["ok"], true);
    assert_eq!(bearers(&fixture), vec!["Bearer file-secret-42".to_owned()]);
    for other in [&user, &api_key] {
        fixture.clear_requests();
        let called = call(&h.engine, other, address).await;
        assert_eq!(called["ok"], false, "{other:?}: {called}");
        assert!(
            bearers(&fixture).is_empty(),
            "{other:?}: {:?}",
            bearers(&fixture)
        );
    }
    assert_eq!(call(&h.engine, &local, address).await["ok"], true);
}

// ---- shared checks ----------------------------------------------------------------------

/// `first` selects workspace "a" and reads it back in one execution; `second`, through the same
/// pool, must find no workspace (a fresh session of its own) and leave `first`'s pooled session
/// as it was: `first`'s next execution still reads "a", as journey.rs's seed journey expects.
async fn assert_sessions_apart(
    engine: &Engine,
    fixture: &StatefulMcpServer,
    (first, first_conn): (&Caller, &str),
    (second, second_conn): (&Caller, &str),
) {
    let selected = run(
        engine,
        first,
        &format!(
            "await tools.fx.{first_conn}.select_workspace({{ workspace: 'a' }});
             return (await tools.fx.{first_conn}.get_workspace({{}})).data.content[0].text"
        ),
    )
    .await;
    assert_eq!(selected.text, "workspace:a", "{selected:?}");
    let first_sessions = fixture.ledger.call_session_ids();

    fixture.clear_requests();
    let other = workspace(engine, second, second_conn).await;
    assert_eq!(
        other, "no workspace selected",
        "{second:?} got {first:?}'s session"
    );
    let second_sessions = fixture.ledger.call_session_ids();
    assert!(
        first_sessions.is_disjoint(&second_sessions),
        "{first_sessions:?} {second_sessions:?}"
    );

    assert_eq!(workspace(engine, first, first_conn).await, "workspace:a");
    assert_eq!(
        workspace(engine, second, second_conn).await,
        "no workspace selected"
    );
}

fn assert_not_found<T: std::fmt::Debug>(result: Result<T, EngineError>, caller: &Caller) {
    assert!(
        matches!(result, Err(EngineError::ExecutionNotFound { .. })),
        "{caller:?}: {result:?}"
    );
}

// ---- helpers ----------------------------------------------------------------------------

fn acme() -> Caller {
    Caller::local("acme")
}

fn globex() -> Caller {
    Caller::local("globex")
}

fn alice() -> Caller {
    Caller::user("acme", Some("alice".into()))
}

fn bob() -> Caller {
    Caller::user("acme", Some("bob".into()))
}

fn org_only() -> Caller {
    Caller::user("acme", None)
}

/// The fixture as integration `slug` of `caller`'s tenant, with a bearer-header auth method.
async fn add_integration(
    engine: &Engine,
    caller: &Caller,
    fixture: &StatefulMcpServer,
    slug: &str,
) {
    let added = engine
        .add_mcp_server(
            caller,
            AddMcpServer {
                name: "Session-stateful MCP".to_owned(),
                description: None,
                endpoint: fixture.url.clone(),
                remote_transport: RemoteTransport::StreamableHttp,
                slug: Some(slug.to_owned()),
                query_params: BTreeMap::new(),
                headers: BTreeMap::new(),
                authentication_template: None,
                auth: Some(McpAuthShorthand::Header {
                    header_name: "Authorization".to_owned(),
                    prefix: Some("Bearer ".to_owned()),
                }),
            },
        )
        .await
        .unwrap();
    assert_eq!(added, slug);
}

/// A connection with a pasted bearer value, or with none.
async fn connect(
    engine: &Engine,
    caller: &Caller,
    slug: &str,
    owner: Owner,
    name: &str,
    bearer: Option<&str>,
) {
    let (template, origin) = match bearer {
        Some(value) => ("header", CredentialOrigin::Value(value.to_owned())),
        None => ("none", CredentialOrigin::Values(BTreeMap::new())),
    };
    let input = ConnectionInput {
        owner,
        name: name.to_owned(),
        integration: slug.to_owned(),
        template: template.to_owned(),
        identity_label: None,
        description: None,
        origin,
        replace: false,
    };
    engine.create_connection(caller, input).await.unwrap();
}

/// A connection of integration `fx` whose bearer is the file provider's `TOKEN`.
fn file_connection(owner: Owner, name: &str) -> ConnectionInput {
    ConnectionInput {
        owner,
        name: name.to_owned(),
        integration: "fx".to_owned(),
        template: "header".to_owned(),
        identity_label: None,
        description: None,
        origin: CredentialOrigin::From {
            provider: "file".to_owned(),
            id: "TOKEN".to_owned(),
        },
        replace: false,
    }
}

/// Runs `code` as the approver and returns its completion.
async fn run(engine: &Engine, caller: &Caller, code: &str) -> Completed {
    completed(engine.execute(caller, code.to_owned(), true).await)
}

fn completed(outcome: Result<ExecutionOutcome, EngineError>) -> Completed {
    match outcome.unwrap() {
        ExecutionOutcome::Completed(c) => {
            assert!(!c.is_error, "{c:?}");
            c
        }
        ExecutionOutcome::Paused(p) => panic!("paused: {}", p.text),
    }
}

/// The result object (`{ok, data | error}`) of calling the tool at `address` with `{}`.
async fn call(engine: &Engine, caller: &Caller, address: &str) -> Value {
    let done = run(engine, caller, &format!("return await {address}({{}})")).await;
    done.structured["result"].clone()
}

/// What `get_workspace` of connection `conn` (`org.main`) answers `caller`.
async fn workspace(engine: &Engine, caller: &Caller, conn: &str) -> String {
    let result = call(engine, caller, &format!("tools.fx.{conn}.get_workspace")).await;
    assert_eq!(result["ok"], true, "{result}");
    result["data"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Whether `tools.search` finds a tool named `name` for `caller`.
async fn finds(engine: &Engine, caller: &Caller, name: &str) -> bool {
    let query = name.replace('_', " ");
    let found = run(
        engine,
        caller,
        &format!("return await tools.search({{ query: '{query}' }})"),
    )
    .await;
    found.structured["result"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{found:?}"))
        .iter()
        .any(|item| item["name"] == name)
}

/// `owner/name` of every connection `caller` sees.
async fn connection_names(engine: &Engine, caller: &Caller) -> Vec<String> {
    let mut names: Vec<String> = engine
        .list_connections(caller, None, None)
        .await
        .unwrap()
        .iter()
        .map(|c| format!("{}/{}", c.owner, c.name))
        .collect();
    names.sort();
    names
}

/// The `Authorization` headers of the fixture's `tools/call` requests since its last clear.
fn bearers(fixture: &StatefulMcpServer) -> Vec<String> {
    fixture
        .requests()
        .into_iter()
        .filter(|r| r.rpc_method.as_deref() == Some("tools/call"))
        .filter_map(|r| r.authorization)
        .collect()
}
