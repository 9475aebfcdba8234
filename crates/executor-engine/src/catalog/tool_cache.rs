//! Tool records by address, and resolved connections by key, kept between calls and executions
//! so the hot path of a tool call does not read the store (each SQLite read is a round trip to
//! the database's own thread). Entries belong to one catalog generation; any catalog write
//! (integrations, connections and their values, policies) moves the generation and empties the
//! caches. Entries are keyed by the caller's tenant and subject as well: the same address can
//! name another tenant's tool, or another user's personal connection.
//!
//! A tool a kind renamed keeps its old names in its `aliases` annotation; they are resolved
//! here on a miss. The other caches of the same generation (search index and policy set, also
//! keyed by the caller's policy source) live with what they serve.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use executor_core::ToolAddress;
use executor_store::{ConnectionKey, ToolRecord};

use crate::Inner;
use crate::caller::Caller;
use crate::caller::RowsKey;
use crate::error::EngineResult;
use crate::kinds::Connected;

/// A connection as a tenant and subject see it.
pub(crate) type ConnectionOf = (RowsKey, ConnectionKey);

/// More distinct tools than this in one generation empties the cache (bounded memory).
const MAX_CACHED_TOOLS: usize = 2_048;

#[derive(Default)]
pub(crate) struct ToolCache {
    entries: Mutex<ToolEntries>,
}

/// The records of one generation, by tenant and subject, then address (looked up without
/// building a key), and how many there are in all.
#[derive(Default)]
struct ToolEntries {
    generation: u64,
    by_rows: HashMap<RowsKey, HashMap<ToolAddress, Arc<ToolRecord>>>,
    count: usize,
}

impl ToolCache {
    fn lookup(
        &self,
        generation: u64,
        rows: &RowsKey,
        address: &ToolAddress,
    ) -> Option<Arc<ToolRecord>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.generation != generation {
            *entries = ToolEntries {
                generation,
                ..ToolEntries::default()
            };
            return None;
        }
        entries.by_rows.get(rows)?.get(address).cloned()
    }

    fn insert(
        &self,
        generation: u64,
        rows: &RowsKey,
        address: &ToolAddress,
        tool: Arc<ToolRecord>,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        // A write landed while the record was read: it may be stale, so keep it out.
        if entries.generation != generation {
            return;
        }
        if entries.count >= MAX_CACHED_TOOLS {
            entries.by_rows.clear();
            entries.count = 0;
        }
        let added = entries
            .by_rows
            .entry(rows.clone())
            .or_default()
            .insert(address.clone(), tool)
            .is_none();
        entries.count += usize::from(added);
    }
}

/// The tool at `address`, from the cache or the store.
pub(crate) async fn get(
    inner: &Inner,
    caller: &Caller,
    address: &ToolAddress,
) -> EngineResult<Option<Arc<ToolRecord>>> {
    let generation = inner.catalog_generation.load(Ordering::Acquire);
    if let Some(tool) = inner.tool_cache.lookup(generation, caller.rows(), address) {
        return Ok(Some(tool));
    }
    let tool = match inner.store.get_tool(caller.scope(), address).await? {
        Some(tool) => tool,
        None => match by_alias(inner, caller, address).await? {
            Some(tool) => tool,
            None => return Ok(None),
        },
    };
    let tool = Arc::new(tool);
    inner
        .tool_cache
        .insert(generation, caller.rows(), address, tool.clone());
    Ok(Some(tool))
}

use crate::kinds::ALIASES;

/// The tool of `address`'s connection that used to be called `address.tool`: a kind that renames
/// its tools (OpenAPI names dropped a repeated group in issue #18) lists the old names in the
/// `aliases` annotation, so agent code written against them keeps working. Only read on a miss.
async fn by_alias(
    inner: &Inner,
    caller: &Caller,
    address: &ToolAddress,
) -> EngineResult<Option<ToolRecord>> {
    let filter = executor_store::ToolFilter {
        integration: Some(address.integration.clone()),
        owner: Some(address.owner),
        connection: Some(address.connection.clone()),
        query: None,
    };
    let tools = inner.store.list_tools(caller.scope(), &filter).await?;
    let Some(renamed) = tools.into_iter().find(|t| {
        t.annotations
            .as_ref()
            .and_then(|a| a.get(ALIASES))
            .and_then(|a| a.as_array())
            .is_some_and(|a| a.iter().any(|n| n.as_str() == Some(address.tool.as_str())))
    }) else {
        return Ok(None);
    };
    Ok(inner
        .store
        .get_tool(caller.scope(), &renamed.address())
        .await?)
}

/// More distinct connections than this in one generation empties the cache.
const MAX_CACHED_CONNECTIONS: usize = 256;

/// Connections resolved by their kind (integration config read, credentials read and
/// rendered), shared by the executions of one catalog generation.
#[derive(Default)]
pub(crate) struct ConnectionCache {
    entries: Mutex<(u64, HashMap<ConnectionOf, Arc<Connected>>)>,
}

impl ConnectionCache {
    /// The cached connection for `key` in the current generation, and that generation (to
    /// [`Self::insert`] what is resolved after a miss).
    pub(crate) fn lookup(
        &self,
        inner: &Inner,
        key: &ConnectionOf,
    ) -> (u64, Option<Arc<Connected>>) {
        let generation = inner.catalog_generation.load(Ordering::Acquire);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.0 != generation {
            *entries = (generation, HashMap::new());
            return (generation, None);
        }
        (generation, entries.1.get(key).cloned())
    }

    /// Keeps a connection resolved from what the store held at `generation`.
    pub(crate) fn insert(&self, generation: u64, key: ConnectionOf, connected: Arc<Connected>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        // A write landed while it was resolved: it may be stale, so keep it out.
        if entries.0 != generation {
            return;
        }
        if entries.1.len() >= MAX_CACHED_CONNECTIONS {
            entries.1.clear();
        }
        entries.1.insert(key, connected);
    }
}

/// The tools of each tenant and subject whose calls wait for a person to accept a change of
/// their definition (issue #39), with the change's id: read once per catalog generation (an
/// accepted change and every listing move it), so a call costs no store read.
#[derive(Default)]
pub(crate) struct PendingChanges {
    by_rows: crate::cache::PerKey<RowsKey, HashMap<ToolAddress, String>>,
}

/// The change `address` waits for, if any.
pub(crate) async fn pending_change(
    inner: &Inner,
    caller: &Caller,
    address: &ToolAddress,
) -> EngineResult<Option<String>> {
    let generation = inner.catalog_generation.load(Ordering::Acquire);
    let pending = inner
        .pending_changes
        .by_rows
        .get_or_build(caller.rows_key(), generation, || async {
            Ok::<_, crate::error::EngineError>(
                inner
                    .store
                    .pending_tool_changes(caller.scope())
                    .await?
                    .into_iter()
                    .collect::<HashMap<_, _>>(),
            )
        })
        .await?;
    Ok(pending.get(address).cloned())
}
