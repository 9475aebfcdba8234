//! Tests of tool policies (spec §1.6): pattern grammar and its error messages, matching,
//! specificity, resolution across owners, ordering, default placement and position keys.

use executor_core::Owner;
use executor_core::policy::{
    Decision, NotGranted, PatternError, PolicyAction, PolicyAuthor, PolicyPattern, PolicyRule,
    PolicySet, PositionError, ToolkitGrant, count_matches, default_position, key_between,
    policy_id, validate_position,
};
use proptest::prelude::*;

use PolicyAction::{Approve, Block, RequireApproval};

fn pat(raw: &str) -> PolicyPattern {
    PolicyPattern::parse(raw).unwrap_or_else(|e| panic!("{raw:?} should parse: {e}"))
}

fn rule(id: &str, owner: Owner, pattern: &str, action: PolicyAction, position: &str) -> PolicyRule {
    PolicyRule {
        id: id.to_owned(),
        owner,
        pattern: pat(pattern),
        action,
        position: position.to_owned(),
        author: PolicyAuthor::Person,
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// `Ok(specificity)` for a valid pattern, `Err(message)` for an invalid one.
fn check_parse(raw: &str, expected: Result<u32, &str>) {
    let got = PolicyPattern::parse(raw)
        .map(|p| {
            assert_eq!(p.as_str(), raw);
            p.specificity()
        })
        .map_err(|e| e.to_string());
    assert_eq!(got, expected.map_err(str::to_owned), "parsing {raw:?}");
}

#[test]
fn parses_valid_patterns_with_their_specificity() {
    let table: &[(&str, u32)] = &[
        ("*", 0),
        ("github.*", 2),
        ("vercel.dns.*", 4),
        ("github.org.main.*", 6),
        ("vercel.dns", 5),
        ("vercel.dns.create", 7),
        ("github.org.main.create_issue", 9),
        ("gql.org.main.query.hello", 11),
        // Non-trailing wildcards are not literal segments.
        ("vercel.*.*.dns.create", 7),
        ("vercel.*.*.dns.*", 4),
        ("github.*.*", 2),
        ("github.*.main.*", 4),
        ("executor.coreTools.policies.create", 9),
        ("a", 3),
        ("my-integration.user.work_2.tool", 9),
    ];
    for &(raw, specificity) in table {
        check_parse(raw, Ok(specificity));
    }
}

#[test]
fn rejects_invalid_patterns_with_a_precise_message() {
    let table: &[(&str, &str)] = &[
        ("", "the pattern is empty; use \"*\" to match every tool"),
        (
            ".github",
            "the pattern starts with '.'; start with the integration, e.g. \"github.*\" or \"github.*.*.create_issue\"",
        ),
        (
            ".",
            "the pattern starts with '.'; start with the integration, e.g. \"github.*\" or \"github.*.*.create_issue\"",
        ),
        (
            "github.",
            "the pattern ends with '.'; end with a segment name, or with \".*\" to match everything below the prefix",
        ),
        (
            "github..main",
            "segment 2 is empty (\"..\"); segments are separated by a single '.'",
        ),
        (
            "github.org..main.x",
            "segment 3 is empty (\"..\"); segments are separated by a single '.'",
        ),
        (
            "github.me*",
            "segment 2 (\"me*\") mixes letters with '*'; a wildcard must be a whole segment (\"*\")",
        ),
        (
            "github.org.*main.x",
            "segment 3 (\"*main\") mixes letters with '*'; a wildcard must be a whole segment (\"*\")",
        ),
        (
            "git*",
            "segment 1 (\"git*\") mixes letters with '*'; a wildcard must be a whole segment (\"*\")",
        ),
        (
            "github.**",
            "segment 2 is \"**\"; write a single \"*\" (a trailing \"*\" already matches everything deeper)",
        ),
        (
            "**",
            "segment 1 is \"**\"; write a single \"*\" (a trailing \"*\" already matches everything deeper)",
        ),
        (
            "*.github",
            "the pattern starts with \"*\"; only \"*\" on its own may (it matches every tool); start with the integration, e.g. \"github.*\"",
        ),
        (
            "*.*",
            "the pattern starts with \"*\"; only \"*\" on its own may (it matches every tool); start with the integration, e.g. \"github.*\"",
        ),
        (
            "github. org.*",
            "segment 2 (\" org\") contains ' '; tool ids never contain whitespace or control characters",
        ),
        (
            "github.*\n",
            "segment 2 (\"*\\n\") contains '\\n'; tool ids never contain whitespace or control characters",
        ),
    ];
    for &(raw, message) in table {
        check_parse(raw, Err(message));
    }
}

#[test]
fn errors_are_structured() {
    assert_eq!(PolicyPattern::parse(""), Err(PatternError::Empty));
    assert_eq!(
        PolicyPattern::parse("a..b"),
        Err(PatternError::EmptySegment { position: 2 })
    );
    assert_eq!(
        PolicyPattern::parse("a.me*"),
        Err(PatternError::PartialWildcard {
            position: 2,
            segment: "me*".into()
        })
    );
    assert_eq!(
        PolicyPattern::parse("*.a"),
        Err(PatternError::LeadingWildcard)
    );
    let long = "a".repeat(1025);
    assert_eq!(
        PolicyPattern::parse(&long),
        Err(PatternError::TooLong {
            len: 1025,
            max: 1024
        })
    );
}

#[test]
fn patterns_and_actions_round_trip_through_strings_and_json() {
    for action in PolicyAction::ALL {
        assert_eq!(action.as_str().parse::<PolicyAction>(), Ok(action));
        assert_eq!(
            serde_json::to_string(&action).unwrap(),
            format!("\"{}\"", action.as_str())
        );
    }
    assert_eq!(
        "requireApproval"
            .parse::<PolicyAction>()
            .unwrap_err()
            .to_string(),
        "policy action must be \"approve\", \"require_approval\" or \"block\", got \"requireApproval\""
    );
    assert!(Approve < RequireApproval && RequireApproval < Block);

    let p: PolicyPattern = serde_json::from_str("\"github.*.*.create_issue\"").unwrap();
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        "\"github.*.*.create_issue\""
    );
    let err = serde_json::from_str::<PolicyPattern>("\"github.me*\"").unwrap_err();
    assert!(err.to_string().contains("mixes letters with '*'"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------------

fn check_match(pattern: &str, tool_id: &str, expected: bool) {
    assert_eq!(
        pat(pattern).matches(tool_id),
        expected,
        "{pattern:?} vs {tool_id:?}"
    );
}

#[test]
fn matching_table() {
    let table: &[(&str, &str, bool)] = &[
        // Universal.
        ("*", "github.org.main.create_issue", true),
        ("*", "executor.coreTools.policies.create", true),
        ("*", "x", true),
        // Trailing `*`: prefix plus anything deeper, or nothing more.
        ("github.*", "github.org.main.x", true),
        ("github.*", "github.org", true),
        ("github.*", "github", true),
        ("github.*", "githubx.org.main.x", false),
        ("github.*", "gitlab.org.main.x", false),
        ("github.org.main.*", "github.org.main.create_issue", true),
        ("github.org.main.*", "github.org.main.issues.create", true),
        ("github.org.main.*", "github.org.main", true),
        ("github.org.main.*", "github.org.work.create_issue", false),
        ("github.org.main.*", "github.org", false),
        ("github.org.main.*", "github.user.main.create_issue", false),
        // Non-trailing `*`: exactly one segment.
        ("vercel.*.*.dns.create", "vercel.org.main.dns.create", true),
        ("vercel.*.*.dns.create", "vercel.user.work.dns.create", true),
        ("vercel.*.*.dns.create", "vercel.org.dns.create", false),
        (
            "vercel.*.*.dns.create",
            "vercel.org.main.extra.dns.create",
            false,
        ),
        (
            "vercel.*.*.dns.create",
            "vercel.org.main.dns.create.now",
            false,
        ),
        ("vercel.*.*.dns.create", "vercel.org.main.dns.delete", false),
        ("github.*.*", "github.org", true),
        ("github.*.*", "github.org.main.x", true),
        ("github.*.*", "github", false),
        ("github.*.main.*", "github.user.main.create_issue", true),
        ("github.*.main.*", "github.user.work.create_issue", false),
        // Dotted tool names (the tool part of a dynamic id may contain dots).
        ("gql.org.main.query.hello", "gql.org.main.query.hello", true),
        ("gql.org.main.query.*", "gql.org.main.query.hello", true),
        ("gql.org.main.query.*", "gql.org.main.mutation.hello", false),
        ("gql.*.*.query.hello", "gql.org.main.query.hello", true),
        ("gql.org.main.query", "gql.org.main.query.hello", false),
        // Exact patterns need equal segment counts.
        (
            "github.org.main.create_issue",
            "github.org.main.create_issue",
            true,
        ),
        (
            "github.org.main.create_issue",
            "github.org.main.create_issue.v2",
            false,
        ),
        ("github.org.main.create_issue", "github.org.main", false),
        ("vercel.dns", "vercel.dns.create", false),
        // Literal comparison is exact (case-sensitive, no prefix match within a segment).
        (
            "github.org.main.Create_issue",
            "github.org.main.create_issue",
            false,
        ),
        (
            "github.org.main.create",
            "github.org.main.create_issue",
            false,
        ),
        // Static tools are matched by their fqid.
        (
            "executor.coreTools.policies.create",
            "executor.coreTools.policies.create",
            true,
        ),
        (
            "executor.coreTools.*",
            "executor.coreTools.policies.create",
            true,
        ),
        (
            "executor.*.policies.*",
            "executor.coreTools.policies.remove",
            true,
        ),
    ];
    for &(pattern, tool_id, expected) in table {
        check_match(pattern, tool_id, expected);
    }
}

/// Ecosystem issue #2047: rules written as `integration.connection.tool` silently matched
/// nothing. The pattern is valid, but `count_matches` reports 0 against real ids.
#[test]
fn ownerless_rule_is_reported_as_matching_nothing() {
    let tool_ids = [
        "github.org.main.create_issue",
        "github.user.main.create_issue",
        "github.org.main.list_issues",
        "slack.org.work.post_message",
    ];
    let dead = pat("github.main.create_issue");
    assert_eq!(count_matches(&dead, tool_ids), 0);
    assert_eq!(
        count_matches(&pat("github.*.main.create_issue"), tool_ids),
        2
    );
    assert_eq!(count_matches(&pat("github.org.main.*"), tool_ids), 2);
    assert_eq!(count_matches(&pat("*"), tool_ids), 4);

    // And the corrected rule really blocks.
    let set = PolicySet::new(vec![rule(
        "pol_1",
        Owner::Org,
        "github.*.main.create_issue",
        Block,
        "a0",
    )]);
    assert_eq!(
        set.resolve("github.user.main.create_issue", false).action(),
        Block
    );
    assert_eq!(
        set.resolve("github.org.main.list_issues", false).action(),
        Approve
    );
}

// ---------------------------------------------------------------------------------------------
// Ordering and resolution
// ---------------------------------------------------------------------------------------------

#[test]
fn rules_are_listed_user_first_then_org_by_position_then_id() {
    let set = PolicySet::new(vec![
        rule("o2", Owner::Org, "*", Approve, "a1"),
        rule("u3", Owner::User, "*", Approve, "a0V"),
        rule("o1", Owner::Org, "*", Approve, "a0"),
        rule("u2", Owner::User, "*", Approve, "a0"),
        rule("u1", Owner::User, "*", Approve, "a0"),
        rule("u0", Owner::User, "*", Approve, "Zz"),
        rule("o0", Owner::Org, "*", Approve, "a1"),
    ]);
    let ids: Vec<&str> = set.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["u0", "u1", "u2", "u3", "o1", "o0", "o2"]);
    assert_eq!(set.rules_of(Owner::User).len(), 4);
    assert_eq!(set.rules_of(Owner::Org)[0].id, "o1");
    assert_eq!(set.len(), 7);
    assert!(PolicySet::new(Vec::new()).is_empty());
}

/// A tool id, whether the plugin default requires approval, and the expected outcome.
type ResolveCase = (&'static str, bool, Expected);

/// Expected outcome of a resolution: the action and the deciding rule (None = plugin default).
type Expected = (PolicyAction, Option<&'static str>);

/// Resolves `tool_id` and compares the action and the deciding rule.
fn check_resolve(
    set: &PolicySet,
    tool_id: &str,
    default_requires_approval: bool,
    expected: (PolicyAction, Option<&str>),
) {
    let decision = set.resolve(tool_id, default_requires_approval);
    assert_eq!(
        (decision.action(), decision.rule_id()),
        expected,
        "{tool_id} (plugin default requires approval: {default_requires_approval}) → {decision:?}"
    );
}

#[test]
fn resolution_table() {
    let set = PolicySet::new(vec![
        // Org: a block on one tool, require_approval on GitHub, approve on everything else.
        rule(
            "org_block",
            Owner::Org,
            "github.*.*.delete_repo",
            Block,
            "a0",
        ),
        rule("org_gh", Owner::Org, "github.*", RequireApproval, "a1"),
        rule("org_all", Owner::Org, "*", Approve, "a2"),
        // User: approves all of GitHub (cannot loosen the org), blocks slack posting,
        // requires approval for one vercel tool; a later, broader user rule never wins over an
        // earlier one.
        rule("user_gh", Owner::User, "github.*", Approve, "a0"),
        rule(
            "user_slack",
            Owner::User,
            "slack.*.*.post_message",
            Block,
            "a1",
        ),
        rule(
            "user_vercel",
            Owner::User,
            "vercel.*.*.dns.create",
            RequireApproval,
            "a2",
        ),
        rule("user_vercel_all", Owner::User, "vercel.*", Block, "a3"),
    ]);
    let table: &[ResolveCase] = &[
        // User approve never loosens an org block or require_approval.
        (
            "github.org.main.delete_repo",
            false,
            (Block, Some("org_block")),
        ),
        (
            "github.user.me.delete_repo",
            false,
            (Block, Some("org_block")),
        ),
        (
            "github.org.main.create_issue",
            false,
            (RequireApproval, Some("org_gh")),
        ),
        // A user rule can tighten an org approve.
        (
            "slack.org.work.post_message",
            false,
            (Block, Some("user_slack")),
        ),
        // First match per owner: user_vercel (require_approval) shadows user_vercel_all (block).
        (
            "vercel.org.main.dns.create",
            false,
            (RequireApproval, Some("user_vercel")),
        ),
        (
            "vercel.org.main.dns.delete",
            false,
            (Block, Some("user_vercel_all")),
        ),
        // Only the org's catch-all matches: approve, even when the plugin would require approval.
        (
            "linear.org.main.create_issue",
            true,
            (Approve, Some("org_all")),
        ),
    ];
    for &(tool_id, default, expected) in table {
        check_resolve(&set, tool_id, default, expected);
    }
}

#[test]
fn plugin_default_applies_only_when_nothing_matches() {
    let set = PolicySet::new(vec![
        rule("u", Owner::User, "github.*", Approve, "a0"),
        rule("o", Owner::Org, "slack.*", Block, "a0"),
    ]);
    let table: &[ResolveCase] = &[
        ("linear.org.main.x", false, (Approve, None)),
        ("linear.org.main.x", true, (RequireApproval, None)),
        // A matching `approve` rule overrides a plugin default of require_approval.
        ("github.org.main.x", true, (Approve, Some("u"))),
        ("slack.org.main.x", false, (Block, Some("o"))),
    ];
    for &(tool_id, default, expected) in table {
        check_resolve(&set, tool_id, default, expected);
    }
    let empty = PolicySet::new(Vec::new());
    check_resolve(&empty, "a.org.b.c", true, (RequireApproval, None));
    check_resolve(&empty, "a.org.b.c", false, (Approve, None));

    let decision = empty.resolve("a.org.b.c", true);
    assert_eq!(
        decision,
        Decision::PluginDefault {
            action: RequireApproval
        }
    );
    assert_eq!(decision.source(), "plugin-default");
    assert_eq!(decision.pattern(), None);
}

fn agent_rule(
    id: &str,
    owner: Owner,
    pattern: &str,
    action: PolicyAction,
    position: &str,
) -> PolicyRule {
    PolicyRule {
        author: PolicyAuthor::Agent,
        ..rule(id, owner, pattern, action, position)
    }
}

/// Issue #17 (5): an agent's `*` → approve at position 0 had lifted a person's block.
#[test]
fn an_agent_rule_never_loosens_a_persons_block() {
    let set = PolicySet::new(vec![
        agent_rule("agent_tight", Owner::Org, "linear.*", Block, "0"),
        agent_rule("agent_all", Owner::Org, "*", Approve, "1"),
        agent_rule("agent_user", Owner::User, "github.*", Approve, "0"),
        rule(
            "person_ok",
            Owner::Org,
            "github.org.main.read",
            Approve,
            "a0",
        ),
        rule("person_block", Owner::Org, "github.*", Block, "a1"),
        rule("person_ask", Owner::Org, "slack.*", RequireApproval, "a2"),
    ]);
    let table: &[ResolveCase] = &[
        // The person's block stands, whichever owner's agent rule comes first.
        (
            "github.org.main.write",
            false,
            (Block, Some("person_block")),
        ),
        // The person's own exception above their block still holds.
        ("github.org.main.read", false, (Approve, Some("agent_user"))),
        // Agents may tighten.
        ("linear.org.main.x", false, (Block, Some("agent_tight"))),
        // Only blocks are protected: other decisions follow the usual order.
        ("slack.org.main.x", true, (Approve, Some("agent_all"))),
        ("notion.org.main.x", true, (Approve, Some("agent_all"))),
    ];
    for &(tool_id, default, expected) in table {
        check_resolve(&set, tool_id, default, expected);
    }
    assert_eq!(
        set.resolve_people("github.org.main.read", false).rule_id(),
        Some("person_ok")
    );
    assert_eq!(
        set.resolve_people("notion.org.main.x", true),
        Decision::PluginDefault {
            action: RequireApproval
        }
    );
    // The same rules written by a person resolve by position alone.
    let people = PolicySet::new(vec![
        rule("all", Owner::Org, "*", Approve, "0"),
        rule("person_block", Owner::Org, "github.*", Block, "a1"),
    ]);
    check_resolve(
        &people,
        "github.org.main.write",
        false,
        (Approve, Some("all")),
    );
}

#[test]
fn decision_names_the_rule_and_owner() {
    let set = PolicySet::new(vec![
        rule("u", Owner::User, "github.*", Block, "a0"),
        rule("o", Owner::Org, "github.org.main.*", Block, "a0"),
    ]);
    // Equally restrictive: the user's rule, listed first, is reported.
    let decision = set.resolve("github.org.main.x", false);
    assert_eq!(
        decision,
        Decision::Rule {
            action: Block,
            rule_id: "u".into(),
            pattern: "github.*".into(),
            owner: Owner::User,
            author: PolicyAuthor::Person,
        }
    );
    assert_eq!(decision.source(), "user");
    assert_eq!(decision.pattern(), Some("github.*"));
}

#[test]
fn position_then_id_decides_which_rule_of_an_owner_comes_first() {
    let set = PolicySet::new(vec![
        rule("b", Owner::Org, "github.*", Block, "a0"),
        rule("a", Owner::Org, "github.*", Approve, "a0"),
        rule("c", Owner::Org, "github.*", RequireApproval, "Zz"),
    ]);
    check_resolve(
        &set,
        "github.org.main.x",
        false,
        (RequireApproval, Some("c")),
    );
    let set = PolicySet::new(vec![
        rule("b", Owner::Org, "github.*", Block, "a0"),
        rule("a", Owner::Org, "github.*", Approve, "a0"),
    ]);
    check_resolve(&set, "github.org.main.x", false, (Approve, Some("a")));
    assert_eq!(
        set.first_match(Owner::Org, "github.x")
            .map(|r| r.id.as_str()),
        Some("a")
    );
    assert_eq!(set.first_match(Owner::User, "github.x"), None);
}

#[test]
fn a_large_catalog_resolves_against_one_snapshot() {
    let mut rules = Vec::new();
    for i in 0..100 {
        let position =
            key_between(None, rules.last().map(|r: &PolicyRule| r.position.as_str())).unwrap();
        rules.push(rule(
            &format!("pol_{i}"),
            if i % 2 == 0 { Owner::Org } else { Owner::User },
            &format!("int{i}.*.*.tool{i}"),
            Block,
            &position,
        ));
    }
    let set = PolicySet::new(rules);
    let tool_ids: Vec<String> = (0..5000)
        .map(|i| format!("int{}.org.main.tool{}", i % 250, i % 250))
        .collect();
    let blocked = tool_ids
        .iter()
        .filter(|id| set.resolve(id, false).action() == Block)
        .count();
    assert_eq!(blocked, 2000);
}

// ---------------------------------------------------------------------------------------------
// Default placement
// ---------------------------------------------------------------------------------------------

fn ordered_ids_after_insert(existing: &[PolicyRule], owner: Owner, pattern: &str) -> Vec<String> {
    let position = default_position(existing, owner, &pat(pattern));
    let mut all = existing.to_vec();
    all.push(rule("NEW", owner, pattern, Block, &position));
    PolicySet::new(all)
        .rules_of(owner)
        .iter()
        .map(|r| r.id.clone())
        .collect()
}

#[test]
fn default_position_places_new_rules_below_more_specific_ones() {
    // Ordered by decreasing specificity, as default placement keeps it.
    let existing = vec![
        rule(
            "leaf",
            Owner::User,
            "github.org.main.create_issue",
            Approve,
            "a0",
        ), // 9
        rule("conn", Owner::User, "github.org.main.*", Approve, "a1"), // 6
        rule(
            "any_conn",
            Owner::User,
            "github.*.*.create_issue",
            Approve,
            "a2",
        ), // 5
        rule("gh", Owner::User, "github.*", Approve, "a3"),            // 2
        rule("all", Owner::User, "*", Approve, "a4"),                  // 0
        // Another owner's rules are ignored.
        rule("org_top", Owner::Org, "slack.*", Block, "a0V"),
    ];
    let table: &[(&str, &[&str])] = &[
        (
            "a.b.c.d.e",
            &["NEW", "leaf", "conn", "any_conn", "gh", "all"],
        ),
        // Equally specific existing rules stay below the new one.
        (
            "github.org.main.create_issue",
            &["NEW", "leaf", "conn", "any_conn", "gh", "all"],
        ),
        (
            "github.org.main",
            &["leaf", "NEW", "conn", "any_conn", "gh", "all"],
        ),
        (
            "github.*.*.list_issues",
            &["leaf", "conn", "NEW", "any_conn", "gh", "all"],
        ),
        (
            "github.org.*",
            &["leaf", "conn", "any_conn", "NEW", "gh", "all"],
        ),
        ("slack.*", &["leaf", "conn", "any_conn", "NEW", "gh", "all"]),
        ("*", &["leaf", "conn", "any_conn", "gh", "NEW", "all"]),
    ];
    for &(pattern, expected) in table {
        assert_eq!(
            ordered_ids_after_insert(&existing, Owner::User, pattern),
            expected,
            "inserting {pattern}"
        );
    }
    // Exact keys: between the neighbours, in the fractional-indexing format.
    assert_eq!(
        default_position(&existing, Owner::User, &pat("github.org.*")),
        "a2V"
    );
    assert_eq!(
        default_position(&existing, Owner::User, &pat("a.b.c.d.e")),
        "Zz"
    );
    assert_eq!(default_position(&existing, Owner::Org, &pat("*")), "a1");
    assert_eq!(default_position(&[], Owner::Org, &pat("*")), "a0");
}

#[test]
fn default_position_never_shadows_a_more_specific_rule_after_a_reorder() {
    // The user moved a broad rule above a leaf; a new broad rule still goes below the leaf.
    let existing = vec![
        rule("broad", Owner::Org, "slack.*", Block, "a0"),
        rule(
            "leaf",
            Owner::Org,
            "github.org.main.create_issue",
            Approve,
            "a1",
        ),
        rule("all", Owner::Org, "*", Approve, "a2"),
    ];
    assert_eq!(
        ordered_ids_after_insert(&existing, Owner::Org, "github.*"),
        ["broad", "leaf", "NEW", "all"]
    );
    // After a manual reorder a 5 sits above a 6; a new 5 goes below the 6, never above it.
    let reordered = vec![
        rule(
            "leaf",
            Owner::User,
            "github.*.*.create_issue",
            Approve,
            "a0",
        ),
        rule("conn", Owner::User, "github.org.main.*", Approve, "a1"),
    ];
    assert_eq!(
        ordered_ids_after_insert(&reordered, Owner::User, "github.*.*.list_issues"),
        ["leaf", "conn", "NEW"]
    );
    // Equal positions (tie broken by id): the new rule lands after every rule at that position.
    let tied = vec![
        rule("p1", Owner::User, "a.b.c", Approve, "a1"),
        rule("q1", Owner::User, "*", Approve, "a1"),
    ];
    assert_eq!(
        ordered_ids_after_insert(&tied, Owner::User, "a.*"),
        ["p1", "q1", "NEW"]
    );
    // Foreign (non-structured) positions still work.
    let foreign = vec![
        rule("x", Owner::User, "a.b.c", Approve, "1"),
        rule("y", Owner::User, "*", Approve, "2"),
    ];
    assert_eq!(
        ordered_ids_after_insert(&foreign, Owner::User, "a.*"),
        ["x", "NEW", "y"]
    );
}

// ---------------------------------------------------------------------------------------------
// Positions and ids
// ---------------------------------------------------------------------------------------------

#[test]
fn validates_positions() {
    let table: &[(&str, Result<(), &str>)] = &[
        ("a0", Ok(())),
        ("Zz", Ok(())),
        ("0", Ok(())),
        ("anything123ABC", Ok(())),
        (
            "",
            Err("the position is empty; positions are non-empty strings of [0-9A-Za-z]"),
        ),
        (
            "a0-1",
            Err(
                "the position contains '-' at character 3; positions use only the characters 0-9, A-Z and a-z",
            ),
        ),
        (
            "a é",
            Err(
                "the position contains ' ' at character 2; positions use only the characters 0-9, A-Z and a-z",
            ),
        ),
    ];
    for &(raw, expected) in table {
        assert_eq!(
            validate_position(raw).map_err(|e| e.to_string()),
            expected.map_err(str::to_owned),
            "{raw:?}"
        );
    }
    assert!(matches!(
        validate_position(&"a".repeat(1025)),
        Err(PositionError::TooLong { .. })
    ));
}

/// `before`, `after`, and the key or the error message.
type KeyCase = (
    Option<&'static str>,
    Option<&'static str>,
    Result<&'static str, &'static str>,
);

#[test]
fn key_between_table() {
    let table: &[KeyCase] = &[
        (None, None, Ok("a0")),
        (Some("a0"), None, Ok("a1")),
        (None, Some("a0"), Ok("Zz")),
        (Some("a0"), Some("a1"), Ok("a0V")),
        // Foreign keys: plain bisection.
        (Some("1"), Some("2"), Ok("1V")),
        (Some("1"), Some("3"), Ok("2")),
        (None, Some("1"), Ok("0V")),
        (Some("z"), None, Ok("zV")),
        (Some("10"), Some("11"), Ok("10V")),
        (Some("5"), Some("5010"), Ok("501")),
        (
            Some("a1"),
            Some("a0"),
            Err(
                "cannot place a key between \"a1\" and \"a0\": the first must sort before the second",
            ),
        ),
        (
            Some("a0"),
            Some("a0"),
            Err(
                "cannot place a key between \"a0\" and \"a0\": the first must sort before the second",
            ),
        ),
        (
            Some("1"),
            Some("100"),
            Err(
                "no key sorts strictly between \"1\" and \"100\" (the second is the first followed by '0's); pick other neighbours",
            ),
        ),
        (
            None,
            Some("0"),
            Err(
                "no key sorts strictly between \"\" and \"0\" (the second is the first followed by '0's); pick other neighbours",
            ),
        ),
        (
            Some("a-"),
            None,
            Err(
                "the position contains '-' at character 2; positions use only the characters 0-9, A-Z and a-z",
            ),
        ),
    ];
    for &(a, b, expected) in table {
        assert_eq!(
            key_between(a, b).map_err(|e| e.to_string()),
            expected.map(str::to_owned).map_err(str::to_owned),
            "between {a:?} and {b:?}"
        );
    }
}

#[test]
fn keys_grow_slowly() {
    // 1,000 appends and 1,000 prepends stay short (the integer part grows logarithmically).
    let mut last = key_between(None, None).unwrap();
    let mut first = last.clone();
    for _ in 0..1000 {
        let next = key_between(Some(&last), None).unwrap();
        assert!(next > last);
        last = next;
        let prev = key_between(None, Some(&first)).unwrap();
        assert!(prev < first);
        first = prev;
    }
    assert!(last.len() <= 4, "{last}");
    assert!(first.len() <= 4, "{first}");

    // Repeatedly inserting right after the same key grows by about one character per 6 inserts.
    let low = "a0".to_owned();
    let mut high = "a1".to_owned();
    for i in 1..=300 {
        let mid = key_between(Some(&low), Some(&high)).unwrap();
        assert!(low < mid && mid < high);
        assert!(
            mid.len() <= 3 + i / 5,
            "after {i} inserts: {} chars",
            mid.len()
        );
        high = mid;
    }
}

#[test]
fn policy_ids() {
    assert_eq!(policy_id(0, 0), "pol_00000000000000");
    assert_eq!(policy_id(35, 36), "pol_000000000000z10");
    assert_eq!(
        policy_id(u64::MAX, 1_700_000_000_000),
        "pol_3w5e11264sgsfloyw3v28"
    );
    assert_eq!(policy_id(1, -5), "pol_00000000000010");
    let id = policy_id(123_456_789, 1_760_000_000_000);
    assert!(id.starts_with("pol_"));
    assert!(
        id[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    );
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

fn segment() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_-]{1,8}"
}

fn tool_id() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(segment(), 1..7)
}

fn position_key() -> impl Strategy<Value = String> {
    "[0-9A-Za-z]{1,8}"
}

proptest! {
    #[test]
    fn parse_never_panics(raw in "\\PC{0,40}") {
        let _ = PolicyPattern::parse(&raw);
    }

    #[test]
    fn parse_never_panics_on_pattern_like_strings(raw in "[ab.* ]{0,16}") {
        if let Ok(p) = PolicyPattern::parse(&raw) {
            prop_assert_eq!(p.as_str(), raw.as_str());
            // Every accepted pattern matches the tool id spelled like it with '*' as a segment
            // name, except that an exact pattern needs the same segment count.
            prop_assert!(p.matches(&raw));
        }
    }

    #[test]
    fn a_tool_id_is_a_pattern_that_matches_itself(segments in tool_id()) {
        let id = segments.join(".");
        let p = PolicyPattern::parse(&id).unwrap();
        prop_assert!(p.matches(&id));
        prop_assert_eq!(p.specificity(), 2 * segments.len() as u32 + 1);
        // One segment more or less no longer matches an exact pattern.
        let longer = format!("{id}.x");
        prop_assert!(!p.matches(&longer));
        if segments.len() > 1 {
            prop_assert!(!p.matches(&segments[..segments.len() - 1].join(".")));
        }
    }

    #[test]
    fn wildcarding_non_first_segments_still_matches(
        segments in tool_id(),
        mask in prop::collection::vec(any::<bool>(), 7),
    ) {
        let id = segments.join(".");
        let pattern: Vec<&str> = segments
            .iter()
            .enumerate()
            .map(|(i, s)| if i > 0 && mask[i] { "*" } else { s.as_str() })
            .collect();
        let p = PolicyPattern::parse(&pattern.join(".")).unwrap();
        prop_assert!(p.matches(&id), "{} vs {}", p, id);
    }

    #[test]
    fn universal_pattern_matches_everything(id in "\\PC{0,40}") {
        prop_assert!(PolicyPattern::parse("*").unwrap().matches(&id));
    }

    #[test]
    fn trailing_star_matches_every_extension_of_its_prefix(
        prefix in tool_id(),
        rest in prop::collection::vec(segment(), 0..4),
        other in segment(),
    ) {
        let p = PolicyPattern::parse(&format!("{}.*", prefix.join("."))).unwrap();
        prop_assert_eq!(p.specificity(), 2 * prefix.len() as u32);
        let mut extended = prefix.clone();
        extended.extend(rest.iter().cloned());
        prop_assert!(p.matches(&extended.join(".")));
        // Changing the last prefix segment breaks the match.
        let mut changed = extended.clone();
        let last = prefix.len() - 1;
        if changed[last] != other {
            changed[last] = other;
            prop_assert!(!p.matches(&changed.join(".")));
        }
    }

    #[test]
    fn key_between_is_strictly_between(a in position_key(), b in position_key()) {
        prop_assume!(a != b);
        let (low, high) = if a < b { (a, b) } else { (b, a) };
        let no_room = high.strip_prefix(low.as_str()).is_some_and(|rest| rest.bytes().all(|c| c == b'0'));
        match key_between(Some(&low), Some(&high)) {
            Ok(mid) => {
                prop_assert!(low < mid && mid < high, "{} < {} < {}", low, mid, high);
                prop_assert!(validate_position(&mid).is_ok());
            }
            Err(e) => prop_assert!(no_room, "{}", e),
        }
        let below = key_between(None, Some(&low));
        if let Ok(k) = below {
            prop_assert!(k < low);
        } else {
            prop_assert!(low.bytes().all(|c| c == b'0'));
        }
        let above = key_between(Some(&high), None).unwrap();
        prop_assert!(above > high);
    }

    #[test]
    fn repeated_inserts_keep_produced_keys_ordered(ops in prop::collection::vec(any::<prop::sample::Index>(), 1..200)) {
        // Insert at random slots (front, back or between neighbours) of a list of produced keys.
        let mut keys: Vec<String> = Vec::new();
        for op in ops {
            let slot = op.index(keys.len() + 1);
            let before = slot.checked_sub(1).map(|i| keys[i].as_str());
            let after = keys.get(slot).map(String::as_str);
            let key = key_between(before, after).unwrap();
            keys.insert(slot, key);
        }
        prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "{:?}", keys);
    }

    #[test]
    fn repeated_inserts_at_one_spot_stay_ordered(n in 1usize..300, front in any::<bool>()) {
        let mut keys = vec!["a0".to_owned(), "a1".to_owned()];
        for _ in 0..n {
            if front {
                let key = key_between(None, Some(&keys[0])).unwrap();
                keys.insert(0, key);
            } else {
                let key = key_between(Some(&keys[0]), Some(&keys[1])).unwrap();
                keys.insert(1, key);
            }
        }
        prop_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(keys.iter().all(|k| k.len() <= 3 + n / 5));
    }

    #[test]
    fn default_position_respects_specificity(
        patterns in prop::collection::vec(
            prop::sample::select(vec![
                "*", "github.*", "github.org.*", "github.org.main.*", "github.*.*.x",
                "github.org.main.x", "slack.*", "slack.org.work.post",
            ]),
            0..8,
        ),
        new in prop::sample::select(vec!["*", "github.*", "github.org.main.*", "github.org.main.y", "a.b.c.d.e"]),
    ) {
        // Build the list by default placement, as a server would when no position is given.
        let mut existing: Vec<PolicyRule> = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let position = default_position(&existing, Owner::User, &pat(p));
            existing.push(rule(&format!("r{i}"), Owner::User, p, Approve, &position));
        }
        let new_pattern = pat(new);
        let position = default_position(&existing, Owner::User, &new_pattern);
        let mut all = existing.clone();
        all.push(rule("NEW", Owner::User, new, Approve, &position));
        let set = PolicySet::new(all);
        let ordered = set.rules();
        // Built this way the list is ordered by decreasing specificity…
        prop_assert!(ordered.windows(2).all(|w| w[0].pattern.specificity() >= w[1].pattern.specificity()));
        // …and the new rule sits right before the first equally or less specific existing rule.
        let at = ordered.iter().position(|r| r.id == "NEW").unwrap();
        prop_assert!(ordered[..at].iter().all(|r| r.pattern.specificity() > new_pattern.specificity()));
        prop_assert!(ordered[at + 1..].iter().all(|r| r.pattern.specificity() <= new_pattern.specificity()));
    }
}

// ---- toolkits (spec §1.9) ---------------------------------------------------------------

fn grant(owner: Owner, patterns: &[&str]) -> ToolkitGrant {
    ToolkitGrant {
        owner,
        connections: patterns
            .iter()
            .map(|p| PolicyPattern::parse(p).unwrap())
            .collect(),
    }
}

#[test]
fn no_toolkit_blocks_every_tool() {
    let set = PolicySet::toolkit(None, Vec::new());
    for id in [
        "github.org.main.issues.list",
        "executor.coreTools.policies.list",
    ] {
        assert_eq!(
            set.resolve(id, false),
            Decision::NotGranted {
                reason: NotGranted::NoToolkit
            }
        );
    }
    assert!(set.is_toolkit());
    assert!(!PolicySet::new(Vec::new()).is_toolkit());
}

#[test]
fn a_toolkit_grants_only_what_its_connection_patterns_match() {
    let set = PolicySet::toolkit(
        Some(grant(
            Owner::Org,
            &["github.org.main.*", "executor.coreTools.*"],
        )),
        Vec::new(),
    );
    assert_eq!(
        set.resolve("github.org.main.issues.list", false).action(),
        Approve
    );
    assert_eq!(
        set.resolve("github.org.main.issues.close", true).action(),
        RequireApproval,
        "the tool's own default applies when no toolkit rule matches"
    );
    assert_eq!(
        set.resolve("executor.coreTools.policies.list", false)
            .action(),
        Approve
    );
    assert_eq!(
        set.resolve("github.org.other.issues.list", false),
        Decision::NotGranted {
            reason: NotGranted::NoConnection
        }
    );
    assert_eq!(set.resolve("slack.org.main.post", false).action(), Block);
}

#[test]
fn an_org_toolkit_blocks_personal_tools_even_when_a_pattern_names_them() {
    let patterns = ["github.*.*.*", "github.user.mine.*"];
    let org = PolicySet::toolkit(Some(grant(Owner::Org, &patterns)), Vec::new());
    assert_eq!(
        org.resolve("github.user.mine.issues.list", false),
        Decision::NotGranted {
            reason: NotGranted::PersonalTool
        }
    );
    assert_eq!(
        org.resolve("github.org.main.issues.list", false).action(),
        Approve
    );
    let personal = PolicySet::toolkit(Some(grant(Owner::User, &patterns)), Vec::new());
    assert_eq!(
        personal
            .resolve("github.user.mine.issues.list", false)
            .action(),
        Approve
    );
}

#[test]
fn the_first_toolkit_rule_by_position_decides_and_none_loosens_the_grant() {
    let rules = vec![
        rule(
            "tkpol_b",
            Owner::Org,
            "github.*.*.issues.*",
            RequireApproval,
            "a1",
        ),
        rule(
            "tkpol_a",
            Owner::Org,
            "github.org.main.issues.list",
            Approve,
            "a0",
        ),
        rule("tkpol_c", Owner::Org, "*", Block, "a2"),
        rule("tkpol_d", Owner::Org, "slack.*", Approve, "Zz"),
    ];
    let set = PolicySet::toolkit(Some(grant(Owner::Org, &["github.org.main.*"])), rules);
    let decided_by = |id: &str| set.resolve(id, false).rule_id().map(str::to_owned);
    assert_eq!(
        decided_by("github.org.main.issues.list").as_deref(),
        Some("tkpol_a")
    );
    assert_eq!(
        set.resolve("github.org.main.issues.close", false).action(),
        RequireApproval
    );
    assert_eq!(
        set.resolve("github.org.main.repos.get", false).action(),
        Block
    );
    // An `approve` rule for a tool the toolkit does not grant grants nothing.
    assert_eq!(
        set.resolve("slack.org.main.post", false),
        Decision::NotGranted {
            reason: NotGranted::NoConnection
        }
    );
}
