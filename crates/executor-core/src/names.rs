//! Name rules: integration slugs, connection names, downstream tool ids.

use std::collections::HashSet;

/// Lowercase, runs of non-alphanumerics become `_`, trimmed of `_` (spec §3.9 slug default).
/// Returns an empty string when nothing alphanumeric is left; callers pick a fallback.
pub fn slugify(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut pending_sep = false;
    for ch in input.chars() {
        if ch.is_ascii_alphanumeric() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(ch.to_ascii_lowercase());
        } else {
            pending_sep = true;
        }
    }
    out
}

/// Downstream tool id (spec §6): trim, lowercase, runs of non-`[a-z0-9]` become `_`, trimmed of
/// `_`, empty becomes `tool`. Duplicates are resolved by [`unique_tool_names`].
pub fn sanitize_tool_name(name: &str) -> String {
    let slug = slugify(name.trim());
    if slug.is_empty() {
        "tool".to_owned()
    } else {
        slug
    }
}

/// Sanitises every name and suffixes duplicates with `_2`, `_3`… in input order.
pub fn unique_tool_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut used: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for name in names {
        let base = sanitize_tool_name(name);
        let mut candidate = base.clone();
        let mut n = 2;
        while used.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        used.insert(candidate.clone());
        out.push(candidate);
    }
    out
}

/// Connection name normalisation (spec §1.4): lowercased alphanumeric words joined camelCase;
/// empty → `connection`; a result that does not start with a letter, `_` or `$` is prefixed with
/// `connection` and its first character capitalised (`"123"` → `connection123`).
pub fn normalize_connection_name(input: &str) -> String {
    let mut out = String::new();
    for (i, word) in input
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        let lower = word.to_ascii_lowercase();
        if i == 0 {
            out.push_str(&lower);
        } else {
            let mut chars = lower.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    if out.is_empty() {
        return "connection".to_owned();
    }
    let first = out.chars().next().unwrap_or('c');
    if first.is_ascii_alphabetic() || first == '_' || first == '$' {
        out
    } else {
        let mut chars = out.chars();
        let head = chars
            .next()
            .map(|c| c.to_ascii_uppercase())
            .unwrap_or_default();
        format!("connection{head}{}", chars.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slugify("Session-stateful MCP"), "session_stateful_mcp");
        assert_eq!(slugify("  --Hello__World--  "), "hello_world");
        assert_eq!(slugify("!!!"), "");
    }

    #[test]
    fn tool_names() {
        assert_eq!(sanitize_tool_name(" Get-Workspace "), "get_workspace");
        assert_eq!(sanitize_tool_name("???"), "tool");
        assert_eq!(
            unique_tool_names(["a-b", "A_B", "a b", "c"]),
            vec!["a_b", "a_b_2", "a_b_3", "c"]
        );
    }

    #[test]
    fn connection_names() {
        assert_eq!(normalize_connection_name("My Work Key"), "myWorkKey");
        assert_eq!(normalize_connection_name("main"), "main");
        assert_eq!(normalize_connection_name(""), "connection");
        assert_eq!(normalize_connection_name("  "), "connection");
        assert_eq!(normalize_connection_name("123"), "connection123");
        assert_eq!(normalize_connection_name("9 lives"), "connection9Lives");
        assert_eq!(normalize_connection_name("MAIN key"), "mainKey");
    }
}
