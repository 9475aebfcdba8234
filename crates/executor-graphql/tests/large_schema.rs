//! GitHub's public GraphQL schema (SDL from the `@octokit/graphql-schema` npm package, converted
//! to introspection JSON by the `graphql` reference implementation in `tests/fixtures/install.sh`)
//! imports, yields sensible tools, and searches well.

use std::path::PathBuf;
use std::time::Instant;

use executor_core::schema_ts::render_tool_types;
use executor_core::search::{SearchEntry, SearchIndex, SearchQuery};
use executor_graphql::{
    Binding, GraphqlTool, MAX_SELECTION_FIELDS, extract, from_json, parse_introspection, to_json,
    validate_args,
};
use serde_json::{Map, Value, json};

fn fixture() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github.introspection.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "missing large-schema fixture {} ({e}): run `bash crates/executor-graphql/tests/fixtures/install.sh` first",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("fixture is JSON")
}

fn tool<'a>(tools: &'a [GraphqlTool], name: &str) -> &'a GraphqlTool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Every `$ref` inside `value` names a shared definition.
fn assert_refs_resolve(value: &Value, defs: &Map<String, Value>, at: &str) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let name = r
                    .strip_prefix("#/$defs/")
                    .unwrap_or_else(|| panic!("{at}: odd $ref {r}"));
                assert!(defs.contains_key(name), "{at}: dangling $ref {r}");
            }
            for v in map.values() {
                assert_refs_resolve(v, defs, at);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| assert_refs_resolve(v, defs, at)),
        _ => {}
    }
}

#[test]
fn github_schema_imports_and_searches() {
    let json = fixture();

    let started = Instant::now();
    let schema = parse_introspection(&json).expect("GitHub's schema parses");
    let parsed = started.elapsed();
    let started = Instant::now();
    let (tools, defs) = extract(&schema);
    let extracted = started.elapsed();
    let queries = tools
        .iter()
        .filter(|t| t.name.starts_with("query."))
        .count();
    let mutations = tools
        .iter()
        .filter(|t| t.name.starts_with("mutation."))
        .count();
    println!(
        "github: {} types, {} tools ({queries} queries, {mutations} mutations), {} shared defs; parse {parsed:?}, extract {extracted:?}",
        schema.types.len(),
        tools.len(),
        defs.len()
    );
    assert!(schema.types.len() > 1000, "{}", schema.types.len());
    assert!(queries >= 20, "{queries}");
    assert!(mutations >= 200, "{mutations}");
    assert!(
        tools
            .iter()
            .filter(|t| t.name.starts_with("mutation."))
            .all(|t| t.requires_approval)
    );
    assert!(
        tools
            .iter()
            .filter(|t| t.name.starts_with("query."))
            .all(|t| !t.requires_approval)
    );

    // Known tools with sensible input schemas.
    let repository = tool(&tools, "query.repository");
    let props = &repository.input_schema["properties"];
    assert_eq!(props["owner"]["type"], "string");
    assert_eq!(props["name"]["type"], "string");
    assert_eq!(props["followRenames"]["type"], "boolean");
    assert_eq!(props["followRenames"]["default"], true);
    let mut required: Vec<&str> = repository.input_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["name", "owner"]);
    let binding = Binding::from_value(&repository.binding).unwrap();
    let selection = binding.selection.clone().unwrap();
    println!("query.repository default selection: {selection}");
    for leaf in ["id", "name", "nameWithOwner", "url"] {
        assert!(
            selection.split(' ').any(|w| w == leaf),
            "{leaf} missing from {selection}"
        );
    }

    let create_issue = tool(&tools, "mutation.createIssue");
    assert!(create_issue.requires_approval);
    assert_eq!(
        create_issue.input_schema["properties"]["input"]["$ref"],
        "#/$defs/CreateIssueInput"
    );
    assert_eq!(create_issue.input_schema["required"], json!(["input"]));
    let input = &defs["CreateIssueInput"];
    assert_eq!(input["type"], "object");
    assert!(
        input["required"]
            .as_array()
            .unwrap()
            .contains(&json!("repositoryId"))
    );
    assert_eq!(input["properties"]["title"]["type"], "string");

    let search = tool(&tools, "query.search");
    assert_eq!(
        search.input_schema["properties"]["type"]["$ref"],
        "#/$defs/SearchType"
    );
    assert!(
        defs["SearchType"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("REPOSITORY"))
    );
    assert_eq!(
        search.input_schema["properties"]["first"]["type"],
        "integer"
    );

    let viewer = tool(&tools, "query.viewer");
    assert!(viewer.input_schema["properties"].get("select").is_some());

    // Every schema reference resolves; every default selection is valid against the schema and
    // bounded; TypeScript renders for every tool.
    let started = Instant::now();
    let mut longest = 0;
    for t in &tools {
        assert_refs_resolve(&t.input_schema, &defs, &t.name);
        if let Some(out) = &t.output_schema {
            assert_refs_resolve(out, &defs, &t.name);
        }
        let binding = Binding::from_value(&t.binding).unwrap();
        if let Some(selection) = &binding.selection {
            let fields = selection
                .split_whitespace()
                .filter(|w| !matches!(*w, "{" | "}" | "..."))
                .count();
            longest = longest.max(fields);
            assert!(
                fields <= MAX_SELECTION_FIELDS * 2,
                "{}: {selection}",
                t.name
            );
            // Re-check the default as if an agent had written it, with all required arguments.
            let mut args = Map::new();
            for a in binding.args.iter().filter(|a| a.required) {
                args.insert(a.name.clone(), json!("x"));
            }
            if binding.accepts_select() {
                args.insert("select".into(), Value::String(selection.clone()));
                validate_args(Some(&schema), &t.binding, &Value::Object(args)).unwrap_or_else(
                    |e| panic!("{}: default selection rejected: {}", t.name, e.message),
                );
            }
        }
        let ts = render_tool_types(Some(&t.input_schema), t.output_schema.as_ref(), &defs);
        assert!(ts.input.is_some());
    }
    for (name, def) in &defs {
        assert_refs_resolve(def, &defs, name);
    }
    println!(
        "validated every default selection and rendered TypeScript in {:?}; longest default selection: {longest} names",
        started.elapsed()
    );

    // The stored snapshot round-trips and is smaller than the introspection JSON.
    let started = Instant::now();
    let snapshot = to_json(&schema);
    let text = serde_json::to_string(&snapshot).unwrap();
    assert_eq!(from_json(&snapshot).unwrap(), schema);
    println!(
        "snapshot: {} bytes (introspection JSON {} bytes), round trip {:?}",
        text.len(),
        serde_json::to_string(&json).unwrap().len(),
        started.elapsed()
    );

    // Tools search well.
    let entries: Vec<SearchEntry> = tools
        .iter()
        .map(|t| SearchEntry {
            path: format!("github.org.main.{}", t.name),
            name: t.name.clone(),
            description: t.description.clone(),
            integration: "github".into(),
        })
        .collect();
    let started = Instant::now();
    let index = SearchIndex::new(entries);
    let built = started.elapsed();
    let top = |query: &str, n: usize| -> Vec<String> {
        index
            .search(&SearchQuery {
                query: query.into(),
                namespace: None,
                limit: n,
                offset: 0,
            })
            .items
            .into_iter()
            .map(|h| h.name)
            .collect()
    };
    let started = Instant::now();
    let cases = [
        ("create issue", "mutation.createIssue", 3),
        ("createIssue", "mutation.createIssue", 1),
        // A one-word query ties every tool mentioning it (same score), and ties break by path, so
        // the `mutation.*Repository*` tools come first: the search engine gives no bonus to a
        // dotted name whose last segment equals the query. Only check it is found.
        ("repository", "query.repository", 50),
        (
            "look up a repository by owner and name",
            "query.repository",
            3,
        ),
        ("query repository", "query.repository", 1),
        ("add star", "mutation.addStar", 3),
        ("merge pull request", "mutation.mergePullRequest", 3),
        ("viewer", "query.viewer", 3),
    ];
    for (query, expected, within) in cases {
        let hits = top(query, within);
        let rank = top(query, 50).iter().position(|h| h == expected);
        println!("search {query:?}: {expected} at rank {rank:?}");
        assert!(
            hits.iter().any(|h| h == expected),
            "{query:?} → {hits:?}, expected {expected}"
        );
    }
    println!(
        "search: index over {} tools built in {built:?}, {} queries in {:?}",
        tools.len(),
        cases.len(),
        started.elapsed()
    );
}
