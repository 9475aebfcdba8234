//! The account rules on a real SQLite store: who may sign up, sign-in limits, roles, API keys,
//! the OAuth authorization server's whole flow (and its refusals), and the device login.

use std::sync::Arc;

use base64::Engine as _;
use executor_accounts::{
    AccountError, Accounts, AuthorizeRedirect, AuthorizeRequest, Identity, KeyScope, Organisation,
    TokenGrant, Via,
};
use executor_store::SqlStore;
use sha2::{Digest, Sha256};

const BASE: &str = "https://exec.example";
const OWNER_PW: &str = "violet teapot rides north";
const MEMBER_PW: &str = "seven quiet lanterns hum";
const OTHER_PW: &str = "harbor-pickle-saxophone-42";

async fn accounts() -> (Accounts, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open(dir.path()).await.unwrap();
    let accounts = Accounts::new(
        Arc::new(store),
        Organisation {
            slug: "acme".into(),
            name: "Acme".into(),
        },
        BASE,
    );
    (accounts, dir)
}

async fn identity(accounts: &Accounts, token: &str) -> Identity {
    accounts
        .authenticate(token)
        .await
        .unwrap()
        .expect("signed in")
}

/// An owner and a member, signed in.
async fn team(accounts: &Accounts) -> (Identity, Identity) {
    let owner = accounts
        .sign_up("Olga", "Olga@Example.com", OWNER_PW, None)
        .await
        .unwrap();
    let owner = identity(accounts, &owner.token).await;
    let invite = accounts
        .create_invite(&owner, None, Some("Max"), None)
        .await
        .unwrap();
    let member = accounts
        .sign_up(
            "Max",
            "max@example.com",
            MEMBER_PW,
            Some(&invite.code.to_lowercase()),
        )
        .await
        .unwrap();
    (owner, identity(accounts, &member.token).await)
}

#[tokio::test]
async fn the_first_account_owns_and_others_need_a_single_use_invite() {
    let (accounts, _dir) = accounts().await;
    assert!(accounts.needs_setup().await.unwrap());
    let (owner, member) = team(&accounts).await;
    assert_eq!(owner.role.as_str(), "owner");
    assert_eq!(
        owner.user.email, "olga@example.com",
        "emails are kept lower-cased"
    );
    assert_eq!(member.role.as_str(), "member");
    assert!(!accounts.needs_setup().await.unwrap());
    assert!(matches!(
        accounts
            .sign_up("Eve", "eve@example.com", OTHER_PW, None)
            .await,
        Err(AccountError::InviteRequired)
    ));
    assert!(matches!(
        accounts
            .sign_up("Eve", "eve@example.com", OTHER_PW, Some("ZZZZ-ZZZZ-ZZZZ"))
            .await,
        Err(AccountError::InvalidInvite)
    ));
    let invite = accounts
        .create_invite(&owner, Some("admin"), None, Some(1))
        .await
        .unwrap();
    assert!(accounts.invite_valid(&invite.code).await.unwrap());
    assert!(matches!(
        accounts
            .sign_up("Dup", "MAX@example.com", OTHER_PW, Some(&invite.code))
            .await,
        Err(AccountError::EmailTaken)
    ));
    // Still unused after the refusal, then used once.
    let admin = accounts
        .sign_up("Ada", "ada@example.com", OTHER_PW, Some(&invite.code))
        .await
        .unwrap();
    assert_eq!(admin.user.role, "admin");
    assert!(!accounts.invite_valid(&invite.code).await.unwrap());
    assert!(matches!(
        accounts
            .sign_up("Bob", "bob@example.com", OTHER_PW, Some(&invite.code))
            .await,
        Err(AccountError::InvalidInvite)
    ));
    // Members cannot invite; bad input changes nothing.
    assert!(matches!(
        accounts.create_invite(&member, None, None, None).await,
        Err(AccountError::AdminForbidden)
    ));
    assert!(matches!(
        accounts
            .create_invite(&owner, Some("owner"), None, None)
            .await,
        Err(AccountError::InvalidInput(_))
    ));
    assert!(matches!(
        accounts.create_invite(&owner, None, None, Some(0)).await,
        Err(AccountError::InvalidInput(_))
    ));
    for (name, email, password) in [
        ("", "a@b.c", OTHER_PW),
        ("A", "nope", OTHER_PW),
        ("A", "a@b.c", "short"),
    ] {
        assert!(matches!(
            accounts
                .sign_up(name, email, password, Some("AAAA-AAAA-AAAA"))
                .await,
            Err(AccountError::InvalidInput(_))
        ));
    }
}

#[tokio::test]
async fn sign_in_is_slowed_then_refused_for_the_pair_and_sign_out_ends_the_session() {
    let (accounts, _dir) = accounts().await;
    team(&accounts).await;
    let signed = accounts
        .sign_in("OLGA@example.com", OWNER_PW, Some("10.0.0.1"))
        .await
        .unwrap();
    assert!(
        accounts
            .authenticate(&signed.token)
            .await
            .unwrap()
            .is_some()
    );
    for _ in 0..5 {
        assert!(matches!(
            accounts
                .sign_in("olga@example.com", "wrong", Some("10.0.0.1"))
                .await,
            Err(AccountError::InvalidCredentials)
        ));
    }
    // Past the limit even the right password waits, from the address that failed.
    assert!(matches!(
        accounts.sign_in("olga@example.com", OWNER_PW, Some("10.0.0.1")).await,
        Err(AccountError::TooManyAttempts { retry_after_secs }) if retry_after_secs > 0
    ));
    // An unknown account is refused like a wrong password.
    assert!(matches!(
        accounts.sign_in("nobody@example.com", "x", None).await,
        Err(AccountError::InvalidCredentials)
    ));
    accounts.sign_out(&signed.token).await.unwrap();
    assert!(
        accounts
            .authenticate(&signed.token)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        accounts
            .authenticate("exs_not-a-token")
            .await
            .unwrap()
            .is_none()
    );
    assert!(accounts.authenticate("garbage").await.unwrap().is_none());
}

/// Runs `n` sign-ins at once; counts (wrong password, too many, busy).
async fn sign_in_storm(
    accounts: &Accounts,
    n: usize,
    email: impl Fn(usize) -> String,
    address: impl Fn(usize) -> String,
) -> (usize, usize, usize) {
    let all: Vec<_> = (0..n)
        .map(|i| {
            let (accounts, email, address) = (accounts.clone(), email(i), address(i));
            tokio::spawn(async move {
                accounts
                    .sign_in(&email, "not the password", Some(&address))
                    .await
            })
        })
        .collect();
    let (mut wrong, mut limited, mut busy) = (0, 0, 0);
    for task in all {
        match task.await.unwrap() {
            Err(AccountError::InvalidCredentials) => wrong += 1,
            Err(AccountError::TooManyAttempts { .. }) => limited += 1,
            Err(AccountError::Busy { retry_after_secs }) => {
                assert!(retry_after_secs > 0);
                busy += 1
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    (wrong, limited, busy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sign_ins_hash_at_most_the_limit_then_are_refused() {
    let (accounts, _dir) = accounts().await;
    team(&accounts).await;
    let hashed_before = accounts.hash_stats().total;
    // 40 at once on one account from one address: 5 are checked, the others refused unhashed.
    let (wrong, limited, busy) = sign_in_storm(
        &accounts,
        40,
        |_| "olga@example.com".to_owned(),
        |_| "203.0.113.7".to_owned(),
    )
    .await;
    assert_eq!(wrong, 5, "{wrong} hashed, {limited} limited, {busy} busy");
    assert_eq!(limited + busy, 35);
    assert_eq!(accounts.hash_stats().total - hashed_before, 5);
    // 60 at once from one address on 60 accounts: at most the address's 20.
    let hashed_before = accounts.hash_stats().total;
    let (wrong, limited, busy) = sign_in_storm(
        &accounts,
        60,
        |i| format!("guess{i}@example.com"),
        |_| "198.51.100.9".to_owned(),
    )
    .await;
    assert!(wrong <= 20, "{wrong} hashed");
    assert_eq!(wrong + limited + busy, 60);
    assert!(accounts.hash_stats().total - hashed_before <= 20);
    assert!(
        accounts.hash_stats().peak <= 4,
        "{:?}",
        accounts.hash_stats()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashes_in_flight_are_bounded_whatever_the_addresses() {
    let (accounts, _dir) = accounts().await;
    team(&accounts).await;
    // 80 attempts from 80 addresses pass every limit: the hasher is what bounds them.
    let (wrong, limited, busy) = sign_in_storm(
        &accounts,
        80,
        |i| format!("u{i}@example.com"),
        |i| format!("192.0.2.{i}"),
    )
    .await;
    let stats = accounts.hash_stats();
    assert_eq!(limited, 0);
    assert!(stats.peak <= 4, "{stats:?}");
    assert!(busy > 0, "the queue is bounded: {wrong} hashed, {stats:?}");
    assert_eq!(stats.in_flight, 0);
}

#[tokio::test]
async fn the_owner_signs_in_from_another_address_while_an_attacker_is_locked_out() {
    let (accounts, _dir) = accounts().await;
    team(&accounts).await;
    for _ in 0..5 {
        assert!(matches!(
            accounts
                .sign_in("olga@example.com", "guess", Some("203.0.113.66"))
                .await,
            Err(AccountError::InvalidCredentials)
        ));
    }
    assert!(matches!(
        accounts
            .sign_in("olga@example.com", "guess", Some("203.0.113.66"))
            .await,
        Err(AccountError::TooManyAttempts { .. })
    ));
    // The owner, elsewhere, is not locked: the attacker filled only their own pair.
    let owner = accounts
        .sign_in("olga@example.com", OWNER_PW, Some("10.1.2.3"))
        .await
        .unwrap();
    assert_eq!(owner.user.email, "olga@example.com");
    // And the owner's own mistakes are cleared by their success.
    for _ in 0..4 {
        let _ = accounts
            .sign_in("olga@example.com", "typo", Some("10.1.2.3"))
            .await;
    }
    accounts
        .sign_in("olga@example.com", OWNER_PW, Some("10.1.2.3"))
        .await
        .unwrap();
    for _ in 0..4 {
        assert!(matches!(
            accounts
                .sign_in("olga@example.com", "typo", Some("10.1.2.3"))
                .await,
            Err(AccountError::InvalidCredentials)
        ));
    }
}

#[tokio::test]
async fn two_servers_on_one_database_share_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn executor_store::Store> = Arc::new(SqlStore::open(dir.path()).await.unwrap());
    let org = || Organisation {
        slug: "acme".into(),
        name: "Acme".into(),
    };
    let one = Accounts::new(store.clone(), org(), BASE);
    let two = Accounts::new(store, org(), BASE);
    team(&one).await;
    for i in 0..5 {
        let server = if i % 2 == 0 { &one } else { &two };
        assert!(matches!(
            server
                .sign_in("olga@example.com", "guess", Some("203.0.113.5"))
                .await,
            Err(AccountError::InvalidCredentials)
        ));
    }
    for server in [&one, &two] {
        assert!(matches!(
            server
                .sign_in("olga@example.com", "guess", Some("203.0.113.5"))
                .await,
            Err(AccountError::TooManyAttempts { .. })
        ));
    }
}

#[tokio::test]
async fn weak_and_common_passwords_are_refused_with_a_reason() {
    let (accounts, _dir) = accounts().await;
    for weak in [
        "password1",
        "qwertyuiop",
        "iloveyou123",
        "olga@example.com",
        "Olga1234",
    ] {
        match accounts
            .sign_up("Olga", "olga@example.com", weak, None)
            .await
        {
            Err(AccountError::WeakPassword(why)) => assert!(why.contains("too easy"), "{why}"),
            other => panic!("{weak:?}: {other:?}"),
        }
    }
    assert!(accounts.needs_setup().await.unwrap(), "nothing was made");
    accounts
        .sign_up("Olga", "olga@example.com", OWNER_PW, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn roles_change_by_admins_and_owners_only_by_owners() {
    let (accounts, _dir) = accounts().await;
    let (owner, member) = team(&accounts).await;
    assert!(matches!(
        accounts.set_role(&member, &member.user.id, "admin").await,
        Err(AccountError::AdminForbidden)
    ));
    accounts
        .set_role(&owner, &member.user.id, "admin")
        .await
        .unwrap();
    let admin = identity_by_id(&accounts, &member).await;
    assert!(matches!(
        accounts.set_role(&admin, &admin.user.id, "owner").await,
        Err(AccountError::Forbidden(_))
    ));
    assert!(matches!(
        accounts.set_role(&owner, &owner.user.id, "member").await,
        Err(AccountError::LastOwner)
    ));
    assert!(matches!(
        accounts.remove_member(&admin, &owner.user.id).await,
        Err(AccountError::Forbidden(_))
    ));
    // A removed member's credentials end at once.
    let key = accounts
        .create_api_key(&admin, Some("ci"), None)
        .await
        .unwrap();
    let value = key.value.unwrap();
    assert!(accounts.authenticate(&value).await.unwrap().is_some());
    accounts
        .remove_member(&owner, &admin.user.id)
        .await
        .unwrap();
    assert!(accounts.authenticate(&value).await.unwrap().is_none());
}

async fn identity_by_id(accounts: &Accounts, who: &Identity) -> Identity {
    let mut again = who.clone();
    again.role = executor_accounts::Role::parse(
        &accounts
            .members()
            .await
            .unwrap()
            .into_iter()
            .find(|m| m.id == who.user.id)
            .unwrap()
            .role,
    )
    .unwrap();
    again
}

#[tokio::test]
async fn api_keys_are_shown_once_listed_by_hint_and_revoked_at_once() {
    let (accounts, _dir) = accounts().await;
    let (owner, member) = team(&accounts).await;
    let key = accounts.create_api_key(&owner, None, None).await.unwrap();
    let value = key.value.clone().unwrap();
    assert!(value.starts_with("exk_"));
    let me = identity(&accounts, &value).await;
    assert_eq!(
        me.via,
        Via::ApiKey {
            scope: KeyScope::Agent
        }
    );
    assert_eq!(me.user.id, owner.user.id);
    let listed = accounts.api_keys(&owner).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name.as_deref(), Some("API key"));
    assert!(
        !listed[0].token_hash.contains(&value)
            && value.starts_with(listed[0].hint.as_deref().unwrap())
    );
    // Another member can neither see nor delete it.
    assert!(accounts.api_keys(&member).await.unwrap().is_empty());
    assert!(
        !accounts
            .delete_api_key(&member, &key.record.id)
            .await
            .unwrap()
    );
    assert!(
        accounts
            .delete_api_key(&owner, &key.record.id)
            .await
            .unwrap()
    );
    assert!(accounts.authenticate(&value).await.unwrap().is_none());
}

fn pkce() -> (String, String) {
    let verifier = "a".repeat(20) + "verifier-of-enough-length-for-pkce";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn query_of(url: &str, key: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[tokio::test]
async fn an_mcp_client_registers_is_consented_and_its_refresh_tokens_rotate() {
    let (accounts, _dir) = accounts().await;
    let (owner, _) = team(&accounts).await;
    let redirect = "http://127.0.0.1:7777/cb";
    let client = accounts
        .register_client(Some("Claude Code"), &[redirect.to_owned()], None)
        .await
        .unwrap();
    assert!(
        accounts
            .register_client(None, &["http://evil.example/cb".to_owned()], None)
            .await
            .is_err()
    );
    let (verifier, challenge) = pkce();
    let request = AuthorizeRequest {
        response_type: Some("code".into()),
        client_id: Some(client.client_id.clone()),
        redirect_uri: Some(redirect.into()),
        code_challenge: Some(challenge.clone()),
        code_challenge_method: Some("S256".into()),
        state: Some("st4te".into()),
        scope: None,
        resource: Some(format!("{BASE}/mcp")),
    };
    // plain PKCE and foreign resources go back to the client as errors; unknown redirect URIs
    // are never redirected to.
    let plain = AuthorizeRequest {
        code_challenge_method: Some("plain".into()),
        ..request.clone()
    };
    let AuthorizeRedirect::Client(back) = accounts.authorize(&plain).await.unwrap() else {
        panic!()
    };
    assert_eq!(query_of(&back, "error").as_deref(), Some("invalid_request"));
    assert_eq!(query_of(&back, "state").as_deref(), Some("st4te"));
    let foreign = AuthorizeRequest {
        resource: Some("https://other.example/mcp".into()),
        ..request.clone()
    };
    let AuthorizeRedirect::Client(back) = accounts.authorize(&foreign).await.unwrap() else {
        panic!()
    };
    assert_eq!(query_of(&back, "error").as_deref(), Some("invalid_target"));
    let elsewhere = AuthorizeRequest {
        redirect_uri: Some("http://127.0.0.1:9/other".into()),
        ..request.clone()
    };
    assert!(matches!(
        accounts.authorize(&elsewhere).await.unwrap(),
        AuthorizeRedirect::Page(_)
    ));

    let AuthorizeRedirect::Consent(path) = accounts.authorize(&request).await.unwrap() else {
        panic!()
    };
    let id = path.split("request=").nth(1).unwrap();
    let view = accounts.consent_view(id).await.unwrap();
    assert_eq!(view.client_name, "Claude Code");
    assert_eq!(view.redirect_origin, "http://127.0.0.1:7777");
    let to = accounts.answer_consent(&owner, id, true).await.unwrap();
    assert!(accounts.consent_view(id).await.is_err(), "answered once");
    let code = query_of(&to, "code").unwrap();
    assert_eq!(query_of(&to, "state").as_deref(), Some("st4te"));

    let exchange = |code: &str, verifier: &str| TokenGrant {
        grant_type: Some("authorization_code".into()),
        code: Some(code.to_owned()),
        code_verifier: Some(verifier.to_owned()),
        redirect_uri: Some(redirect.into()),
        client_id: Some(client.client_id.clone()),
        refresh_token: None,
        resource: None,
    };
    assert_eq!(
        accounts
            .exchange(&exchange(
                &code,
                "wrong-verifier-wrong-verifier-wrong-verifier"
            ))
            .await
            .unwrap_err()
            .error,
        "invalid_grant"
    );
    // A failed redemption spent the code: the right verifier is too late for it.
    assert_eq!(
        accounts
            .exchange(&exchange(&code, &verifier))
            .await
            .unwrap_err()
            .error,
        "invalid_grant"
    );
    // So is a code redeemed with another redirect URI.
    let code = approved_code(&accounts, &owner, &request).await;
    let mut elsewhere = exchange(&code, &verifier);
    elsewhere.redirect_uri = Some("http://127.0.0.1:7777/other".into());
    assert_eq!(
        accounts.exchange(&elsewhere).await.unwrap_err().error,
        "invalid_grant"
    );
    assert_eq!(
        accounts
            .exchange(&exchange(&code, &verifier))
            .await
            .unwrap_err()
            .error,
        "invalid_grant"
    );
    let code = approved_code(&accounts, &owner, &request).await;
    let tokens = accounts
        .exchange(&exchange(&code, &verifier))
        .await
        .unwrap();
    assert!(tokens.access_token.starts_with("exo_") && tokens.refresh_token.starts_with("exr_"));
    let agent = identity(&accounts, &tokens.access_token).await;
    assert_eq!(
        agent.via,
        Via::OAuth {
            resource: Some(format!("{BASE}/mcp"))
        }
    );
    // The code works once; presented again, it revokes what it gave.
    assert_eq!(
        accounts
            .exchange(&exchange(&code, &verifier))
            .await
            .unwrap_err()
            .error,
        "invalid_grant"
    );
    assert!(
        accounts
            .authenticate(&tokens.access_token)
            .await
            .unwrap()
            .is_none()
    );
}

/// A fresh code for `request`, approved by `by`.
async fn approved_code(accounts: &Accounts, by: &Identity, request: &AuthorizeRequest) -> String {
    let AuthorizeRedirect::Consent(path) = accounts.authorize(request).await.unwrap() else {
        panic!()
    };
    let id = path.split("request=").nth(1).unwrap();
    query_of(
        &accounts.answer_consent(by, id, true).await.unwrap(),
        "code",
    )
    .unwrap()
}

#[tokio::test]
async fn a_replayed_refresh_token_revokes_the_grant() {
    let (accounts, _dir) = accounts().await;
    let (owner, _) = team(&accounts).await;
    let redirect = "http://localhost:7777/cb";
    let client = accounts
        .register_client(None, &[redirect.to_owned()], None)
        .await
        .unwrap();
    let (verifier, challenge) = pkce();
    let AuthorizeRedirect::Consent(path) = accounts
        .authorize(&AuthorizeRequest {
            response_type: Some("code".into()),
            client_id: Some(client.client_id.clone()),
            redirect_uri: None,
            code_challenge: Some(challenge),
            code_challenge_method: Some("S256".into()),
            state: None,
            scope: Some("mcp".into()),
            resource: None,
        })
        .await
        .unwrap()
    else {
        panic!()
    };
    let id = path.split("request=").nth(1).unwrap();
    let code = query_of(
        &accounts.answer_consent(&owner, id, true).await.unwrap(),
        "code",
    )
    .unwrap();
    let first = accounts
        .exchange(&TokenGrant {
            grant_type: Some("authorization_code".into()),
            code: Some(code),
            code_verifier: Some(verifier),
            client_id: Some(client.client_id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    let refresh = |token: &str| TokenGrant {
        grant_type: Some("refresh_token".into()),
        refresh_token: Some(token.to_owned()),
        client_id: Some(client.client_id.clone()),
        ..Default::default()
    };
    let second = accounts
        .exchange(&refresh(&first.refresh_token))
        .await
        .unwrap();
    assert!(
        accounts
            .authenticate(&second.access_token)
            .await
            .unwrap()
            .is_some()
    );
    // The first refresh token again: a replay. Everything of the grant ends.
    assert_eq!(
        accounts
            .exchange(&refresh(&first.refresh_token))
            .await
            .unwrap_err()
            .error,
        "invalid_grant"
    );
    assert!(
        accounts
            .authenticate(&second.access_token)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        accounts
            .exchange(&refresh(&second.refresh_token))
            .await
            .unwrap_err()
            .error,
        "invalid_grant"
    );
    // A denied consent sends the person back with access_denied.
    let AuthorizeRedirect::Consent(path) = accounts
        .authorize(&AuthorizeRequest {
            response_type: Some("code".into()),
            client_id: Some(client.client_id.clone()),
            code_challenge: Some(pkce().1),
            code_challenge_method: Some("S256".into()),
            ..Default::default()
        })
        .await
        .unwrap()
    else {
        panic!()
    };
    let to = accounts
        .answer_consent(&owner, path.split("request=").nth(1).unwrap(), false)
        .await
        .unwrap();
    assert_eq!(query_of(&to, "error").as_deref(), Some("access_denied"));
}

#[tokio::test]
async fn the_cli_signs_in_with_a_device_code() {
    let (accounts, _dir) = accounts().await;
    let (owner, _) = team(&accounts).await;
    let code = accounts
        .device_code(Some("executor-cli"), None)
        .await
        .unwrap();
    assert!(
        code.verification_uri_complete
            .starts_with(&format!("{BASE}/device?user_code="))
    );
    assert!(
        accounts
            .device_code(Some("someone-else"), None)
            .await
            .is_err()
    );
    let poll = || {
        accounts.device_token(
            Some(executor_accounts::DEVICE_GRANT_TYPE),
            Some(&code.device_code),
            Some("executor-cli"),
            None,
        )
    };
    assert_eq!(poll().await.unwrap_err().code(), "authorization_pending");
    assert_eq!(poll().await.unwrap_err().code(), "slow_down");
    assert_eq!(
        accounts
            .device_status(&code.user_code.to_lowercase(), None)
            .await
            .unwrap()
            .status,
        "pending"
    );
    accounts
        .answer_device(&owner, &code.user_code, true, None)
        .await
        .unwrap();
    let signed = poll().await.unwrap();
    assert_eq!(signed.user.id, owner.user.id);
    assert_eq!(identity(&accounts, &signed.token).await.via, Via::Session);
    // Used once.
    assert_eq!(poll().await.unwrap_err().code(), "invalid_grant");
    assert!(
        accounts
            .answer_device(&owner, &code.user_code, true, None)
            .await
            .is_err()
    );
}
