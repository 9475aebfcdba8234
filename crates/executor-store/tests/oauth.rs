//! OAuth clients, sessions and connection token columns (spec §1.7).

use executor_core::now_ms;
use executor_store::{
    ConnectionKey, ConnectionOAuth, ConnectionRecord, OAuthClientRecord, OAuthSessionRecord, Owner,
    Scope, Store,
};
use serde_json::json;

mod support;

fn alice() -> Scope {
    Scope::new("t1", Some("alice".into()))
}

fn client(owner: Owner, slug: &str) -> OAuthClientRecord {
    OAuthClientRecord {
        owner,
        slug: slug.into(),
        authorization_url: "https://as.example/authorize".into(),
        token_url: "https://as.example/token".into(),
        grant: "authorization_code".into(),
        client_id: "id".into(),
        client_secret_item_id: Some(format!("oauth-client:{owner}:{slug}:secret")),
        resource: None,
        origin_kind: "manual".into(),
        origin_integration: None,
        origin_issuer: None,
        origin_redirect_uri: None,
        token_endpoint_auth_method: Some("client_secret_basic".into()),
        created_at: 0,
        updated_at: 0,
    }
}

fn session(state: &str, expires_at: i64) -> OAuthSessionRecord {
    OAuthSessionRecord {
        state: state.into(),
        owner: Owner::Org,
        client_slug: "c".into(),
        client_owner: Owner::Org,
        integration: "notes".into(),
        name: "main".into(),
        template: "oauth2".into(),
        redirect_url: "http://localhost/api/oauth/callback".into(),
        pkce_verifier: "v".into(),
        identity_label: None,
        payload: json!({"scopes": ["read"]}),
        expires_at,
        created_at: 0,
    }
}

both_backends! {
    async fn clients_sessions_and_tokens(db: &TestDb) {
        let store = db.open().await;
        let s = alice();

        // Clients: upsert, owner scoping, delete.
        store
            .upsert_oauth_client(&s, &client(Owner::Org, "a"))
            .await
            .unwrap();
        store
            .upsert_oauth_client(&s, &client(Owner::User, "b"))
            .await
            .unwrap();
        let mut changed = client(Owner::Org, "a");
        changed.client_id = "id2".into();
        store.upsert_oauth_client(&s, &changed).await.unwrap();
        let all = store.list_oauth_clients(&s).await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].client_id, "id2");
        let bob = Scope::new("t1", Some("bob".into()));
        assert_eq!(store.list_oauth_clients(&bob).await.unwrap().len(), 1);
        assert!(
            store
                .delete_oauth_client(&s, Owner::User, "b")
                .await
                .unwrap()
        );
        assert!(
            !store
                .delete_oauth_client(&s, Owner::User, "b")
                .await
                .unwrap()
        );

        // Sessions are taken once; expired ones are purged by the next insert.
        store
            .insert_oauth_session(&s, &session("old", 1))
            .await
            .unwrap();
        store
            .insert_oauth_session(&s, &session("new", now_ms() + 60_000))
            .await
            .unwrap();
        assert!(store.take_oauth_session(&s, "old").await.unwrap().is_none());
        let taken = store.take_oauth_session(&s, "new").await.unwrap().unwrap();
        assert_eq!(taken.payload, json!({"scopes": ["read"]}));
        assert!(store.take_oauth_session(&s, "new").await.unwrap().is_none());

        // Tokens and OAuth columns in one write; missing connection → NotFound, nothing sealed.
        let key = ConnectionKey::new(Owner::Org, "notes", "main");
        let secrets = vec![("item:token".to_owned(), "tok-123".to_owned())];
        let oauth = ConnectionOAuth {
            client: Some("a".into()),
            client_owner: Some(Owner::Org),
            refresh_item_id: None,
            expires_at: Some(42),
            scope: Some("read".into()),
            token_url: None,
            missing_scopes: vec!["write".into()],
        };
        assert!(
            store
                .save_oauth_tokens(&s, &key, &secrets, &oauth)
                .await
                .is_err()
        );
        assert_eq!(store.get_secret(&s, Owner::Org, "item:token").await.unwrap(), None);
        store
            .upsert_connection(
                &s,
                &ConnectionRecord {
                    owner: Owner::Org,
                    integration: "notes".into(),
                    name: "main".into(),
                    template: "oauth2".into(),
                    provider: "vault".into(),
                    item_ids: json!({"token": "item:token"}),
                    identity_label: None,
                    description: None,
                    last_health: None,
                    tools_synced_at: None,
                    expires_at: None,
                    created_at: 0,
                    updated_at: 0,
                    oauth: None,
                },
            )
            .await
            .unwrap();
        store
            .save_oauth_tokens(&s, &key, &secrets, &oauth)
            .await
            .unwrap();
        assert_eq!(
            store.get_connection_oauth(&s, &key).await.unwrap(),
            Some(oauth.clone())
        );
        // Connection reads carry the OAuth columns, missing scopes included (provider_state).
        let record = store.get_connection(&s, &key).await.unwrap().unwrap();
        assert_eq!(record.expires_at, Some(42));
        assert_eq!(record.oauth, Some(oauth.clone()));
        let listed = store
            .list_connections(&s, Some("notes"), None)
            .await
            .unwrap();
        assert_eq!(
            listed[0].oauth.as_ref().unwrap().missing_scopes,
            vec!["write"]
        );
        // A later grant with every scope clears them.
        let complete = ConnectionOAuth {
            missing_scopes: Vec::new(),
            ..oauth
        };
        store
            .save_oauth_tokens(&s, &key, &[], &complete)
            .await
            .unwrap();
        assert_eq!(
            store.get_connection_oauth(&s, &key).await.unwrap(),
            Some(complete)
        );
        assert_eq!(
            store.get_secret(&s, Owner::Org, "item:token").await.unwrap().as_deref(),
            Some("tok-123")
        );
        store.close().await;
        if db.backend() == executor_store::Backend::Sqlite {
            for entry in std::fs::read_dir(db.path()).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    let bytes = std::fs::read(&path).unwrap();
                    assert!(
                        !String::from_utf8_lossy(&bytes).contains("tok-123"),
                        "{path:?}"
                    );
                }
            }
        }
    }
}
