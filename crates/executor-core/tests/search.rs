//! Tests of ranked tool search (spec §4.4): normalisation, scoring rules, namespace filtering,
//! enumeration, paging, a 5,000-tool catalog and its latency.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use executor_core::search::{
    DEFAULT_SEARCH_LIMIT, SearchEntry, SearchIndex, SearchPage, SearchQuery, compare_paths,
    normalize, normalize_text, suggest,
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
// Scoring rules (exact score values pin the formula of spec §4.4)

#[test]
fn exact_name_beats_prefix_beats_substring() {
    let index = SearchIndex::new(vec![
        entry("acme", "acme.org.main.reissues", "reissues", ""),
        entry("acme", "acme.org.main.issues_list", "issues_list", ""),
        entry("acme", "acme.org.main.issues", "issues", ""),
    ]);
    // exact:  path phrase 6·12 + token 4·12, name phrase 14·10 + token 4·10, +25 coverage,
    //         +8 first name token, +20 name equals query                         = 353
    // prefix: path 72 + 48, name phrase prefix 9·10 + token 40, +25, +8          = 283
    // substr: path phrase 72 + substring 12, name phrase 60 + substring 10, +25  = 179
    assert_eq!(
        scores(&index, &q("issues")),
        vec![
            ("acme.org.main.issues".to_owned(), 353),
            ("acme.org.main.issues_list".to_owned(), 283),
            ("acme.org.main.reissues".to_owned(), 179),
        ]
    );
}

#[test]
fn path_hit_outranks_description_only_hit() {
    let index = SearchIndex::new(vec![
        entry(
            "svc",
            "svc.org.main.things.fetch",
            "fetch",
            "Returns widgets owned by the user",
        ),
        entry("svc", "svc.org.main.widgets.get", "get", "Fetch one record"),
    ]);
    // path: phrase 6·12 + token 4·12 + 25 = 145; description: 6·5 + 4·5 + 25 = 75
    assert_eq!(
        scores(&index, &q("widgets")),
        vec![
            ("svc.org.main.widgets.get".to_owned(), 145),
            ("svc.org.main.things.fetch".to_owned(), 75),
        ]
    );
}

#[test]
fn field_weights_order_path_name_integration_description() {
    // The same token hits one field per entry the same way (phrase contained 6w + exact token 4w,
    // +25 coverage): path 12 > name 10 > integration 8 > description 5.
    let index = SearchIndex::new(vec![
        entry("zz", "zz.d", "n4", "has zeta"),
        entry("my_zeta", "zz.c", "n3", ""),
        entry("zz", "zz.b", "get zeta", ""),
        entry("zz", "zz.zeta.a", "n1", ""),
    ]);
    assert_eq!(
        scores(&index, &q("zeta")),
        vec![
            ("zz.zeta.a".to_owned(), 10 * 12 + 25),
            ("zz.b".to_owned(), 10 * 10 + 25),
            ("zz.c".to_owned(), 10 * 8 + 25),
            ("zz.d".to_owned(), 10 * 5 + 25),
        ]
    );
}

#[test]
fn two_token_query_requires_every_token() {
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
        ("widgets fetch", &["acme.org.main.widgets.get"]),
        // "get" is a substring of "widget", so both entries match
        (
            "widgets get",
            &["acme.org.main.widgets.get", "acme.org.main.widgets.delete"],
        ),
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
fn longer_queries_need_sixty_percent_and_coverage_bonus() {
    let index = SearchIndex::new(vec![
        entry("k", "k.e1", "e1", "alpha only"),
        entry("k", "k.e2", "e2", "alpha and beta"),
        entry("k", "k.e3", "e3", "gamma words alpha more beta"),
    ]);
    // 3 tokens: 2/3 ≥ 60 % → accepted with round(6.67) = 7; 3/3 → +25; 1/3 rejected.
    assert_eq!(
        scores(&index, &q("alpha beta gamma")),
        vec![
            ("k.e3".to_owned(), 3 * 20 + 25),
            ("k.e2".to_owned(), 2 * 20 + 7)
        ]
    );
    // 5 tokens: 3/5 = 60 % accepted (+6), 2/5 rejected.
    assert_eq!(
        scores(&index, &q("alpha beta gamma delta epsilon")),
        vec![("k.e3".to_owned(), 3 * 20 + 6)]
    );
    // 4 tokens: 3/4 = 75 % accepted (+8, round half up), 2/4 rejected.
    assert_eq!(
        scores(&index, &q("alpha beta gamma delta")),
        vec![("k.e3".to_owned(), 3 * 20 + 8)]
    );
}

#[test]
fn phrase_match_overrides_coverage_rule() {
    // Coverage divides distinct matched tokens by all query tokens (as the original does), so a
    // repeated token can never reach full coverage; only the phrase exception admits it.
    let index = SearchIndex::new(vec![
        entry("k", "k.p1", "p1", "a list list view"),
        entry("k", "k.p2", "p2", "a list view"),
    ]);
    // description phrase 6·5 + two exact token hits 2·4·5, coverage 1/2 → round(5)
    assert_eq!(
        scores(&index, &q("list list")),
        vec![("k.p1".to_owned(), 30 + 40 + 5)]
    );
}

#[test]
fn first_token_bonus() {
    let index = SearchIndex::new(vec![
        entry("z", "z.t2", "gamma beta alpha", ""),
        entry("z", "z.t1", "alpha gamma beta", ""),
        entry("q", "alpha.t3", "gamma beta alpha", ""),
    ]);
    assert_eq!(
        scores(&index, &q("alpha beta")),
        vec![
            // path token 4·12 + name tokens 2·4·10 + 25 + 8 (first path token)
            ("alpha.t3".to_owned(), 48 + 80 + 25 + 8),
            // name tokens + 25 + 8 (first name token)
            ("z.t1".to_owned(), 80 + 25 + 8),
            ("z.t2".to_owned(), 80 + 25),
        ]
    );
}

#[test]
fn exact_path_or_name_bonus_and_ties_sort_by_path() {
    let index = SearchIndex::new(vec![
        entry("m", "m.b.send", "send", ""),
        entry("m", "m.a.send", "send", ""),
        entry("m", "m.c.sendMail", "sendMail", ""),
    ]);
    let page = index.search(&q("send"));
    assert_eq!(paths(&page), vec!["m.a.send", "m.b.send", "m.c.sendMail"]);
    assert_eq!(page.items[0].score, page.items[1].score);
    // path contains 6·12 + 4·12; name equal 14·10 + 4·10; +25 +8 +20
    assert_eq!(page.items[0].score, 72 + 48 + 140 + 40 + 25 + 8 + 20);
    assert!(page.items[2].score < page.items[1].score);
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
    assert_eq!(
        top(&q("gmail")),
        "google_gmail.org.main.artifacts.add_labels"
    );
    assert_eq!(
        top(&qns("charges", "stripe")),
        "stripe.org.main.charges.add_labels"
    );

    let page = index.search(&qns("createComment", "jira"));
    // one create_comment per resource, plus comments.create (both tokens, no phrase)
    assert_eq!(page.total, 26);
    let all = index.search(&SearchQuery {
        limit: 26,
        ..qns("createComment", "jira")
    });
    assert_eq!(all.items[25].path, "jira.org.main.comments.create");
    assert!(
        page.items
            .iter()
            .all(|h| h.integration == "jira" && h.name.ends_with(".create_comment"))
    );

    let page = index.search(&q("create comment"));
    assert!(
        page.items
            .iter()
            .all(|h| h.name.ends_with(".create_comment")),
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
    assert_eq!(
        suggest(index, "createComment", Some("github"), 3),
        vec![
            "github.org.main.artifacts.create_comment",
            "github.org.main.branches.create_comment",
            "github.org.main.charges.create_comment",
        ]
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

// ---------------------------------------------------------------------------------------------
// Cross-check against a direct transcription of the spec (no index, no pruning)

fn reference_search(
    entries: &[SearchEntry],
    query: &str,
    namespace: Option<&str>,
) -> Vec<(String, i64)> {
    let query_raw = normalize_text(query);
    let tokens = normalize(query);
    if query_raw.is_empty() || tokens.is_empty() {
        return Vec::new();
    }
    let ns_tokens = namespace.map(normalize).unwrap_or_default();
    let mut out: Vec<(String, i64)> = Vec::new();
    for e in entries {
        if !ns_tokens.is_empty()
            && !normalize(&e.integration).starts_with(&ns_tokens)
            && !normalize(&e.path).starts_with(&ns_tokens)
        {
            continue;
        }
        let fields = [
            (&e.path, 12),
            (&e.integration, 8),
            (&e.name, 10),
            (&e.description, 5),
        ];
        let mut score = 0i64;
        let mut phrase = false;
        let mut matched: HashSet<&str> = HashSet::new();
        for (text, w) in fields {
            let raw = normalize_text(text);
            if raw.is_empty() {
                continue;
            }
            let field_tokens = normalize(text);
            if raw == query_raw {
                score += 14 * w;
            } else if raw.starts_with(&query_raw) {
                score += 9 * w;
            } else if raw.contains(&query_raw) {
                score += 6 * w;
            }
            phrase |= raw.contains(&query_raw);
            for t in &tokens {
                if field_tokens.iter().any(|f| f == t) {
                    score += 4 * w;
                } else if field_tokens
                    .iter()
                    .any(|f| f.starts_with(t.as_str()) || t.starts_with(f.as_str()))
                {
                    score += 2 * w;
                } else if raw.contains(t.as_str()) {
                    score += w;
                } else {
                    continue;
                }
                matched.insert(t);
            }
        }
        if matched.is_empty() {
            continue;
        }
        let coverage = matched.len() as f64 / tokens.len() as f64;
        let minimum = if tokens.len() <= 2 { 1.0 } else { 0.6 };
        if coverage < minimum && !phrase {
            continue;
        }
        score += if coverage == 1.0 {
            25
        } else {
            (coverage * 10.0).round() as i64
        };
        if normalize(&e.path).first() == Some(&tokens[0])
            || normalize(&e.name).first() == Some(&tokens[0])
        {
            score += 8;
        }
        if normalize_text(&e.path) == query_raw || normalize_text(&e.name) == query_raw {
            score += 20;
        }
        out.push((e.path.clone(), score));
    }
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| compare_paths(&a.0, &b.0)));
    out
}

#[test]
fn index_matches_reference_scoring() {
    let mut entries = catalog_entries();
    entries.truncate(1500);
    entries.extend([
        entry(
            "acme",
            "acme.org.main.reissues",
            "reissues",
            "Re-issue an invoice",
        ),
        entry(
            "acme_tools",
            "acme_tools.org.main.listForOrg",
            "listForOrg",
            "List list things",
        ),
        entry("acme", "acme.org.main.empty", "", ""),
        entry(
            "acme",
            "acme.org.main.café",
            "café",
            "Crème brûlée — déjà vu, 2x",
        ),
    ]);
    let index = SearchIndex::new(entries.clone());
    let queries = [
        "issues",
        "list issues",
        "create comment repos",
        "iss",
        "reissue",
        "for",
        "list list",
        "list for org",
        "listForOrg",
        "acme",
        "github pulls lock",
        "org main",
        "a",
        "2",
        "comments create update delete",
        "déjà vu",
        "café",
        "re issue invoice",
        "x y z w",
        "github.org.main.repos.get",
        "search users in github",
        "labels add remove",
        "e",
    ];
    let namespaces = [
        None,
        Some("github"),
        Some("acme"),
        Some("acme.tools"),
        Some("git"),
    ];
    let mut non_empty = 0;
    for query in queries {
        for ns in namespaces {
            let expected = reference_search(&entries, query, ns);
            non_empty += usize::from(!expected.is_empty());
            let got = scores(
                &index,
                &SearchQuery {
                    limit: usize::MAX,
                    namespace: ns.map(str::to_owned),
                    ..q(query)
                },
            );
            assert_eq!(got, expected, "query {query:?} ns {ns:?}");
        }
    }
    assert!(non_empty > 50, "only {non_empty} non-empty comparisons");
}
