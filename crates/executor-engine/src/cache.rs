//! A value built per key (a tenant and subject, a policy source) and kept until the catalog
//! generation moves. Each key builds once at a time (later readers wait for that build, not for
//! other keys'), so one tenant's large search index never holds up another's.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

type Slot<V> = Arc<tokio::sync::Mutex<Option<(u64, Arc<V>)>>>;

/// Keys kept at most; beyond it, the slots nobody is building or reading are dropped.
const MAX_KEYS: usize = 1_024;

pub(crate) struct PerKey<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K, V> Default for PerKey<K, V> {
    fn default() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V> PerKey<K, V> {
    /// The value of `key` built at `generation`, or the one `build` makes now.
    pub(crate) async fn get_or_build<E, F, Fut>(
        &self,
        key: K,
        generation: u64,
        build: F,
    ) -> Result<Arc<V>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            if slots.len() >= MAX_KEYS && !slots.contains_key(&key) {
                slots.retain(|_, slot| Arc::strong_count(slot) > 1);
            }
            slots.entry(key).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some((built_at, value)) = slot.as_ref()
            && *built_at == generation
        {
            return Ok(value.clone());
        }
        let value = Arc::new(build().await?);
        *slot = Some((generation, value.clone()));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_key_keeps_its_own_value_until_the_generation_moves() {
        let cache: PerKey<&str, String> = PerKey::default();
        let built = |s: &'static str| async move { Ok::<_, ()>(s.to_owned()) };
        assert_eq!(
            *cache.get_or_build("a", 1, || built("a1")).await.unwrap(),
            "a1"
        );
        assert_eq!(
            *cache.get_or_build("b", 1, || built("b1")).await.unwrap(),
            "b1"
        );
        assert_eq!(
            *cache.get_or_build("a", 1, || built("a2")).await.unwrap(),
            "a1"
        );
        assert_eq!(
            *cache.get_or_build("a", 2, || built("a3")).await.unwrap(),
            "a3"
        );
        assert_eq!(
            *cache.get_or_build("b", 1, || built("b2")).await.unwrap(),
            "b1"
        );
    }
}
