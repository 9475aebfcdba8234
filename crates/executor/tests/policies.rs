//! Policies over HTTP and their enforcement in executions: block, require_approval, approve,
//! owner precedence, validation, and dead-rule reporting.

mod support;

use executor_mcp::testing::serve_stateful;
use serde_json::json;
use support::Harness;

const GET: &str = "return (await tools.stateful.org.main.get_workspace({}))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_gate_tool_calls() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;

    // A connection-agnostic block rule: the call answers tool_blocked, nothing reaches upstream.
    let (status, block) = h
        .post(
            "/api/policies",
            json!({"owner":"org","pattern":"stateful.*.*.get_workspace","action":"block"}),
        )
        .await;
    assert_eq!(status, 200, "{block}");
    assert!(block["id"].as_str().unwrap().starts_with("pol_"), "{block}");
    assert_eq!(block["matches"], 1, "{block}");
    fixture.clear_requests();
    let blocked = h.execute(GET).await;
    assert_eq!(blocked["structured"]["result"]["ok"], false, "{blocked}");
    assert_eq!(
        blocked["structured"]["result"]["error"]["code"], "tool_blocked",
        "{blocked}"
    );
    assert!(
        fixture.ledger.call_session_ids().is_empty(),
        "a blocked call must not reach the server"
    );

    // Blocked tools vanish from agent surfaces but stay in the HTTP listing by default.
    let (_, listed) = h.get("/api/tools?integration=stateful").await;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "get_workspace")
    );
    let (_, visible) = h
        .get("/api/tools?integration=stateful&includeBlocked=false")
        .await;
    assert!(
        !visible
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "get_workspace"),
        "{visible}"
    );
    let search = h
        .execute("return await tools.search({ query: 'get workspace' })")
        .await;
    let hits = search["structured"]["result"]["items"].as_array().unwrap();
    assert!(
        !hits.iter().any(|i| i["name"] == "get_workspace"),
        "{search}"
    );
    let (status, _) = h
        .get("/api/tools/schema?address=tools.stateful.org.main.get_workspace")
        .await;
    assert_eq!(status, 404);

    // A user rule can never loosen an org rule.
    let (status, _) = h
        .post(
            "/api/policies",
            json!({"owner":"user","pattern":"stateful.org.main.get_workspace","action":"approve"}),
        )
        .await;
    assert_eq!(status, 200);
    let still = h.execute(GET).await;
    assert_eq!(
        still["structured"]["result"]["error"]["code"], "tool_blocked",
        "{still}"
    );

    // Turning the org rule into require_approval pauses the call with the rule in the message.
    let id = block["id"].as_str().unwrap();
    let (status, changed) = h
        .call(
            reqwest::Method::PATCH,
            &format!("/api/policies/{id}"),
            Some(json!({"owner":"org","action":"require_approval"})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["action"], "require_approval");
    let paused = h.execute_gated(GET).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let text = paused["text"].as_str().unwrap();
    assert!(
        text.contains("(matched policy: stateful.*.*.get_workspace)"),
        "{text}"
    );
    let exec = paused["structured"]["executionId"].as_str().unwrap();
    let (_, done) = h.resume(exec, "accept").await;
    assert_eq!(done["structured"]["result"]["ok"], true, "{done}");
    // autoApprove runs require_approval calls inline.
    let inline = h.execute(GET).await;
    assert_eq!(inline["structured"]["result"]["ok"], true, "{inline}");

    // An approve rule lets a destructive tool run without the plugin's default approval.
    let (status, _) = h
        .post("/api/policies", json!({"owner":"org","pattern":"stateful.org.main.delete_everything","action":"approve"}))
        .await;
    assert_eq!(status, 200);
    let ran = h
        .execute_gated("return (await tools.stateful.org.main.delete_everything({})).ok")
        .await;
    assert_eq!(ran["status"], "completed", "{ran}");
    assert_eq!(ran["text"], "true", "{ran}");

    // Listing order: user rules first, then org.
    let (_, all) = h.get("/api/policies").await;
    let owners: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["owner"].as_str().unwrap())
        .collect();
    assert_eq!(owners.first(), Some(&"user"), "{all}");

    // Deleting removes it once; a second delete finds nothing (issue #17: it answered
    // `removed` for any id).
    let path = format!("/api/policies/{id}");
    let delete = || h.call(reqwest::Method::DELETE, &path, Some(json!({"owner":"org"})));
    assert_eq!(delete().await, (200, json!({"removed": true})));
    assert_eq!(
        delete().await,
        (
            404,
            json!({"_tag": "PolicyNotFoundError", "message": format!("No policy {id}."), "policyId": id})
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_policies_are_refused_clearly() {
    let h = Harness::start().await;
    for (pattern, action, expect) in [
        ("github.me*", "block", "wildcard must be a whole segment"),
        ("github..x", "block", "empty"),
        ("", "block", ""),
        ("github.*", "deny", "must be \"approve\""),
    ] {
        let (status, body) = h
            .post(
                "/api/policies",
                json!({"owner":"org","pattern":pattern,"action":action}),
            )
            .await;
        assert_eq!(status, 400, "{pattern:?} {action:?}: {body}");
        assert_eq!(body["_tag"], "InvalidPolicyError", "{body}");
        assert!(body["message"].as_str().unwrap().contains(expect), "{body}");
    }
    let (status, body) = h
        .post(
            "/api/policies",
            json!({"owner":"team","pattern":"*","action":"block"}),
        )
        .await;
    assert_eq!(
        (status, body["_tag"].as_str()),
        (400, Some("HttpApiSchemaError"))
    );
    let (_, list) = h.get("/api/policies").await;
    assert_eq!(list, json!([]), "nothing was written");

    // The documented-but-wrong three-segment form matches nothing, and says so.
    let (status, dead) = h
        .post(
            "/api/policies",
            json!({"owner":"org","pattern":"stateful.main.get_workspace","action":"block"}),
        )
        .await;
    assert_eq!(status, 200, "{dead}");
    assert_eq!(dead["matches"], 0, "{dead}");

    let (status, body) = h
        .call(
            reqwest::Method::PATCH,
            "/api/policies/pol_missing",
            Some(json!({"owner":"org","action":"block"})),
        )
        .await;
    assert_eq!(
        (status, body["_tag"].as_str()),
        (404, Some("PolicyNotFoundError"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_core_tools_pause_on_their_own_annotation() {
    let h = Harness::start().await;
    let paused = h
        .execute_gated("return await tools.executor.coreTools.policies.create({ owner: 'org', pattern: 'somewhere.*', action: 'block' })")
        .await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let (_, list) = h.get("/api/policies").await;
    assert_eq!(list, json!([]), "nothing is written before approval");
    let exec = paused["structured"]["executionId"].as_str().unwrap();
    let (_, done) = h.resume(exec, "accept").await;
    assert_eq!(done["structured"]["result"]["ok"], true, "{done}");
    assert_eq!(
        done["structured"]["result"]["data"]["pattern"],
        "somewhere.*"
    );
    let listed = h
        .execute("return await tools.executor.coreTools.policies.list({})")
        .await;
    assert_eq!(
        listed["structured"]["result"]["data"]["items"][0]["action"], "block",
        "{listed}"
    );
}

/// Issue #17 (5): an `autoApprove` execution wrote the org rule `*` → approve at position 0, and
/// after it a person's `block` no longer held and ✋ tools ran unasked. Now the policy tools
/// ask a person whatever `autoApprove` says, an agent's rule cannot loosen a person's block,
/// and an agent cannot edit or remove a person's rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_rule_never_loosens_a_persons_block() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    let (status, block) = h
        .post(
            "/api/policies",
            json!({"owner":"org","pattern":"stateful.*.*.get_workspace","action":"block"}),
        )
        .await;
    assert_eq!(status, 200, "{block}");
    assert_eq!(block["author"], "person", "{block}");
    let block_id = block["id"].as_str().unwrap();

    // autoApprove does not cover policies.create: it pauses and writes nothing until accepted.
    let lift = "return await tools.executor.coreTools.policies.create({ owner: 'org', pattern: '*', action: 'approve', position: '0' })";
    let paused = h.execute(lift).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let (_, listed) = h.get("/api/policies").await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let exec = paused["structured"]["executionId"].as_str().unwrap();
    let (_, done) = h.resume(exec, "accept").await;
    assert_eq!(done["structured"]["result"]["ok"], true, "{done}");
    let agents = &done["structured"]["result"]["data"];
    assert_eq!(agents["author"], "agent", "{done}");
    assert_eq!(agents["position"], "0", "{done}");

    // The person's block still holds, though the agent's `*` comes first…
    fixture.clear_requests();
    let blocked = h.execute_gated(GET).await;
    assert_eq!(
        blocked["structured"]["result"]["error"]["code"], "tool_blocked",
        "{blocked}"
    );
    assert_eq!(
        blocked["structured"]["result"]["error"]["details"]["pattern"],
        "stateful.*.*.get_workspace",
        "{blocked}"
    );
    assert!(fixture.ledger.call_session_ids().is_empty());
    // …and stays invisible to agents; the rule the person accepted applies elsewhere.
    let search = h
        .execute("return await tools.search({ query: 'get workspace' })")
        .await;
    let hits = search["structured"]["result"]["items"].as_array().unwrap();
    assert!(
        !hits.iter().any(|i| i["name"] == "get_workspace"),
        "{search}"
    );
    let ran = h
        .execute_gated("return (await tools.stateful.org.main.delete_everything({})).ok")
        .await;
    assert_eq!(ran["text"], "true", "{ran}");

    // A person's own exception above their block still holds (resolved among people's rules).
    let (status, _) = h
        .post(
            "/api/policies",
            json!({"owner":"org","pattern":"stateful.org.main.get_workspace","action":"approve","position":"1"}),
        )
        .await;
    assert_eq!(status, 200);
    let allowed = h.execute_gated(GET).await;
    assert_eq!(allowed["structured"]["result"]["ok"], true, "{allowed}");

    // An agent may not edit or remove a person's rule, even once a person accepts the call.
    for code in [
        format!(
            "return await tools.executor.coreTools.policies.update({{ owner: 'org', id: '{block_id}', action: 'approve' }})"
        ),
        format!(
            "return await tools.executor.coreTools.policies.remove({{ owner: 'org', id: '{block_id}' }})"
        ),
    ] {
        let paused = h.execute(&code).await;
        assert_eq!(paused["status"], "paused", "{paused}");
        let exec = paused["structured"]["executionId"].as_str().unwrap();
        let (_, refused) = h.resume(exec, "accept").await;
        let result = &refused["structured"]["result"];
        assert_eq!(
            result["error"]["code"], "policy_written_by_person",
            "{refused}"
        );
        assert!(
            result["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web UI"),
            "{refused}"
        );
    }
    let (_, listed) = h.get("/api/policies").await;
    let kept = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == block_id)
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(kept["action"], "block", "{listed}");

    // The agent's own rule is its to change.
    let agents_id = agents["id"].as_str().unwrap();
    let paused = h
        .execute(&format!(
            "return await tools.executor.coreTools.policies.remove({{ owner: 'org', id: '{agents_id}' }})"
        ))
        .await;
    let exec = paused["structured"]["executionId"].as_str().unwrap();
    let (_, removed) = h.resume(exec, "accept").await;
    assert_eq!(
        removed["structured"]["result"]["data"],
        json!({"removed": true}),
        "{removed}"
    );
}
