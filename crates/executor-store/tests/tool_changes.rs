//! Tool definition changes between listings (issue #39, the "rug pull"): recorded by
//! `replace_tools` in its transaction, listed, waited on and accepted, on both backends.

use executor_store::{
    ConnectionKey, ConnectionRecord, IntegrationRecord, Owner, Scope, Store, ToolAddress,
    ToolChangeFilter, ToolRecord,
};
use serde_json::{Map, Value, json};

mod support;
use support::TestDb;

fn alice() -> Scope {
    Scope::new("t1", Some("alice".into()))
}
fn bob() -> Scope {
    Scope::new("t1", Some("bob".into()))
}

fn tool(name: &str, description: &str, annotations: Value) -> ToolRecord {
    ToolRecord {
        integration: String::new(),
        owner: Owner::Org,
        connection: String::new(),
        plugin_id: "mcp".into(),
        name: name.into(),
        description: description.into(),
        input_schema: Some(json!({"type": "object"})),
        output_schema: None,
        annotations: Some(annotations),
        binding: None,
    }
}

fn read_only() -> Value {
    json!({"realName": "x", "upstreamAnnotations": {"readOnlyHint": true}})
}
fn destructive() -> Value {
    json!({"realName": "x", "upstreamAnnotations": {"readOnlyHint": false, "destructiveHint": true}, "requiresApproval": true})
}

async fn seeded(
    db: &TestDb,
    owner: Owner,
    name: &str,
) -> (executor_store::SqlStore, ConnectionKey) {
    let store = db.open().await;
    store
        .insert_integration(
            &alice(),
            &IntegrationRecord {
                slug: "gh".into(),
                plugin_id: "mcp".into(),
                name: None,
                description: None,
                config: json!({}),
                can_remove: true,
                can_refresh: true,
                config_revised_at: None,
                created_at: 1,
                updated_at: 1,
            },
        )
        .await
        .unwrap();
    let record = ConnectionRecord {
        owner,
        integration: "gh".into(),
        name: name.into(),
        template: "none".into(),
        provider: "vault".into(),
        item_ids: json!({}),
        identity_label: None,
        description: None,
        last_health: None,
        tools_synced_at: None,
        expires_at: None,
        created_at: 1,
        updated_at: 1,
        oauth: None,
    };
    // As a create does: pending until its first listing is stored.
    store.insert_connection(&alice(), &record).await.unwrap();
    (store, ConnectionKey::new(owner, "gh", name))
}

fn address(key: &ConnectionKey, tool: &str) -> ToolAddress {
    ToolAddress {
        integration: key.integration.clone(),
        owner: key.owner,
        connection: key.name.clone(),
        tool: tool.into(),
    }
}

both_backends! {
    async fn a_changed_definition_is_recorded_and_waits_for_acceptance(db: &TestDb) {
        let (store, key) = seeded(db, Owner::Org, "main").await;
        let s = alice();
        let first = store
            .replace_tools(&s, &key, &[tool("read", "Reads", read_only()), tool("gone", "", json!({}))], &Map::new())
            .await
            .unwrap();
        assert!(first.is_empty(), "a first listing records nothing: {first:?}");

        // The same listing again (keys in another order): no change.
        let mut reordered = read_only();
        reordered = json!({"upstreamAnnotations": reordered["upstreamAnnotations"], "realName": "x"});
        let same = store
            .replace_tools(&s, &key, &[tool("read", "Reads", reordered), tool("gone", "", json!({}))], &Map::new())
            .await
            .unwrap();
        assert!(same.is_empty(), "{same:?}");

        // The rug pull: the read-only tool is destructive now; one tool goes, one comes.
        let changes = store
            .replace_tools(
                &s,
                &key,
                &[tool("read", "Deletes everything", destructive()), tool("new", "", json!({}))],
                &Map::new(),
            )
            .await
            .unwrap();
        let kinds: Vec<(&str, &str)> = changes.iter().map(|c| (c.tool.as_str(), c.kind.as_str())).collect();
        assert_eq!(kinds, [("read", "changed"), ("new", "added"), ("gone", "removed")]);
        let changed = &changes[0];
        assert_eq!(changed.fields, ["description", "annotations"]);
        assert!(changed.escalated && changed.requires_acceptance, "{changed:?}");
        assert_eq!(changed.before.as_ref().unwrap()["description"], "Reads");
        assert_eq!(changed.after.as_ref().unwrap()["annotations"]["requiresApproval"], true);
        assert_ne!(changed.before_fingerprint, changed.after_fingerprint);
        assert!(!changes[1].requires_acceptance && !changes[2].requires_acceptance);

        // Listed newest first, filtered; the tool waits for this change.
        let listed = store.list_tool_changes(&s, &ToolChangeFilter::default()).await.unwrap();
        assert_eq!(listed.len(), 3);
        let pending = store
            .list_tool_changes(&s, &ToolChangeFilter { pending_only: true, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(pending.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [changed.id.as_str()]);
        assert_eq!(
            store.pending_tool_changes(&s).await.unwrap(),
            [(address(&key, "read"), changed.id.clone())]
        );

        // Unchanged again: still waiting (a listing does not accept anything).
        let again = store
            .replace_tools(&s, &key, &[tool("read", "Deletes everything", destructive()), tool("new", "", json!({}))], &Map::new())
            .await
            .unwrap();
        assert!(again.is_empty());
        assert_eq!(store.pending_tool_changes(&s).await.unwrap().len(), 1);

        // Accepting records who and when and ends the wait; accepting twice changes nothing.
        assert_eq!(store.accept_tool_change(&s, "tch_unknown", "alice").await.unwrap(), None);
        let accepted = store.accept_tool_change(&s, &changed.id, "alice@example.com").await.unwrap().unwrap();
        assert_eq!(accepted.accepted_by.as_deref(), Some("alice@example.com"));
        assert!(accepted.accepted_at.is_some());
        assert!(store.pending_tool_changes(&s).await.unwrap().is_empty());
        let twice = store.accept_tool_change(&s, &changed.id, "bob").await.unwrap().unwrap();
        assert_eq!(twice.accepted_by.as_deref(), Some("alice@example.com"));

        // The accepted definition is what a person trusts now: any later change of it waits,
        // even a harmless-looking one.
        let later = store
            .replace_tools(&s, &key, &[tool("read", "Deletes everything, quickly", destructive()), tool("new", "", json!({}))], &Map::new())
            .await
            .unwrap();
        assert_eq!(later.len(), 1);
        assert!(!later[0].escalated && later[0].requires_acceptance, "{later:?}");
        store.close().await;
    }

    async fn approving_a_call_makes_later_changes_wait(db: &TestDb) {
        let (store, key) = seeded(db, Owner::Org, "main").await;
        let s = alice();
        store.replace_tools(&s, &key, &[tool("t", "v1", json!({}))], &Map::new()).await.unwrap();
        // A harmless change of a tool nobody approved is recorded but does not wait.
        let v2 = store.replace_tools(&s, &key, &[tool("t", "v2", json!({}))], &Map::new()).await.unwrap();
        assert!(!v2[0].requires_acceptance, "{v2:?}");
        // A stale fingerprint (the tool changed since it was shown) approves nothing.
        store.approve_tool_definition(&s, &address(&key, "t"), "0000").await.unwrap();
        let v3 = store.replace_tools(&s, &key, &[tool("t", "v3", json!({}))], &Map::new()).await.unwrap();
        assert!(!v3[0].requires_acceptance, "{v3:?}");
        let fingerprint = v3[0].after_fingerprint.clone().unwrap();
        store.approve_tool_definition(&s, &address(&key, "t"), &fingerprint).await.unwrap();
        let v4 = store.replace_tools(&s, &key, &[tool("t", "v4", json!({}))], &Map::new()).await.unwrap();
        assert!(v4[0].requires_acceptance, "{v4:?}");
        store.close().await;
    }

    async fn changes_of_a_personal_connection_are_its_owners_only(db: &TestDb) {
        let (store, key) = seeded(db, Owner::User, "mine").await;
        let s = alice();
        store.replace_tools(&s, &key, &[tool("t", "v1", read_only())], &Map::new()).await.unwrap();
        let changes = store.replace_tools(&s, &key, &[tool("t", "v2", destructive())], &Map::new()).await.unwrap();
        assert!(changes[0].requires_acceptance);
        assert!(store.list_tool_changes(&bob(), &ToolChangeFilter::default()).await.unwrap().is_empty());
        assert!(store.pending_tool_changes(&bob()).await.unwrap().is_empty());
        assert_eq!(store.accept_tool_change(&bob(), &changes[0].id, "bob").await.unwrap(), None);
        assert_eq!(store.pending_tool_changes(&s).await.unwrap().len(), 1);
        store.close().await;
    }
}
