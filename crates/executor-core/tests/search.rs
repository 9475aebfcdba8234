//! Tests of ranked tool search (spec §4.4): normalisation, scoring rules, namespace filtering,
//! enumeration, paging, a 5,000-tool catalog and its latency.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use executor_core::search::{
    DEFAULT_SEARCH_LIMIT, SearchEntry, SearchIndex, SearchPage, SearchQuery, normalize,
    normalize_text, suggest,
};

fn entry(integration: &str, path: &str, name: &str, description: &str) -> SearchEntry {
    SearchEntry {
        path: path.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        integration: integration.to_owned(),
    }
}

fn q(query: &str) -> SearchQuery {
    SearchQuery {
        query: query.to_owned(),
        namespace: None,
        limit: DEFAULT_SEARCH_LIMIT,
        offset: 0,
    }
}

fn qns(query: &str, namespace: &str) -> SearchQuery {
    SearchQuery {
        namespace: Some(namespace.to_owned()),
        ..q(query)
    }
}

fn paths(page: &SearchPage) -> Vec<&str> {
    page.items.iter().map(|h| h.path.as_str()).collect()
}

fn scores(index: &SearchIndex, query: &SearchQuery) -> Vec<(String, i64)> {
    index
        .search(query)
        .items
        .into_iter()
        .map(|h| (h.path, h.score))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Normalisation

#[test]
fn normalize_tokens_table() {
    let cases: &[(&str, &[&str])] = &[
        ("listForOrg", &["list", "for", "org"]),
        ("list_for_org", &["list", "for", "org"]),
        (
            "github.org.main.issues.list",
            &["github", "org", "main", "issues", "list"],
        ),
        ("api/v2/users:search", &["api", "v2", "users", "search"]),
        ("kebab-case-name", &["kebab", "case", "name"]),
        ("getV2Users", &["get", "v2", "users"]),
        ("oauth2Token", &["oauth2", "token"]),
        ("issue123Count", &["issue123", "count"]),
        ("HTTPServer", &["httpserver"]),
        ("parseHTTPResponse", &["parse", "httpresponse"]),
        ("  Hello, World!  ", &["hello", "world"]),
        ("a--b__c..d//e::f", &["a", "b", "c", "d", "e", "f"]),
        ("café au lait", &["caf", "au", "lait"]),
        ("ALLCAPS", &["allcaps"]),
        ("v1.2.3", &["v1", "2", "3"]),
        ("", &[]),
        ("  _-./: ", &[]),
    ];
    for (input, expected) in cases {
        assert_eq!(normalize(input), *expected, "normalize({input:?})");
    }
}

#[test]
fn normalize_text_table() {
    let cases: &[(&str, &str)] = &[
        ("listForOrg", "list for org"),
        ("a_.b", "a b"),
        (" Foo_Bar ", "foo bar"),
        ("_leading.and.trailing_", "leading and trailing"),
        ("Hello, World!", "hello, world!"),
        ("a _b", "a  b"),
        ("ÉcoleNormale", "école normale"),
        ("\u{FEFF}x\u{3000}", "x"),
    ];
    for (input, expected) in cases {
        assert_eq!(
            normalize_text(input),
            *expected,
            "normalize_text({input:?})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Ranking rules (issue #18: the obvious tool first; the formula is in the module docs)

fn order(index: &SearchIndex, query: &str) -> Vec<String> {
    scores(index, &q(query))
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn exact_name_beats_prefix_beats_substring() {
    let index = SearchIndex::new(vec![
        entry("acme", "acme.org.main.reissues", "reissues", ""),
        entry("acme", "acme.org.main.issues_list", "issues_list", ""),
        entry("acme", "acme.org.main.issues", "issues", ""),
    ]);
    assert_eq!(
        order(&index, "issues"),
        [
            "acme.org.main.issues",
            "acme.org.main.issues_list",
            "acme.org.main.reissues"
        ]
    );
}

#[test]
fn name_outranks_summary_outranks_the_rest_of_the_description() {
    let index = SearchIndex::new(vec![
        entry(
            "svc",
            "svc.org.main.d",
            "d",
            "Something else\nMentions widgets late",
        ),
        entry(
            "svc",
            "svc.org.main.s",
            "s",
            "Returns widgets owned by the user",
        ),
        entry("svc", "svc.org.main.widgets", "widgets", "Fetch one record"),
    ]);
    assert_eq!(
        order(&index, "widgets"),
        ["svc.org.main.widgets", "svc.org.main.s", "svc.org.main.d"]
    );
}

#[test]
fn a_name_the_query_covers_beats_a_longer_one() {
    // "get repository": `repos.get` is all query; `repos.getContent` has a word more.
    let index = SearchIndex::new(vec![
        entry(
            "gh",
            "gh.org.main.repos.getContent",
            "repos.getContent",
            "Get repository content",
        ),
        entry(
            "gh",
            "gh.org.main.repos.getBranch",
            "repos.getBranch",
            "Get a branch",
        ),
        entry(
            "gh",
            "gh.org.main.repos.get",
            "repos.get",
            "Get a repository",
        ),
    ]);
    assert_eq!(order(&index, "get repository")[0], "gh.org.main.repos.get");
}

#[test]
fn plurals_synonyms_and_stop_words() {
    let index = SearchIndex::new(vec![
        entry(
            "st",
            "st.org.main.customers.postCustomers",
            "customers.postCustomers",
            "<p>Creates a new customer object.</p>",
        ),
        entry(
            "st",
            "st.org.main.customers.getCustomers",
            "customers.getCustomers",
            "<p>Returns a list of your customers.</p>",
        ),
        entry(
            "st",
            "st.org.main.customers.deleteCustomersCustomer",
            "customers.deleteCustomersCustomer",
            "<p>Permanently deletes a customer.</p>",
        ),
        entry(
            "gh",
            "gh.org.main.repos.listForAuthenticatedUser",
            "repos.listForAuthenticatedUser",
            "List repositories for the authenticated user",
        ),
        entry(
            "gh",
            "gh.org.main.repos.listForOrg",
            "repos.listForOrg",
            "List organization repositories",
        ),
    ]);
    // `create` finds `post…` and "Creates"; the article is ignored.
    assert_eq!(
        order(&index, "create a customer")[0],
        "st.org.main.customers.postCustomers"
    );
    assert_eq!(
        order(&index, "remove customer")[0],
        "st.org.main.customers.deleteCustomersCustomer"
    );
    assert_eq!(
        order(&index, "list my repos")[0],
        "gh.org.main.repos.listForAuthenticatedUser"
    );
    assert_eq!(
        order(&index, "organisation repositories")[0],
        "gh.org.main.repos.listForOrg"
    );
    // A query of nothing but stop words still searches its words.
    assert!(!order(&index, "for").is_empty());
}

#[test]
fn two_term_query_requires_every_term() {
    let index = SearchIndex::new(vec![
        entry(
            "acme",
            "acme.org.main.widgets.delete",
            "widgets.delete",
            "Deletes one widget",
        ),
        entry(
            "acme",
            "acme.org.main.widgets.get",
            "widgets.get",
            "Fetch one widget",
        ),
    ]);
    let cases: &[(&str, &[&str])] = &[
        ("widgets delete", &["acme.org.main.widgets.delete"]),
        ("delete", &["acme.org.main.widgets.delete"]),
        // `fetch` and `get` are one operation.
        ("widgets fetch", &["acme.org.main.widgets.get"]),
        ("widgets get", &["acme.org.main.widgets.get"]),
        ("widgets nothing", &[]),
        (
            "widgets",
            &["acme.org.main.widgets.delete", "acme.org.main.widgets.get"],
        ),
    ];
    for (query, expected) in cases {
        let page = index.search(&q(query));
        assert_eq!(paths(&page), *expected, "query {query:?}");
        assert_eq!(page.total, expected.len(), "query {query:?}");
    }
}

#[test]
fn longer_queries_need_sixty_percent() {
    let index = SearchIndex::new(vec![
        entry("k", "k.e1", "e1", "alpha only"),
        entry("k", "k.e2", "e2", "alpha and beta"),
        entry("k", "k.e3", "e3", "gamma words alpha more beta"),
    ]);
    // 3 terms: 2/3 ≥ 60 % accepted, 1/3 rejected; full coverage ranks first.
    assert_eq!(order(&index, "alpha beta gamma"), ["k.e3", "k.e2"]);
    // 5 terms: 3/5 accepted, 2/5 rejected.
    assert_eq!(order(&index, "alpha beta gamma delta epsilon"), ["k.e3"]);
    // 4 terms: 3/4 accepted, 2/4 rejected.
    assert_eq!(order(&index, "alpha beta gamma delta"), ["k.e3"]);
}

#[test]
fn a_phrase_admits_what_coverage_would_not() {
    let index = SearchIndex::new(vec![
        entry("k", "k.p1", "p1", "alpha beta gamma delta epsilon"),
        entry("k", "k.p2", "p2", "alpha"),
    ]);
    // 2 of 5 terms is under 60 %, but the summary holds the query as a phrase.
    assert_eq!(order(&index, "beta gamma zz yy xx"), Vec::<String>::new());
    assert_eq!(order(&index, "alpha beta"), ["k.p1"]);
}

#[test]
fn exact_name_bonus_and_ties_sort_by_path() {
    let index = SearchIndex::new(vec![
        entry("m", "m.b.send", "send", ""),
        entry("m", "m.a.send", "send", ""),
        entry("m", "m.c.sendMail", "sendMail", ""),
    ]);
    let page = index.search(&q("send"));
    assert_eq!(paths(&page), vec!["m.a.send", "m.b.send", "m.c.sendMail"]);
    assert_eq!(page.items[0].score, page.items[1].score);
    assert!(page.items[2].score < page.items[1].score);
    assert!(page.items.iter().all(|h| h.score > 0));
}

// ---------------------------------------------------------------------------------------------
// Namespace filter and enumeration

fn namespace_fixture() -> SearchIndex {
    SearchIndex::new(vec![
        entry(
            "google_calendar",
            "google_calendar.org.main.events.list",
            "events.list",
            "List calendar events",
        ),
        entry(
            "google_gmail",
            "google_gmail.org.main.messages.list",
            "messages.list",
            "List mail messages",
        ),
        entry(
            "github",
            "github.org.main.issues.list",
            "issues.list",
            "List repository issues",
        ),
        entry(
            "googlex",
            "googlex.org.main.items.list",
            "items.list",
            "List items",
        ),
    ])
}

#[test]
fn namespace_is_a_token_prefix_of_integration_or_path() {
    let index = namespace_fixture();
    let all = [
        "github.org.main.issues.list",
        "google_calendar.org.main.events.list",
        "google_gmail.org.main.messages.list",
        "googlex.org.main.items.list",
    ];
    let cases: &[(&str, &[&str])] = &[
        ("", &all),
        ("_", &all),
        (
            "google",
            &[
                "google_calendar.org.main.events.list",
                "google_gmail.org.main.messages.list",
            ],
        ),
        (
            "GOOGLE",
            &[
                "google_calendar.org.main.events.list",
                "google_gmail.org.main.messages.list",
            ],
        ),
        ("google_gmail", &["google_gmail.org.main.messages.list"]),
        ("google.gmail", &["google_gmail.org.main.messages.list"]),
        ("googleGmail", &["google_gmail.org.main.messages.list"]),
        ("goo", &[]),
        ("github.org", &["github.org.main.issues.list"]),
        ("github.org.main.issues", &["github.org.main.issues.list"]),
        ("org", &[]),
        ("nothing_here", &[]),
    ];
    for (ns, expected) in cases {
        let page = index.search(&qns("list", ns));
        let mut got = paths(&page);
        got.sort_unstable();
        assert_eq!(got, *expected, "namespace {ns:?}");
        assert_eq!(page.total, expected.len(), "namespace {ns:?}");
    }
}

#[test]
fn enumeration_mode() {
    let index = SearchIndex::new(vec![
        entry(
            "github",
            "github.org.main.Repos.get",
            "Repos.get",
            "Get a repo",
        ),
        entry("github", "github.org.main.repos.create", "repos.create", ""),
        entry(
            "google_gmail",
            "google_gmail.org.main.messages.list",
            "messages.list",
            "",
        ),
        entry("github", "github.org.main.issues.list", "issues.list", ""),
        entry("github", "github.org.main.pulls.list", "pulls.list", ""),
        entry("github", "github.org.main.issues_list", "issues_list", ""),
        entry(
            "google_calendar",
            "google_calendar.org.main.events.list",
            "events.list",
            "",
        ),
    ]);
    let github_sorted = [
        "github.org.main.issues_list",
        "github.org.main.issues.list",
        "github.org.main.pulls.list",
        "github.org.main.repos.create",
        "github.org.main.Repos.get",
    ];
    for (query, ns) in [("", "github"), ("   ", " github "), ("_", "github")] {
        let page = index.search(&SearchQuery {
            limit: 50,
            ..qns(query, ns)
        });
        assert_eq!(paths(&page), github_sorted, "query {query:?} ns {ns:?}");
        assert!(
            page.items
                .iter()
                .all(|h| h.score == 0 && h.integration == "github")
        );
        assert_eq!(
            (page.total, page.has_more, page.next_offset),
            (5, false, None)
        );
    }
    // exact slug only: no prefix siblings, no case folding
    for ns in ["google", "GitHub", "git"] {
        let page = index.search(&qns("", ns));
        assert_eq!(page, SearchPage::empty(), "ns {ns:?}");
    }
    // no namespace (or a blank one) → empty page
    for ns in [None, Some(""), Some("  "), Some("._")] {
        let page = index.search(&SearchQuery {
            namespace: ns.map(str::to_owned),
            ..q("")
        });
        assert_eq!(page, SearchPage::empty(), "ns {ns:?}");
    }
    // paging through an enumeration
    let first = index.search(&SearchQuery {
        limit: 2,
        ..qns("", "github")
    });
    assert_eq!(paths(&first), github_sorted[..2]);
    assert_eq!(
        (first.total, first.has_more, first.next_offset),
        (5, true, Some(2))
    );
    let last = index.search(&SearchQuery {
        limit: 2,
        offset: 4,
        ..qns("", "github")
    });
    assert_eq!(paths(&last), github_sorted[4..]);
    assert_eq!(
        (last.total, last.has_more, last.next_offset),
        (5, false, None)
    );
}

#[test]
fn query_without_tokens_matches_nothing() {
    let index = namespace_fixture();
    assert_eq!(index.search(&q("?!")), SearchPage::empty());
    assert_eq!(index.search(&qns("—", "github")), SearchPage::empty());
}

#[test]
fn page_serialises_like_the_wire_shape() {
    let index = namespace_fixture();
    let page = index.search(&SearchQuery {
        limit: 1,
        ..qns("", "github")
    });
    let json = serde_json::to_value(&page).expect("serialise");
    assert_eq!(
        json,
        serde_json::json!({
            "items": [{
                "path": "github.org.main.issues.list",
                "name": "issues.list",
                "description": "List repository issues",
                "integration": "github",
                "score": 0
            }],
            "total": 1, "hasMore": false, "nextOffset": null
        })
    );
    let bare = SearchIndex::new(vec![entry("k", "k.a", "a", "")]);
    let json = serde_json::to_value(bare.search(&q("a"))).expect("serialise");
    assert!(json["items"][0].get("description").is_none());
}

// ---------------------------------------------------------------------------------------------
// 5,000-tool catalog

const INTEGRATIONS: [(&str, &str); 10] = [
    ("github", "GitHub"),
    ("gitlab", "GitLab"),
    ("slack", "Slack"),
    ("stripe", "Stripe"),
    ("jira", "Jira"),
    ("linear", "Linear"),
    ("notion", "Notion"),
    ("google_calendar", "Google Calendar"),
    ("google_gmail", "Gmail"),
    ("salesforce", "Salesforce"),
];
const RESOURCES: [&str; 25] = [
    "repos",
    "issues",
    "pulls",
    "comments",
    "users",
    "teams",
    "projects",
    "webhooks",
    "releases",
    "branches",
    "commits",
    "labels",
    "milestones",
    "deployments",
    "secrets",
    "workflows",
    "packages",
    "gists",
    "checks",
    "invitations",
    "members",
    "reactions",
    "discussions",
    "artifacts",
    "charges",
];
const ACTIONS: [(&str, &str); 20] = [
    ("list", "List"),
    ("get", "Get a single"),
    ("create", "Create new"),
    ("update", "Update existing"),
    ("delete", "Permanently delete"),
    ("list_for_org", "List organization"),
    ("list_for_user", "List the authenticated user's"),
    ("list_for_repo", "List repository"),
    ("create_comment", "Add a comment on"),
    ("delete_comment", "Remove a comment from"),
    ("update_comment", "Edit a comment on"),
    ("list_comments", "List comments attached to"),
    ("search", "Search"),
    ("archive", "Archive"),
    ("restore", "Restore archived"),
    ("lock", "Lock conversation on"),
    ("unlock", "Unlock conversation on"),
    ("add_labels", "Add labels to"),
    ("remove_labels", "Remove labels from"),
    ("get_stats", "Get usage statistics for"),
];
const FILLER: [&str; 8] = [
    "Results are paginated and sorted by creation time.",
    "Requires a token with write scope.",
    "Returns the updated object on success.",
    "Supports filtering by state and owner.",
    "Rate limits apply to this endpoint.",
    "The response includes links to related resources.",
    "Use cursor parameters to fetch later pages.",
    "Fails when the caller lacks permission.",
];

fn catalog_entries() -> Vec<SearchEntry> {
    let mut seed: u64 = 0x5eed_cafe;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let mut out = Vec::with_capacity(5000);
    for (slug, display) in INTEGRATIONS {
        for resource in RESOURCES {
            for (action, verb) in ACTIONS {
                let filler = FILLER[next() % FILLER.len()];
                let extra = if next() % 2 == 0 {
                    FILLER[next() % FILLER.len()]
                } else {
                    ""
                };
                out.push(SearchEntry {
                    path: format!("{slug}.org.main.{resource}.{action}"),
                    name: format!("{resource}.{action}"),
                    description: format!("{verb} {resource} in {display}. {filler} {extra}")
                        .trim_end()
                        .to_owned(),
                    integration: slug.to_owned(),
                });
            }
        }
    }
    out
}

fn catalog() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    INDEX.get_or_init(|| SearchIndex::new(catalog_entries()))
}

#[test]
fn catalog_shape() {
    let index = catalog();
    assert_eq!(index.len(), 5000);
    assert!(!index.is_empty());
    for e in index.entries().iter().take(200) {
        let words = e.description.split_whitespace().count();
        assert!(
            (5..=25).contains(&words),
            "{words} words: {}",
            e.description
        );
    }
    let page = index.search(&qns("", "stripe"));
    assert_eq!(page.total, 500);
    assert_eq!(page.items[0].path, "stripe.org.main.artifacts.add_labels");
}

#[test]
fn catalog_known_top_results() {
    let index = catalog();
    let top = |query: &SearchQuery| index.search(query).items[0].path.clone();
    assert_eq!(
        top(&qns("repos list for org", "github")),
        "github.org.main.repos.list_for_org"
    );
    // without a namespace every integration's repos.list_for_org outranks everything else
    let page = index.search(&SearchQuery {
        limit: 10,
        ..q("repos list for org")
    });
    assert!(
        page.items.iter().all(|h| h.name == "repos.list_for_org"),
        "{:?}",
        paths(&page)
    );
    assert_eq!(
        top(&q("stripe.org.main.charges.create")),
        "stripe.org.main.charges.create"
    );
    assert_eq!(top(&q("slack issues lock")), "slack.org.main.issues.lock");
    assert!(top(&q("gmail")).starts_with("google_gmail.org.main."));
    assert!(top(&qns("charges", "stripe")).starts_with("stripe.org.main.charges."));

    let page = index.search(&qns("createComment", "jira"));
    // every create_comment, comments.create, and comments.add (a synonym of create)
    assert_eq!(page.total, 27);
    assert_eq!(page.items[0].path, "jira.org.main.comments.create_comment");
    assert!(
        page.items
            .iter()
            .all(|h| h.integration == "jira" && h.name.contains("comment")),
        "{:?}",
        paths(&page)
    );

    let page = index.search(&q("create comment"));
    assert!(
        page.items
            .iter()
            .all(|h| h.name == "comments.create_comment" || h.name == "comments.create"),
        "{:?}",
        paths(&page)
    );

    let page = index.search(&q("gmail"));
    assert!(page.items.iter().all(|h| h.integration == "google_gmail"));
    assert_eq!(page.total, 500);

    let page = index.search(&q("listForUser"));
    assert!(
        page.items
            .iter()
            .all(|h| h.name.ends_with(".list_for_user")),
        "{:?}",
        paths(&page)
    );

    let page = index.search(&q("zzzz nothing"));
    assert_eq!(page, SearchPage::empty());
}

#[test]
fn paging_is_consistent_and_complete() {
    let index = catalog();
    for (query, ns) in [
        ("list", None),
        ("comment", Some("github")),
        ("", Some("linear")),
    ] {
        let base = SearchQuery {
            namespace: ns.map(str::to_owned),
            ..q(query)
        };
        let all = index.search(&SearchQuery {
            limit: usize::MAX,
            ..base.clone()
        });
        assert!(!all.has_more && all.next_offset.is_none());
        assert_eq!(all.items.len(), all.total);
        assert!(all.total > 20, "{query:?} {}", all.total);

        let mut seen = Vec::new();
        let mut offset = 0;
        loop {
            let page = index.search(&SearchQuery {
                limit: 7,
                offset,
                ..base.clone()
            });
            assert_eq!(page.total, all.total);
            assert_eq!(page.has_more, page.next_offset.is_some());
            assert!(page.items.len() <= 7);
            seen.extend(page.items.iter().cloned());
            match page.next_offset {
                Some(next) => {
                    assert_eq!(next, offset + page.items.len());
                    assert_eq!(page.items.len(), 7);
                    offset = next;
                }
                None => break,
            }
        }
        assert_eq!(seen, all.items, "pages concatenate to the full ranking");
        let unique: HashSet<&str> = seen.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(unique.len(), seen.len(), "no duplicates");
        assert!(seen.windows(2).all(|w| w[0].score >= w[1].score));

        let beyond = index.search(&SearchQuery {
            offset: all.total + 3,
            ..base.clone()
        });
        assert!(beyond.items.is_empty());
        assert_eq!(
            (beyond.total, beyond.has_more, beyond.next_offset),
            (all.total, false, None)
        );
    }
}

#[test]
fn suggestions() {
    let index = catalog();
    // The tool whose name is all query comes first, then the other `create_comment`s.
    let found = suggest(index, "createComment", Some("github"), 3);
    assert_eq!(found[0], "github.org.main.comments.create_comment");
    assert!(
        found
            .iter()
            .all(|p| p.starts_with("github.org.main.") && p.contains("create")),
        "{found:?}"
    );
    let small = SearchIndex::new(vec![
        entry(
            "github",
            "github.org.main.issues.create",
            "issues.create",
            "Create an issue",
        ),
        entry(
            "github",
            "github.org.main.issues.list",
            "issues.list",
            "List issues",
        ),
        entry(
            "stripe",
            "stripe.org.main.charges.create",
            "charges.create",
            "Create a charge",
        ),
    ]);
    assert_eq!(
        suggest(&small, "createIssue", Some("github"), 5),
        vec!["github.org.main.issues.create"]
    );
    // nothing in the namespace → the whole catalog is searched
    assert_eq!(
        suggest(&small, "charges", Some("github"), 5),
        vec!["stripe.org.main.charges.create"]
    );
    assert_eq!(suggest(&small, "create", None, 1).len(), 1);
    assert!(suggest(&small, "nothing", Some("github"), 5).is_empty());
}

#[test]
fn latency_p50_on_5000_tools() {
    let index = catalog();
    let queries = [
        "list issues",
        "create comment",
        "repos",
        "github pulls",
        "delete webhook",
        "search users",
        "slack members list",
        "charges",
        "calendar events",
        "archive projects",
        "labels",
        "get stats",
        "lock",
        "stripe",
        "list for org",
        "updateComment",
        "workflows list_for_repo",
        "gmail messages",
        "restore",
        "add labels issues",
    ];
    let namespaces = [None, None, None, Some("github"), Some("google")];
    let mut samples = Vec::with_capacity(200);
    let mut hits = 0usize;
    for i in 0..200 {
        let query = SearchQuery {
            namespace: namespaces[i % namespaces.len()].map(str::to_owned),
            ..q(queries[i % queries.len()])
        };
        let started = Instant::now();
        let page = index.search(&query);
        samples.push(started.elapsed());
        hits += page.items.len();
    }
    assert!(hits > 0);
    samples.sort_unstable();
    let p50 = samples[samples.len() / 2];
    let p90 = samples[samples.len() * 9 / 10];
    let mode = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("search latency over 5000 tools ({mode}): p50 {p50:?}, p90 {p90:?}");
    let bound = if cfg!(debug_assertions) { 50 } else { 10 };
    assert!(p50 < Duration::from_millis(bound), "p50 {p50:?}");

    let started = Instant::now();
    let rebuilt = SearchIndex::new(catalog_entries());
    println!(
        "index build for {} tools ({mode}): {:?}",
        rebuilt.len(),
        started.elapsed()
    );
}
