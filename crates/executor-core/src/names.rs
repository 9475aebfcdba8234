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

/// Longest connection name accepted (in characters, before normalisation).
pub const MAX_CONNECTION_NAME_CHARS: usize = 200;

/// What a connection name may contain; the message of a name that normalises to nothing.
pub const CONNECTION_NAME_RULE: &str = "A connection name needs at least one letter or digit \
(any script); other characters (spaces, `-`, `_`, `.`, `/`, emoji…) separate camelCase words.";

/// A character that may be part of a name's word: what JavaScript allows in an identifier
/// (UAX #31 `XID_Continue`) other than the `_` and `$` connectors, so any script's letters are
/// kept.
fn is_word_char(c: char) -> bool {
    c != '_' && unicode_ident::is_xid_continue(c)
}

/// Connection name normalisation (spec §1.4): lowercased words (runs of letters and digits of
/// any script) joined camelCase; a result that does not start as a JS identifier may
/// (`"123"`) is prefixed with `connection` and its first character capitalised
/// (`connection123`). `None` when no word is left (`""`, `".."`, `"🎉"`): the caller refuses
/// the name with [`CONNECTION_NAME_RULE`] rather than inventing one, which two different inputs
/// would share.
///
/// A camelCase boundary inside a run separates words too (`myWorkKey` → `my`, `Work`, `Key`;
/// `HTTPServer` → `HTTP`, `Server`), so a normalised name normalises to itself: typing the name
/// the server answered finds the same connection rather than making `myworkkey` beside
/// `myWorkKey` (issue #39).
pub fn normalize_connection_name(input: &str) -> Option<String> {
    // One pass is its own fixed point but for rare joins (a one-letter capital word after
    // another, `"À aA"` → `àAA`, read again as `à` `AA`; case maps that change length, `İ`):
    // a few more passes settle those, so what this answers always normalises to itself.
    let mut name = normalize_once(input)?;
    for _ in 0..8 {
        let again = normalize_once(&name)?;
        if again == name {
            break;
        }
        name = again;
    }
    Some(name)
}

fn normalize_once(input: &str) -> Option<String> {
    let mut out = String::new();
    for (i, word) in input
        .split(|c: char| !is_word_char(c))
        .flat_map(camel_words)
        .enumerate()
    {
        let lower = word.to_lowercase();
        if i == 0 {
            out.push_str(&lower);
        } else {
            let mut chars = lower.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    let first = out.chars().next()?;
    if unicode_ident::is_xid_start(first) {
        Some(out)
    } else {
        let mut chars = out.chars();
        let head: String = chars
            .next()
            .map(|c| c.to_uppercase().collect())
            .unwrap_or_default();
        Some(format!("connection{head}{}", chars.as_str()))
    }
}

/// The camelCase words of one run of word characters: a new word starts at an upper-case
/// letter after anything but an upper-case one (`myKey`, `v2Api`, a mark), and at the last upper-case
/// letter of a capital run that a lower-case letter follows (`HTTPServer` → `HTTP` `Server`).
/// Scripts without case have no boundary inside a run.
fn camel_words(run: &str) -> impl Iterator<Item = &str> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut starts = vec![0];
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|&(_, n)| n.is_lowercase());
        let boundary = c.is_uppercase() && (!prev.is_uppercase() || next_lower);
        if boundary {
            starts.push(at);
        }
    }
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([run.len()]).collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |(a, b)| &run[a..b])
        .filter(|w| !w.is_empty())
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
        let n = |s: &str| normalize_connection_name(s);
        assert_eq!(n("My Work Key").as_deref(), Some("myWorkKey"));
        assert_eq!(n("main").as_deref(), Some("main"));
        assert_eq!(n("123").as_deref(), Some("connection123"));
        assert_eq!(n("9 lives").as_deref(), Some("connection9Lives"));
        assert_eq!(n("MAIN key").as_deref(), Some("mainKey"));
        assert_eq!(n("my_key").as_deref(), Some("myKey"));
    }

    /// Issue #39: `"myWorkKey"` became `myworkkey`, a second connection beside the
    /// `myWorkKey` that `"My Work Key"` had made.
    #[test]
    fn connection_names_normalise_to_themselves() {
        let n = |s: &str| normalize_connection_name(s);
        assert_eq!(n("myWorkKey").as_deref(), Some("myWorkKey"));
        assert_eq!(n("myWorkKey"), n("My Work Key"));
        assert_eq!(n("HTTPServer").as_deref(), Some("httpServer"));
        assert_eq!(n("githubAPIKey").as_deref(), Some("githubApiKey"));
        assert_eq!(n("v2Api").as_deref(), Some("v2Api"));
        assert_eq!(n("MAIN").as_deref(), Some("main"));
        for input in [
            "My Work Key",
            "myWorkKey",
            "HTTPServer",
            "githubAPIKey",
            "MAIN key",
            "9 lives",
            "123",
            "Équipe Paris",
            "командаДва",
            "チーム",
            "x²",
            "a-b",
            "Ⅻ legion",
            "١٢٣",
            "ǅemal",
            "ABC123def",
        ] {
            let once = n_ok(input);
            assert_eq!(n_ok(&once), once, "{input:?}");
        }
    }

    /// Issue #17: names of other scripts were dropped to `connection`, so they all collided.
    #[test]
    fn connection_names_keep_letters_of_any_script_and_refuse_nothing() {
        let n = |s: &str| normalize_connection_name(s);
        assert_eq!(n("é🎉").as_deref(), Some("é"));
        assert_eq!(n("チーム").as_deref(), Some("チーム"));
        assert_eq!(n("Équipe Paris").as_deref(), Some("équipeParis"));
        assert_eq!(n("команда два").as_deref(), Some("командаДва"));
        for nothing in ["", "  ", "..", "🎉", "/", "_", "$"] {
            assert_eq!(n(nothing), None, "{nothing:?}");
        }
        // Two spellings of one name are still one name: the caller decides what that means.
        assert_eq!(n("a/b"), n("a.b"));
    }

    #[test]
    fn connection_names_are_js_identifiers() {
        for input in ["é🎉", "チーム", "9 lives", "x²", "a-b", "Ⅻ legion", "١٢٣"] {
            let name = n_ok(input);
            let mut chars = name.chars();
            let first = chars.next().unwrap();
            assert!(unicode_ident::is_xid_start(first), "{input:?} → {name:?}");
            assert!(
                chars.all(unicode_ident::is_xid_continue),
                "{input:?} → {name:?}"
            );
        }
    }

    fn n_ok(input: &str) -> String {
        normalize_connection_name(input).unwrap()
    }
}
