//! Pre-flight checks of a call's arguments: unknown and missing arguments, and the `select`
//! option (syntax always; field existence when the schema is at hand). Every failure is an
//! `invalid_tool_arguments` error raised before any request.

use async_graphql_parser::types::{
    Directive, DocumentOperations, OperationType, Selection, SelectionSet,
};
use async_graphql_parser::{Positioned, parse_query};
use executor_core::outcome::ToolError;
use serde_json::{Map, Value, json};

use crate::extract::{Binding, SELECT_ARG};
use crate::schema::{Schema, TypeKind};

/// How many field names an "unknown field" message lists.
const MAX_LISTED_FIELDS: usize = 30;

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new("invalid_tool_arguments", message).with_retryable(false)
}

fn invalid_selection(message: String, select: &str) -> ToolError {
    invalid(format!("Invalid `select`: {message}")).with_details(json!({
        "reason": "graphql_invalid_selection",
        "select": select,
    }))
}

/// Checks a call's arguments against the tool's binding and, when `schema` is given, checks that
/// every field of `select` exists on the type it is selected from (arguments, leaves versus
/// objects, inline fragment type conditions included). Without a schema `select` is checked for
/// syntax (and that it cannot escape the field's braces) only.
pub fn validate_args(
    schema: Option<&Schema>,
    binding: &Value,
    args: &Value,
) -> Result<(), Box<ToolError>> {
    let binding =
        Binding::from_value(binding).map_err(|m| Box::new(ToolError::new("binding_error", m)))?;
    check(schema, &binding, args).map(|_| ())
}

/// The checked arguments: the GraphQL arguments given (by name, in binding order) and the
/// `select` text, if any.
pub(crate) struct Checked<'a> {
    pub(crate) arguments: Vec<(&'a str, &'a Value)>,
    pub(crate) select: Option<&'a str>,
}

pub(crate) fn check<'a>(
    schema: Option<&Schema>,
    binding: &'a Binding,
    args: &'a Value,
) -> Result<Checked<'a>, Box<ToolError>> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let map = match args {
        Value::Object(map) => map,
        Value::Null => EMPTY.get_or_init(Map::new),
        other => {
            return Err(Box::new(invalid(format!(
                "GraphQL tool arguments must be an object, got {}",
                json_kind(other)
            ))));
        }
    };
    let accepts_select = binding.accepts_select();
    let accepted = || {
        let mut names: Vec<&str> = binding.args.iter().map(|a| a.name.as_str()).collect();
        if accepts_select {
            names.push(SELECT_ARG);
        }
        if names.is_empty() {
            "no arguments".to_owned()
        } else {
            names.join(", ")
        }
    };
    for key in map.keys() {
        let known =
            binding.args.iter().any(|a| a.name == *key) || (accepts_select && key == SELECT_ARG);
        if !known {
            return Err(Box::new(
                invalid(format!(
                    "Unknown argument \"{key}\". This field accepts: {}.",
                    accepted()
                ))
                .with_details(json!({"argument": key})),
            ));
        }
    }
    let mut arguments = Vec::new();
    for arg in &binding.args {
        match map.get(&arg.name) {
            None | Some(Value::Null) if arg.required => {
                return Err(Box::new(
                    invalid(format!(
                        "Missing required argument \"{}\" ({}).",
                        arg.name, arg.ty
                    ))
                    .with_details(json!({"argument": arg.name})),
                ));
            }
            Some(Value::Null) if arg.ty.is_non_null() => {
                // Non-null with a default: leaving it out lets the server apply the default.
            }
            Some(v) => arguments.push((arg.name.as_str(), v)),
            None => {}
        }
    }
    let select = match map.get(SELECT_ARG).filter(|_| accepts_select) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            check_select(schema, binding, s)?;
            Some(s.as_str())
        }
        Some(other) => {
            return Err(Box::new(invalid(format!(
                "`select` must be a string holding a GraphQL selection set, got {}",
                json_kind(other)
            ))));
        }
    };
    Ok(Checked { arguments, select })
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_select(
    schema: Option<&Schema>,
    binding: &Binding,
    select: &str,
) -> Result<(), Box<ToolError>> {
    if select.trim().is_empty() {
        return Err(Box::new(invalid_selection("it is empty".into(), select)));
    }
    // Parsed exactly as it will be sent: inside one pair of braces. A `select` that closes them
    // early leaves a second definition (or a syntax error) behind and is refused.
    let document = parse_query(format!("{{ {select} }}")).map_err(|e| {
        Box::new(invalid_selection(
            format!("not a GraphQL selection set: {e}"),
            select,
        ))
    })?;
    if !document.fragments.is_empty() {
        return Err(Box::new(invalid_selection(
            "named fragments are not supported; use inline fragments (`... on Type { … }`)".into(),
            select,
        )));
    }
    let operation = match &document.operations {
        DocumentOperations::Single(op) => op,
        DocumentOperations::Multiple(_) => {
            return Err(Box::new(invalid_selection(
                "it must be the fields inside one selection set".into(),
                select,
            )));
        }
    };
    let op = &operation.node;
    if op.ty != OperationType::Query
        || !op.variable_definitions.is_empty()
        || !op.directives.is_empty()
    {
        return Err(Box::new(invalid_selection(
            "it must be the fields inside one selection set".into(),
            select,
        )));
    }
    let type_name = binding.return_type.named();
    let schema = schema.filter(|s| s.get(type_name).is_some());
    walk(
        schema,
        type_name,
        &op.selection_set.node,
        binding.field.as_str(),
    )
    .map_err(|m| Box::new(invalid_selection(m, select)))
}

fn has_variables(value: &async_graphql_parser::types::Directive) -> bool {
    value
        .arguments
        .iter()
        .any(|(_, v)| v.node.clone().into_const().is_none())
}

fn check_directives(directives: &[Positioned<Directive>]) -> Result<(), String> {
    if directives.iter().any(|d| has_variables(&d.node)) {
        return Err("variables are not supported; write literal values".into());
    }
    Ok(())
}

/// The object types a composite type may be at run time.
fn possible_objects<'a>(schema: &'a Schema, name: &'a str) -> Vec<&'a str> {
    match schema.get(name) {
        Some(t) if t.kind == TypeKind::Object => vec![t.name.as_str()],
        Some(t) => t.possible_types.iter().map(String::as_str).collect(),
        None => Vec::new(),
    }
}

/// Whether an inline fragment on `condition` can apply inside a selection on `parent`.
fn overlaps(schema: &Schema, parent: &str, condition: &str) -> bool {
    if schema.get(parent).is_none() {
        return true;
    }
    let parent = possible_objects(schema, parent);
    possible_objects(schema, condition)
        .iter()
        .any(|o| parent.contains(o))
}

/// Walks a selection set; with a schema, against `type_name`.
fn walk(
    schema: Option<&Schema>,
    type_name: &str,
    set: &SelectionSet,
    at: &str,
) -> Result<(), String> {
    let t = schema.and_then(|s| s.get(type_name));
    for item in &set.items {
        match &item.node {
            Selection::FragmentSpread(_) => {
                return Err(
                    "named fragments are not supported; use inline fragments (`... on Type { … }`)"
                        .into(),
                );
            }
            Selection::InlineFragment(fragment) => {
                let fragment = &fragment.node;
                check_directives(&fragment.directives)?;
                let target = match &fragment.type_condition {
                    Some(cond) => {
                        let name = cond.node.on.node.as_str();
                        if let Some(schema) = schema {
                            match schema.get(name) {
                                Some(t) if t.kind.is_composite() => {
                                    if !overlaps(schema, type_name, name) {
                                        return Err(format!(
                                            "`... on {name}` at {at} can never apply: {type_name} is never a {name}"
                                        ));
                                    }
                                }
                                Some(_) => {
                                    return Err(format!(
                                        "`... on {name}` at {at}: {name} is not an object, interface or union type"
                                    ));
                                }
                                None => {
                                    return Err(format!(
                                        "`... on {name}` at {at}: the schema has no type {name}"
                                    ));
                                }
                            }
                        }
                        name
                    }
                    None => type_name,
                };
                walk(schema, target, &fragment.selection_set.node, at)?;
            }
            Selection::Field(field) => {
                let field = &field.node;
                let name = field.name.node.as_str();
                check_directives(&field.directives)?;
                if field
                    .arguments
                    .iter()
                    .any(|(_, v)| v.node.clone().into_const().is_none())
                {
                    return Err(format!(
                        "field \"{name}\" at {at}: variables are not supported; write literal values"
                    ));
                }
                let sub = &field.selection_set.node;
                let path = format!("{at}.{name}");
                let (Some(schema), Some(t)) = (schema, t) else {
                    // No schema: syntax only.
                    walk(None, "", sub, &path)?;
                    continue;
                };
                if name == "__typename" {
                    if !sub.items.is_empty() {
                        return Err(format!("\"__typename\" at {at} takes no selection set"));
                    }
                    continue;
                }
                let def = match t.kind {
                    TypeKind::Object | TypeKind::Interface => t.field(name),
                    _ => None,
                };
                let Some(def) = def else {
                    let mut names: Vec<&str> = t.fields.iter().map(|f| f.name.as_str()).collect();
                    let more = names.len() > MAX_LISTED_FIELDS;
                    names.truncate(MAX_LISTED_FIELDS);
                    let listing = if t.kind == TypeKind::Union {
                        format!(
                            "{type_name} is a union: select `__typename` or use `... on <Member> {{ … }}` (members: {})",
                            t.possible_types.join(", ")
                        )
                    } else {
                        format!(
                            "its fields are: {}{}",
                            names.join(", "),
                            if more { ", …" } else { "" }
                        )
                    };
                    return Err(format!(
                        "type {type_name} has no field \"{name}\" (at {at}); {listing}"
                    ));
                };
                for (arg, _) in &field.arguments {
                    let arg = arg.node.as_str();
                    if !def.args.iter().any(|a| a.name == arg) {
                        return Err(format!(
                            "field \"{name}\" at {at} has no argument \"{arg}\""
                        ));
                    }
                }
                if let Some(missing) = def.args.iter().find(|a| {
                    a.is_required()
                        && !field
                            .arguments
                            .iter()
                            .any(|(n, _)| n.node.as_str() == a.name)
                }) {
                    return Err(format!(
                        "field \"{name}\" at {at} needs argument \"{}\" ({})",
                        missing.name, missing.ty
                    ));
                }
                let composite = schema.is_composite(&def.ty);
                match (composite, sub.items.is_empty()) {
                    (false, false) => {
                        return Err(format!(
                            "field \"{name}\" at {at} returns {}, which has no fields to select",
                            def.ty
                        ));
                    }
                    (true, true) => {
                        return Err(format!(
                            "field \"{name}\" at {at} returns {}; select its fields, e.g. `{name} {{ __typename }}`",
                            def.ty
                        ));
                    }
                    (true, false) => walk(Some(schema), def.ty.named(), sub, &path)?,
                    (false, true) => {}
                }
            }
        }
    }
    Ok(())
}
