//! The OpenAPI integration kind (spec §7): parse a spec (OpenAPI 3.0, 3.1, Swagger 2.0 by
//! conversion) into our own model over raw JSON, turn its operations into tools (`group.leaf`),
//! derive auth methods and a preview, and invoke a tool against the real API.
//!
//! Flow: [`fetch_spec`] (URL) → [`parse_spec`] → [`extract`] → tools, each with a JSON
//! [`OpenApiTool::binding`] the engine stores; a call is [`invoke`]`(binding, args, config)`,
//! which validates the arguments ([`validate_args`]) before any request.
//!
//! Basic auth: the stored placement is `Authorization` with prefix `"Basic "` and the connection's
//! `token` value is the already-encoded `base64(user:pass)`; [`encode_basic_credentials`] makes it
//! from a user/password pair. As a safety net [`invoke`] encodes a pasted raw `user:pass`.

mod auth;
mod b64;
mod error;
mod extract;
mod fetch;
mod invoke;
mod model;
mod parse;
mod patch;
mod schema;
mod swagger2;
mod validate;
mod yaml_depth;

pub use auth::{
    DerivedAuth, HeaderPreset, OAuth2Preset, Preview, SecuritySchemeSummary, derive_auth,
    derive_auth_methods, encode_basic_credentials, preview,
};
pub use error::OpenApiError;
pub use extract::{Extraction, ExtractionFailure, OpenApiTool, extract};
pub use fetch::{SPEC_ACCEPT, fetch_spec, resolve_relative_servers};
pub use invoke::{
    Binding, BindingBody, BindingMedia, BindingParam, BindingServer, BodyKind, CallConfig, invoke,
    validate_args,
};
pub use model::{
    ApiKeyLocation, MediaType, Operation, ParamLocation, Parameter, RequestBody, Response,
    SecurityScheme, SecuritySchemeKind, Server, ServerVariable, Spec, SpecFormat,
};
pub use parse::{parse_spec, parse_spec_with_overrides};
pub use validate::ArgsValidator;
