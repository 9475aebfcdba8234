//! Ranked tool search (spec §4.4): what `tools.search({query, namespace, limit, offset})` answers.
//!
//! The wire shape, paging, namespace filter and enumeration mode are the original's; the ranking is
//! ours (issue #18). The original's formula rewarded any text that mentioned the query's words, so
//! on GitHub's spec "get repository" put `repos.get` 58th and on Stripe's "create a customer" put
//! `customers.postCustomers` 200th. Measured on `crates/executor-openapi/tests/search_quality.rs`
//! (real queries over both specs, one catalog): see BENCHMARKS.md.
//!
//! Matching works on *terms*: normalised tokens (camelCase split, `_ . / : -` as spaces,
//! lowercased), plural-stemmed (`repositories` → `repository`), with a small table of synonyms an
//! agent uses for the same operation (`create`/`add`/`new`/`post`, `get`/`retrieve`/`fetch`,
//! `delete`/`remove`, `repo`/`repository`, `org`/`organization`, `my` → `authenticated`…). Query
//! stop words (`a`, `the`, `for`…) are dropped unless the query is nothing else.
//!
//! Fields and weights: name 10, summary (the description's first line) 7, integration 6, path 4,
//! the rest of the description 2. Per query term, the best field counts fully and the others
//! at 15 %, scaled by the level of the match (exact 1, synonym 0.85, prefix 0.6, substring 0.3)
//! and by how rare the term is in names and summaries (0.5–1.5). Then: how much of the *name* the
//! query covers (× 16, by match level; `repos.get` beats `repos.getContent` for "get repository") and of the
//! summary (× 6), coverage of the query (+15 when complete), the whole query as a phrase in the
//! name (+5) or summary (+4), and +20 when the name or path is the query. Acceptance as the
//! original: every term must match when there are at most two, else 60 %, unless the phrase matched.
//!
//! The index is built once per catalog snapshot: every field is normalised once and its terms
//! interned; a search classifies each distinct vocabulary term against the query terms once and
//! then walks each entry's term ids, without allocating per entry. Results sort by score, then by
//! path ([`compare_paths`], approximating JavaScript's `localeCompare`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

/// The page size `tools.search` uses when the caller passes none.
pub const DEFAULT_SEARCH_LIMIT: usize = 12;

/// Field order inside the index.
const FIELD_PATH: usize = 0;
const FIELD_INTEGRATION: usize = 1;
const FIELD_NAME: usize = 2;
const FIELD_SUMMARY: usize = 3;
const FIELDS: usize = 5;
const FIELD_WEIGHTS: [f64; FIELDS] = [4.0, 6.0, 10.0, 7.0, 2.0];
/// Weight of a term's matches in fields other than its best one.
const OTHER_FIELDS: f64 = 0.15;

/// Match levels of one vocabulary term against one query term.
const LEVEL_NONE: u8 = 0;
const LEVEL_SUBSTRING: u8 = 1;
const LEVEL_PREFIX: u8 = 2;
const LEVEL_SYNONYM: u8 = 3;
const LEVEL_EXACT: u8 = 4;
const LEVEL_VALUE: [f64; 5] = [0.0, 0.3, 0.6, 0.85, 1.0];

const NAME_PRECISION: f64 = 16.0;
const SUMMARY_PRECISION: f64 = 6.0;
const FULL_COVERAGE: f64 = 15.0;
const PARTIAL_COVERAGE: f64 = 8.0;
const PHRASE_IN_NAME: f64 = 5.0;
const PHRASE_IN_SUMMARY: f64 = 4.0;
const EXACT_NAME_OR_PATH: f64 = 20.0;

/// Words that say nothing about which tool is meant.
const STOP_WORDS: [&str; 24] = [
    "a", "an", "the", "of", "for", "to", "in", "on", "by", "with", "and", "or", "from", "into",
    "this", "that", "it", "its", "is", "be", "as", "at", "all", "some",
];

/// Words agents use for the same thing: each maps to the first of its group.
const SYNONYMS: [&[&str]; 10] = [
    &["create", "add", "new", "post", "make", "insert", "open"],
    &[
        "get", "retrieve", "fetch", "read", "show", "view", "describe", "lookup",
    ],
    &["list", "enumerate", "browse"],
    &["update", "edit", "modify", "change", "patch", "put", "set"],
    &["delete", "remove", "destroy", "del", "erase"],
    &["repository", "repo"],
    &["organization", "org", "organisation"],
    &["authenticated", "my", "me", "mine", "current"],
    &["user", "member"],
    &["webhook", "hook"],
];

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

/// Normalised text of one catalog entry plus the span of its interned terms.
struct Prepared {
    /// Normalised text of the name and the summary, for phrase matches.
    name_raw: Box<str>,
    summary_raw: Box<str>,
    path_raw: Box<str>,
    /// Field `f`'s term ids are `SearchIndex::terms[tok[f]..tok[f + 1]]`.
    tok: [u32; FIELDS + 1],
    /// Terms of the name and of the summary that carry meaning (not stop words).
    name_content: u16,
    summary_content: u16,
    /// Position of this entry in path order.
    path_rank: u32,
}

/// Pre-normalised index over a catalog snapshot. Build once per catalog change.
pub struct SearchIndex {
    entries: Vec<SearchEntry>,
    prepared: Vec<Prepared>,
    /// Term ids of every field of every entry, back to back.
    terms: Vec<u32>,
    /// Interned term text by id, its synonym group (or its own id) and whether it carries meaning.
    vocab: Vec<Box<str>>,
    canon: Vec<u32>,
    content: Vec<bool>,
    vocab_ids: HashMap<Box<str>, u32>,
    /// Entries whose name or summary holds a term of each canonical id.
    names_holding: Vec<u32>,
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

/// The description's first line (the summary) and the rest.
fn split_summary(description: &str) -> (&str, &str) {
    let description = description.trim_start();
    match description.find('\n') {
        Some(at) => (&description[..at], &description[at + 1..]),
        None => (description, ""),
    }
}

impl SearchIndex {
    pub fn new(entries: Vec<SearchEntry>) -> Self {
        assert!(
            entries.len() < u32::MAX as usize,
            "search index holds at most u32::MAX entries"
        );
        let mut vocab: Vec<Box<str>> = Vec::new();
        let mut canon: Vec<u32> = Vec::new();
        let mut content: Vec<bool> = Vec::new();
        let mut vocab_ids: HashMap<Box<str>, u32> = HashMap::new();
        let mut terms: Vec<u32> = Vec::new();
        let mut prepared = Vec::with_capacity(entries.len());
        let mut names_holding: Vec<u32> = Vec::new();
        let mut seen_in_entry: Vec<u32> = Vec::new();

        for (idx, entry) in entries.iter().enumerate() {
            let (summary, rest) = split_summary(&entry.description);
            let raw = [
                entry.path.as_str(),
                entry.integration.as_str(),
                entry.name.as_str(),
                summary,
                rest,
            ]
            .map(normalize_text);
            let mut tok = [0u32; FIELDS + 1];
            tok[0] = to_u32(terms.len());
            let (mut name_content, mut summary_content) = (0u16, 0u16);
            for (field, text) in raw.iter().enumerate() {
                for token in split_tokens(text) {
                    let term = stem(token);
                    let id = intern(&mut vocab, &mut canon, &mut content, &mut vocab_ids, &term);
                    terms.push(id);
                    if content[id as usize] && (field == FIELD_NAME || field == FIELD_SUMMARY) {
                        if field == FIELD_NAME {
                            name_content = name_content.saturating_add(1);
                        } else {
                            summary_content = summary_content.saturating_add(1);
                        }
                        let c = canon[id as usize] as usize;
                        if names_holding.len() <= c {
                            names_holding.resize(c + 1, 0);
                            seen_in_entry.resize(c + 1, u32::MAX);
                        }
                        if seen_in_entry[c] != to_u32(idx) {
                            seen_in_entry[c] = to_u32(idx);
                            names_holding[c] += 1;
                        }
                    }
                }
                tok[field + 1] = to_u32(terms.len());
            }
            let [path_raw, _, name_raw, summary_raw, _] = raw;
            prepared.push(Prepared {
                name_raw: name_raw.into_boxed_str(),
                summary_raw: summary_raw.into_boxed_str(),
                path_raw: path_raw.into_boxed_str(),
                tok,
                name_content,
                summary_content,
                path_rank: 0,
            });
        }
        names_holding.resize(vocab.len(), 0);

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
            terms,
            vocab,
            canon,
            content,
            vocab_ids,
            names_holding,
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
        let all_tokens: Vec<&str> = split_tokens(query_raw).collect();
        if all_tokens.is_empty() {
            return SearchPage::empty();
        }
        let meaningful: Vec<&str> = all_tokens
            .iter()
            .copied()
            .filter(|t| !STOP_WORDS.contains(t))
            .collect();
        let query_tokens = if meaningful.is_empty() {
            all_tokens
        } else {
            meaningful
        };

        // Namespace filter: token-prefix match on integration or path (on the index's terms).
        let ns_ids: Option<Vec<u32>> = match namespace.map(normalize) {
            Some(ns_tokens) if !ns_tokens.is_empty() => {
                let mut ids = Vec::with_capacity(ns_tokens.len());
                for token in &ns_tokens {
                    match self.vocab_ids.get(&*stem(token)) {
                        Some(&id) => ids.push(id),
                        // No indexed term equals it, so no entry can match the prefix.
                        None => return SearchPage::empty(),
                    }
                }
                Some(ids)
            }
            _ => None,
        };

        // Distinct query terms with their multiplicity and weight (rarer terms weigh more).
        let mut distinct: Vec<Cow<'_, str>> = Vec::new();
        let mut multiplicity: Vec<f64> = Vec::new();
        for token in &query_tokens {
            let term = stem(token);
            match distinct.iter().position(|t| *t == term) {
                Some(slot) => multiplicity[slot] += 1.0,
                None => {
                    distinct.push(term);
                    multiplicity.push(1.0);
                }
            }
        }
        let d = distinct.len();
        let query_canon: Vec<&str> = distinct.iter().map(|t| canonical(t)).collect();
        let entries_n = self.entries.len() as f64;
        let rarity: Vec<f64> = query_canon
            .iter()
            .map(|c| {
                let holding = self
                    .vocab_ids
                    .get(*c)
                    .map(|&id| self.names_holding[self.canon[id as usize] as usize])
                    .unwrap_or(0) as f64;
                0.5 + ((entries_n + 1.0) / (holding + 1.0)).ln() / (entries_n + 1.0).ln().max(1.0)
            })
            .collect();

        // Classify every vocabulary term against every distinct query term once; keep only the
        // non-zero levels, as (slot, level) lists per vocabulary id.
        let mut match_start: Vec<u32> = Vec::with_capacity(self.vocab.len() + 1);
        let mut matches: Vec<(u32, u8)> = Vec::new();
        for (id, term) in self.vocab.iter().enumerate() {
            match_start.push(to_u32(matches.len()));
            let term_canon = &*self.vocab[self.canon[id] as usize];
            for (slot, q) in distinct.iter().enumerate() {
                let level = classify(term, q, term_canon == query_canon[slot]);
                if level != LEVEL_NONE {
                    matches.push((to_u32(slot), level));
                }
            }
        }
        match_start.push(to_u32(matches.len()));

        // Per-(field, slot) best level, invalidated by bumping an entry generation.
        let mut level = vec![LEVEL_NONE; d * FIELDS];
        let mut level_gen = vec![0u32; d * FIELDS];
        let mut entry_gen = 0u32;
        let mut candidates: Vec<(i64, u32, u32)> = Vec::new();

        for (idx, prep) in self.prepared.iter().enumerate() {
            if let Some(ns) = &ns_ids
                && !(self.field_terms(prep, FIELD_INTEGRATION).starts_with(ns)
                    || self.field_terms(prep, FIELD_PATH).starts_with(ns))
            {
                continue;
            }
            entry_gen += 1;
            let (mut name_hits, mut summary_hits) = (0.0f64, 0.0f64);
            let mut any = false;
            for field in 0..FIELDS {
                for &t in self.field_terms(prep, field) {
                    let cells = &matches[match_start[t as usize] as usize..]
                        [..(match_start[t as usize + 1] - match_start[t as usize]) as usize];
                    let mut strongest = LEVEL_NONE;
                    for &(slot, lvl) in cells {
                        any = true;
                        strongest = strongest.max(lvl);
                        let cell = field * d + slot as usize;
                        if level_gen[cell] != entry_gen {
                            level_gen[cell] = entry_gen;
                            level[cell] = lvl;
                        } else if lvl > level[cell] {
                            level[cell] = lvl;
                        }
                    }
                    if strongest >= LEVEL_PREFIX && self.content[t as usize] {
                        let covered = LEVEL_VALUE[strongest as usize];
                        match field {
                            FIELD_NAME => name_hits += covered,
                            FIELD_SUMMARY => summary_hits += covered,
                            _ => {}
                        }
                    }
                }
            }
            if !any {
                continue;
            }

            let mut score = 0.0f64;
            let mut hits = 0usize;
            for slot in 0..d {
                let (mut best, mut sum) = (0.0f64, 0.0f64);
                for (field, weight) in FIELD_WEIGHTS.iter().enumerate() {
                    let cell = field * d + slot;
                    if level_gen[cell] == entry_gen {
                        let v = LEVEL_VALUE[level[cell] as usize] * weight;
                        best = best.max(v);
                        sum += v;
                    }
                }
                if best > 0.0 {
                    hits += 1;
                    score +=
                        rarity[slot] * multiplicity[slot] * (best + OTHER_FIELDS * (sum - best));
                }
            }
            let phrase_in_name = prep.name_raw.contains(query_raw);
            let phrase_in_summary = prep.summary_raw.contains(query_raw);
            let phrase = phrase_in_name || phrase_in_summary;
            let enough = if d <= 2 { hits == d } else { hits * 5 >= d * 3 };
            if hits == 0 || (!enough && !phrase) {
                continue;
            }
            if phrase_in_name {
                score += PHRASE_IN_NAME;
            }
            if phrase_in_summary {
                score += PHRASE_IN_SUMMARY;
            }
            score += if hits == d {
                FULL_COVERAGE
            } else {
                PARTIAL_COVERAGE * hits as f64 / d as f64
            };
            if prep.name_content > 0 {
                score += NAME_PRECISION * name_hits / f64::from(prep.name_content);
            }
            if prep.summary_content > 0 {
                score += SUMMARY_PRECISION * summary_hits / f64::from(prep.summary_content);
            }
            if &*prep.path_raw == query_raw || &*prep.name_raw == query_raw {
                score += EXACT_NAME_OR_PATH;
            }
            candidates.push(((score * 10.0).round() as i64, prep.path_rank, to_u32(idx)));
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

    fn field_terms(&self, prep: &Prepared, field: usize) -> &[u32] {
        &self.terms[prep.tok[field] as usize..prep.tok[field + 1] as usize]
    }
}

/// Interns `term`, and its synonym group's head so `canon` can point at it.
fn intern(
    vocab: &mut Vec<Box<str>>,
    canon: &mut Vec<u32>,
    content: &mut Vec<bool>,
    ids: &mut HashMap<Box<str>, u32>,
    term: &str,
) -> u32 {
    if let Some(&id) = ids.get(term) {
        return id;
    }
    let head = canonical(term);
    let head_id = if head == term {
        None
    } else {
        Some(intern(vocab, canon, content, ids, head))
    };
    let id = to_u32(vocab.len());
    vocab.push(term.into());
    canon.push(head_id.unwrap_or(id));
    content.push(term.len() > 1 && !STOP_WORDS.contains(&term));
    ids.insert(term.into(), id);
    id
}

/// The head of `term`'s synonym group, or `term`.
fn canonical(term: &str) -> &str {
    SYNONYMS
        .iter()
        .find(|group| group.contains(&term))
        .map_or(term, |group| group[0])
}

/// Plural to singular, for the English words APIs name things with: `repositories` →
/// `repository`, `branches` → `branch`, `statuses` → `status`, `pulls` → `pull`; `status`,
/// `address`, `analysis` stay.
fn stem(token: &str) -> Cow<'_, str> {
    let n = token.len();
    if n <= 3 || !token.is_ascii() {
        return Cow::Borrowed(token);
    }
    if n > 4 && token.ends_with("ies") {
        return Cow::Owned(format!("{}y", &token[..n - 3]));
    }
    for suffix in ["sses", "shes", "ches", "xes", "uses"] {
        if n > suffix.len() + 1 && token.ends_with(suffix) {
            return Cow::Borrowed(&token[..n - 2]);
        }
    }
    if token.ends_with('s')
        && !token.ends_with("ss")
        && !token.ends_with("us")
        && !token.ends_with("is")
    {
        return Cow::Borrowed(&token[..n - 1]);
    }
    Cow::Borrowed(token)
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

fn classify(term: &str, query: &str, same_group: bool) -> u8 {
    if term == query {
        LEVEL_EXACT
    } else if same_group {
        LEVEL_SYNONYM
    } else if term.len().min(query.len()) >= 3
        && (term.starts_with(query) || query.starts_with(term))
    {
        LEVEL_PREFIX
    } else if query.len() >= 4 && term.contains(query) {
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
        assert_eq!(classify("issue", "issue", true), LEVEL_EXACT);
        assert_eq!(classify("post", "create", true), LEVEL_SYNONYM);
        assert_eq!(classify("issue", "iss", false), LEVEL_PREFIX);
        assert_eq!(classify("iss", "issue", false), LEVEL_PREFIX);
        assert_eq!(classify("reissue", "issue", false), LEVEL_SUBSTRING);
        assert_eq!(classify("repo", "issue", false), LEVEL_NONE);
        // Short words only match whole: "a" is not a prefix of everything.
        assert_eq!(classify("an", "a", false), LEVEL_NONE);
    }

    #[test]
    fn stems_and_synonyms() {
        assert_eq!(stem("repositories"), "repository");
        assert_eq!(stem("statuses"), "status");
        assert_eq!(stem("repository"), "repository");
        assert_eq!(stem("branches"), "branch");
        assert_eq!(stem("pulls"), "pull");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("address"), "address");
        assert_eq!(stem("gas"), "gas");
        assert_eq!(canonical("repo"), "repository");
        assert_eq!(canonical("post"), "create");
        assert_eq!(canonical("issue"), "issue");
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
