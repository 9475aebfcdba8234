//! Schema → tools: one tool per query and mutation root field, JSON Schemas from the field
//! arguments (shared `$defs` for enums and input objects), and the default selection set.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::schema::{Schema, TypeKind, TypeRef};

/// How deep the default selection descends into object fields below the root field's type
/// (`book { author { … } }` is one level).
pub const MAX_SELECTION_DEPTH: usize = 2;
/// At most this many fields (leaves and containers) in one default selection.
pub const MAX_SELECTION_FIELDS: usize = 96;
/// The tool argument that replaces the default selection.
pub const SELECT_ARG: &str = "select";

/// One tool produced from a root field.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphqlTool {
    /// `query.<field>` or `mutation.<field>`.
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// The shape of `data` under the default selection.
    pub output_schema: Option<Value>,
    /// Mutations: true.
    pub requires_approval: bool,
    /// `mutation <field>` for mutations.
    pub approval_description: Option<String>,
    /// A serialised [`Binding`]: what [`crate::invoke`] needs.
    pub binding: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperationKind {
    Query,
    Mutation,
}

impl OperationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Query => "query",
            Self::Mutation => "mutation",
        }
    }
}

/// What invocation needs, stored per tool (`GraphqlTool::binding`).
///
/// ```json
/// {"kind":"query","field":"book","returnType":"Book",
///  "args":[{"name":"id","type":"ID!","required":true}],
///  "selection":"id title author { name }"}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    pub kind: OperationKind,
    pub field: String,
    /// The field's GraphQL type, e.g. `"[Book!]!"`.
    pub return_type: TypeRef,
    pub args: Vec<BindingArg>,
    /// The default selection set (without braces); absent when the field returns a scalar/enum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BindingArg {
    pub name: String,
    /// GraphQL type text, e.g. `"[ID!]!"`.
    #[serde(rename = "type")]
    pub ty: TypeRef,
    /// Non-null without a default.
    #[serde(default)]
    pub required: bool,
}

impl Binding {
    pub fn from_value(binding: &Value) -> Result<Self, String> {
        Binding::deserialize(binding).map_err(|e| format!("invalid GraphQL tool binding: {e}"))
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Whether the tool takes the `select` option: the field returns a composite type and has no
    /// GraphQL argument of that name (the field's own argument wins).
    pub fn accepts_select(&self) -> bool {
        self.selection.is_some() && !self.args.iter().any(|a| a.name == SELECT_ARG)
    }
}

/// Every query and mutation root field as a tool (sorted: queries, then mutations, in schema
/// order), plus the shared `$defs` (enums and input objects the arguments use, enums the default
/// selections return).
pub fn extract(schema: &Schema) -> (Vec<GraphqlTool>, Map<String, Value>) {
    let mut defs = Map::new();
    let mut tools = Vec::new();
    for kind in [OperationKind::Query, OperationKind::Mutation] {
        let Some(root) = schema.root(kind.as_str()) else {
            continue;
        };
        for field in &root.fields {
            if field.name.starts_with("__") {
                continue;
            }
            tools.push(field_tool(schema, kind, field, &mut defs));
        }
    }
    (tools, defs)
}

fn field_tool(
    schema: &Schema,
    kind: OperationKind,
    field: &crate::schema::Field,
    defs: &mut Map<String, Value>,
) -> GraphqlTool {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in &field.args {
        let mut prop = input_type_schema(schema, &arg.ty, defs);
        annotate(
            &mut prop,
            arg.description.as_deref(),
            arg.default_value.as_deref(),
        );
        if arg.is_required() {
            required.push(Value::String(arg.name.clone()));
        }
        properties.insert(arg.name.clone(), prop);
    }

    let (selection, output_schema) = if schema.is_composite(&field.ty) {
        let (text, shape) = default_selection(schema, field.ty.named(), defs);
        (Some(text), wrap_output(&field.ty, shape))
    } else {
        (
            None,
            wrap_output(
                &field.ty,
                leaf_output_schema(schema, field.ty.named(), defs),
            ),
        )
    };

    let binding = Binding {
        kind,
        field: field.name.clone(),
        return_type: field.ty.clone(),
        args: field
            .args
            .iter()
            .map(|a| BindingArg {
                name: a.name.clone(),
                ty: a.ty.clone(),
                required: a.is_required(),
            })
            .collect(),
        selection,
    };
    if binding.accepts_select() {
        let default = binding.selection.as_deref().unwrap_or_default();
        properties.insert(
            SELECT_ARG.into(),
            json!({
                "type": "string",
                "description": format!(
                    "GraphQL selection set for the returned {} (without the outer braces), replacing the default: `{default}`",
                    field.ty.named()
                ),
            }),
        );
    }
    let mut input_schema = Map::new();
    input_schema.insert("type".into(), "object".into());
    input_schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input_schema.insert("required".into(), Value::Array(required));
    }
    input_schema.insert("additionalProperties".into(), false.into());

    let mut description = field
        .description
        .clone()
        .unwrap_or_else(|| format!("GraphQL {}: {} -> {}", kind.as_str(), field.name, field.ty));
    if field.is_deprecated {
        description.push_str(&format!(
            " (Deprecated{})",
            field
                .deprecation_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    let is_mutation = kind == OperationKind::Mutation;
    GraphqlTool {
        name: format!("{}.{}", kind.as_str(), field.name),
        description,
        input_schema: Value::Object(input_schema),
        output_schema: Some(output_schema),
        requires_approval: is_mutation,
        approval_description: is_mutation.then(|| format!("mutation {}", field.name)),
        binding: binding.to_value(),
    }
}

/// Adds `description` and `default` to a property schema (a `$ref` gets them beside it).
fn annotate(prop: &mut Value, description: Option<&str>, default: Option<&str>) {
    let Some(obj) = prop.as_object_mut() else {
        return;
    };
    if let Some(d) = description {
        obj.insert("description".into(), d.into());
    }
    if let Some(v) = default.and_then(graphql_literal_to_json) {
        obj.insert("default".into(), v);
    }
}

/// A GraphQL default literal as JSON where that is unambiguous (numbers, strings, booleans,
/// null, enum names, JSON-shaped lists); `None` otherwise.
fn graphql_literal_to_json(literal: &str) -> Option<Value> {
    let literal = literal.trim();
    if let Ok(v) = serde_json::from_str::<Value>(literal) {
        return Some(v);
    }
    let is_name = literal
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && literal
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    is_name.then(|| Value::String(literal.to_owned()))
}

fn scalar_schema(name: &str, description: Option<&str>, input: bool) -> Value {
    match name {
        "String" | "ID" => json!({"type": "string"}),
        "Int" => json!({"type": "integer"}),
        "Float" => json!({"type": "number"}),
        "Boolean" => json!({"type": "boolean"}),
        custom => {
            let text = match description {
                Some(d) => format!("Custom scalar: {custom}. {d}"),
                None => format!("Custom scalar: {custom}"),
            };
            if input {
                json!({"type": "string", "description": text})
            } else {
                json!({"description": text})
            }
        }
    }
}

/// The JSON Schema of an argument or input field type; enums and input objects become `$ref`s
/// into `defs` (added on first use, recursion-safe).
fn input_type_schema(schema: &Schema, ty: &TypeRef, defs: &mut Map<String, Value>) -> Value {
    match ty {
        TypeRef::NonNull(inner) => input_type_schema(schema, inner, defs),
        TypeRef::List(inner) => {
            json!({"type": "array", "items": input_type_schema(schema, inner, defs)})
        }
        TypeRef::Named(name) => match schema.get(name) {
            Some(t) if matches!(t.kind, TypeKind::Enum | TypeKind::InputObject) => {
                ensure_def(schema, name, defs);
                json!({"$ref": format!("#/$defs/{name}")})
            }
            Some(t) => scalar_schema(name, t.description.as_deref(), true),
            None => scalar_schema(name, None, true),
        },
    }
}

fn ensure_def(schema: &Schema, name: &str, defs: &mut Map<String, Value>) {
    if defs.contains_key(name) {
        return;
    }
    let Some(t) = schema.get(name) else { return };
    // Placeholder first so recursive input objects terminate.
    defs.insert(name.to_owned(), Value::Null);
    let mut def = Map::new();
    match t.kind {
        TypeKind::Enum => {
            def.insert("type".into(), "string".into());
            def.insert(
                "enum".into(),
                t.enum_values
                    .iter()
                    .map(|v| Value::String(v.name.clone()))
                    .collect(),
            );
        }
        TypeKind::InputObject => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for f in &t.input_fields {
                let mut prop = input_type_schema(schema, &f.ty, defs);
                annotate(
                    &mut prop,
                    f.description.as_deref(),
                    f.default_value.as_deref(),
                );
                if f.is_required() {
                    required.push(Value::String(f.name.clone()));
                }
                properties.insert(f.name.clone(), prop);
            }
            def.insert("type".into(), "object".into());
            def.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                def.insert("required".into(), Value::Array(required));
            }
            def.insert("additionalProperties".into(), false.into());
        }
        _ => {}
    }
    if let Some(d) = &t.description {
        def.insert("description".into(), d.clone().into());
    }
    defs.insert(name.to_owned(), Value::Object(def));
}

/// Output schema of a scalar/enum leaf (enums as `$ref`s).
fn leaf_output_schema(schema: &Schema, name: &str, defs: &mut Map<String, Value>) -> Value {
    match schema.get(name) {
        Some(t) if t.kind == TypeKind::Enum => {
            ensure_def(schema, name, defs);
            json!({"$ref": format!("#/$defs/{name}")})
        }
        Some(t) => scalar_schema(name, t.description.as_deref(), false),
        None => scalar_schema(name, None, false),
    }
}

/// Wraps the named type's output schema in the lists of `ty`.
fn wrap_output(ty: &TypeRef, inner: Value) -> Value {
    match ty {
        TypeRef::NonNull(t) => wrap_output(t, inner),
        TypeRef::List(t) => json!({"type": "array", "items": wrap_output(t, inner)}),
        TypeRef::Named(_) => inner,
    }
}

fn is_leaf(schema: &Schema, ty: &TypeRef) -> bool {
    schema
        .get(ty.named())
        .is_none_or(|t| matches!(t.kind, TypeKind::Scalar | TypeKind::Enum))
}

/// The default selection set of a composite type (text without outer braces) and the output
/// schema of the object it selects. Every scalar/enum leaf that needs no required argument,
/// then object fields without arguments, descended to [`MAX_SELECTION_DEPTH`], skipping types
/// already on the path, at most [`MAX_SELECTION_FIELDS`] fields. No selectable leaf →
/// `__typename`.
pub fn default_selection(
    schema: &Schema,
    type_name: &str,
    defs: &mut Map<String, Value>,
) -> (String, Value) {
    let mut budget = MAX_SELECTION_FIELDS;
    let mut path = HashSet::from([type_name.to_owned()]);
    match select_type(schema, type_name, 0, &mut path, &mut budget, defs) {
        Some(found) => found,
        None => (
            "__typename".into(),
            json!({"type": "object", "properties": {"__typename": {"type": "string"}}, "required": ["__typename"]}),
        ),
    }
}

struct Selected {
    parts: Vec<String>,
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl Selected {
    fn new() -> Self {
        Self {
            parts: Vec::new(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }

    fn push(&mut self, text: String, name: &str, schema: Value, non_null: bool) {
        self.parts.push(text);
        self.properties.insert(name.to_owned(), schema);
        if non_null {
            self.required.push(Value::String(name.to_owned()));
        }
    }

    fn finish(self) -> Option<(String, Value)> {
        if self.parts.is_empty() {
            return None;
        }
        let mut obj = Map::new();
        obj.insert("type".into(), "object".into());
        obj.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            obj.insert("required".into(), Value::Array(self.required));
        }
        Some((self.parts.join(" "), Value::Object(obj)))
    }
}

fn select_type(
    schema: &Schema,
    type_name: &str,
    depth: usize,
    path: &mut HashSet<String>,
    budget: &mut usize,
    defs: &mut Map<String, Value>,
) -> Option<(String, Value)> {
    let t = schema.get(type_name)?;
    let mut out = Selected::new();
    match t.kind {
        TypeKind::Union => {
            out.push(
                "__typename".into(),
                "__typename",
                json!({"type": "string"}),
                true,
            );
            // Same-named leaves of different members must have the same type to merge.
            let mut seen = HashMap::new();
            for member in &t.possible_types {
                if *budget == 0 {
                    break;
                }
                let mut leaves = Selected::new();
                select_leaves(schema, member, budget, defs, &mut leaves, Some(&mut seen));
                for (k, v) in &leaves.properties {
                    out.properties.entry(k.clone()).or_insert_with(|| v.clone());
                }
                if !leaves.parts.is_empty() {
                    out.parts
                        .push(format!("... on {member} {{ {} }}", leaves.parts.join(" ")));
                }
            }
            out.finish()
        }
        TypeKind::Object | TypeKind::Interface => {
            if t.kind == TypeKind::Interface {
                out.push(
                    "__typename".into(),
                    "__typename",
                    json!({"type": "string"}),
                    true,
                );
            }
            select_leaves(schema, type_name, budget, defs, &mut out, None);
            if depth < MAX_SELECTION_DEPTH {
                for f in &t.fields {
                    if *budget < 2 {
                        break;
                    }
                    if f.name.starts_with("__")
                        || f.is_deprecated
                        || !f.args.is_empty()
                        || is_leaf(schema, &f.ty)
                        || path.contains(f.ty.named())
                    {
                        continue;
                    }
                    *budget -= 1;
                    path.insert(f.ty.named().to_owned());
                    let sub = select_type(schema, f.ty.named(), depth + 1, path, budget, defs);
                    path.remove(f.ty.named());
                    match sub {
                        Some((text, shape)) => out.push(
                            format!("{} {{ {text} }}", f.name),
                            &f.name,
                            wrap_output(&f.ty, shape),
                            f.ty.is_non_null(),
                        ),
                        None => *budget += 1,
                    }
                }
            }
            // An interface with only `__typename` is still a valid selection.
            out.finish()
        }
        _ => None,
    }
}

/// The scalar/enum fields of an object or interface that need no required argument.
fn select_leaves(
    schema: &Schema,
    type_name: &str,
    budget: &mut usize,
    defs: &mut Map<String, Value>,
    out: &mut Selected,
    mut seen: Option<&mut HashMap<String, String>>,
) {
    let Some(t) = schema.get(type_name) else {
        return;
    };
    for f in &t.fields {
        if *budget == 0 {
            break;
        }
        if f.name.starts_with("__")
            || f.is_deprecated
            || f.args.iter().any(|a| a.is_required())
            || !is_leaf(schema, &f.ty)
            || out.properties.contains_key(&f.name)
        {
            continue;
        }
        if let Some(seen) = seen.as_deref_mut() {
            let ty = f.ty.to_string();
            if seen.get(&f.name).is_some_and(|t| *t != ty) {
                continue;
            }
            seen.insert(f.name.clone(), ty);
        }
        *budget -= 1;
        let shape = wrap_output(&f.ty, leaf_output_schema(schema, f.ty.named(), defs));
        out.push(f.name.clone(), &f.name, shape, f.ty.is_non_null());
    }
}
