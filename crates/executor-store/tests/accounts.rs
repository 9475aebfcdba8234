//! The team server's account rows on both databases: what the store itself guarantees when
//! requests race (one first account, single-use invites and refresh tokens, an owner kept) and
//! that the audit log cannot be rewritten.

use executor_store::{
    AccountStore, AttemptLimit, AuditFilter, AuditRecord, ClientRecord, GrantKind, GrantRecord,
    GrantStatus, InviteRecord, MemberChange, Reservation, StoreError, TokenKind, TokenRecord,
    UserRecord,
};
use serde_json::json;

mod support;

fn user(id: &str, email: &str, role: &str) -> UserRecord {
    UserRecord {
        id: id.to_owned(),
        tenant: "acme".to_owned(),
        email: email.to_owned(),
        name: id.to_owned(),
        password_hash: "$argon2id$stub".to_owned(),
        role: role.to_owned(),
        created_at: 1,
        updated_at: 1,
    }
}

fn invite(code: &str, expires_at: i64) -> InviteRecord {
    InviteRecord {
        id: format!("inv_{code}"),
        tenant: "acme".to_owned(),
        code: code.to_owned(),
        role: "admin".to_owned(),
        label: None,
        created_by: "usr_owner".to_owned(),
        created_at: 1,
        expires_at,
        used_by: None,
        used_by_email: None,
        used_at: None,
    }
}

fn token(id: &str, hash: &str, kind: TokenKind, user_id: &str) -> TokenRecord {
    TokenRecord {
        id: id.to_owned(),
        token_hash: hash.to_owned(),
        kind,
        tenant: "acme".to_owned(),
        user_id: user_id.to_owned(),
        name: None,
        hint: None,
        client_id: Some("client".to_owned()),
        resource: None,
        scope: None,
        grant_id: Some("grant1".to_owned()),
        created_at: 1,
        updated_at: 1,
        last_used_at: None,
        expires_at: None,
        used_at: None,
    }
}

both_backends! {
    async fn only_one_first_account_wins_a_race(db: &TestDb) {
        let store = db.open().await;
        let attempts: Vec<_> = (0..6)
            .map(|i| {
                let store = &store;
                async move {
                    store
                        .insert_first_user(&user(&format!("usr_{i}"), &format!("u{i}@x.io"), "owner"))
                        .await
                        .unwrap()
                }
            })
            .collect();
        let won = futures::future::join_all(attempts).await;
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
        assert_eq!(store.count_users("acme").await.unwrap(), 1);
        // Another tenant is empty still.
        assert_eq!(store.count_users("other").await.unwrap(), 0);
    }

    async fn an_invite_is_redeemed_once_and_not_after_expiry(db: &TestDb) {
        let store = db.open().await;
        assert!(store.insert_first_user(&user("usr_owner", "o@x.io", "owner")).await.unwrap());
        store.insert_invite(&invite("AAAA-BBBB-CCCC", 1_000)).await.unwrap();
        store.insert_invite(&invite("DDDD-EEEE-FFFF", 10)).await.unwrap();
        // The role comes from the invite, not the record handed in.
        let role = store
            .insert_invited_user(&user("usr_a", "a@x.io", "member"), "AAAA-BBBB-CCCC", 100)
            .await
            .unwrap();
        assert_eq!(role.as_deref(), Some("admin"));
        assert_eq!(store.get_user("acme", "usr_a").await.unwrap().unwrap().role, "admin");
        assert_eq!(
            store
                .insert_invited_user(&user("usr_b", "b@x.io", "member"), "AAAA-BBBB-CCCC", 100)
                .await
                .unwrap(),
            None,
            "used"
        );
        assert_eq!(
            store
                .insert_invited_user(&user("usr_c", "c@x.io", "member"), "DDDD-EEEE-FFFF", 100)
                .await
                .unwrap(),
            None,
            "expired"
        );
        // A taken email leaves the code unused.
        store.insert_invite(&invite("GGGG-HHHH-JJJJ", 1_000)).await.unwrap();
        assert!(matches!(
            store
                .insert_invited_user(&user("usr_d", "a@x.io", "member"), "GGGG-HHHH-JJJJ", 100)
                .await,
            Err(StoreError::AlreadyExists)
        ));
        let unused = store.get_invite_by_code("acme", "GGGG-HHHH-JJJJ").await.unwrap().unwrap();
        assert_eq!(unused.used_at, None);
        // Revoking removes only unused invites.
        assert!(!store.delete_unused_invite("acme", "inv_AAAA-BBBB-CCCC").await.unwrap());
        assert!(store.delete_unused_invite("acme", "inv_GGGG-HHHH-JJJJ").await.unwrap());
        assert_eq!(store.list_invites("acme").await.unwrap().len(), 2);
    }

    async fn the_last_owner_stays(db: &TestDb) {
        let store = db.open().await;
        assert!(store.insert_first_user(&user("usr_o", "o@x.io", "owner")).await.unwrap());
        store.insert_invite(&invite("AAAA-BBBB-CCCC", i64::MAX)).await.unwrap();
        store
            .insert_invited_user(&user("usr_m", "m@x.io", "member"), "AAAA-BBBB-CCCC", 1)
            .await
            .unwrap();
        assert_eq!(store.set_user_role("acme", "usr_o", "member").await.unwrap(), MemberChange::LastOwner);
        assert_eq!(store.delete_user("acme", "usr_o").await.unwrap(), MemberChange::LastOwner);
        assert_eq!(store.set_user_role("acme", "usr_m", "owner").await.unwrap(), MemberChange::Done);
        assert_eq!(store.set_user_role("acme", "usr_o", "member").await.unwrap(), MemberChange::Done);
        assert_eq!(store.set_user_role("acme", "nobody", "member").await.unwrap(), MemberChange::NotFound);
        // Removing a user ends their tokens with them.
        store.insert_token(&token("t1", "h1", TokenKind::ApiKey, "usr_o")).await.unwrap();
        assert!(store.find_token("h1").await.unwrap().is_some());
        assert_eq!(store.delete_user("acme", "usr_o").await.unwrap(), MemberChange::Done);
        assert!(store.find_token("h1").await.unwrap().is_none());
    }

    async fn a_refresh_token_is_used_once_and_a_grant_revoked_whole(db: &TestDb) {
        let store = db.open().await;
        assert!(store.insert_first_user(&user("usr_o", "o@x.io", "owner")).await.unwrap());
        store.insert_token(&token("r1", "hr1", TokenKind::OAuthRefresh, "usr_o")).await.unwrap();
        store.insert_token(&token("a1", "ha1", TokenKind::OAuthAccess, "usr_o")).await.unwrap();
        let (first, second) = tokio::join!(
            store.use_refresh_token("hr1", 5),
            store.use_refresh_token("hr1", 5)
        );
        let used = [first.unwrap(), second.unwrap()];
        assert_eq!(used.iter().filter(|u| u.is_some()).count(), 1);
        // An access token is never "used" as a refresh token.
        assert!(store.use_refresh_token("ha1", 5).await.unwrap().is_none());
        assert_eq!(store.revoke_grant_tokens("grant1").await.unwrap(), 2);
        assert!(store.find_token("ha1").await.unwrap().is_none());
    }

    async fn tokens_are_listed_touched_and_purged(db: &TestDb) {
        let store = db.open().await;
        assert!(store.insert_first_user(&user("usr_o", "o@x.io", "owner")).await.unwrap());
        let mut key = token("k1", "hk1", TokenKind::ApiKey, "usr_o");
        key.grant_id = None;
        store.insert_token(&key).await.unwrap();
        let mut session = token("s1", "hs1", TokenKind::Session, "usr_o");
        session.expires_at = Some(50);
        store.insert_token(&session).await.unwrap();
        assert!(matches!(store.insert_token(&key).await, Err(StoreError::AlreadyExists)));
        let keys = store.list_tokens("acme", "usr_o", TokenKind::ApiKey).await.unwrap();
        assert_eq!(keys.len(), 1);
        store.touch_token("k1", 1_000, 60_000).await.unwrap();
        store.touch_token("k1", 2_000, 60_000).await.unwrap();
        let (found, who) = store.find_token("hk1").await.unwrap().unwrap();
        assert_eq!(found.last_used_at, Some(1_000), "stamped once per minute");
        assert_eq!(who.email, "o@x.io");
        assert!(!store.delete_token("acme", "someone-else", TokenKind::ApiKey, "k1").await.unwrap());
        assert_eq!(store.purge_expired_accounts(100, 0, 0).await.unwrap(), 1);
        assert!(store.find_token("hs1").await.unwrap().is_none());
        assert!(store.delete_token("acme", "usr_o", TokenKind::ApiKey, "k1").await.unwrap());
    }

    async fn the_audit_log_is_append_only_and_pages_newest_first(db: &TestDb) {
        let store = db.open().await;
        let event = |i: i64, kind: &str, actor: &str| AuditRecord {
            id: 0,
            tenant: "acme".to_owned(),
            at: i,
            kind: kind.to_owned(),
            actor_id: Some(actor.to_owned()),
            actor_email: Some(format!("{actor}@x.io")),
            via: "session".to_owned(),
            action: format!("policy.create.{i}"),
            target: Some(format!("pol_{i}")),
            before: None,
            after: Some(json!({"i": i})),
            outcome: "ok".to_owned(),
            detail: None,
        };
        let events: Vec<_> = (1..=5)
            .map(|i| event(i, if i % 2 == 0 { "tool_call" } else { "change" }, if i < 3 { "a" } else { "b" }))
            .collect();
        store.append_audit(&events).await.unwrap();
        let page = store
            .list_audit("acme", &AuditFilter { limit: 2, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(page.iter().map(|e| e.at).collect::<Vec<_>>(), vec![5, 4]);
        let next = store
            .list_audit("acme", &AuditFilter { limit: 2, before: Some(page[1].id), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(next.iter().map(|e| e.at).collect::<Vec<_>>(), vec![3, 2]);
        let calls = store
            .list_audit("acme", &AuditFilter { limit: 10, kind: Some("tool_call".into()), actor_id: Some("a".into()), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(calls.iter().map(|e| e.at).collect::<Vec<_>>(), vec![2]);
        let by_action = store
            .list_audit("acme", &AuditFilter { limit: 10, action: Some("create.3".into()), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(by_action.len(), 1);
        assert_eq!(by_action[0].after, Some(json!({"i": 3})));
        assert!(store.list_audit("other", &AuditFilter { limit: 10, ..Default::default() }).await.unwrap().is_empty());
        // Neither an update nor a delete gets through.
        assert!(db.try_execute_raw("UPDATE audit_event SET outcome = 'error'").await.is_err());
        assert!(db.try_execute_raw("DELETE FROM audit_event").await.is_err());
        assert_eq!(store.list_audit("acme", &AuditFilter { limit: 10, ..Default::default() }).await.unwrap().len(), 5);
    }

    async fn attempts_take_a_slot_each_atomically_and_free_with_the_window(db: &TestDb) {
        let store = db.open().await;
        let limits = |pair: &str| {
            vec![
                AttemptLimit { key: format!("pair:{pair}"), limit: 5 },
                AttemptLimit { key: "address:1.2.3.4".to_owned(), limit: 8 },
            ]
        };
        // 40 at once for one pair: exactly its limit get a slot.
        let attempts: Vec<_> = (0..40)
            .map(|i| {
                let (store, limits) = (&store, limits("a"));
                async move { store.reserve_attempt(&format!("att{i}"), &limits, 1_000, 900_000).await.unwrap() }
            })
            .collect();
        let got = futures::future::join_all(attempts).await;
        let reserved = got.iter().filter(|r| matches!(r, Reservation::Reserved { .. })).count();
        assert_eq!(reserved, 5, "{got:?}");
        assert!(got.iter().all(|r| match r {
            Reservation::Refused { retry_after_ms } => *retry_after_ms == 900_000,
            Reservation::Reserved { .. } => true,
        }));
        // Another pair from the same address has what is left of the address's limit.
        for i in 0..3 {
            assert!(matches!(store.reserve_attempt(&format!("b{i}"), &limits("b"), 2_000, 900_000).await.unwrap(), Reservation::Reserved { .. }));
        }
        assert!(matches!(store.reserve_attempt("b3", &limits("b"), 2_000, 900_000).await.unwrap(), Reservation::Refused { .. }));
        // A released attempt frees its slots; a cleared key all of its own.
        store.release_attempt("b0").await.unwrap();
        match store.reserve_attempt("b4", &limits("b"), 2_000, 900_000).await.unwrap() {
            Reservation::Reserved { before } => assert_eq!(before, vec![2, 7]),
            other => panic!("{other:?}"),
        }
        store.clear_attempts("pair:a").await.unwrap();
        assert!(matches!(
            store.reserve_attempt("a1", &[AttemptLimit { key: "pair:a".into(), limit: 5 }], 3_000, 900_000).await.unwrap(),
            Reservation::Reserved { before } if before == vec![0]
        ));
        // Past the window every slot is free again.
        assert!(matches!(store.reserve_attempt("late", &limits("b"), 1_000 + 900_001, 900_000).await.unwrap(), Reservation::Reserved { .. }));
    }

    async fn pending_grants_are_capped_per_client_and_in_all(db: &TestDb) {
        let store = db.open().await;
        let grant = |id: &str, client: &str, expires_at: i64| GrantRecord {
            id: id.to_owned(),
            kind: GrantKind::Authorization,
            tenant: "acme".to_owned(),
            code_hash: None,
            user_code: None,
            client_id: client.to_owned(),
            user_id: None,
            status: GrantStatus::Pending,
            data: json!({}),
            created_at: 10,
            expires_at,
            polled_at: None,
        };
        assert!(store.insert_grant(&grant("g1", "c1", 1_000), 2, 3).await.unwrap());
        assert!(store.insert_grant(&grant("g2", "c1", 1_000), 2, 3).await.unwrap());
        assert!(!store.insert_grant(&grant("g3", "c1", 1_000), 2, 3).await.unwrap(), "per client");
        assert!(store.insert_grant(&grant("g4", "c2", 1_000), 2, 3).await.unwrap());
        assert!(!store.insert_grant(&grant("g5", "c3", 1_000), 2, 3).await.unwrap(), "in all");
        assert!(store.get_grant("g3").await.unwrap().is_none());
        // Answered grants are not pending; expired ones go first.
        assert!(store.answer_grant("g1", GrantStatus::Denied, "u", None).await.unwrap());
        assert!(store.insert_grant(&grant("g6", "c3", 1_000), 2, 3).await.unwrap());
        let late = GrantRecord { created_at: 2_000, ..grant("g7", "c3", 3_000) };
        assert!(store.insert_grant(&late, 2, 3).await.unwrap());
    }

    async fn clients_without_tokens_or_grants_are_purged(db: &TestDb) {
        let store = db.open().await;
        let client = |id: &str, created_at: i64| ClientRecord {
            client_id: id.to_owned(),
            tenant: "acme".to_owned(),
            client_name: id.to_owned(),
            redirect_uris: vec!["http://127.0.0.1/cb".to_owned()],
            created_at,
        };
        assert!(store.insert_first_user(&user("usr_o", "o@x.io", "owner")).await.unwrap());
        store.insert_client(&client("unused", 1)).await.unwrap();
        store.insert_client(&client("used", 1)).await.unwrap();
        store.insert_client(&client("young", 500)).await.unwrap();
        let mut t = token("t1", "ht1", TokenKind::OAuthRefresh, "usr_o");
        t.client_id = Some("used".to_owned());
        store.insert_token(&t).await.unwrap();
        assert_eq!(store.purge_expired_accounts(100, 0, 100).await.unwrap(), 1);
        assert!(store.get_client("unused").await.unwrap().is_none());
        assert!(store.get_client("used").await.unwrap().is_some());
        assert!(store.get_client("young").await.unwrap().is_some());
    }
}
