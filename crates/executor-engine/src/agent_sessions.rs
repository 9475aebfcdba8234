//! Agent MCP sessions kept in the store, so a session is served by a process that does not hold
//! it in memory: after it idled out of memory, after a restart, or on another replica when a
//! load balancer sends it there. The MCP server decides what to keep and checks it on use; this
//! is only where it lives.

use std::time::Duration;

use executor_store::McpSessionRecord;

use crate::Engine;
use crate::error::EngineResult;

/// Kept sessions are forgotten this long after they were opened (a client whose session is
/// gone opens a new one).
pub(crate) const AGENT_SESSION_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);

impl Engine {
    pub async fn remember_agent_session(&self, rec: &McpSessionRecord) -> EngineResult<()> {
        Ok(self.inner.store.save_mcp_session(rec).await?)
    }

    pub async fn agent_session(&self, id: &str) -> EngineResult<Option<McpSessionRecord>> {
        Ok(self.inner.store.get_mcp_session(id).await?)
    }

    pub async fn forget_agent_session(&self, id: &str) -> EngineResult<()> {
        Ok(self.inner.store.delete_mcp_session(id).await?)
    }
}
