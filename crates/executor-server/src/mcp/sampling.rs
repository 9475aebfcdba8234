//! Downstream sampling through the agent: a server that sends `sampling/createMessage` while it
//! handles one of an execution's tool calls is answered by the model behind the MCP client that
//! started the execution, when that client declared sampling.
// Sampling is deprecated by SEP-2577 but still part of the protocol versions we serve.
#![allow(deprecated)]

use std::sync::Arc;

use executor_mcp::{Sampler, SamplingError};
use futures::future::BoxFuture;
use rmcp::{Peer, RoleServer, ServiceError};
use serde_json::Value;

/// Sends sampling requests to the agent's client over its MCP session.
struct PeerSampler(Peer<RoleServer>);

/// The sampler of a client that can sample; `None` otherwise (the downstream server is then
/// refused with a JSON-RPC error).
pub(super) fn for_peer(peer: &Peer<RoleServer>) -> Option<Arc<dyn Sampler>> {
    let can_sample = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.sampling.is_some());
    can_sample.then(|| Arc::new(PeerSampler(peer.clone())) as Arc<dyn Sampler>)
}

impl Sampler for PeerSampler {
    fn create_message(&self, params: Value) -> BoxFuture<'static, Result<Value, SamplingError>> {
        let peer = self.0.clone();
        Box::pin(async move {
            let params = serde_json::from_value(params).map_err(|e| SamplingError {
                code: rmcp::model::ErrorCode::INVALID_PARAMS.0,
                message: format!("sampling/createMessage params do not read: {e}"),
            })?;
            match peer.create_message(params).await {
                Ok(result) => serde_json::to_value(&result).map_err(|e| SamplingError {
                    code: rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                    message: e.to_string(),
                }),
                Err(ServiceError::McpError(e)) => Err(SamplingError {
                    code: e.code.0,
                    message: e.message.into_owned(),
                }),
                Err(e) => Err(SamplingError {
                    code: rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                    message: format!("the agent's MCP client did not answer sampling: {e}"),
                }),
            }
        })
    }
}
