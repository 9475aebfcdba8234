//! The account rules on a real SQLite store: who may sign up, sign-in limits, roles, API keys,
//! the OAuth authorization server's whole flow (and its refusals), and the device login.

use std::sync::Arc;

use base64::Engine as _;
use executor_accounts::{
    AccountError, Accounts, AuthorizeRedirect, AuthorizeRequest, Identity, Organisation,
    TokenGrant, Via,
};
use executor_store::SqlStore;
use sha2::{Digest, Sha256};

const BASE: &str = "https://exec.example";

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
        .sign_up("Olga", "Olga@Example.com", "correct horse", None)
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
            "battery staple",
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
            .sign_up("Eve", "eve@example.com", "password1", None)
            .await,
        Err(AccountError::InviteRequired)
    ));
    assert!(matches!(
        accounts
            .sign_up(
                "Eve",
                "eve@example.com",
                "password1",
                Some("ZZZZ-ZZZZ-ZZZZ")
            )
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
            .sign_up("Dup", "MAX@example.com", "password1", Some(&invite.code))
            .await,
        Err(AccountError::EmailTaken)
    ));
    // Still unused after the refusal, then used once.
    let admin = accounts
        .sign_up("Ada", "ada@example.com", "password1", Some(&invite.code))
        .await
        .unwrap();
    assert_eq!(admin.user.role, "admin");
    assert!(!accounts.invite_valid(&invite.code).await.unwrap());
    assert!(matches!(
        accounts
            .sign_up("Bob", "bob@example.com", "password1", Some(&invite.code))
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
        ("", "a@b.c", "password1"),
        ("A", "nope", "password1"),
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
async fn sign_in_is_slowed_then_refused_and_sign_out_ends_the_session() {
    let (accounts, _dir) = accounts().await;
    team(&accounts).await;
    let signed = accounts
        .sign_in("OLGA@example.com", "correct horse", Some("10.0.0.1"))
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
    // Past the limit even the right password waits, from any address.
    assert!(matches!(
        accounts.sign_in("olga@example.com", "correct horse", Some("10.0.0.2")).await,
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
    let key = accounts.create_api_key(&admin, Some("ci")).await.unwrap();
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
    let key = accounts.create_api_key(&owner, None).await.unwrap();
    let value = key.value.clone().unwrap();
    assert!(value.starts_with("exk_"));
    let me = identity(&accounts, &value).await;
    assert_eq!(me.via, Via::ApiKey);
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
        .register_client(Some("Claude Code"), &[redirect.to_owned()])
        .await
        .unwrap();
    assert!(
        accounts
            .register_client(None, &["http://evil.example/cb".to_owned()])
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

#[tokio::test]
async fn a_replayed_refresh_token_revokes_the_grant() {
    let (accounts, _dir) = accounts().await;
    let (owner, _) = team(&accounts).await;
    let redirect = "http://localhost:7777/cb";
    let client = accounts
        .register_client(None, &[redirect.to_owned()])
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
    let code = accounts.device_code(Some("executor-cli")).await.unwrap();
    assert!(
        code.verification_uri_complete
            .starts_with(&format!("{BASE}/device?user_code="))
    );
    assert!(accounts.device_code(Some("someone-else")).await.is_err());
    let poll = || {
        accounts.device_token(
            Some(executor_accounts::DEVICE_GRANT_TYPE),
            Some(&code.device_code),
            Some("executor-cli"),
        )
    };
    assert_eq!(poll().await.unwrap_err().code(), "authorization_pending");
    assert_eq!(poll().await.unwrap_err().code(), "slow_down");
    assert_eq!(
        accounts
            .device_status(&code.user_code.to_lowercase())
            .await
            .unwrap()
            .status,
        "pending"
    );
    accounts
        .answer_device(&owner, &code.user_code, true)
        .await
        .unwrap();
    let signed = poll().await.unwrap();
    assert_eq!(signed.user.id, owner.user.id);
    assert_eq!(identity(&accounts, &signed.token).await.via, Via::Session);
    // Used once.
    assert_eq!(poll().await.unwrap_err().code(), "invalid_grant");
    assert!(
        accounts
            .answer_device(&owner, &code.user_code, true)
            .await
            .is_err()
    );
}
