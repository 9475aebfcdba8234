//! A catalog of 5,000 tools over ten integrations: search, describe and the integration list
//! answer correctly from inside the sandbox.

use std::sync::Arc;
use std::time::{Duration, Instant};

use executor_core::Owner;
use executor_engine::{Caller, Engine, EngineConfig, ExecutionOutcome};
use executor_store::{
    ConnectionKey, ConnectionRecord, IntegrationRecord, Scope, SqlStore, Store, ToolRecord,
};
use serde_json::{Value, json};

const INTEGRATIONS: [&str; 10] = [
    "github", "stripe", "linear", "slack", "notion", "jira", "vercel", "sentry", "datadog",
    "hubspot",
];
const RESOURCES: [&str; 25] = [
    "repos",
    "issues",
    "pulls",
    "comments",
    "releases",
    "deployments",
    "customers",
    "invoices",
    "charges",
    "projects",
    "teams",
    "users",
    "channels",
    "messages",
    "pages",
    "databases",
    "boards",
    "sprints",
    "domains",
    "alerts",
    "monitors",
    "dashboards",
    "contacts",
    "deals",
    "webhooks",
];
const VERBS: [&str; 20] = [
    "list", "get", "create", "update", "delete", "search", "archive", "restore", "export",
    "import", "assign", "close", "reopen", "merge", "lock", "unlock", "star", "unstar", "sync",
    "count",
];

async fn seeded_engine() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqlStore::open(dir.path()).await.unwrap());
    let scope = Scope::local("catalog-test");
    for slug in INTEGRATIONS {
        store
            .insert_integration(
                &scope,
                &IntegrationRecord {
                    slug: slug.to_owned(),
                    plugin_id: "mcp".to_owned(),
                    name: Some(slug.to_owned()),
                    description: Some(format!("The {slug} API")),
                    config: json!({"transport":"remote","endpoint":"http://127.0.0.1:9/mcp","authenticationTemplate":[{"slug":"none","kind":"none"}]}),
                    can_remove: true,
                    can_refresh: true,
                    config_revised_at: None,
                    created_at: 0,
                    updated_at: 0,
                },
            )
            .await
            .unwrap();
        let key = ConnectionKey::new(Owner::Org, slug, "main");
        store
            .upsert_connection(
                &scope,
                &ConnectionRecord {
                    owner: Owner::Org,
                    integration: slug.to_owned(),
                    name: "main".to_owned(),
                    template: "none".to_owned(),
                    provider: "vault".to_owned(),
                    item_ids: json!({}),
                    identity_label: None,
                    description: None,
                    last_health: None,
                    tools_synced_at: None,
                    expires_at: None,
                    created_at: 0,
                    updated_at: 0,
                    oauth: None,
                },
            )
            .await
            .unwrap();
        let tools: Vec<ToolRecord> = RESOURCES
            .iter()
            .flat_map(|resource| VERBS.iter().map(move |verb| (resource, verb)))
            .map(|(resource, verb)| ToolRecord {
                integration: slug.to_owned(),
                owner: Owner::Org,
                connection: "main".to_owned(),
                plugin_id: "mcp".to_owned(),
                name: format!("{resource}.{verb}"),
                description: format!("{verb} {resource} in {slug}: a realistic description of what the operation does"),
                input_schema: Some(json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The identifier"},
                        "limit": {"type": "integer", "minimum": 1}
                    },
                    "required": ["id"]
                })),
                output_schema: None,
                annotations: Some(json!({"realName": format!("{resource}_{verb}")})),
                binding: None,
            })
            .collect();
        assert_eq!(tools.len(), 500);
        store
            .replace_tools(&scope, &key, &tools, &serde_json::Map::new())
            .await
            .unwrap();
    }
    let engine = Engine::new(
        store,
        EngineConfig::with_js_timeout(Duration::from_secs(10)),
    );
    (engine, dir)
}

async fn run(engine: &Engine, code: &str) -> Value {
    let caller = Caller::local("catalog-test");
    match engine
        .execute(&caller, code.to_owned(), true)
        .await
        .unwrap()
    {
        ExecutionOutcome::Completed(c) => {
            assert!(!c.is_error, "{}", c.text);
            c.structured["result"].clone()
        }
        ExecutionOutcome::Paused(p) => panic!("paused: {}", p.text),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_describe_and_list_on_a_5000_tool_catalog() {
    let (engine, _dir) = seeded_engine().await;

    let before = rss_kib();
    let found = run(
        &engine,
        "return await tools.search({ query: 'stripe invoices create' })",
    )
    .await;
    assert_eq!(
        found["items"][0]["path"], "stripe.org.main.invoices.create",
        "{found:#}"
    );
    // The first search builds the index over the whole catalog; report what it holds.
    println!(
        "RSS growth from building the 5,000-tool search index: {} KiB",
        rss_kib().saturating_sub(before)
    );
    assert!(found["total"].as_u64().unwrap() >= 1);

    let namespaced = run(
        &engine,
        "return await tools.search({ query: 'deals delete', namespace: 'hubspot', limit: 3 })",
    )
    .await;
    assert_eq!(
        namespaced["items"][0]["path"], "hubspot.org.main.deals.delete",
        "{namespaced:#}"
    );
    assert!(
        namespaced["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["integration"] == "hubspot")
    );

    // Empty query with a namespace enumerates the whole integration, path-sorted.
    let all = run(
        &engine,
        "return await tools.search({ query: '', namespace: 'linear', limit: 1000 })",
    )
    .await;
    assert_eq!(all["total"], 500, "{}", all["total"]);
    let paths: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);

    let described = run(
        &engine,
        "return await tools.describe.tool({ path: 'github.org.main.issues.create' })",
    )
    .await;
    assert_eq!(described["name"], "issues.create");
    let input = described["inputTypeScript"].as_str().unwrap();
    assert!(input.contains("id: string"), "{input}");
    assert!(input.contains("limit?: number"), "{input}");
    assert!(
        described["typeScriptDefinitions"]["ToolError"].is_string(),
        "{described:#}"
    );

    let missing = run(
        &engine,
        "return await tools.describe.tool({ path: 'github.org.main.issues.craete' })",
    )
    .await;
    assert_eq!(missing["error"]["code"], "tool_not_found", "{missing:#}");

    let listed = run(
        &engine,
        "return await tools.executor.integrations.list({ limit: 50 })",
    )
    .await;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(
        items.len(),
        11,
        "ten integrations and the built-in: {listed:#}"
    );
    let github = items.iter().find(|i| i["id"] == "github").unwrap();
    assert_eq!(github["toolCount"], 500);

    // A typo in a call answers with suggestions from the same connection.
    let call = run(
        &engine,
        "return await tools.github.org.main.issues.craete({ id: '1' })",
    )
    .await;
    assert_eq!(call["ok"], false);
    assert_eq!(call["error"]["code"], "tool_not_found");
    let suggestions = call["error"]["details"]["suggestions"].as_array().unwrap();
    assert!(!suggestions.is_empty(), "{call:#}");

    // Search latency on the built index (printed for BENCHMARKS.md, bounded loosely).
    let index_queries = [
        "repos list",
        "create invoice",
        "slack channels archive",
        "merge pulls",
        "alerts",
    ];
    let mut samples = Vec::new();
    for i in 0..200 {
        let q = index_queries[i % index_queries.len()];
        let t = Instant::now();
        run(
            &engine,
            &format!("return (await tools.search({{ query: '{q}' }})).total"),
        )
        .await;
        samples.push(t.elapsed());
    }
    samples.sort();
    let p50 = samples[samples.len() / 2];
    println!("execute(tools.search) p50 on 5,000 tools: {p50:?}");
    assert!(p50 < Duration::from_millis(250), "{p50:?}");
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
