//! Toolkits on a real SQLite file: owner visibility, per-owner slugs, ordered entries, and a
//! delete that takes the entries with it and nothing else.

use executor_store::{
    Owner, Scope, StoreError, ToolkitEntryKind, ToolkitEntryRecord, ToolkitRecord, ToolkitStore,
};

mod support;

fn alice() -> Scope {
    Scope::new("t1", Some("alice".into()))
}
fn bob() -> Scope {
    Scope::new("t1", Some("bob".into()))
}

fn toolkit(id: &str, owner: Owner, slug: &str) -> ToolkitRecord {
    ToolkitRecord {
        id: id.to_owned(),
        owner,
        slug: slug.to_owned(),
        name: slug.to_uppercase(),
        created_at: 1,
        updated_at: 1,
    }
}

fn entry(id: &str, toolkit: &str, kind: ToolkitEntryKind, position: &str) -> ToolkitEntryRecord {
    ToolkitEntryRecord {
        id: id.to_owned(),
        toolkit_id: toolkit.to_owned(),
        kind,
        pattern: format!("{id}.*"),
        action: (kind == ToolkitEntryKind::Policy).then(|| "block".to_owned()),
        position: position.to_owned(),
        created_at: 1,
        updated_at: 1,
    }
}

fn ids(list: &[ToolkitRecord]) -> Vec<&str> {
    let mut ids: Vec<&str> = list.iter().map(|t| t.id.as_str()).collect();
    ids.sort_unstable();
    ids
}

both_backends! {
    async fn toolkits_are_owned_like_connections_and_go_with_their_entries(db: &TestDb) {
        let store = db.open().await;
        store
            .insert_toolkit(&alice(), &toolkit("tk_org", Owner::Org, "team"))
            .await
            .unwrap();
        store
            .insert_toolkit(&alice(), &toolkit("tk_a", Owner::User, "mine"))
            .await
            .unwrap();
        // Another user's personal toolkit may share a slug; the same owner's may not.
        store
            .insert_toolkit(&bob(), &toolkit("tk_b", Owner::User, "mine"))
            .await
            .unwrap();
        let again = store
            .insert_toolkit(&alice(), &toolkit("tk_a2", Owner::User, "mine"))
            .await;
        assert!(matches!(again, Err(StoreError::AlreadyExists)), "{again:?}");
        assert_eq!(
            ids(&store.list_toolkits(&alice()).await.unwrap()),
            ["tk_a", "tk_org"]
        );
        assert_eq!(
            ids(&store.list_toolkits(&bob()).await.unwrap()),
            ["tk_b", "tk_org"]
        );
        assert_eq!(
            ids(&store
                .list_toolkits(&Scope::new("t2", Some("alice".into())))
                .await
                .unwrap()),
            Vec::<&str>::new()
        );

        // Bob cannot rename or remove Alice's toolkit.
        let renamed = ToolkitRecord {
            slug: "stolen".into(),
            ..toolkit("tk_a", Owner::User, "mine")
        };
        assert_eq!(store.update_toolkit(&bob(), &renamed).await.unwrap(), None);
        assert!(
            !store
                .delete_toolkit(&bob(), Owner::User, "tk_a")
                .await
                .unwrap()
        );
        let taken = ToolkitRecord {
            slug: "team".into(),
            ..toolkit("tk_org2", Owner::Org, "other")
        };
        store
            .insert_toolkit(&alice(), &toolkit("tk_org2", Owner::Org, "other"))
            .await
            .unwrap();
        assert!(matches!(
            store.update_toolkit(&alice(), &taken).await,
            Err(StoreError::AlreadyExists)
        ));

        // Entries come back by position then id, of both kinds, for the toolkits asked.
        for e in [
            entry("p2", "tk_org", ToolkitEntryKind::Policy, "a1"),
            entry("p1", "tk_org", ToolkitEntryKind::Policy, "a0"),
            entry("c1", "tk_org", ToolkitEntryKind::Connection, "a0"),
            entry("x1", "tk_a", ToolkitEntryKind::Connection, "a0"),
        ] {
            store.insert_toolkit_entry(&alice(), &e, false).await.unwrap();
        }
        let listed = store
            .list_toolkit_entries(&alice(), &["tk_org"])
            .await
            .unwrap();
        let order: Vec<&str> = listed.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(order, ["c1", "p1", "p2"]);
        assert_eq!(listed[0].action, None);
        assert_eq!(listed[1].action.as_deref(), Some("block"));
        assert_eq!(
            store.list_toolkit_entries(&alice(), &[]).await.unwrap(),
            Vec::new()
        );

        // An entry is removed only with its own kind and toolkit.
        assert!(
            !store
                .delete_toolkit_entry(&alice(), "tk_org", ToolkitEntryKind::Connection, "p1")
                .await
                .unwrap()
        );
        assert!(
            !store
                .delete_toolkit_entry(&alice(), "tk_a", ToolkitEntryKind::Policy, "p1")
                .await
                .unwrap()
        );
        let moved = ToolkitEntryRecord {
            position: "b0".into(),
            ..entry("p1", "tk_org", ToolkitEntryKind::Policy, "a0")
        };
        assert_eq!(
            store
                .update_toolkit_entry(&alice(), &moved)
                .await
                .unwrap()
                .unwrap()
                .position,
            "b0"
        );

        // Deleting a toolkit takes its entries and leaves the others'.
        assert!(
            store
                .delete_toolkit(&alice(), Owner::Org, "tk_org")
                .await
                .unwrap()
        );
        assert!(
            store
                .list_toolkit_entries(&alice(), &["tk_org"])
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .list_toolkit_entries(&alice(), &["tk_a"])
                .await
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            ids(&store.list_toolkits(&bob()).await.unwrap()),
            ["tk_b", "tk_org2"]
        );

        // They outlive a reopen.
        store.close().await;
        let store = db.open().await;
        assert_eq!(
            ids(&store.list_toolkits(&alice()).await.unwrap()),
            ["tk_a", "tk_org2"]
        );
    }

    /// Entries added at the top at once each get their own position, all before the first.
    async fn entries_added_at_once_at_the_top_never_share_a_position(db: &TestDb) {
        let store = std::sync::Arc::new(db.open().await);
        store
            .insert_toolkit(&alice(), &toolkit("tk_org", Owner::Org, "org"))
            .await
            .unwrap();
        store
            .insert_toolkit_entry(&alice(), &entry("p0", "tk_org", ToolkitEntryKind::Policy, "n"), false)
            .await
            .unwrap();
        let adds: Vec<_> = (0..12)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let e = entry(&format!("p{}", i + 1), "tk_org", ToolkitEntryKind::Policy, "");
                    store.insert_toolkit_entry(&alice(), &e, true).await.unwrap()
                })
            })
            .collect();
        let mut positions = Vec::new();
        for add in adds {
            positions.push(add.await.unwrap());
        }
        let distinct: std::collections::BTreeSet<&String> = positions.iter().collect();
        assert_eq!(distinct.len(), 12, "{positions:?}");
        assert!(positions.iter().all(|p| p.as_str() < "n"), "{positions:?}");
    }
}
