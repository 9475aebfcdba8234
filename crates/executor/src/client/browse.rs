//! `executor call <prefix> --help`: the catalog as a tree of path segments, one level at a time;
//! at a tool, its description and TypeScript input and output.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::Value;

use super::api::Api;
use super::render::{summary, table, tool_card};
use super::{CliError, CliResult};

/// One callable tool: its path as `call` takes it (no `tools.` root) and its API address.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) segments: Vec<String>,
    pub(crate) address: String,
    pub(crate) description: String,
}

/// The tools of a `GET /api/tools` answer (blocked ones are not callable, so not listed).
pub(crate) fn entries(tools: &Value) -> Vec<Entry> {
    let mut out: Vec<Entry> = tools
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|tool| {
                    let address = tool["address"].as_str()?;
                    let path = address.strip_prefix("tools.").unwrap_or(address);
                    Some(Entry {
                        segments: path.split('.').map(str::to_owned).collect(),
                        address: address.to_owned(),
                        description: tool["description"].as_str().unwrap_or("").to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.segments.cmp(&b.segments));
    out
}

/// One level below a prefix: each next segment, whether it is a tool itself, and how many
/// tools lie below it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Child {
    pub(crate) tool: bool,
    pub(crate) below: usize,
}

pub(crate) fn children<'a>(entries: &'a [Entry], prefix: &[String]) -> BTreeMap<&'a str, Child> {
    let mut out: BTreeMap<&str, Child> = BTreeMap::new();
    for entry in entries {
        if entry.segments.len() <= prefix.len() || !entry.segments.starts_with(prefix) {
            continue;
        }
        let child = out
            .entry(entry.segments[prefix.len()].as_str())
            .or_default();
        if entry.segments.len() == prefix.len() + 1 {
            child.tool = true;
        } else {
            child.below += 1;
        }
    }
    out
}

/// Whether `token` names `candidate`: a substring, either way round, of its words
/// (`listIssues` → `list`, `issues`), with a trailing `s` ignored.
pub(crate) fn token_matches(candidate: &str, token: &str) -> bool {
    let token = token.to_ascii_lowercase();
    let token = token.trim_end_matches('s');
    if token.is_empty() {
        return true;
    }
    let lower = candidate.to_ascii_lowercase();
    if lower.contains(token) {
        return true;
    }
    words(candidate).iter().any(|word| {
        let word = word.trim_end_matches('s');
        !word.is_empty() && token.contains(word) && word.len() >= 3
    })
}

fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            last_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && last_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        last_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `executor call <prefix…> --help [--match T] [--limit N]`.
pub(crate) async fn browse(
    api: &Api,
    prefix: Vec<String>,
    filter: Option<&str>,
    limit: usize,
) -> CliResult {
    let answer = api.get("/api/tools?includeBlocked=false").await?;
    let tools = api.expect_ok(answer)?;
    let entries = entries(&tools);
    let shown_prefix = prefix.join(" ");
    let at_tool = entries.iter().find(|e| e.segments == prefix);
    let below = children(&entries, &prefix);
    if below.is_empty() {
        if let Some(tool) = at_tool {
            return describe_leaf(api, tool).await;
        }
        return Err(unknown_prefix(&entries, &prefix));
    }
    let mut out = String::new();
    out.push_str("Usage:\n");
    out.push_str(
        "  executor call <segment> [<segment> ...] ['{\"key\":\"value\"}' | @args.json]\n",
    );
    out.push_str("  executor call <segment> ... --help [--match TEXT] [--limit N]\n");
    if let Some(tool) = at_tool {
        out.push_str(&format!(
            "\nCallable path: {}\n  {}\n",
            tool.segments.join("."),
            summary(&tool.description, 100)
        ));
    }
    let rows: Vec<(&str, &Child)> = below
        .iter()
        .filter(|(name, _)| filter.is_none_or(|f| token_matches(name, f)))
        .map(|(name, child)| (*name, child))
        .collect();
    if let Some(filter) = filter {
        out.push_str(&format!("\nFiltered by: {filter:?}\n"));
    }
    let total = rows.len();
    out.push_str(&format!(
        "\nShowing {} of {total} {} (limit {limit}).\n",
        total.min(limit),
        if prefix.is_empty() {
            "integrations"
        } else {
            "subcommands"
        }
    ));
    if total > 0 {
        let lines: Vec<Vec<String>> = rows
            .iter()
            .take(limit)
            .map(|(name, child)| vec![(*name).to_owned(), describe_child(child)])
            .collect();
        out.push_str("\nSubcommands:\n");
        for line in table(&["", ""], &lines).lines().skip(1) {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
        let example = rows[0].0;
        let mut drill = prefix.clone();
        drill.push(example.to_owned());
        out.push_str(&format!(
            "\nDrill down: executor call {} --help\n",
            drill.join(" ")
        ));
    } else if !shown_prefix.is_empty() || filter.is_some() {
        out.push_str("\nNothing here matches; drop --match to see all.\n");
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn describe_child(child: &Child) -> String {
    let count = |n: usize| format!("{n} tool{}", if n == 1 { "" } else { "s" });
    match (child.tool, child.below) {
        (true, 0) => "tool".to_owned(),
        (true, n) => format!("tool + group, {} below", count(n)),
        (false, n) => format!("group, {}", count(n)),
    }
}

async fn describe_leaf(api: &Api, tool: &Entry) -> CliResult {
    let path = format!(
        "/api/tools/schema?address={}",
        percent_encoding::utf8_percent_encode(&tool.address, percent_encoding::NON_ALPHANUMERIC)
    );
    let schema = api.expect_ok(api.get(&path).await?)?;
    let description = schema["description"].as_str().unwrap_or(&tool.description);
    let mut out = tool_card(&tool.segments.join("."), description, &schema, "  ");
    out.push_str(&format!(
        "\nCall it: executor call {} '{{…}}'\n",
        tool.segments.join(" ")
    ));
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// The catalog's closest paths to `path`, for an unknown tool the server had no suggestion
/// for; empty when the catalog cannot be read.
pub(crate) async fn closest_in_catalog(api: &Api, path: &[String]) -> Vec<String> {
    match api.get("/api/tools?includeBlocked=false").await {
        Ok(answer) if answer.status.is_success() => closest(&entries(&answer.body), path, 5),
        _ => Vec::new(),
    }
}

/// Up to `n` tool paths closest to `path`: most leading segments in common first, then the
/// smallest edit distance over the rest.
pub(crate) fn closest(entries: &[Entry], path: &[String], n: usize) -> Vec<String> {
    let wanted = path.join(".").to_ascii_lowercase();
    let mut scored: Vec<(usize, usize, String)> = entries
        .iter()
        .map(|entry| {
            let common = entry
                .segments
                .iter()
                .zip(path)
                .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
                .count();
            let joined = entry.segments.join(".");
            let distance = strsim::levenshtein(&joined.to_ascii_lowercase(), &wanted);
            (common, distance, joined)
        })
        // Something in common: a shared integration, or a near miss of the whole path.
        .filter(|(common, distance, _)| *common > 0 || *distance <= wanted.len() / 3)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    scored.into_iter().take(n).map(|(_, _, p)| p).collect()
}

/// "No tool path starts with …", and what the deepest level that does exist holds, filtered by
/// the first segment that did not match.
fn unknown_prefix(entries: &[Entry], prefix: &[String]) -> CliError {
    let mut known = 0;
    while known < prefix.len() && !children(entries, &prefix[..known + 1]).is_empty() {
        known += 1;
    }
    let level = &prefix[..known];
    let token = prefix.get(known).map(String::as_str).unwrap_or("");
    let here = children(entries, level);
    let mut near: Vec<&str> = here
        .keys()
        .copied()
        .filter(|name| token_matches(name, token))
        .collect();
    if near.is_empty() {
        near = here.keys().copied().collect();
    }
    let mut message = format!("No tool path starts with \"{}\".", prefix.join("."));
    if !near.is_empty() {
        let at = if level.is_empty() {
            "At the top".to_owned()
        } else {
            format!("Under {}", level.join("."))
        };
        message.push_str(&format!("\n{at}:"));
        for name in near.iter().take(10) {
            let mut path = level.to_vec();
            path.push((*name).to_owned());
            message.push_str(&format!("\n  {}", path.join(".")));
        }
    }
    CliError::failed(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Vec<Entry> {
        entries(&json!([
            {"address": "tools.github.org.main.issues.create", "description": "Create an issue"},
            {"address": "tools.github.org.main.issues.list", "description": "List issues"},
            {"address": "tools.github.org.main.issues", "description": "Issues"},
            {"address": "tools.github.org.main.repos.get", "description": "Get a repo"},
            {"address": "executor.coreTools.connections.list", "description": "Connections"}
        ]))
    }

    #[test]
    fn levels_count_tools_and_groups() {
        let entries = sample();
        let top = children(&entries, &[]);
        assert_eq!(
            top.keys().copied().collect::<Vec<_>>(),
            vec!["executor", "github"]
        );
        let prefix: Vec<String> = ["github", "org", "main"].map(String::from).to_vec();
        let level = children(&entries, &prefix);
        assert_eq!(
            level["issues"],
            Child {
                tool: true,
                below: 2
            }
        );
        assert_eq!(
            level["repos"],
            Child {
                tool: false,
                below: 1
            }
        );
    }

    #[test]
    fn unknown_prefixes_suggest_the_nearest_level() {
        let entries = sample();
        let prefix: Vec<String> = ["github", "org", "main", "issue"]
            .map(String::from)
            .to_vec();
        let e = unknown_prefix(&entries, &prefix);
        assert_eq!(e.code, 1);
        assert!(
            e.message
                .contains("Under github.org.main:\n  github.org.main.issues"),
            "{e}"
        );
        assert!(!e.message.contains("repos"), "{e}");
        assert!(token_matches("listIssues", "issue"));
        assert!(token_matches("repos", "repositories") || token_matches("repos", "repo"));
        assert!(!token_matches("repos", "issue"));
        let path: Vec<String> = ["github", "org", "main", "issues", "creat"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            closest(&entries, &path, 2),
            [
                "github.org.main.issues.create",
                "github.org.main.issues.list"
            ]
        );
        let stranger: Vec<String> = ["zzz", "q"].map(String::from).to_vec();
        assert!(closest(&entries, &stranger, 5).is_empty());
    }
}
