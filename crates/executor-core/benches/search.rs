//! Micro-benchmarks of `tools.search` ranking over a 5,000-tool catalog, and of building the
//! index.
//!
//! `cargo bench -p executor-core`

use criterion::{Criterion, criterion_group, criterion_main};
use executor_core::search::{SearchEntry, SearchIndex, SearchQuery};

const RESOURCES: [&str; 25] = [
    "issues",
    "pulls",
    "repos",
    "users",
    "orgs",
    "teams",
    "gists",
    "releases",
    "commits",
    "branches",
    "tags",
    "hooks",
    "deployments",
    "checks",
    "actions",
    "packages",
    "projects",
    "milestones",
    "labels",
    "comments",
    "reviews",
    "invoices",
    "customers",
    "charges",
    "refunds",
];
const VERBS: [&str; 8] = [
    "list", "get", "create", "update", "delete", "search", "archive", "sync",
];

fn catalog() -> Vec<SearchEntry> {
    let mut out = Vec::new();
    for integration in 0..25 {
        for resource in RESOURCES {
            for verb in VERBS {
                out.push(SearchEntry {
                    path: format!("svc{integration}.org.main.{resource}.{verb}"),
                    name: format!("{resource}.{verb}"),
                    description: format!(
                        "{verb} {resource} of service {integration}: a realistic description of what the operation does"
                    ),
                    integration: format!("svc{integration}"),
                });
            }
        }
    }
    out
}

fn benches(c: &mut Criterion) {
    let entries = catalog();
    assert_eq!(entries.len(), 5_000);
    c.bench_function("search index: build over 5,000 tools", |b| {
        b.iter(|| SearchIndex::new(entries.clone()))
    });
    let index = SearchIndex::new(entries);
    let query = |q: &str| SearchQuery {
        query: q.to_owned(),
        namespace: None,
        limit: 10,
        offset: 0,
    };
    c.bench_function("search: 'list open issues' over 5,000 tools", |b| {
        b.iter(|| index.search(std::hint::black_box(&query("list open issues"))))
    });
    c.bench_function("search: 'refund a charge' over 5,000 tools", |b| {
        b.iter(|| index.search(std::hint::black_box(&query("refund a charge"))))
    });
}

criterion_group!(search, benches);
criterion_main!(search);
