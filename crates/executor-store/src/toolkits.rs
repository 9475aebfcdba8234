//! Toolkits (spec §1.9) as stored: a toolkit owned like a connection, and its ordered entries.

use async_trait::async_trait;
use executor_core::Owner;

use crate::{Result, Scope};

/// A stored toolkit. The slug's grammar and uniqueness among what a caller sees are the
/// engine's; the store refuses only a second toolkit of the same owner with the same slug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitRecord {
    pub id: String,
    pub owner: Owner,
    pub slug: String,
    pub name: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a toolkit entry is: one of its policies, or one of its connection patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolkitEntryKind {
    Policy,
    Connection,
}

impl ToolkitEntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolkitEntryKind::Policy => "policy",
            ToolkitEntryKind::Connection => "connection",
        }
    }
}

/// One of a toolkit's ordered entries. `action` is set for policies only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitEntryRecord {
    pub id: String,
    pub toolkit_id: String,
    pub kind: ToolkitEntryKind,
    pub pattern: String,
    pub action: Option<String>,
    pub position: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Toolkits and their entries; a supertrait of [`crate::Store`].
#[async_trait]
pub trait ToolkitStore: Send + Sync + 'static {
    /// Toolkits visible to the scope (the org's and the subject's own), unordered.
    async fn list_toolkits(&self, scope: &Scope) -> Result<Vec<ToolkitRecord>>;
    /// Err(AlreadyExists) when the id, or the slug among the owner's toolkits, is taken.
    async fn insert_toolkit(&self, scope: &Scope, rec: &ToolkitRecord) -> Result<()>;
    /// Replaces the name and slug of the visible toolkit `rec.id` of `rec.owner`; `None` when
    /// there is none, Err(AlreadyExists) when the slug is the owner's other toolkit's.
    async fn update_toolkit(
        &self,
        scope: &Scope,
        rec: &ToolkitRecord,
    ) -> Result<Option<ToolkitRecord>>;
    /// Removes a visible toolkit with all its entries, in one transaction; whether it existed.
    async fn delete_toolkit(&self, scope: &Scope, owner: Owner, id: &str) -> Result<bool>;
    /// The entries of toolkits of the scope's tenant, by position then id. The caller has
    /// checked that it may see the toolkits.
    async fn list_toolkit_entries(
        &self,
        scope: &Scope,
        toolkit_ids: &[&str],
    ) -> Result<Vec<ToolkitEntryRecord>>;
    /// Stores a new entry and answers its position: `rec.position`, or with `at_top` one before
    /// the toolkit's current first entry of its kind, chosen inside the write (so entries added
    /// at once, by one process or by several replicas, never share one).
    async fn insert_toolkit_entry(
        &self,
        scope: &Scope,
        rec: &ToolkitEntryRecord,
        at_top: bool,
    ) -> Result<String>;
    /// Replaces pattern, action and position of entry `rec.id` of `rec.toolkit_id`.
    async fn update_toolkit_entry(
        &self,
        scope: &Scope,
        rec: &ToolkitEntryRecord,
    ) -> Result<Option<ToolkitEntryRecord>>;
    /// Whether entry `id` of that kind and toolkit was removed.
    async fn delete_toolkit_entry(
        &self,
        scope: &Scope,
        toolkit_id: &str,
        kind: ToolkitEntryKind,
        id: &str,
    ) -> Result<bool>;
}
