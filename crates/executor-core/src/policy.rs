//! Tool policies (spec §1.6): the pattern grammar, rule ordering by fractional position, default
//! placement by specificity and resolution across owners.
//!
//! A tool's *policy id* is what patterns match against: `<integration>.<owner>.<connection>.<tool>`
//! for dynamic tools (no `tools.` root; the tool part may contain dots) and the fqid for static
//! tools (`executor.coreTools.policies.create`).
//!
//! Build a [`PolicySet`] once per operation and resolve every tool against it; the rules are
//! sorted once, never per tool.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::address::Owner;

// ---------------------------------------------------------------------------------------------
// Actions
// ---------------------------------------------------------------------------------------------

/// What a rule does with the tools it matches. Ordered by restrictiveness:
/// `Approve < RequireApproval < Block`, so `max` picks the most restrictive.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum PolicyAction {
    Approve,
    RequireApproval,
    Block,
}

impl PolicyAction {
    pub const ALL: [PolicyAction; 3] = [
        PolicyAction::Approve,
        PolicyAction::RequireApproval,
        PolicyAction::Block,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyAction::Approve => "approve",
            PolicyAction::RequireApproval => "require_approval",
            PolicyAction::Block => "block",
        }
    }
}

impl fmt::Display for PolicyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action string that is not one of the three actions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy action must be \"approve\", \"require_approval\" or \"block\", got {0:?}")]
pub struct ActionError(pub String);

impl FromStr for PolicyAction {
    type Err = ActionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "approve" => Ok(PolicyAction::Approve),
            "require_approval" => Ok(PolicyAction::RequireApproval),
            "block" => Ok(PolicyAction::Block),
            other => Err(ActionError(other.to_owned())),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Patterns
// ---------------------------------------------------------------------------------------------

/// Longest pattern accepted, in bytes. Real tool ids are far shorter.
pub const MAX_PATTERN_LEN: usize = 1024;

/// Why a pattern was rejected. `Display` is a sentence meant for the person who wrote it.
/// Segment positions are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("the pattern is empty; use \"*\" to match every tool")]
    Empty,
    #[error("the pattern is {len} bytes long; at most {max} are allowed")]
    TooLong { len: usize, max: usize },
    #[error(
        "the pattern starts with '.'; start with the integration, e.g. \"github.*\" or \"github.*.*.create_issue\""
    )]
    LeadingDot,
    #[error(
        "the pattern ends with '.'; end with a segment name, or with \".*\" to match everything below the prefix"
    )]
    TrailingDot,
    #[error("segment {position} is empty (\"..\"); segments are separated by a single '.'")]
    EmptySegment { position: usize },
    #[error(
        "segment {position} ({segment:?}) mixes letters with '*'; a wildcard must be a whole segment (\"*\")"
    )]
    PartialWildcard { position: usize, segment: String },
    #[error(
        "segment {position} is {segment:?}; write a single \"*\" (a trailing \"*\" already matches everything deeper)"
    )]
    RepeatedWildcard { position: usize, segment: String },
    #[error(
        "the pattern starts with \"*\"; only \"*\" on its own may (it matches every tool); start with the integration, e.g. \"github.*\""
    )]
    LeadingWildcard,
    #[error(
        "segment {position} ({segment:?}) contains {ch:?}; tool ids never contain whitespace or control characters"
    )]
    InvalidCharacter {
        position: usize,
        segment: String,
        ch: char,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Segment {
    Literal(String),
    /// A non-trailing `*`: exactly one segment.
    One,
}

/// A validated policy pattern (spec §1.6).
///
/// - `*` alone matches every tool id;
/// - otherwise segments are separated by `.` and a `*` is always a whole segment;
/// - a trailing `*` matches the prefix plus anything deeper, or nothing more
///   (`github.*` matches `github` and `github.org.main.x`);
/// - a non-trailing `*` matches exactly one segment (`vercel.*.*.dns.create`);
/// - without a trailing `*` the tool id must have exactly as many segments as the pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PolicyPattern {
    raw: String,
    /// Segments before the trailing `*` (all of them for an exact pattern); empty for `*`.
    segments: Vec<Segment>,
    trailing_wildcard: bool,
}

impl PolicyPattern {
    pub fn parse(raw: &str) -> Result<Self, PatternError> {
        if raw.is_empty() {
            return Err(PatternError::Empty);
        }
        if raw.len() > MAX_PATTERN_LEN {
            return Err(PatternError::TooLong {
                len: raw.len(),
                max: MAX_PATTERN_LEN,
            });
        }
        if raw == "*" {
            return Ok(Self {
                raw: raw.to_owned(),
                segments: Vec::new(),
                trailing_wildcard: true,
            });
        }
        let parts: Vec<&str> = raw.split('.').collect();
        let last = parts.len() - 1;
        let mut segments = Vec::with_capacity(parts.len());
        let mut trailing_wildcard = false;
        for (i, part) in parts.iter().enumerate() {
            let position = i + 1;
            if part.is_empty() {
                return Err(match i {
                    0 => PatternError::LeadingDot,
                    _ if i == last => PatternError::TrailingDot,
                    _ => PatternError::EmptySegment { position },
                });
            }
            if let Some(ch) = part.chars().find(|c| c.is_whitespace() || c.is_control()) {
                return Err(PatternError::InvalidCharacter {
                    position,
                    segment: (*part).to_owned(),
                    ch,
                });
            }
            if *part == "*" {
                if i == 0 {
                    return Err(PatternError::LeadingWildcard);
                }
                if i == last {
                    trailing_wildcard = true;
                } else {
                    segments.push(Segment::One);
                }
            } else if part.contains('*') {
                let segment = (*part).to_owned();
                return Err(if part.chars().all(|c| c == '*') {
                    PatternError::RepeatedWildcard { position, segment }
                } else {
                    PatternError::PartialWildcard { position, segment }
                });
            } else {
                segments.push(Segment::Literal((*part).to_owned()));
            }
        }
        Ok(Self {
            raw: raw.to_owned(),
            segments,
            trailing_wildcard,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// `*` alone.
    pub fn is_universal(&self) -> bool {
        self.segments.is_empty() && self.trailing_wildcard
    }

    /// Whether this pattern matches a tool policy id. Allocation-free.
    pub fn matches(&self, tool_id: &str) -> bool {
        let mut tool = tool_id.split('.');
        for segment in &self.segments {
            let Some(part) = tool.next() else {
                return false;
            };
            if let Segment::Literal(literal) = segment
                && literal != part
            {
                return false;
            }
        }
        self.trailing_wildcard || tool.next().is_none()
    }

    /// Specificity (higher = more specific): `*` = 0; a trailing-`*` pattern = 2 × its literal
    /// segments (`a.b.*` = 4); an exact pattern = 2 × its literal segments + 1 (`a.b.c` = 7).
    /// Non-trailing `*` segments are not literal: `vercel.*.*.dns.create` = 7, below the fully
    /// literal `vercel.org.main.dns.create` = 11.
    pub fn specificity(&self) -> u32 {
        let literals = self
            .segments
            .iter()
            .filter(|s| matches!(s, Segment::Literal(_)))
            .count();
        let literals = u32::try_from(literals).unwrap_or(u32::MAX / 4);
        if self.trailing_wildcard {
            2 * literals
        } else {
            2 * literals + 1
        }
    }
}

impl fmt::Display for PolicyPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl FromStr for PolicyPattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for PolicyPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.raw)
    }
}

impl<'de> serde::Deserialize<'de> for PolicyPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Self::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// How many of the given tool ids a pattern matches (the API reports `matches: 0` for a rule
/// that matches nothing, e.g. `integration.connection.tool` written without the owner segment).
pub fn count_matches<'a>(
    pattern: &PolicyPattern,
    tool_ids: impl IntoIterator<Item = &'a str>,
) -> usize {
    tool_ids
        .into_iter()
        .filter(|id| pattern.matches(id))
        .count()
}

// ---------------------------------------------------------------------------------------------
// Rules and resolution
// ---------------------------------------------------------------------------------------------

/// Who wrote a rule. A person writes through the HTTP API (the console); an agent through the
/// `policies.*` core tools from inside an execution. An agent's rule never loosens a person's
/// `block` (see [`PolicySet::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PolicyAuthor {
    #[default]
    Person,
    Agent,
}

impl PolicyAuthor {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyAuthor::Person => "person",
            PolicyAuthor::Agent => "agent",
        }
    }
}

impl fmt::Display for PolicyAuthor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyAuthor {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "person" => Ok(PolicyAuthor::Person),
            "agent" => Ok(PolicyAuthor::Agent),
            other => Err(format!(
                "policy author must be \"person\" or \"agent\", got {other:?}"
            )),
        }
    }
}

/// One stored rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    pub id: String,
    pub owner: Owner,
    pub pattern: PolicyPattern,
    pub action: PolicyAction,
    /// Fractional-indexing key; lower sorts first and takes precedence.
    pub position: String,
    pub author: PolicyAuthor,
}

/// Which rule decided a tool's action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A stored rule matched (the most restrictive of each owner's first match).
    Rule {
        action: PolicyAction,
        rule_id: String,
        pattern: String,
        owner: Owner,
        author: PolicyAuthor,
    },
    /// No rule matched: the plugin's `requiresApproval` annotation decides.
    PluginDefault { action: PolicyAction },
    /// The active toolkit does not grant the tool: blocked before any rule is read.
    NotGranted { reason: NotGranted },
}

/// Why a toolkit leaves a tool out (spec §1.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotGranted {
    /// No toolkit the caller can see has the session's slug.
    NoToolkit,
    /// The toolkit is the organisation's and the tool is on a user's own connection.
    PersonalTool,
    /// None of the toolkit's connection patterns matches the tool.
    NoConnection,
}

impl NotGranted {
    pub fn as_str(self) -> &'static str {
        match self {
            NotGranted::NoToolkit => "no_toolkit",
            NotGranted::PersonalTool => "personal_tool",
            NotGranted::NoConnection => "not_granted",
        }
    }
}

/// What a toolkit lets through: the patterns of its connections, and whose toolkit it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitGrant {
    pub owner: Owner,
    pub connections: Vec<PolicyPattern>,
}

impl ToolkitGrant {
    /// Why `tool_id` is not granted, if it is not.
    fn refuses(&self, tool_id: &str) -> Option<NotGranted> {
        if self.owner == Owner::Org && tool_id.split('.').nth(1) == Some(Owner::User.as_str()) {
            return Some(NotGranted::PersonalTool);
        }
        (!self.connections.iter().any(|p| p.matches(tool_id))).then_some(NotGranted::NoConnection)
    }
}

/// Which tools a [`PolicySet`] may allow at all.
#[derive(Debug, Clone, Default)]
enum Reach {
    /// Every tool (global policies).
    #[default]
    All,
    /// What a toolkit grants.
    Toolkit(ToolkitGrant),
    /// Nothing: the session's toolkit does not exist.
    Nothing,
}

impl Decision {
    pub fn action(&self) -> PolicyAction {
        match self {
            Decision::Rule { action, .. } | Decision::PluginDefault { action } => *action,
            Decision::NotGranted { .. } => PolicyAction::Block,
        }
    }

    /// The wire name of where the decision came from: `"user"` for a stored (user-authored)
    /// rule of either owner, `"plugin-default"` otherwise.
    pub fn source(&self) -> &'static str {
        match self {
            Decision::Rule { .. } => "user",
            Decision::PluginDefault { .. } => "plugin-default",
            Decision::NotGranted { .. } => "toolkit",
        }
    }

    /// The matched pattern, when a rule decided.
    pub fn pattern(&self) -> Option<&str> {
        match self {
            Decision::Rule { pattern, .. } => Some(pattern),
            Decision::PluginDefault { .. } | Decision::NotGranted { .. } => None,
        }
    }

    /// The matched rule's id, when a rule decided.
    pub fn rule_id(&self) -> Option<&str> {
        match self {
            Decision::Rule { rule_id, .. } => Some(rule_id),
            Decision::PluginDefault { .. } | Decision::NotGranted { .. } => None,
        }
    }

    fn from_rule(rule: &PolicyRule) -> Self {
        Decision::Rule {
            action: rule.action,
            rule_id: rule.id.clone(),
            pattern: rule.pattern.as_str().to_owned(),
            owner: rule.owner,
            author: rule.author,
        }
    }
}

fn owner_rank(owner: Owner) -> u8 {
    match owner {
        Owner::User => 0,
        Owner::Org => 1,
    }
}

/// Listing order within one owner: position (byte-wise lexicographic), then id.
fn by_position(a: &PolicyRule, b: &PolicyRule) -> Ordering {
    a.position.cmp(&b.position).then_with(|| a.id.cmp(&b.id))
}

/// A sorted snapshot of rules: build once per operation, resolve many tools.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    /// User rules first, then org rules, each by position then id.
    rules: Vec<PolicyRule>,
    /// `rules[..user_len]` are the user's.
    user_len: usize,
    /// Some rule was written by an agent, so resolution also consults the people's rules alone.
    has_agent_rules: bool,
    reach: Reach,
}

impl PolicySet {
    /// Sorts the rules: user rules first, then org rules, each by position, ties by id.
    pub fn new(mut rules: Vec<PolicyRule>) -> Self {
        rules.sort_by(|a, b| {
            owner_rank(a.owner)
                .cmp(&owner_rank(b.owner))
                .then_with(|| by_position(a, b))
        });
        let user_len = rules.partition_point(|r| r.owner == Owner::User);
        let has_agent_rules = rules.iter().any(|r| r.author == PolicyAuthor::Agent);
        Self {
            rules,
            user_len,
            has_agent_rules,
            reach: Reach::All,
        }
    }

    /// A toolkit's set (spec §1.9): the toolkit is the only source. `None` (no such toolkit)
    /// blocks every tool; otherwise a tool no connection pattern grants is blocked (and every
    /// user-owned tool when the toolkit is the organisation's), then `rules` (the toolkit's
    /// policies, all of its owner) resolve as usual.
    pub fn toolkit(grant: Option<ToolkitGrant>, rules: Vec<PolicyRule>) -> Self {
        let reach = match grant {
            Some(grant) => Reach::Toolkit(grant),
            None => Reach::Nothing,
        };
        Self {
            reach,
            ..Self::new(rules)
        }
    }

    /// Whether this set is a toolkit's.
    pub fn is_toolkit(&self) -> bool {
        !matches!(self.reach, Reach::All)
    }

    fn refuses(&self, tool_id: &str) -> Option<NotGranted> {
        match &self.reach {
            Reach::All => None,
            Reach::Toolkit(grant) => grant.refuses(tool_id),
            Reach::Nothing => Some(NotGranted::NoToolkit),
        }
    }

    /// All rules in listing order (user first, then org, each by position).
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// One owner's rules in precedence order.
    pub fn rules_of(&self, owner: Owner) -> &[PolicyRule] {
        match owner {
            Owner::User => &self.rules[..self.user_len],
            Owner::Org => &self.rules[self.user_len..],
        }
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule of `owner` that matches `tool_id`, by precedence.
    pub fn first_match(&self, owner: Owner, tool_id: &str) -> Option<&PolicyRule> {
        self.rules_of(owner)
            .iter()
            .find(|r| r.pattern.matches(tool_id))
    }

    /// The effective decision for a tool: each owner contributes its first matching rule and the
    /// most restrictive of those wins, so a user rule can never loosen an org rule (on a tie the
    /// user's rule, listed first, is reported). No match → the plugin default: `require_approval`
    /// when the tool's annotation says so, else `approve`.
    ///
    /// Rules written by agents cannot loosen a `block` written by a person: when the people's
    /// rules alone resolve to `block`, that block stands whatever agent rules precede it. The
    /// people's own exceptions still hold (a person's `approve` above a person's broader `block`
    /// is resolved among people's rules first), and an agent may still tighten anything.
    pub fn resolve(&self, tool_id: &str, requires_approval_by_default: bool) -> Decision {
        let decision = self.resolve_among(tool_id, requires_approval_by_default, |_| true);
        if self.has_agent_rules && decision.action() != PolicyAction::Block {
            let people = self.resolve_people(tool_id, requires_approval_by_default);
            if people.action() == PolicyAction::Block {
                return people;
            }
        }
        decision
    }

    /// The decision of the rules people wrote, as if agents had written none.
    pub fn resolve_people(&self, tool_id: &str, requires_approval_by_default: bool) -> Decision {
        self.resolve_among(tool_id, requires_approval_by_default, |r| {
            r.author == PolicyAuthor::Person
        })
    }

    fn resolve_among(
        &self,
        tool_id: &str,
        requires_approval_by_default: bool,
        counts: impl Fn(&PolicyRule) -> bool,
    ) -> Decision {
        if let Some(reason) = self.refuses(tool_id) {
            return Decision::NotGranted { reason };
        }
        let first = |owner| {
            self.rules_of(owner)
                .iter()
                .find(|r| counts(r) && r.pattern.matches(tool_id))
        };
        let winner = match (first(Owner::User), first(Owner::Org)) {
            (Some(u), Some(o)) => Some(if o.action > u.action { o } else { u }),
            (one, None) | (None, one) => one,
        };
        match winner {
            Some(rule) => Decision::from_rule(rule),
            None => Decision::PluginDefault {
                action: if requires_approval_by_default {
                    PolicyAction::RequireApproval
                } else {
                    PolicyAction::Approve
                },
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Positions (fractional indexing)
// ---------------------------------------------------------------------------------------------

/// Longest caller-supplied position accepted, in bytes.
pub const MAX_POSITION_LEN: usize = 1024;

/// The key alphabet, in ascending byte order (so string order is digit order).
const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Why a position was rejected or no key could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    #[error("the position is empty; positions are non-empty strings of [0-9A-Za-z]")]
    Empty,
    #[error("the position is {len} bytes long; at most {max} are allowed")]
    TooLong { len: usize, max: usize },
    #[error(
        "the position contains {ch:?} at character {index}; positions use only the characters 0-9, A-Z and a-z"
    )]
    InvalidCharacter { index: usize, ch: char },
    #[error(
        "cannot place a key between {before:?} and {after:?}: the first must sort before the second"
    )]
    NotOrdered { before: String, after: String },
    #[error(
        "no key sorts strictly between {before:?} and {after:?} (the second is the first followed by '0's); pick other neighbours"
    )]
    NoRoom { before: String, after: String },
}

/// Checks a caller-supplied position: non-empty, at most [`MAX_POSITION_LEN`] bytes, only
/// `[0-9A-Za-z]`.
pub fn validate_position(raw: &str) -> Result<(), PositionError> {
    if raw.is_empty() {
        return Err(PositionError::Empty);
    }
    if let Some((index, ch)) = raw
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_alphanumeric())
    {
        return Err(PositionError::InvalidCharacter {
            index: index + 1,
            ch,
        });
    }
    if raw.len() > MAX_POSITION_LEN {
        return Err(PositionError::TooLong {
            len: raw.len(),
            max: MAX_POSITION_LEN,
        });
    }
    Ok(())
}

/// A key strictly between `before` and `after` (`None` = open end); lower keys take precedence.
///
/// Keys use the format of the `fractional-indexing` package (a length-prefixed integer part plus
/// a fraction; the first key is `"a0"`), so appends and prepends grow keys only logarithmically
/// and repeated inserts between two neighbours grow them by about one character per six inserts.
/// Any other `[0-9A-Za-z]` key is still accepted and handled by plain lexicographic bisection.
/// Between two distinct keys produced here there is always room; the only impossible case is
/// `after` = `before` followed by `'0'`s ([`PositionError::NoRoom`]).
pub fn key_between(before: Option<&str>, after: Option<&str>) -> Result<String, PositionError> {
    if let Some(key) = before {
        validate_position(key)?;
    }
    if let Some(key) = after {
        validate_position(key)?;
    }
    if let (Some(a), Some(b)) = (before, after)
        && a >= b
    {
        return Err(PositionError::NotOrdered {
            before: a.to_owned(),
            after: b.to_owned(),
        });
    }
    let (a, b) = (before.map(str::as_bytes), after.map(str::as_bytes));
    let structured = a.is_none_or(fractional::is_valid) && b.is_none_or(fractional::is_valid);
    let key = if structured {
        fractional::between(a, b)
    } else {
        None
    };
    key.or_else(|| fractional::midpoint(a.unwrap_or_default(), b))
        .map(|bytes| bytes.into_iter().map(char::from).collect())
        .ok_or_else(|| PositionError::NoRoom {
            before: before.unwrap_or_default().to_owned(),
            after: after.unwrap_or_default().to_owned(),
        })
}

/// Default position for a new rule of `owner` when the caller gives none (spec §1.6): just below
/// every existing rule of that owner that is MORE specific than `pattern`, and above the rule
/// that follows the last of them. When the owner's rules are ordered by decreasing specificity
/// this is "before the first equally or less specific rule"; when a user has reordered them, the
/// new rule still never shadows a more specific one. Other owners' rules are ignored.
pub fn default_position(existing: &[PolicyRule], owner: Owner, pattern: &PolicyPattern) -> String {
    let mut mine: Vec<&PolicyRule> = existing.iter().filter(|r| r.owner == owner).collect();
    mine.sort_by(|a, b| by_position(a, b));
    let specificity = pattern.specificity();
    let idx = mine
        .iter()
        .rposition(|r| r.pattern.specificity() > specificity)
        .map_or(0, |i| i + 1);
    let before = idx.checked_sub(1).map(|i| mine[i].position.as_str());
    let after = mine[idx..]
        .iter()
        .map(|r| r.position.as_str())
        .find(|p| before.is_none_or(|b| *p > b));
    let last = mine.last().map(|r| r.position.as_str());
    key_between(before, after)
        .or_else(|_| key_between(last, None))
        // Only reachable with invalid stored positions: any string followed by more sorts after it.
        .unwrap_or_else(|_| format!("{}V", last.unwrap_or_default()))
}

/// Base-36 (`0-9a-z`) digits of `n`, most significant first.
fn base36(mut n: u64) -> String {
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(ALPHABET[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.into_iter().rev().map(char::from).collect()
}

/// A policy id, `pol_<random base36><time base36>`: the random part is zero-padded to 13
/// characters (the width of `u64::MAX`) so every id has the same shape; negative times count as 0.
pub fn policy_id(random: u64, now_ms: i64) -> String {
    prefixed_id("pol", random, now_ms)
}

/// An id of the policy-id shape under another prefix (`tk`, `tkpol`, `tkconn`).
pub fn prefixed_id(prefix: &str, random: u64, now_ms: i64) -> String {
    let time = u64::try_from(now_ms).unwrap_or(0);
    format!("{prefix}_{:0>13}{}", base36(random), base36(time))
}

/// Fractional-indexing keys in the format of David Greenspan's `fractional-indexing` (base 62).
mod fractional {
    use super::DIGITS;

    const BASE: usize = 62;
    /// The smallest integer part, `A` followed by 26 zeros; it may not stand alone as a key.
    const SMALLEST_INTEGER_LEN: usize = 27;

    fn value(digit: u8) -> usize {
        match digit {
            b'0'..=b'9' => usize::from(digit - b'0'),
            b'A'..=b'Z' => usize::from(digit - b'A') + 10,
            b'a'..=b'z' => usize::from(digit - b'a') + 36,
            _ => 0,
        }
    }

    /// Length of the integer part announced by the head character.
    fn integer_len(head: u8) -> Option<usize> {
        match head {
            b'a'..=b'z' => Some(usize::from(head - b'a') + 2),
            b'A'..=b'Z' => Some(usize::from(b'Z' - head) + 2),
            _ => None,
        }
    }

    fn is_smallest_integer(int: &[u8]) -> bool {
        int.len() == SMALLEST_INTEGER_LEN && int[0] == b'A' && int[1..].iter().all(|&d| d == b'0')
    }

    /// Splits a key into its integer part and fraction.
    fn split(key: &[u8]) -> Option<(&[u8], &[u8])> {
        let len = integer_len(*key.first()?)?;
        (len <= key.len()).then(|| key.split_at(len))
    }

    /// Whether `key` (already known to be alphanumeric) is a well-formed structured key.
    pub(super) fn is_valid(key: &[u8]) -> bool {
        !is_smallest_integer(key)
            && split(key).is_some_and(|(_, fraction)| fraction.last() != Some(&b'0'))
    }

    fn increment_integer(int: &[u8]) -> Option<Vec<u8>> {
        let head = int[0];
        let mut digits = int[1..].to_vec();
        let mut carry = true;
        for d in digits.iter_mut().rev() {
            let v = value(*d) + 1;
            if v == BASE {
                *d = b'0';
            } else {
                *d = DIGITS[v];
                carry = false;
                break;
            }
        }
        if !carry {
            let mut out = vec![head];
            out.extend(digits);
            return Some(out);
        }
        match head {
            b'Z' => Some(b"a0".to_vec()),
            b'z' => None,
            _ => {
                let next = head + 1;
                if next > b'a' {
                    digits.push(b'0');
                } else {
                    digits.pop();
                }
                let mut out = vec![next];
                out.extend(digits);
                Some(out)
            }
        }
    }

    fn decrement_integer(int: &[u8]) -> Option<Vec<u8>> {
        let head = int[0];
        let mut digits = int[1..].to_vec();
        let mut borrow = true;
        for d in digits.iter_mut().rev() {
            let v = value(*d);
            if v == 0 {
                *d = b'z';
            } else {
                *d = DIGITS[v - 1];
                borrow = false;
                break;
            }
        }
        if !borrow {
            let mut out = vec![head];
            out.extend(digits);
            return Some(out);
        }
        match head {
            b'a' => Some(b"Zz".to_vec()),
            b'A' => None,
            _ => {
                let next = head - 1;
                if next < b'Z' {
                    digits.push(b'z');
                } else {
                    digits.pop();
                }
                let mut out = vec![next];
                out.extend(digits);
                Some(out)
            }
        }
    }

    /// A structured key strictly between two structured keys (`a < b`); `None` only at the
    /// extremes of the integer range.
    pub(super) fn between(a: Option<&[u8]>, b: Option<&[u8]>) -> Option<Vec<u8>> {
        match (a, b) {
            (None, None) => Some(b"a0".to_vec()),
            (None, Some(b)) => {
                let (int_b, frac_b) = split(b)?;
                if is_smallest_integer(int_b) {
                    let mut out = int_b.to_vec();
                    out.extend(midpoint(&[], Some(frac_b))?);
                    Some(out)
                } else if !frac_b.is_empty() {
                    Some(int_b.to_vec())
                } else {
                    decrement_integer(int_b)
                }
            }
            (Some(a), None) => {
                let (int_a, frac_a) = split(a)?;
                increment_integer(int_a).or_else(|| {
                    let mut out = int_a.to_vec();
                    out.extend(midpoint(frac_a, None)?);
                    Some(out)
                })
            }
            (Some(a), Some(b)) => {
                let (int_a, frac_a) = split(a)?;
                let (int_b, frac_b) = split(b)?;
                if int_a == int_b {
                    let mut out = int_a.to_vec();
                    out.extend(midpoint(frac_a, Some(frac_b))?);
                    return Some(out);
                }
                let next = increment_integer(int_a)?;
                if next.as_slice() < b {
                    Some(next)
                } else {
                    let mut out = int_a.to_vec();
                    out.extend(midpoint(frac_a, None)?);
                    Some(out)
                }
            }
        }
    }

    /// A digit string strictly between `a` and `b` (`None` = above everything) in plain
    /// lexicographic order, never ending in `'0'`. Requires `a < b`; `None` when `b` is `a`
    /// followed only by `'0'`s, the one case with no room.
    pub(super) fn midpoint(a: &[u8], b: Option<&[u8]>) -> Option<Vec<u8>> {
        if let Some(b) = b {
            // Strip the common prefix, reading `a` as padded with '0's.
            let mut n = 0;
            while n < b.len() && a.get(n).copied().unwrap_or(b'0') == b[n] {
                n += 1;
            }
            if n == b.len() {
                return None;
            }
            if n > 0 {
                let mut out = b[..n].to_vec();
                out.extend(midpoint(a.get(n..).unwrap_or_default(), Some(&b[n..]))?);
                return Some(out);
            }
        }
        let digit_a = a.first().map_or(0, |&d| value(d));
        let digit_b = b.map_or(BASE, |b| value(b[0]));
        if digit_b > digit_a + 1 {
            return Some(vec![DIGITS[(digit_a + digit_b).div_ceil(2)]]);
        }
        match b {
            Some(b) if b.len() > 1 => Some(vec![b[0]]),
            _ => {
                let mut out = vec![DIGITS[digit_a]];
                out.extend(midpoint(a.get(1..).unwrap_or_default(), None)?);
                Some(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_keys_follow_the_fractional_indexing_package() {
        // Values from the `fractional-indexing` README and test suite.
        let cases: &[(Option<&str>, Option<&str>, &str)] = &[
            (None, None, "a0"),
            (None, Some("a0"), "Zz"),
            (None, Some("Zz"), "Zy"),
            (Some("a0"), None, "a1"),
            (Some("a1"), None, "a2"),
            (Some("a0"), Some("a1"), "a0V"),
            (Some("a1"), Some("a2"), "a1V"),
            (Some("a0V"), Some("a1"), "a0l"),
            (Some("Zz"), Some("a0"), "ZzV"),
            (Some("Zz"), Some("a1"), "a0"),
            (None, Some("Y00"), "Xzzz"),
            (Some("bzz"), None, "c000"),
            (Some("a0"), Some("a0V"), "a0G"),
            (Some("a0"), Some("a0G"), "a08"),
            (Some("b125"), Some("b129"), "b127"),
            (Some("a0"), Some("a1V"), "a1"),
            (Some("Zz"), Some("a01"), "a0"),
            (None, Some("a0V"), "a0"),
            (None, Some("b999"), "b99"),
            (Some("az"), None, "b00"),
        ];
        for &(a, b, want) in cases {
            assert_eq!(key_between(a, b).unwrap(), want, "between {a:?} and {b:?}");
        }
    }

    #[test]
    fn integer_parts_roll_over_heads() {
        assert_eq!(fractional::between(Some(b"Zz"), None).unwrap(), b"a0");
        assert_eq!(fractional::between(None, Some(b"b00")).unwrap(), b"az");
        assert_eq!(fractional::between(None, Some(b"Z0")).unwrap(), b"Yzz");
        assert_eq!(fractional::between(Some(b"Yzz"), None).unwrap(), b"Z0");
    }

    #[test]
    fn structured_key_validity() {
        for good in ["a0", "Zz", "a0V", "b00", "Xzzz"] {
            assert!(fractional::is_valid(good.as_bytes()), "{good}");
        }
        for bad in ["a", "b0", "a00", "a0V0", "0", "V"] {
            assert!(!fractional::is_valid(bad.as_bytes()), "{bad}");
        }
    }
}
