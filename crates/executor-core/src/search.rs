//! Ranked tool search (spec §4.4): what `tools.search({query, namespace, limit, offset})` answers.
//!
//! A [`SearchIndex`] is built once per catalog snapshot. Building normalises every field once and
//! interns its tokens; a search then classifies each *distinct vocabulary token* against the query
//! tokens once (exact / prefix either way / substring), keeping only the non-zero matches, and scores
//! every entry by walking its token ids; the per-entry hot loop neither allocates nor re-normalises
//! text, and only runs substring searches for the whole-query phrase when every query token already
//! matched that field.
//!
//! Scoring (per field, weight `w`: path 12, integration 8, name 10, description 5):
//! - phrase: normalised field `== query` → 14w, starts with it → 9w, contains it → 6w;
//! - per query token: a field token equal to it → 4w, else a field token that is a prefix of it or
//!   that it is a prefix of → 2w, else the normalised field contains it → w;
//! - acceptance: every token must match somewhere when the query has ≤ 2 tokens, else ≥ 60 % of
//!   them, unless some field contained the whole normalised query (phrase match);
//! - bonuses: +25 full coverage (else `round(coverage × 10)`), +8 when the first query token equals
//!   the first path token or the first name token, +20 when the normalised path or name equals the
//!   normalised query.
//!
//! Results sort by score descending, then by path (collation approximating JavaScript's
//! `localeCompare`, see [`compare_paths`]).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

/// The page size `tools.search` uses when the caller passes none.
pub const DEFAULT_SEARCH_LIMIT: usize = 12;

/// Field order inside the index: path, integration, name, description.
const FIELD_PATH: usize = 0;
const FIELD_INTEGRATION: usize = 1;
const FIELD_NAME: usize = 2;
const FIELD_WEIGHTS: [i64; 4] = [12, 8, 10, 5];

/// Match levels of one vocabulary token against one query token.
const LEVEL_NONE: u8 = 0;
const LEVEL_SUBSTRING: u8 = 1;
const LEVEL_PREFIX: u8 = 2;
const LEVEL_EXACT: u8 = 3;
/// Points (multiplied by the field weight) per level: exact token 4, prefix either way 2,
/// substring 1.
const LEVEL_POINTS: [i64; 4] = [0, 1, 2, 4];

/// One searchable tool. `path` omits the `tools.` root, e.g. `"github.org.main.issues.list"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchEntry {
    pub path: String,
    pub name: String,
    pub description: String,
    pub integration: String,
}

/// Arguments of one `tools.search` call. `limit` is taken as given: the caller applies the default
/// ([`DEFAULT_SEARCH_LIMIT`]) and rejects non-positive values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchQuery {
    pub query: String,
    pub namespace: Option<String>,
    pub limit: usize,
    pub offset: usize,
}

/// One result row. Serialises as `{path, name, description?, integration, score}` (an empty
/// description is omitted, like the original's `undefined`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    pub path: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub integration: String,
    /// Always an integer; 0 in enumeration mode.
    pub score: i64,
}

/// One page. Serialises as `{items, total, hasMore, nextOffset}` (`nextOffset` is `null` when there
/// is no further page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    pub items: Vec<SearchHit>,
    /// Matches after filtering, before paging.
    pub total: usize,
    pub has_more: bool,
    pub next_offset: Option<usize>,
}

impl SearchPage {
    /// `{items: [], total: 0, hasMore: false, nextOffset: null}`.
    pub fn empty() -> Self {
        Self::default()
    }
}

/// Normalised text of one catalog entry plus the span of its interned tokens.
struct Prepared {
    /// Normalised text per field (path, integration, name, description).
    raw: [Box<str>; 4],
    /// Field `f`'s token ids are `SearchIndex::tokens[tok[f]..tok[f + 1]]`.
    tok: [u32; 5],
    /// Position of this entry in path order.
    path_rank: u32,
}

/// Pre-normalised index over a catalog snapshot. Build once per catalog change.
pub struct SearchIndex {
    entries: Vec<SearchEntry>,
    prepared: Vec<Prepared>,
    /// Token ids of every field of every entry, back to back.
    tokens: Vec<u32>,
    /// Interned token text by id.
    vocab: Vec<Box<str>>,
    vocab_ids: HashMap<Box<str>, u32>,
    /// Entry indices sorted by path.
    by_path: Vec<u32>,
}

impl fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchIndex")
            .field("entries", &self.entries.len())
            .field("vocabulary", &self.vocab.len())
            .finish()
    }
}

impl SearchIndex {
    pub fn new(entries: Vec<SearchEntry>) -> Self {
        assert!(
            entries.len() < u32::MAX as usize,
            "search index holds at most u32::MAX entries"
        );
        let mut vocab: Vec<Box<str>> = Vec::new();
        let mut vocab_ids: HashMap<Box<str>, u32> = HashMap::new();
        let mut tokens: Vec<u32> = Vec::new();
        let mut prepared = Vec::with_capacity(entries.len());

        for entry in &entries {
            let raw = [
                &entry.path,
                &entry.integration,
                &entry.name,
                &entry.description,
            ]
            .map(|text| normalize_text(text).into_boxed_str());
            let mut tok = [0u32; 5];
            tok[0] = to_u32(tokens.len());
            for (field, text) in raw.iter().enumerate() {
                for token in split_tokens(text) {
                    let id = match vocab_ids.get(token) {
                        Some(&id) => id,
                        None => {
                            let id = to_u32(vocab.len());
                            vocab.push(token.into());
                            vocab_ids.insert(token.into(), id);
                            id
                        }
                    };
                    tokens.push(id);
                }
                tok[field + 1] = to_u32(tokens.len());
            }
            prepared.push(Prepared {
                raw,
                tok,
                path_rank: 0,
            });
        }

        let mut by_path: Vec<u32> = (0..to_u32(entries.len())).collect();
        by_path.sort_by(|&a, &b| {
            compare_paths(&entries[a as usize].path, &entries[b as usize].path).then(a.cmp(&b))
        });
        for (rank, &idx) in by_path.iter().enumerate() {
            prepared[idx as usize].path_rank = to_u32(rank);
        }

        Self {
            entries,
            prepared,
            tokens,
            vocab,
            vocab_ids,
            by_path,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The indexed entries, in the order given to [`SearchIndex::new`].
    pub fn entries(&self) -> &[SearchEntry] {
        &self.entries
    }

    /// Answers one `tools.search` call (spec §4.4).
    pub fn search(&self, query: &SearchQuery) -> SearchPage {
        let query_raw = normalize_text(&query.query);
        let namespace = query.namespace.as_deref();
        if query_raw.is_empty() {
            return match namespace {
                Some(ns) if !normalize_text(ns).is_empty() => {
                    self.enumerate(js_trim(ns), query.offset, query.limit)
                }
                _ => SearchPage::empty(),
            };
        }
        self.ranked(&query_raw, namespace, query.offset, query.limit)
    }

    /// Enumeration mode: every entry whose integration equals `integration` exactly, path order,
    /// score 0.
    fn enumerate(&self, integration: &str, offset: usize, limit: usize) -> SearchPage {
        let end = offset.saturating_add(limit);
        let mut total = 0usize;
        let mut items = Vec::new();
        for &idx in &self.by_path {
            let entry = &self.entries[idx as usize];
            if entry.integration != integration {
                continue;
            }
            if total >= offset && total < end {
                items.push(hit(entry, 0));
            }
            total += 1;
        }
        finish_page(items, total, offset)
    }

    fn ranked(
        &self,
        query_raw: &str,
        namespace: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> SearchPage {
        let query_tokens: Vec<&str> = split_tokens(query_raw).collect();
        if query_tokens.is_empty() {
            return SearchPage::empty();
        }

        // Namespace filter: token-prefix match on integration or path.
        let ns_ids: Option<Vec<u32>> = match namespace.map(normalize) {
            Some(ns_tokens) if !ns_tokens.is_empty() => {
                let mut ids = Vec::with_capacity(ns_tokens.len());
                for token in &ns_tokens {
                    match self.vocab_ids.get(token.as_str()) {
                        Some(&id) => ids.push(id),
                        // No indexed token equals it, so no entry can match the prefix.
                        None => return SearchPage::empty(),
                    }
                }
                Some(ids)
            }
            _ => None,
        };

        // Distinct query tokens with their multiplicity: every occurrence scores, but coverage
        // counts distinct matches divided by *all* tokens (as the original does).
        let mut distinct: Vec<&str> = Vec::new();
        let mut multiplicity: Vec<i64> = Vec::new();
        let mut slots: HashMap<&str, usize> = HashMap::new();
        for &token in &query_tokens {
            let slot = *slots.entry(token).or_insert_with(|| {
                distinct.push(token);
                multiplicity.push(0);
                distinct.len() - 1
            });
            multiplicity[slot] += 1;
        }
        let d = distinct.len();
        let n = query_tokens.len();

        // Classify every vocabulary token against every distinct query token once; keep only the
        // non-zero levels, as (slot, level) lists per vocabulary id.
        let mut match_start: Vec<u32> = Vec::with_capacity(self.vocab.len() + 1);
        let mut matches: Vec<(u32, u8)> = Vec::new();
        for token in &self.vocab {
            match_start.push(to_u32(matches.len()));
            for (slot, q) in distinct.iter().enumerate() {
                let level = classify(token, q);
                if level != LEVEL_NONE {
                    matches.push((to_u32(slot), level));
                }
            }
        }
        match_start.push(to_u32(matches.len()));
        let first_query_id = self.vocab_ids.get(query_tokens[0]).copied();

        // Per-slot scratch, invalidated by bumping generation counters instead of clearing.
        let mut level = vec![LEVEL_NONE; d];
        let mut level_gen = vec![0u32; d];
        let mut matched_gen = vec![0u32; d];
        let mut touched: Vec<u32> = Vec::with_capacity(d);
        let (mut field_gen, mut entry_gen) = (0u32, 0u32);
        let mut candidates: Vec<(i64, u32, u32)> = Vec::new();

        for (idx, prep) in self.prepared.iter().enumerate() {
            if let Some(ns) = &ns_ids
                && !(self.field_tokens(prep, FIELD_INTEGRATION).starts_with(ns)
                    || self.field_tokens(prep, FIELD_PATH).starts_with(ns))
            {
                continue;
            }
            entry_gen += 1;
            let mut hits = 0usize;
            let mut score = 0i64;
            let mut phrase = false;
            for (field, &weight) in FIELD_WEIGHTS.iter().enumerate() {
                let raw = &*prep.raw[field];
                if raw.is_empty() {
                    continue;
                }
                field_gen += 1;
                touched.clear();
                for &t in self.field_tokens(prep, field) {
                    let cells = &matches[match_start[t as usize] as usize..]
                        [..(match_start[t as usize + 1] - match_start[t as usize]) as usize];
                    for &(slot, lvl) in cells {
                        let s = slot as usize;
                        if level_gen[s] != field_gen {
                            level_gen[s] = field_gen;
                            level[s] = lvl;
                            touched.push(slot);
                        } else if lvl > level[s] {
                            level[s] = lvl;
                        }
                    }
                }
                if touched.is_empty() {
                    continue;
                }
                // Containing the whole query implies containing each of its tokens, so the
                // substring searches only run when every token matched this field.
                if touched.len() == d {
                    if raw == query_raw {
                        score += 14 * weight;
                        phrase = true;
                    } else if raw.starts_with(query_raw) {
                        score += 9 * weight;
                        phrase = true;
                    } else if raw.contains(query_raw) {
                        score += 6 * weight;
                        phrase = true;
                    }
                }
                for &slot in &touched {
                    let s = slot as usize;
                    score += weight * LEVEL_POINTS[level[s] as usize] * multiplicity[s];
                    if matched_gen[s] != entry_gen {
                        matched_gen[s] = entry_gen;
                        hits += 1;
                    }
                }
            }

            if hits == 0 {
                continue;
            }
            let enough = if n <= 2 { hits == n } else { hits * 5 >= n * 3 };
            if !enough && !phrase {
                continue;
            }
            score += if hits == n {
                25
            } else {
                ((hits as f64 / n as f64) * 10.0).round() as i64
            };
            if let Some(first) = first_query_id
                && (self.field_tokens(prep, FIELD_PATH).first() == Some(&first)
                    || self.field_tokens(prep, FIELD_NAME).first() == Some(&first))
            {
                score += 8;
            }
            if &*prep.raw[FIELD_PATH] == query_raw || &*prep.raw[FIELD_NAME] == query_raw {
                score += 20;
            }
            candidates.push((score, prep.path_rank, to_u32(idx)));
        }

        let total = candidates.len();
        let start = offset.min(total);
        let end = start.saturating_add(limit).min(total);
        let order = |a: &(i64, u32, u32), b: &(i64, u32, u32)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        if end < total {
            if end > 0 {
                candidates.select_nth_unstable_by(end - 1, order);
            }
            candidates.truncate(end);
        }
        candidates.sort_unstable_by(order);
        let items = candidates[start..end]
            .iter()
            .map(|&(score, _, idx)| hit(&self.entries[idx as usize], score))
            .collect();
        finish_page(items, total, offset)
    }

    fn field_tokens(&self, prep: &Prepared, field: usize) -> &[u32] {
        &self.tokens[prep.tok[field] as usize..prep.tok[field + 1] as usize]
    }
}

/// Suggestions for an unknown path (the `describe.tool` / `tool_not_found` helper): the top `n`
/// paths of a ranked search for `leaf` within `namespace`; when that finds nothing (or no namespace
/// is given) the search runs over the whole catalog.
pub fn suggest(index: &SearchIndex, leaf: &str, namespace: Option<&str>, n: usize) -> Vec<String> {
    let run = |namespace: Option<&str>| {
        index
            .search(&SearchQuery {
                query: leaf.to_owned(),
                namespace: namespace.map(str::to_owned),
                limit: n,
                offset: 0,
            })
            .items
    };
    let mut items = run(namespace);
    if items.is_empty() && namespace.is_some() {
        items = run(None);
    }
    items.into_iter().map(|item| item.path).collect()
}

/// Normalised text used for matching: a space between a lowercase letter/digit and an uppercase
/// letter (camelCase split), runs of `_ . / : -` become one space, lowercased, trimmed. Other
/// characters are kept, so the result may hold punctuation or double spaces (phrase matching runs
/// on this text, exactly like the original).
pub fn normalize_text(text: &str) -> String {
    let mut spaced = String::with_capacity(text.len() + 8);
    let mut prev_lower_or_digit = false;
    let mut in_separator = false;
    for ch in text.chars() {
        if matches!(ch, '_' | '.' | '/' | ':' | '-') {
            if !in_separator {
                spaced.push(' ');
                in_separator = true;
            }
            prev_lower_or_digit = false;
            continue;
        }
        in_separator = false;
        if prev_lower_or_digit && ch.is_ascii_uppercase() {
            spaced.push(' ');
        }
        prev_lower_or_digit = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        spaced.push(ch);
    }
    let lowered = if spaced.is_ascii() {
        spaced.make_ascii_lowercase();
        spaced
    } else {
        spaced.to_lowercase()
    };
    let trimmed = js_trim(&lowered);
    if trimmed.len() == lowered.len() {
        lowered
    } else {
        trimmed.to_owned()
    }
}

/// Text normalisation used for matching: camelCase split, `_ . / : -` → space, lowercased, then the
/// maximal runs of `[a-z0-9]` as tokens.
pub fn normalize(text: &str) -> Vec<String> {
    split_tokens(&normalize_text(text))
        .map(str::to_owned)
        .collect()
}

/// Maximal runs of ASCII `[a-z0-9]` in already-normalised text.
fn split_tokens(normalized: &str) -> impl Iterator<Item = &str> {
    normalized
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
}

/// `String.prototype.trim`: JS white space and line terminators (includes U+FEFF, not U+0085).
fn js_trim(text: &str) -> &str {
    text.trim_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}')
}

fn classify(token: &str, query: &str) -> u8 {
    if token == query {
        LEVEL_EXACT
    } else if token.starts_with(query) || query.starts_with(token) {
        LEVEL_PREFIX
    } else if token.contains(query) {
        LEVEL_SUBSTRING
    } else {
        LEVEL_NONE
    }
}

fn hit(entry: &SearchEntry, score: i64) -> SearchHit {
    SearchHit {
        path: entry.path.clone(),
        name: entry.name.clone(),
        description: entry.description.clone(),
        integration: entry.integration.clone(),
        score,
    }
}

/// Paging as the original: `start = min(offset, total)`, `hasMore = start + items < total`,
/// `nextOffset` = that sum when more remain.
fn finish_page(items: Vec<SearchHit>, total: usize, offset: usize) -> SearchPage {
    let consumed = offset.min(total) + items.len();
    let has_more = consumed < total;
    SearchPage {
        items,
        total,
        has_more,
        next_offset: has_more.then_some(consumed),
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).expect("search index exceeds u32 range")
}

/// Path order approximating JavaScript's `a.localeCompare(b)` (ICU root collation): compares
/// primary weights first (punctuation `_ - , ; : ! ? . …` before digits before letters, letters
/// case-insensitively), then case (lowercase first), then code points.
pub fn compare_paths(a: &str, b: &str) -> Ordering {
    a.chars()
        .map(primary_weight)
        .cmp(b.chars().map(primary_weight))
        .then_with(|| {
            a.chars()
                .map(|c| c.is_uppercase())
                .cmp(b.chars().map(|c| c.is_uppercase()))
        })
        .then_with(|| a.cmp(b))
}

/// ASCII punctuation and symbols in ICU root order (white space first).
const ICU_PUNCTUATION_ORDER: &str = " \t\n\r_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

fn primary_weight(c: char) -> (u8, u32) {
    if let Some(pos) = ICU_PUNCTUATION_ORDER.find(c) {
        (0, pos as u32)
    } else if c.is_ascii_digit() {
        (1, c as u32)
    } else if c.is_ascii_alphabetic() {
        (2, c.to_ascii_lowercase() as u32)
    } else if c.is_ascii() {
        (0, 100 + c as u32)
    } else {
        let lower = c.to_lowercase().next().unwrap_or(c);
        (3, lower as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_levels() {
        assert_eq!(classify("issues", "issues"), LEVEL_EXACT);
        assert_eq!(classify("issues", "iss"), LEVEL_PREFIX);
        assert_eq!(classify("iss", "issues"), LEVEL_PREFIX);
        assert_eq!(classify("reissues", "issue"), LEVEL_SUBSTRING);
        assert_eq!(classify("repos", "issue"), LEVEL_NONE);
    }

    #[test]
    fn path_collation() {
        assert_eq!(compare_paths("a.b", "a_b"), Ordering::Greater);
        assert_eq!(
            compare_paths("listForOrg", "list_for_org"),
            Ordering::Greater
        );
        assert_eq!(compare_paths("a", "B"), Ordering::Less);
        assert_eq!(compare_paths("a", "A"), Ordering::Less);
        assert_eq!(compare_paths("v10", "v9"), Ordering::Less);
    }
}
