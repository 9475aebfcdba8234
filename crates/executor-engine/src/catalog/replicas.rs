//! Other processes sharing the database (PostgreSQL replicas) change the catalog too: when the
//! store announces such a change, this engine moves its catalog generation, as after a write of
//! its own, so its caches rebuild at the next read and agent sessions hear `list_changed`.

use std::sync::Arc;

use crate::{Engine, Inner};

/// Follows the store's change counter for as long as the engine lives.
pub(crate) fn follow_other_replicas(inner: &Arc<Inner>) {
    let Some(mut changes) = inner.store.catalog_changes() else {
        return;
    };
    let weak = Arc::downgrade(inner);
    inner.io.spawn(async move {
        while changes.changed().await.is_ok() {
            let Some(inner) = weak.upgrade() else { return };
            tracing::debug!(
                generation = *changes.borrow(),
                "another replica changed the catalog"
            );
            Engine { inner }.catalog_changed();
        }
    });
}
