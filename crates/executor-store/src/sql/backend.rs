//! Which database a [`super::SqlStore`] speaks to, and the few places where the two dialects
//! differ. Statements are written once, in the dialect both accept, with SQLite's `?` / `?N`
//! placeholders; for PostgreSQL they are renumbered to `$N` here.

use std::borrow::Cow;

use sqlx::AssertSqlSafe;

/// The database behind a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded file database (one process per data directory).
    Sqlite,
    /// A shared PostgreSQL database (any number of replicas).
    Postgres,
}

impl Backend {
    /// `text` as this backend's statement.
    pub(crate) fn sql(
        self,
        text: impl Into<Cow<'static, str>>,
    ) -> AssertSqlSafe<Cow<'static, str>> {
        let text = text.into();
        AssertSqlSafe(match self {
            Backend::Sqlite => text,
            Backend::Postgres => Cow::Owned(numbered_placeholders(&text)),
        })
    }

    /// The text value of `key` at the top of the JSON text in `column`, or NULL.
    pub(crate) fn json_text(self, column: &str, key: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Backend::Postgres => format!("(({column})::jsonb ->> '{key}')"),
        }
    }

    /// 1 when `key` at the top of the JSON text in `column` is `true`, 0 when `false`, else NULL.
    pub(crate) fn json_flag(self, column: &str, key: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Backend::Postgres => format!(
                "(CASE jsonb_typeof(({column})::jsonb -> '{key}') \
                   WHEN 'boolean' THEN (({column})::jsonb -> '{key}')::boolean::int END)"
            ),
        }
    }

    /// The JSON text in `column` (NULL read as `{}`) with `key` set to the JSON text bound at
    /// the next placeholder.
    pub(crate) fn json_set_bound(self, column: &str, key: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_set(coalesce({column}, '{{}}'), '$.{key}', json(?))"),
            Backend::Postgres => format!(
                "jsonb_set(coalesce({column}, '{{}}')::jsonb, '{{{key}}}', (?)::jsonb)::text"
            ),
        }
    }

    /// Whether `needle` (bound at the next placeholder) occurs in the text `haystack`.
    pub(crate) fn contains_bound(self, haystack: &str) -> String {
        match self {
            Backend::Sqlite => format!("instr({haystack}, ?) > 0"),
            Backend::Postgres => format!("strpos({haystack}, ?) > 0"),
        }
    }
}

/// SQLite's placeholders as PostgreSQL's: `?N` → `$N`, and a bare `?` takes one more than the
/// largest number so far (SQLite's own rule). Quoted literals and identifiers are left alone.
fn numbered_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut highest = 0u32;
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                let n = if digits.is_empty() {
                    highest + 1
                } else {
                    digits.parse().unwrap_or(highest + 1)
                };
                highest = highest.max(n);
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_as_sqlite_numbers_them() {
        assert_eq!(
            numbered_placeholders("a = ? AND b = ? OR c = ?"),
            "a = $1 AND b = $2 OR c = $3"
        );
        assert_eq!(
            numbered_placeholders("?1 IS NULL OR s = ?1 LIMIT ?2 OFFSET ?"),
            "$1 IS NULL OR s = $1 LIMIT $2 OFFSET $3"
        );
        assert_eq!(
            numbered_placeholders("x = '?' AND \"we?rd\" = ? AND y = 'it''s ?'"),
            "x = '?' AND \"we?rd\" = $1 AND y = 'it''s ?'"
        );
    }

    #[test]
    fn sqlite_statements_are_untouched() {
        let text = "SELECT ? FROM t WHERE a = ?2";
        assert_eq!(&*Backend::Sqlite.sql(text).0, text);
        assert!(matches!(Backend::Sqlite.sql(text).0, Cow::Borrowed(_)));
    }
}
