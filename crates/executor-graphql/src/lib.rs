//! The GraphQL integration kind (spec §8): introspect an endpoint (or read a supplied
//! introspection JSON), turn every query and mutation root field into a tool (`query.<field>`,
//! `mutation.<field>`) with a JSON Schema for its arguments and a default selection set, and call
//! those tools over HTTP, mapping GraphQL and HTTP failures into the tool result union.
//!
//! This crate knows nothing of the store, the engine or the HTTP API: the engine stores the
//! [`Schema`] snapshot ([`to_json`] / [`from_json`]), the tools and their bindings, and passes
//! the connection's rendered headers and query parameters to [`introspect`] and [`invoke`].

mod extract;
mod http;
mod invoke;
mod schema;
mod validate;

pub use extract::{
    Binding, BindingArg, GraphqlTool, MAX_SELECTION_DEPTH, MAX_SELECTION_FIELDS, OperationKind,
    SELECT_ARG, default_selection, extract,
};
pub use invoke::{invoke, invoke_with_schema, render_operation};
pub use schema::{
    EnumValue, Field, INTROSPECTION_QUERY, INTROSPECTION_TIMEOUT, InputValue, Schema, TypeDef,
    TypeKind, TypeRef, from_json, introspect, parse_introspection, to_json,
};
pub use validate::validate_args;

/// Why a schema could not be had. The engine maps these to the spec's `GraphqlIntrospectionError`
/// (400); every message is meant for a person.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphqlError {
    /// The endpoint answered, but not with a schema (not GraphQL, introspection disabled, a
    /// malformed result), or a supplied introspection JSON is not one.
    #[error("{0}")]
    Introspection(String),
    /// 401/403 during introspection: the connection's credentials are missing or wrong.
    #[error("{message}")]
    AuthRejected { status: u16, message: String },
    /// The endpoint could not be reached (DNS, connect, TLS, timeout).
    #[error("{0}")]
    Unreachable(String),
}

impl GraphqlError {
    /// The spec's error tag for the HTTP API.
    pub fn tag(&self) -> &'static str {
        "GraphqlIntrospectionError"
    }

    /// Whether the endpoint turned the credentials away (tool sync may report "auth not ready").
    pub fn is_auth_rejection(&self) -> bool {
        matches!(self, Self::AuthRejected { .. })
    }
}
