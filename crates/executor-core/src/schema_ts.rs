//! JSON Schema → TypeScript declarations for `tools.describe.tool` (spec §4.4, §1.5).
//!
//! Renders tool input/output JSON Schemas (MCP draft 2020-12 / draft-07, OpenAPI 3.0/3.1, GraphQL
//! derived) as TypeScript in the style of json-schema-to-typescript. Shared definitions reached
//! through `$ref` become named declarations (`interface X {…}` / `type X = …;`), each rendered
//! once, so recursive schemas terminate. Pure: never panics, depth and size are bounded.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

/// TypeScript for one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTypes {
    /// The input type expression, e.g. `{ owner: string; … }`; `None` when there's no input schema.
    pub input: Option<String>,
    /// The call's result type, always wrapped:
    /// `{ ok: true; data: <T>; http?: ToolHttpMeta } | { ok: false; error: ToolError }`
    /// (`T` = `unknown` when there is no output schema).
    pub output: String,
    /// Named declarations keyed by TS name: every shared definition referenced (transitively) by
    /// input/output, plus always `ToolError`, `ToolHttpMeta` and `ToolFile`.
    pub definitions: BTreeMap<String, String>,
}

/// Declaration of the `error` member of a failed tool call.
const TOOL_ERROR_TS: &str = "interface ToolError {\n  code: string;\n  message: string;\n  status?: number;\n  details?: unknown;\n  retryable?: boolean;\n}";
/// Declaration of the `http` member of a successful HTTP-backed tool call.
const TOOL_HTTP_META_TS: &str =
    "interface ToolHttpMeta {\n  status: number;\n  headers: Record<string, string>;\n}";
/// Declaration of a file value (returned by tools, accepted by `emit`).
const TOOL_FILE_TS: &str = "interface ToolFile {\n  _tag: \"ToolFile\";\n  name?: string;\n  mimeType: string;\n  encoding: \"base64\";\n  data: string;\n  byteLength: number;\n}";

/// Names that generated definitions never take (built-in declarations and TS globals we emit).
const RESERVED_NAMES: &[&str] = &[
    "ToolError",
    "ToolHttpMeta",
    "ToolFile",
    "Record",
    "Array",
    "ReadonlyArray",
    "Promise",
    "Partial",
];

/// Nesting depth past which a sub-schema renders as `unknown`.
const MAX_DEPTH: usize = 64;
/// Schema nodes rendered per call past which everything renders as `unknown` (bounds output size).
const MAX_NODES: usize = 20_000;
/// Approximate characters of property lines and comments per call past which everything renders
/// as `unknown` (bounds output size together with [`MAX_NODES`]).
const MAX_CHARS: usize = 512 * 1024;
/// Longest description kept in a JSDoc comment (characters).
const MAX_DOC_CHARS: usize = 2_000;
/// Longest `@default` / `@example` JSON kept (characters); longer ones are left out.
const MAX_TAG_JSON_CHARS: usize = 160;
/// Enums with more values than this render as the union of their value types.
const MAX_ENUM_VALUES: usize = 256;
/// Index signatures whose value union would have more members than this become `unknown`.
const MAX_INDEX_UNION: usize = 6;

/// Renders the TypeScript of one tool: its input type, its wrapped output (result union) type and
/// the named declarations both need.
///
/// `definitions` is the connection's shared `$defs` map (name → schema). `$ref`s of the forms
/// `#/$defs/X`, `#/definitions/X` and `#/components/schemas/X` resolve against the schema's own
/// local `$defs`/`definitions` first, then against `definitions`.
pub fn render_tool_types(
    input: Option<&Value>,
    output: Option<&Value>,
    definitions: &Map<String, Value>,
) -> ToolTypes {
    let mut defs = BTreeMap::new();
    let (input_ts, data_ts) = {
        let mut r = Renderer::new(definitions, &mut defs);
        let input_ts = input.map(|schema| r.render_root(schema, 0));
        let data_ts = output.map(|schema| r.render_root(schema, 1));
        (input_ts, data_ts)
    };
    let output_ts = match data_ts {
        Some(data) if data.contains('\n') => format!(
            "{{\n  ok: true;\n  data: {data};\n  http?: ToolHttpMeta;\n}} | {{ ok: false; error: ToolError }}"
        ),
        data => format!(
            "{{ ok: true; data: {}; http?: ToolHttpMeta }} | {{ ok: false; error: ToolError }}",
            data.as_deref().unwrap_or("unknown")
        ),
    };
    defs.insert("ToolError".to_owned(), TOOL_ERROR_TS.to_owned());
    defs.insert("ToolHttpMeta".to_owned(), TOOL_HTTP_META_TS.to_owned());
    defs.insert("ToolFile".to_owned(), TOOL_FILE_TS.to_owned());
    ToolTypes {
        input: input_ts,
        output: output_ts,
        definitions: defs,
    }
}

/// Renders one schema as a TypeScript type expression, adding every named definition it
/// references (transitively) to `out_defs` (TS name → declaration text).
///
/// A shared definition whose TS name is already in `out_defs` is assumed rendered by an earlier
/// call with the same `definitions` and is not rendered again.
pub fn schema_to_ts(
    schema: &Value,
    definitions: &Map<String, Value>,
    out_defs: &mut BTreeMap<String, String>,
) -> String {
    Renderer::new(definitions, out_defs).render_root(schema, 0)
}

/// A rendered type expression and what it needs when embedded in a larger one.
#[derive(Debug, Clone)]
struct Ts {
    text: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Keyword, name, literal, array, tuple, `Record<…>`: never needs parentheses.
    Atom,
    /// An object literal `{ … }` (a named definition of it becomes an `interface`).
    Object,
    /// `A | B | …`, with its flattened members (none of them a union).
    Union(Vec<Ts>),
    /// `A & B & …`.
    Intersection,
}

impl Ts {
    fn atom(text: impl Into<String>) -> Self {
        Ts {
            text: text.into(),
            kind: Kind::Atom,
        }
    }

    fn unknown() -> Self {
        Ts::atom("unknown")
    }

    fn never() -> Self {
        Ts::atom("never")
    }

    fn is_unknown(&self) -> bool {
        self.text == "unknown"
    }

    /// The text, parenthesised where a union (or, unless `intersection_ok`, an intersection)
    /// would bind wrongly: array elements, optional tuple elements, intersection members.
    fn wrapped(&self, intersection_ok: bool) -> String {
        match self.kind {
            Kind::Union(_) => format!("({})", self.text),
            Kind::Intersection if !intersection_ok => format!("({})", self.text),
            _ => self.text.clone(),
        }
    }
}

/// `A | B`: flattened, deduplicated, `unknown` absorbs, `never` vanishes.
fn union(members: Vec<Ts>) -> Ts {
    let mut parts: Vec<Ts> = Vec::new();
    for m in members {
        if m.is_unknown() {
            return Ts::unknown();
        }
        let flat = match m.kind {
            Kind::Union(inner) => inner,
            _ => vec![m],
        };
        for t in flat {
            if t.text != "never" && !parts.iter().any(|p| p.text == t.text) {
                parts.push(t);
            }
        }
    }
    match parts.len() {
        0 => Ts::never(),
        1 => parts.pop().unwrap_or_else(Ts::never),
        _ => Ts {
            text: parts
                .iter()
                .map(|p| p.text.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            kind: Kind::Union(parts),
        },
    }
}

/// `A & B`: `unknown` and a bare `Record<string, unknown>` vanish when others remain, `never`
/// absorbs, unions are parenthesised.
fn intersection(members: Vec<Ts>) -> Ts {
    let mut kept: Vec<Ts> = Vec::new();
    for m in members {
        if m.text == "never" {
            return Ts::never();
        }
        if m.is_unknown() || kept.iter().any(|k| k.text == m.text) {
            continue;
        }
        kept.push(m);
    }
    if kept.len() > 1 {
        kept.retain(|k| k.text != "Record<string, unknown>");
    }
    match kept.len() {
        0 => Ts::unknown(),
        1 => kept.pop().unwrap_or_else(Ts::unknown),
        _ => Ts {
            text: kept
                .iter()
                .map(|k| k.wrapped(true))
                .collect::<Vec<_>>()
                .join(" & "),
            kind: Kind::Intersection,
        },
    }
}

/// A JSON value as a TS literal type. JSON text is valid TS type syntax for every JSON value
/// (`"a"`, `1`, `true`, `null`, `[1, 2]` tuples, `{"a": 1}` object literals).
fn literal(v: &Value) -> Ts {
    Ts::atom(serde_json::to_string(v).unwrap_or_else(|_| "unknown".to_owned()))
}

/// The TS keyword for a JSON value's type (used for oversized enums).
fn json_type_ts(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "unknown[]",
        Value::Object(_) => "Record<string, unknown>",
    }
}

fn pad(indent: usize) -> String {
    "  ".repeat(indent)
}

/// Whether `name` can be written unquoted as a property key.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn property_key(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        serde_json::to_string(name).unwrap_or_else(|_| "\"\"".to_owned())
    }
}

/// PascalCase TS identifier for a definition name: `repo-owner` → `RepoOwner`,
/// `issue_event` → `IssueEvent`, `2fa` → `_2fa`, nothing usable → `Type`.
fn type_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper_next = true;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if upper_next {
                out.push(ch.to_ascii_uppercase());
            } else {
                out.push(ch);
            }
            upper_next = false;
        } else {
            upper_next = true;
        }
    }
    if out.is_empty() {
        return "Type".to_owned();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Makes text safe inside a `/* … */` comment.
fn escape_comment(text: &str) -> String {
    text.replace("*/", "*\\/")
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", &text[..idx]),
        None => text.to_owned(),
    }
}

/// JSDoc for a schema used as a property or a named definition: description (or title), then
/// `@deprecated`, `@format`, `@default`, `@example`. `None` when there is nothing to say.
/// A title that merely restates the definition's TS name (`def_name`) is left out.
fn jsdoc(schema: &Value, indent: usize, def_name: Option<&str>) -> Option<String> {
    let obj = schema.as_object()?;
    let non_empty = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let mut lines: Vec<String> = Vec::new();
    let text = non_empty("description")
        .or_else(|| non_empty("title").filter(|t| def_name != Some(type_name(t).as_str())));
    if let Some(text) = text {
        let text = escape_comment(&truncate_chars(text, MAX_DOC_CHARS));
        lines.extend(text.lines().map(|l| l.trim_end().to_owned()));
    }
    if obj.get("deprecated") == Some(&Value::Bool(true)) {
        lines.push("@deprecated".to_owned());
    }
    if let Some(format) = non_empty("format") {
        lines.push(format!("@format {}", escape_comment(format)));
    }
    let tag_json = |v: &Value| {
        serde_json::to_string(v)
            .ok()
            .filter(|s| s.chars().count() <= MAX_TAG_JSON_CHARS)
            .map(|s| escape_comment(&s))
    };
    if let Some(default) = obj.get("default").and_then(tag_json) {
        lines.push(format!("@default {default}"));
    }
    let example = match obj.get("examples") {
        Some(Value::Array(list)) => list.first(),
        _ => obj.get("example"),
    };
    if let Some(example) = example.and_then(tag_json) {
        lines.push(format!("@example {example}"));
    }
    while lines.first().is_some_and(|l| l.is_empty()) {
        lines.remove(0);
    }
    if lines.is_empty() {
        return None;
    }
    let p = pad(indent);
    if lines.len() == 1 {
        return Some(format!("{p}/** {} */", lines[0]));
    }
    let mut out = format!("{p}/**");
    for line in &lines {
        if line.is_empty() {
            out.push_str(&format!("\n{p} *"));
        } else {
            out.push_str(&format!("\n{p} * {line}"));
        }
    }
    out.push_str(&format!("\n{p} */"));
    Some(out)
}

fn is_true(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key) == Some(&Value::Bool(true))
}

fn has_combinator(obj: &Map<String, Value>) -> bool {
    ["allOf", "anyOf", "oneOf"]
        .iter()
        .any(|k| matches!(obj.get(*k), Some(Value::Array(_))))
}

/// Whether the schema says something about the value's shape besides combinators.
fn has_shape(obj: &Map<String, Value>) -> bool {
    [
        "type",
        "properties",
        "additionalProperties",
        "patternProperties",
        "items",
        "prefixItems",
    ]
    .iter()
    .any(|k| obj.contains_key(*k))
}

/// Whether an object schema can be merged property-wise with its `allOf` siblings. The schema
/// carrying the `allOf` (`is_base`) may itself have combinators and a `$ref` (rendered apart).
fn mergeable(obj: &Map<String, Value>, is_base: bool) -> bool {
    const BLOCKING: &[&str] = &[
        "enum",
        "const",
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
        "items",
        "prefixItems",
    ];
    if BLOCKING.iter().any(|k| obj.contains_key(*k)) {
        return false;
    }
    let blocks_member = has_combinator(obj)
        || ["$ref", "nullable", "x-nullable"]
            .iter()
            .any(|k| obj.contains_key(*k));
    if !is_base && blocks_member {
        return false;
    }
    match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
    }
}

/// Decodes one JSON-pointer segment (`%XX` escapes, then `~1` → `/`, `~0` → `~`).
fn decode_segment(seg: &str) -> String {
    let bytes = seg.as_bytes();
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut buf: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            buf.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        buf.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&buf)
        .replace("~1", "/")
        .replace("~0", "~")
}

fn walk<'v>(mut v: &'v Value, segs: &[String]) -> Option<&'v Value> {
    for seg in segs {
        v = match v {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Where a `$ref` leads.
enum Resolved<'a> {
    /// A named definition (shared or local to `root`).
    Named {
        key: String,
        schema: &'a Value,
        root: Option<&'a Value>,
        shared: bool,
    },
    /// Some other place inside a schema: rendered inline.
    Inline {
        schema: &'a Value,
        root: Option<&'a Value>,
    },
    Unresolved,
}

struct Entry<'a> {
    key: String,
    schema: &'a Value,
    root: Option<&'a Value>,
    shared: bool,
    name: String,
}

struct Renderer<'a, 'o> {
    shared: &'a Map<String, Value>,
    out: &'o mut BTreeMap<String, String>,
    /// TS name of every shared definition, assigned up front in map order so that the same map
    /// always yields the same names whatever is referenced first.
    shared_names: HashMap<&'a str, String>,
    /// Every TS name taken (reserved, shared, local).
    used: HashSet<String>,
    entries: Vec<Entry<'a>>,
    by_ptr: HashMap<usize, usize>,
    pending: VecDeque<usize>,
    nodes: usize,
    chars: usize,
}

impl<'a, 'o> Renderer<'a, 'o> {
    fn new(shared: &'a Map<String, Value>, out: &'o mut BTreeMap<String, String>) -> Self {
        let mut used: HashSet<String> = RESERVED_NAMES.iter().map(|s| (*s).to_owned()).collect();
        let mut shared_names = HashMap::with_capacity(shared.len());
        for key in shared.keys() {
            let name = unique_name(&type_name(key), &used, None);
            used.insert(name.clone());
            shared_names.insert(key.as_str(), name);
        }
        Renderer {
            shared,
            out,
            shared_names,
            used,
            entries: Vec::new(),
            by_ptr: HashMap::new(),
            pending: VecDeque::new(),
            nodes: 0,
            chars: 0,
        }
    }

    /// Renders a top-level schema (its own `$defs` are local definitions), then every definition
    /// it reached.
    fn render_root(&mut self, schema: &'a Value, indent: usize) -> String {
        let ts = self.render(schema, Some(schema), indent, 0);
        self.drain();
        ts.text
    }

    fn drain(&mut self) {
        while let Some(i) = self.pending.pop_front() {
            let (name, schema, root) = {
                let e = &self.entries[i];
                (e.name.clone(), e.schema, e.root)
            };
            if self.out.contains_key(&name) {
                continue;
            }
            // Placeholder: a definition is rendered exactly once even if re-queued.
            self.out.insert(name.clone(), String::new());
            let ts = self.render(schema, root, 0, 0);
            let doc = jsdoc(schema, 0, Some(name.as_str()))
                .map(|d| format!("{d}\n"))
                .unwrap_or_default();
            let text = match ts.kind {
                Kind::Object => format!("{doc}interface {name} {}", ts.text),
                _ => format!("{doc}type {name} = {};", ts.text),
            };
            self.out.insert(name, text);
        }
    }

    /// The TS name of a definition, registering (and queueing) it on first sight.
    fn register(
        &mut self,
        key: String,
        schema: &'a Value,
        root: Option<&'a Value>,
        shared: bool,
    ) -> String {
        let ptr = schema as *const Value as usize;
        if let Some(&i) = self.by_ptr.get(&ptr) {
            return self.entries[i].name.clone();
        }
        if !shared
            && let Some(i) = self
                .entries
                .iter()
                .position(|e| !e.shared && e.key == key && e.schema == schema)
        {
            self.by_ptr.insert(ptr, i);
            return self.entries[i].name.clone();
        }
        let name = match self.shared_names.get(key.as_str()) {
            Some(n) if shared => n.clone(),
            _ => {
                let n = unique_name(&type_name(&key), &self.used, Some(&*self.out));
                self.used.insert(n.clone());
                n
            }
        };
        self.entries.push(Entry {
            key,
            schema,
            root,
            shared,
            name: name.clone(),
        });
        let i = self.entries.len() - 1;
        self.by_ptr.insert(ptr, i);
        self.pending.push_back(i);
        name
    }

    fn resolve(&self, reference: &str, root: Option<&'a Value>) -> Resolved<'a> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Resolved::Unresolved;
        };
        if fragment.is_empty() {
            return match root {
                Some(r) => Resolved::Named {
                    key: r
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or("Root")
                        .to_owned(),
                    schema: r,
                    root: Some(r),
                    shared: false,
                },
                None => Resolved::Unresolved,
            };
        }
        let Some(pointer) = fragment.strip_prefix('/') else {
            return Resolved::Unresolved;
        };
        let segs: Vec<String> = pointer.split('/').map(decode_segment).collect();
        let container_len = match segs.first().map(String::as_str) {
            Some("$defs" | "definitions") => 1,
            Some("components") if segs.get(1).map(String::as_str) == Some("schemas") => 2,
            _ => 0,
        };
        if container_len > 0 && segs.len() == container_len + 1 {
            let name = &segs[container_len];
            let local = root.and_then(|r| {
                walk(r, &segs).or_else(|| {
                    let other = if segs[0] == "definitions" {
                        "$defs"
                    } else {
                        "definitions"
                    };
                    r.get(other).and_then(|d| d.get(name))
                })
            });
            let shared = self.shared.get(name);
            return match (local, shared) {
                (Some(l), Some(s)) if l == s => Resolved::Named {
                    key: name.clone(),
                    schema: s,
                    root: None,
                    shared: true,
                },
                (Some(l), _) => Resolved::Named {
                    key: name.clone(),
                    schema: l,
                    root,
                    shared: false,
                },
                (None, Some(s)) => Resolved::Named {
                    key: name.clone(),
                    schema: s,
                    root: None,
                    shared: true,
                },
                (None, None) => Resolved::Unresolved,
            };
        }
        if let Some(target) = root.and_then(|r| walk(r, &segs)) {
            return Resolved::Inline {
                schema: target,
                root,
            };
        }
        if container_len > 0
            && let Some(target) = segs
                .get(container_len)
                .and_then(|name| self.shared.get(name))
                .and_then(|def| walk(def, &segs[container_len + 1..]))
        {
            return Resolved::Inline {
                schema: target,
                root: None,
            };
        }
        Resolved::Unresolved
    }

    fn render(
        &mut self,
        schema: &Value,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        let obj = match schema {
            Value::Bool(true) => return Ts::unknown(),
            Value::Bool(false) => return Ts::never(),
            Value::Object(m) => m,
            _ => return Ts::unknown(),
        };
        if depth > MAX_DEPTH {
            return Ts::atom("unknown /* nesting too deep */");
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.chars > MAX_CHARS {
            return Ts::atom("unknown /* schema too large */");
        }
        let ts = self.render_map(obj, root, indent, depth);
        if is_true(obj, "nullable") || is_true(obj, "x-nullable") {
            union(vec![ts, Ts::atom("null")])
        } else {
            ts
        }
    }

    fn render_map(
        &mut self,
        obj: &Map<String, Value>,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            let target = match self.resolve(reference, root) {
                Resolved::Named {
                    key,
                    schema,
                    root,
                    shared,
                } => Ts::atom(self.register(key, schema, root, shared)),
                Resolved::Inline { schema, root } => self.render(schema, root, indent, depth + 1),
                Resolved::Unresolved => Ts::atom(format!(
                    "unknown /* unresolved $ref: {} */",
                    escape_comment(&truncate_chars(reference, 200))
                )),
            };
            // 2020-12 / OpenAPI 3.1 allow siblings next to `$ref`; only shape-giving ones matter.
            let siblings = has_combinator(obj)
                || ["properties", "enum", "const"]
                    .iter()
                    .any(|k| obj.contains_key(*k));
            if !siblings {
                return target;
            }
            let rest = self.render_structural(obj, root, indent, depth);
            return intersection(vec![target, rest]);
        }
        self.render_structural(obj, root, indent, depth)
    }

    /// Everything but `$ref` and `nullable`: `const`, `enum`, combinators, `type`.
    fn render_structural(
        &mut self,
        obj: &Map<String, Value>,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        if let Some(c) = obj.get("const") {
            return literal(c);
        }
        if let Some(Value::Array(values)) = obj.get("enum") {
            if values.len() > MAX_ENUM_VALUES {
                return union(values.iter().map(|v| Ts::atom(json_type_ts(v))).collect());
            }
            return union(values.iter().map(literal).collect());
        }
        if !has_combinator(obj) {
            return self.render_typed(obj, root, indent, depth);
        }
        let mut parts: Vec<Ts> = Vec::new();
        match obj.get("allOf") {
            Some(Value::Array(all)) => {
                let members: Option<Vec<&Map<String, Value>>> = all
                    .iter()
                    .map(|m| m.as_object().filter(|m| mergeable(m, false)))
                    .collect();
                let merged = members.and_then(|members| {
                    if !mergeable(obj, true) {
                        return None;
                    }
                    let mut all_members = vec![obj];
                    all_members.extend(members);
                    let has_props = all_members
                        .iter()
                        .any(|m| matches!(m.get("properties"), Some(Value::Object(_))));
                    if !has_props {
                        return None;
                    }
                    let mut seen = HashSet::new();
                    let unique = all_members
                        .iter()
                        .filter_map(|m| m.get("properties").and_then(Value::as_object))
                        .flat_map(|p| p.keys())
                        .all(|k| seen.insert(k.as_str()));
                    unique.then_some(all_members)
                });
                match merged {
                    Some(members) => {
                        parts.push(self.render_object(&members, root, indent, depth));
                    }
                    None => {
                        if has_shape(obj) {
                            parts.push(self.render_typed(obj, root, indent, depth));
                        }
                        for m in all {
                            parts.push(self.render(m, root, indent, depth + 1));
                        }
                    }
                }
            }
            _ => {
                if has_shape(obj) {
                    parts.push(self.render_typed(obj, root, indent, depth));
                }
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = obj.get(key) {
                let rendered = options
                    .iter()
                    .map(|m| self.render(m, root, indent, depth + 1))
                    .collect();
                parts.push(union(rendered));
            }
        }
        intersection(parts)
    }

    /// Renders from `type` (or the shape keywords when `type` is missing).
    fn render_typed(
        &mut self,
        obj: &Map<String, Value>,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        match obj.get("type") {
            Some(Value::String(t)) => self.render_type_keyword(t, obj, root, indent, depth),
            Some(Value::Array(types)) if types.iter().any(Value::is_string) => {
                let rendered = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.render_type_keyword(t, obj, root, indent, depth))
                    .collect();
                union(rendered)
            }
            _ => {
                if ["properties", "additionalProperties", "patternProperties"]
                    .iter()
                    .any(|k| obj.contains_key(*k))
                {
                    self.render_object(&[obj], root, indent, depth)
                } else if obj.contains_key("items") || obj.contains_key("prefixItems") {
                    self.render_array(obj, root, indent, depth)
                } else {
                    Ts::unknown()
                }
            }
        }
    }

    fn render_type_keyword(
        &mut self,
        t: &str,
        obj: &Map<String, Value>,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        match t {
            "string" => Ts::atom("string"),
            "number" | "integer" => Ts::atom("number"),
            "boolean" => Ts::atom("boolean"),
            "null" => Ts::atom("null"),
            "array" => self.render_array(obj, root, indent, depth),
            "object" => self.render_object(&[obj], root, indent, depth),
            _ => Ts::unknown(),
        }
    }

    fn render_array(
        &mut self,
        obj: &Map<String, Value>,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        if let Some(Value::Array(prefix)) = obj.get("prefixItems") {
            return self.render_tuple(prefix, obj.get("items"), obj, root, indent, depth);
        }
        match obj.get("items") {
            Some(Value::Array(list)) => {
                self.render_tuple(list, obj.get("additionalItems"), obj, root, indent, depth)
            }
            Some(Value::Bool(false)) => Ts::atom("[]"),
            Some(items @ (Value::Object(_) | Value::Bool(true))) => {
                let elem = self.render(items, root, indent, depth + 1);
                Ts::atom(format!("{}[]", elem.wrapped(false)))
            }
            _ => Ts::atom("unknown[]"),
        }
    }

    fn render_tuple(
        &mut self,
        elems: &[Value],
        rest: Option<&Value>,
        obj: &Map<String, Value>,
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        let min_items = obj
            .get("minItems")
            .and_then(Value::as_u64)
            .map_or(elems.len(), |n| usize::try_from(n).unwrap_or(usize::MAX));
        let mut parts: Vec<String> = Vec::with_capacity(elems.len() + 1);
        for (i, elem) in elems.iter().enumerate() {
            let ts = self.render(elem, root, indent, depth + 1);
            if i >= min_items {
                parts.push(format!("{}?", ts.wrapped(false)));
            } else {
                parts.push(ts.text);
            }
        }
        match rest {
            Some(r @ Value::Object(_)) => {
                let ts = self.render(r, root, indent, depth + 1);
                parts.push(format!("...{}[]", ts.wrapped(false)));
            }
            Some(Value::Bool(true)) => parts.push("...unknown[]".to_owned()),
            _ => {}
        }
        Ts::atom(format!("[{}]", parts.join(", ")))
    }

    /// An object literal from one schema, or several merged (`allOf` of plain objects).
    fn render_object(
        &mut self,
        members: &[&Map<String, Value>],
        root: Option<&'a Value>,
        indent: usize,
        depth: usize,
    ) -> Ts {
        let inner = pad(indent + 1);
        let required: HashSet<&str> = members
            .iter()
            .filter_map(|m| m.get("required").and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut lines: Vec<String> = Vec::new();
        let mut prop_types: Vec<Ts> = Vec::new();
        for m in members {
            let Some(Value::Object(props)) = m.get("properties") else {
                continue;
            };
            for (name, prop) in props {
                if let Some(doc) = jsdoc(prop, indent + 1, None) {
                    self.chars += doc.len();
                    lines.push(doc);
                }
                self.chars += name.len() + 2 * indent + 16;
                let ts = self.render(prop, root, indent + 1, depth + 1);
                let optional = if required.contains(name.as_str()) {
                    ""
                } else {
                    "?"
                };
                lines.push(format!(
                    "{inner}{}{optional}: {};",
                    property_key(name),
                    ts.text
                ));
                prop_types.push(ts);
            }
        }
        // Index signature (only for a single, unmerged schema: merged members never have one).
        let mut index: Vec<Ts> = Vec::new();
        let mut closed = false;
        if let [single] = members {
            if let Some(Value::Object(patterns)) = single.get("patternProperties") {
                for p in patterns.values() {
                    index.push(self.render(p, root, indent + 1, depth + 1));
                }
            }
            let additional = single
                .get("additionalProperties")
                .or_else(|| single.get("unevaluatedProperties"));
            match additional {
                Some(Value::Bool(false)) => closed = true,
                Some(Value::Bool(true)) => index.push(Ts::unknown()),
                Some(ap @ Value::Object(_)) => {
                    index.push(self.render(ap, root, indent + 1, depth + 1));
                }
                _ => {}
            }
        }
        if lines.is_empty() {
            if index.is_empty() {
                return if closed {
                    Ts {
                        text: "{}".to_owned(),
                        kind: Kind::Object,
                    }
                } else {
                    Ts::atom("Record<string, unknown>")
                };
            }
            let value = union(index);
            if !value.text.contains('\n') {
                return Ts::atom(format!("Record<string, {}>", value.text));
            }
            lines.push(format!("{inner}[key: string]: {};", value.text));
        } else if !index.is_empty() {
            let value = union(index);
            let value = if value.is_unknown() {
                value
            } else {
                let mut all = vec![value];
                all.extend(prop_types);
                let merged = union(all);
                let count = match &merged.kind {
                    Kind::Union(parts) => parts.len(),
                    _ => 1,
                };
                if merged.text.contains('\n') || count > MAX_INDEX_UNION {
                    Ts::unknown()
                } else {
                    merged
                }
            };
            lines.push(format!("{inner}[key: string]: {};", value.text));
        }
        Ts {
            text: format!("{{\n{}\n{}}}", lines.join("\n"), pad(indent)),
            kind: Kind::Object,
        }
    }
}

/// `base`, or `base2`, `base3`… — the first not already taken.
fn unique_name(
    base: &str,
    used: &HashSet<String>,
    out: Option<&BTreeMap<String, String>>,
) -> String {
    let taken = |n: &str| used.contains(n) || out.is_some_and(|o| o.contains_key(n));
    if !taken(base) {
        return base.to_owned();
    }
    (2usize..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| base.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names() {
        assert_eq!(type_name("repo-owner"), "RepoOwner");
        assert_eq!(type_name("2fa"), "_2fa");
        assert_eq!(type_name("issue_event"), "IssueEvent");
        assert_eq!(type_name("Customer"), "Customer");
        assert_eq!(type_name("---"), "Type");
        assert_eq!(
            type_name("payment_intent.next_action"),
            "PaymentIntentNextAction"
        );
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("per_page"));
        assert!(is_identifier("$x"));
        assert!(!is_identifier("x-api-key"));
        assert!(!is_identifier("1a"));
        assert!(!is_identifier(""));
        assert_eq!(property_key("x-api-key"), "\"x-api-key\"");
    }

    #[test]
    fn pointer_segments() {
        assert_eq!(decode_segment("a~1b~0c"), "a/b~c");
        assert_eq!(decode_segment("a%20b"), "a b");
        assert_eq!(decode_segment("100%"), "100%");
        assert_eq!(decode_segment("%zz"), "%zz");
    }
}
