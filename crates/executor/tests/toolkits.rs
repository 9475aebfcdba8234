//! Toolkits through one engine and the HTTP API, against the real session-stateful rmcp
//! fixture and a real SQLite data dir: a toolkit is the only policy source of a caller bound to
//! it (spec §1.9). The five resolution cases, org toolkits against personal tools, rule order,
//! bad input, live edits, and a pause made in a toolkit resumed after a restart under its rules.

mod support;

use executor_engine::{
    Caller, EngineError, ExecutionOutcome, PolicySource, ResumeAction, ToolListFilter,
};
use executor_mcp::testing::serve_stateful;
use serde_json::{Value, json};
use support::Harness;

const GET: &str = "tools.fx.org.main.get_workspace";

fn in_toolkit(h: &Harness, slug: &str) -> Caller {
    h.caller
        .clone()
        .with_policies(PolicySource::Toolkit(slug.to_owned()))
}

/// `{ok, data | error}` of calling `address` with `{}` as `caller` (gated calls auto-approved).
async fn call(h: &Harness, caller: &Caller, address: &str) -> Value {
    match h
        .engine
        .execute(caller, format!("return await {address}({{}})"), true)
        .await
        .unwrap()
    {
        ExecutionOutcome::Completed(done) => done.structured["result"].clone(),
        ExecutionOutcome::Paused(p) => panic!("paused: {}", p.text),
    }
}

async fn create_toolkit(h: &Harness, owner: &str, name: &str) -> Value {
    let (status, body) = h
        .post("/api/toolkits", json!({"owner": owner, "name": name}))
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn grant(h: &Harness, toolkit: &Value, pattern: &str) -> Value {
    let (status, body) = h
        .post(
            &format!(
                "/api/toolkits/{}/connections",
                toolkit["id"].as_str().unwrap()
            ),
            json!({"pattern": pattern}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn rule(h: &Harness, toolkit: &Value, pattern: &str, action: &str) -> Value {
    let (status, body) = h
        .post(
            &format!("/api/toolkits/{}/policies", toolkit["id"].as_str().unwrap()),
            json!({"pattern": pattern, "action": action}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn connect(h: &Harness, owner: &str, name: &str) {
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": owner, "name": name, "integration": "fx", "template": "none", "value": ""}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

fn code_of(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or_default()
}

async fn visible_tools(h: &Harness, caller: &Caller) -> Vec<String> {
    h.engine
        .list_tools(
            caller,
            &ToolListFilter {
                exclude_blocked: true,
                ..ToolListFilter::default()
            },
        )
        .await
        .unwrap()
        .iter()
        .map(|t| t.address().path())
        .filter(|p| !p.starts_with("executor."))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_toolkit_exposes_nothing_and_a_granted_connection_only_itself() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    connect(&h, "org", "other").await;

    let nowhere = in_toolkit(&h, "nowhere");
    let refused = call(&h, &nowhere, GET).await;
    assert_eq!(code_of(&refused), "tool_blocked", "{refused}");
    assert_eq!(
        refused["error"]["details"]["reason"], "no_toolkit",
        "{refused}"
    );
    assert!(visible_tools(&h, &nowhere).await.is_empty());
    let integrations = call(&h, &nowhere, "tools.executor.coreTools.integrations.list").await;
    assert_eq!(code_of(&integrations), "tool_blocked", "{integrations}");

    let kit = create_toolkit(&h, "org", "Support").await;
    let support = in_toolkit(&h, "support");
    assert!(
        visible_tools(&h, &support).await.is_empty(),
        "nothing granted yet"
    );
    grant(&h, &kit, "fx.org.main.*").await;
    let visible = visible_tools(&h, &support).await;
    assert!(!visible.is_empty());
    assert!(
        visible.iter().all(|p| p.starts_with("fx.org.main.")),
        "{visible:?}"
    );
    assert_eq!(call(&h, &support, GET).await["ok"], true);
    let other = call(&h, &support, "tools.fx.org.other.get_workspace").await;
    assert_eq!(
        other["error"]["details"]["reason"], "not_granted",
        "{other}"
    );
    // The built-in tools are granted like any other: by a pattern.
    let listed = call(&h, &support, "tools.executor.coreTools.integrations.list").await;
    assert_eq!(code_of(&listed), "tool_blocked", "{listed}");
    grant(&h, &kit, "executor.coreTools.*").await;
    let listed = call(&h, &support, "tools.executor.coreTools.integrations.list").await;
    assert_eq!(listed["ok"], true, "{listed}");
    let connections = call(&h, &support, "tools.executor.coreTools.connections.list").await;
    let names: Vec<&str> = connections["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["main"],
        "only the granted connection is listed: {connections}"
    );

    // The same engine outside the toolkit sees both connections.
    let everything = visible_tools(&h, &h.caller).await;
    assert!(everything.iter().any(|p| p.starts_with("fx.org.other.")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolkit_is_the_only_policy_source_and_open_callers_follow_its_edits() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let kit = create_toolkit(&h, "org", "Release agent").await;
    assert_eq!(kit["slug"], "release-agent");
    let release = in_toolkit(&h, "release-agent");
    let conn = grant(&h, &kit, "fx.org.main.*").await;

    // A global block does not reach into the toolkit.
    let (status, body) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": "fx.*.*.get_workspace", "action": "block"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(code_of(&call(&h, &h.caller, GET).await), "tool_blocked");
    assert_eq!(call(&h, &release, GET).await["ok"], true);

    // A global approve does not loosen the toolkit's require_approval: an agent pauses.
    h.post(
        "/api/policies",
        json!({"owner": "org", "pattern": "fx.*.*.select_workspace", "action": "approve"}),
    )
    .await;
    rule(&h, &kit, "fx.org.main.select_workspace", "require_approval").await;
    let outcome = h
        .engine
        .execute(
            &release,
            "return await tools.fx.org.main.select_workspace({ workspace: 'a' })".to_owned(),
            false,
        )
        .await
        .unwrap();
    assert!(
        matches!(outcome, ExecutionOutcome::Paused(_)),
        "{outcome:?}"
    );

    // Rules apply by position: new rules go to the top, so the later `block` wins over the
    // earlier `approve` of the same tool until the block is moved below it.
    let approve = rule(&h, &kit, "fx.org.main.get_workspace", "approve").await;
    let block = rule(&h, &kit, "fx.org.main.*", "block").await;
    assert!(
        block["position"].as_str() < approve["position"].as_str(),
        "{block} {approve}"
    );
    assert_eq!(code_of(&call(&h, &release, GET).await), "tool_blocked");
    let kit_id = kit["id"].as_str().unwrap();
    let (status, moved) = h
        .call(
            reqwest::Method::PATCH,
            &format!(
                "/api/toolkits/{kit_id}/policies/{}",
                block["id"].as_str().unwrap()
            ),
            Some(json!({"position": "zz"})),
        )
        .await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(call(&h, &release, GET).await["ok"], true);

    // Removing the connection pattern takes the tools away at the next call.
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            &format!(
                "/api/toolkits/{kit_id}/connections/{}",
                conn["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let gone = call(&h, &release, GET).await;
    assert_eq!(gone["error"]["details"]["reason"], "not_granted", "{gone}");

    // Deleting the toolkit takes its rules, never the connection.
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            &format!("/api/toolkits/{kit_id}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (_, policies) = h.get(&format!("/api/toolkits/{kit_id}/policies")).await;
    assert_eq!(policies["_tag"], "ToolkitError", "{policies}");
    let (_, connections) = h.get("/api/connections").await;
    assert!(
        connections
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "main")
    );
    assert_eq!(
        call(&h, &release, GET).await["error"]["details"]["reason"],
        "no_toolkit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_org_toolkit_never_exposes_personal_connections() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    connect(&h, "user", "mine").await;
    let mine = "tools.fx.user.mine.get_workspace";

    let org = create_toolkit(&h, "org", "Team").await;
    grant(&h, &org, "fx.*.*.*").await;
    grant(&h, &org, "fx.user.mine.*").await;
    let team = in_toolkit(&h, "team");
    assert_eq!(call(&h, &team, GET).await["ok"], true);
    let personal = call(&h, &team, mine).await;
    assert_eq!(
        personal["error"]["details"]["reason"], "personal_tool",
        "{personal}"
    );

    let own = create_toolkit(&h, "user", "Mine only").await;
    grant(&h, &own, "fx.user.mine.*").await;
    let just_me = in_toolkit(&h, "mine-only");
    assert_eq!(call(&h, &just_me, mine).await["ok"], true);
    assert_eq!(
        call(&h, &just_me, GET).await["error"]["details"]["reason"],
        "not_granted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_toolkit_input_is_a_toolkit_error_and_changes_nothing() {
    let h = Harness::start().await;
    let kit = create_toolkit(&h, "org", "Support").await;
    let id = kit["id"].as_str().unwrap();
    let refusals = [
        (
            "/api/toolkits",
            json!({"owner": "org", "name": "Support"}),
            "already in use",
        ),
        (
            "/api/toolkits",
            json!({"owner": "org", "name": "x", "slug": "Bad_Slug"}),
            "Toolkit slug must be",
        ),
        (
            "/api/toolkits",
            json!({"owner": "org", "name": "x", "slug": "a".repeat(64)}),
            "Toolkit slug must be",
        ),
        (
            "/api/toolkits",
            json!({"owner": "org", "name": " \t"}),
            "Toolkit name is required.",
        ),
        (
            "/api/toolkits",
            json!({"owner": "org", "name": "!!!"}),
            "Toolkit slug must be",
        ),
        (
            &format!("/api/toolkits/{id}/policies"),
            json!({"pattern": "fx.*x", "action": "block"}),
            "Invalid toolkit policy pattern",
        ),
        (
            &format!("/api/toolkits/{id}/policies"),
            json!({"pattern": "fx.*", "action": "deny"}),
            "deny",
        ),
        (
            &format!("/api/toolkits/{id}/connections"),
            json!({"pattern": ""}),
            "Invalid toolkit connection pattern",
        ),
        (
            &format!("/api/toolkits/{id}/connections"),
            json!({"pattern": "fx..*"}),
            "Invalid toolkit connection pattern",
        ),
        (
            "/api/toolkits/tk_nope/connections",
            json!({"pattern": "fx.*"}),
            "Toolkit not found.",
        ),
    ];
    for (path, body, says) in &refusals {
        let (status, answer) = h.post(path, body.clone()).await;
        assert_eq!(status, 400, "{path} {body}: {answer}");
        assert_eq!(answer["_tag"], "ToolkitError", "{path} {body}: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(says), "{path} {body}: {message}");
    }
    let (_, list) = h.get("/api/toolkits").await;
    assert_eq!(list["toolkits"].as_array().unwrap().len(), 1, "{list}");
    let (_, entries) = h.get(&format!("/api/toolkits/{id}/policies")).await;
    assert_eq!(entries["policies"], json!([]));
    let (_, entries) = h.get(&format!("/api/toolkits/{id}/connections")).await;
    assert_eq!(entries["connections"], json!([]));

    // A duplicate connection pattern answers the existing row.
    let first = grant(&h, &kit, "fx.org.main.*").await;
    let again = grant(&h, &kit, "fx.org.main.*").await;
    assert_eq!(first, again);

    // Renaming to a taken slug is refused; the engine says the same.
    let other = create_toolkit(&h, "org", "Other").await;
    let (status, answer) = h
        .call(
            reqwest::Method::PATCH,
            &format!("/api/toolkits/{}", other["id"].as_str().unwrap()),
            Some(json!({"slug": "support"})),
        )
        .await;
    assert_eq!(
        (status, answer["_tag"].as_str()),
        (400, Some("ToolkitError")),
        "{answer}"
    );
    let refused = h
        .engine
        .add_toolkit_policy(&h.caller, id, "me*", "block", None)
        .await;
    assert!(
        matches!(refused, Err(EngineError::Toolkit { .. })),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_made_in_a_toolkit_resumes_under_its_rules_after_a_restart() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let kit = create_toolkit(&h, "org", "Gated").await;
    grant(&h, &kit, "fx.org.main.*").await;
    rule(&h, &kit, "fx.org.main.get_workspace", "require_approval").await;
    rule(&h, &kit, "fx.org.main.select_workspace", "block").await;
    let gated = in_toolkit(&h, "gated");
    let code = "const seen = await tools.fx.org.main.get_workspace({});
                const chosen = await tools.fx.org.main.select_workspace({ workspace: 'a' });
                return { seen: seen.ok, chosen: chosen.ok ? 'ran' : chosen.error.code }";
    let ExecutionOutcome::Paused(paused) = h
        .engine
        .execute(&gated, code.to_owned(), false)
        .await
        .unwrap()
    else {
        panic!("the toolkit's require_approval must pause");
    };

    // Restart on the same data dir, then resume as the toolkit's caller: the replay still runs
    // under the toolkit, whose block stops select_workspace.
    let h = h.restart().await;
    let resumed = h
        .engine
        .resume(
            &in_toolkit(&h, "gated"),
            &paused.execution_id,
            ResumeAction::Accept,
            None,
        )
        .await
        .unwrap();
    let ExecutionOutcome::Completed(resumed) = resumed else {
        panic!("it completes");
    };
    assert_eq!(
        resumed.structured["result"],
        json!({"seen": true, "chosen": "tool_blocked"}),
        "{}",
        resumed.structured
    );
}

/// `tools/call` of `tool` with `arguments` on MCP session `session` at `path`: the tool result.
async fn mcp_tool(h: &Harness, path: &str, session: &str, tool: &str, arguments: Value) -> Value {
    let (status, _, answer) = h
        .mcp_rpc(
            path,
            Some(session),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    answer["result"].clone()
}

fn refused_as_unknown(result: &Value) -> bool {
    result["isError"] == true
        && result["structuredContent"]["status"] == "execution_not_found"
        && !result.to_string().contains("deleted")
}

/// Issue #39: a pause answers only on the endpoint (policy source) it was made on. A toolkit's
/// agent that learnt the id of a pause made on `/mcp` could resume it with its own `resume` and
/// receive the result of a tool its toolkit does not grant; the HTTP API (global) could answer
/// a toolkit's pause under rules it was not made under. Both are refused as unknown, live and
/// after a restart (saved pause), and so is reading a settled outcome across sources.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_answers_only_the_endpoint_it_was_made_on_live_and_after_a_restart() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    connect(&h, "org", "other").await;
    // The toolkit grants another connection only: never `fx.org.main.delete_everything`.
    let kit = create_toolkit(&h, "org", "Support").await;
    grant(&h, &kit, "fx.org.other.*").await;
    let gated = create_toolkit(&h, "org", "Gated").await;
    grant(&h, &gated, "fx.org.main.*").await;
    rule(
        &h,
        &gated,
        "fx.org.main.delete_everything",
        "require_approval",
    )
    .await;

    let delete = json!({"code": "return (await tools.fx.org.main.delete_everything({})).data"});
    let global = h.mcp_session("/mcp").await.unwrap();
    let support = h.mcp_session("/mcp/toolkits/support").await.unwrap();
    let paused = mcp_tool(&h, "/mcp", &global, "execute", delete.clone()).await;
    let id = paused["structuredContent"]["executionId"]
        .as_str()
        .unwrap_or_else(|| panic!("a pause: {paused}"))
        .to_owned();
    let accept = json!({"executionId": id, "action": "accept"});

    // Live: the toolkit's session cannot resume (nor see) the global pause.
    let stolen = mcp_tool(
        &h,
        "/mcp/toolkits/support",
        &support,
        "resume",
        accept.clone(),
    )
    .await;
    assert!(refused_as_unknown(&stolen), "{stolen}");
    let support_caller = in_toolkit(&h, "support");
    assert!(matches!(
        h.engine.paused_execution(&support_caller, &id).await,
        Err(EngineError::ExecutionNotFound { .. })
    ));
    // A toolkit's pause is not answered over the (global) HTTP API either.
    let kit_caller = in_toolkit(&h, "gated");
    let ExecutionOutcome::Paused(kit_pause) = h
        .engine
        .execute(
            &kit_caller,
            delete["code"].as_str().unwrap().to_owned(),
            false,
        )
        .await
        .unwrap()
    else {
        panic!("a destructive tool pauses in the toolkit too");
    };
    let (status, body) = h.resume(&kit_pause.execution_id, "accept").await;
    assert_eq!(
        (status, body["_tag"].as_str()),
        (404, Some("ExecutionNotFoundError")),
        "{body}"
    );

    // After a restart (both pauses saved), the same.
    let h = h.restart().await;
    let support_caller = in_toolkit(&h, "support");
    let support = h.mcp_session("/mcp/toolkits/support").await.unwrap();
    let stolen = mcp_tool(
        &h,
        "/mcp/toolkits/support",
        &support,
        "resume",
        accept.clone(),
    )
    .await;
    assert!(refused_as_unknown(&stolen), "{stolen}");
    let stolen = h
        .engine
        .resume(&support_caller, &id, ResumeAction::Accept, None)
        .await;
    assert!(
        matches!(stolen, Err(EngineError::ExecutionNotFound { .. })),
        "{stolen:?}"
    );
    let (status, body) = h.resume(&kit_pause.execution_id, "accept").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(fixture.ledger.call_session_ids().len(), 0, "nothing ran");

    // Each answers where it was made; the settled outcome is not read across sources either.
    let global = h.mcp_session("/mcp").await.unwrap();
    let done = mcp_tool(&h, "/mcp", &global, "resume", accept.clone()).await;
    assert!(done.to_string().contains("deleted"), "{done}");
    let late = mcp_tool(&h, "/mcp/toolkits/support", &support, "resume", accept).await;
    assert!(refused_as_unknown(&late), "{late}");
    let kit_done = h
        .engine
        .resume(
            &in_toolkit(&h, "gated"),
            &kit_pause.execution_id,
            ResumeAction::Accept,
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&kit_done, ExecutionOutcome::Completed(c) if c.text.contains("deleted")),
        "{kit_done:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolkit_endpoint_binds_its_sessions_and_lists_only_what_it_grants() {
    let fixture = serve_stateful().await;
    let other = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    h.add_fixture(&other, "fy").await;
    let kit = create_toolkit(&h, "org", "Support").await;
    grant(&h, &kit, "fx.org.main.*").await;

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let described = |answer: &Value| {
        answer["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "execute")
            .map(|t| t["description"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let session = h.mcp_session("/mcp/toolkits/support").await.unwrap();
    let (status, _, answer) = h
        .mcp_rpc("/mcp/toolkits/support", Some(&session), list.clone())
        .await;
    assert_eq!(status, 200, "{answer}");
    let inside = described(&answer);
    assert!(
        inside.contains("`fx`") && !inside.contains("`fy`"),
        "{inside}"
    );
    let global = h.mcp_session("/mcp/").await.unwrap();
    let (_, _, answer) = h.mcp_rpc("/mcp", Some(&global), list.clone()).await;
    let outside = described(&answer);
    assert!(
        outside.contains("`fx`") && outside.contains("`fy`"),
        "{outside}"
    );

    // A session belongs to the endpoint it was made on.
    for (path, id) in [
        ("/mcp", &session),
        ("/mcp/toolkits/other", &session),
        ("/mcp/toolkits/support", &global),
    ] {
        let (status, _, answer) = h.mcp_rpc(path, Some(id), list.clone()).await;
        assert_eq!(status, 403, "{path}: {answer}");
        assert_eq!(answer["error"]["code"], -32003, "{path}: {answer}");
    }
    let (status, _, answer) = h
        .mcp_rpc("/mcp/toolkits/support/", Some(&session), list.clone())
        .await;
    assert_eq!(
        status, 200,
        "a trailing slash is the same resource: {answer}"
    );
    for path in ["/mcp/nope", "/mcp/toolkits", "/mcp/toolkits/a/b"] {
        let (status, _, answer) = h.mcp_rpc(path, None, list.clone()).await;
        assert_eq!(status, 404, "{path}: {answer}");
        assert_eq!(answer["error"]["code"], -32001, "{path}: {answer}");
    }
}

/// Issue #39: inside a toolkit, "did you mean" listed tools it does not grant, and a tool
/// outside it answered "blocked" where a missing one answered "not found", so an agent could
/// tell which tools exist beyond its toolkit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolkit_answers_alike_for_tools_beyond_it_whether_they_exist_or_not() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    connect(&h, "org", "other").await;
    let kit = create_toolkit(&h, "org", "Support").await;
    grant(&h, &kit, "fx.org.main.*").await;
    let support = in_toolkit(&h, "support");

    let existing = call(&h, &support, "tools.fx.org.other.get_workspace").await;
    let missing = call(&h, &support, "tools.fx.org.other.no_such_tool").await;
    let no_connection = call(&h, &support, "tools.fx.org.nowhere.get_workspace").await;
    for refused in [&existing, &missing, &no_connection] {
        assert_eq!(code_of(refused), "tool_blocked", "{refused}");
        assert_eq!(
            refused["error"]["details"]["reason"], "not_granted",
            "{refused}"
        );
        assert!(
            refused["error"]["details"].get("suggestions").is_none(),
            "{refused}"
        );
    }
    let shape = |v: &Value, path: &str| {
        let mut e = v["error"].clone();
        e["message"] = json!(e["message"].as_str().unwrap().replace(path, "<path>"));
        e["details"]["path"] = json!("<path>");
        e
    };
    assert_eq!(
        shape(&existing, "fx.org.other.get_workspace"),
        shape(&missing, "fx.org.other.no_such_tool")
    );

    // A missing tool of a granted connection suggests only granted tools.
    let typo = call(&h, &support, "tools.fx.org.main.get_worksp").await;
    assert_eq!(code_of(&typo), "tool_not_found", "{typo}");
    let suggested = typo["error"]["details"]["suggestions"].as_array().unwrap();
    assert!(!suggested.is_empty(), "{typo}");
    assert!(
        suggested
            .iter()
            .all(|s| s.as_str().unwrap().starts_with("fx.org.main.")),
        "{typo}"
    );

    // A tool the toolkit blocks by a rule is not suggested either.
    rule(&h, &kit, "fx.org.main.get_workspace", "block").await;
    let typo = call(&h, &support, "tools.fx.org.main.get_worksp").await;
    let suggested = typo["error"]["details"]["suggestions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        suggested.iter().all(|s| s != "fx.org.main.get_workspace"),
        "{typo}"
    );
}

/// Issue #39 (item 5, the approval page): a pause made on a toolkit's endpoint in browser mode
/// links to the session's approval routes, which answer it under the toolkit's rules for the
/// person, while the global routes still cannot; the approval answers only that it was sent,
/// and the result goes to the agent's waiting `resume`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_page_answers_a_toolkit_pause_through_its_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "fx").await;
    let gated = create_toolkit(&h, "org", "Gated").await;
    grant(&h, &gated, "fx.org.main.*").await;
    rule(
        &h,
        &gated,
        "fx.org.main.delete_everything",
        "require_approval",
    )
    .await;
    let path = "/mcp/toolkits/gated?elicitation_mode=browser";
    let session = h.mcp_session(path).await.unwrap();
    let code = json!({"code": "return (await tools.fx.org.main.delete_everything({})).data"});
    let paused = mcp_tool(&h, path, &session, "execute", code).await;
    let structured = &paused["structuredContent"];
    assert_eq!(structured["status"], "user_approval_required", "{paused}");
    let id = structured["executionId"].as_str().unwrap().to_owned();
    let url = structured["approvalUrl"].as_str().unwrap();
    assert!(
        url.ends_with(&format!("/resume/{id}?mcp_session_id={session}")),
        "{url}"
    );

    // The global routes do not answer a toolkit's pause; the session's do, and only its own.
    let (status, _) = h.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 404);
    let (status, pending) = h
        .get(&format!("/api/mcp-sessions/{session}/executions/{id}"))
        .await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["structured"]["executionId"], id.as_str());
    let other = h.mcp_session("/mcp").await.unwrap();
    for sid in [other.as_str(), "mcps_nope"] {
        let (status, body) = h
            .get(&format!("/api/mcp-sessions/{sid}/executions/{id}"))
            .await;
        assert_eq!(status, 404, "{sid}: {body}");
    }
    let (status, body) = h
        .post(
            &format!("/api/mcp-sessions/{session}/executions/{id}/resume"),
            json!({"action": "maybe"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        fixture.ledger.call_session_ids().len(),
        0,
        "nothing ran yet"
    );

    // The agent waits for the decision while the person approves on the page.
    let waiting = mcp_tool(&h, path, &session, "resume", json!({"executionId": id}));
    let approving = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        h.post(
            &format!("/api/mcp-sessions/{session}/executions/{id}/resume"),
            json!({"action": "accept"}),
        )
        .await
    };
    let (agent, (status, ack)) = tokio::join!(waiting, approving);
    assert_eq!(status, 200, "{ack}");
    assert_eq!(ack["text"], "I've approved it", "{ack}");
    assert_eq!(ack["structured"]["status"], "approved");
    assert!(
        !ack.to_string().contains("deleted"),
        "the approver gets no result: {ack}"
    );
    assert!(agent.to_string().contains("deleted"), "{agent}");
}
