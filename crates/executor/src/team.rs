//! `executor serve`'s accounts: the organisation from the environment, the base URL people and
//! agents use, the headless owner, and the periodic purge of expired tokens.

use std::time::Duration;

use anyhow::{Context, bail};
use executor_accounts::{Accounts, Organisation};

use crate::server::Opened;

/// How often expired sessions, tokens and grants are forgotten.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `EXECUTOR_WEB_BASE_URL` (an http(s) origin, any path dropped), else the address served.
fn base_url(served: &str) -> anyhow::Result<String> {
    let Some(raw) = env(executor_server::WEB_BASE_URL_ENV) else {
        tracing::warn!(
            base_url = served,
            "EXECUTOR_WEB_BASE_URL is not set: sign-ins work only from this address; set it to the origin people use"
        );
        return Ok(served.to_owned());
    };
    let url = url::Url::parse(&raw).with_context(|| format!("EXECUTOR_WEB_BASE_URL {raw:?}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        bail!("EXECUTOR_WEB_BASE_URL must be an http:// or https:// origin, got {raw:?}");
    }
    Ok(url.origin().ascii_serialization())
}

/// The accounts of the organisation this server serves; creates the owner from
/// `EXECUTOR_BOOTSTRAP_ADMIN_EMAIL` / `_PASSWORD` when nobody has signed up yet.
pub(crate) async fn accounts(opened: &Opened, served: &str) -> anyhow::Result<Accounts> {
    let slug = opened.caller.tenant().to_owned();
    if !executor_engine::is_valid_slug(&slug) {
        bail!("EXECUTOR_ORG_SLUG must be a slug (a-z, 0-9 and '-'), got {slug:?}");
    }
    let org = Organisation {
        name: env("EXECUTOR_ORG_NAME").unwrap_or_else(|| "Default".to_owned()),
        slug,
    };
    let store: std::sync::Arc<dyn executor_store::Store> = opened.store.clone();
    let accounts = Accounts::new(store, org, &base_url(served)?);
    match (
        env("EXECUTOR_BOOTSTRAP_ADMIN_EMAIL"),
        std::env::var("EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD").ok(),
    ) {
        (Some(email), Some(password)) => {
            let name = env("EXECUTOR_BOOTSTRAP_ADMIN_NAME").unwrap_or_else(|| "Admin".to_owned());
            if accounts
                .bootstrap_owner(&email, &password, &name)
                .await
                .map_err(|e| anyhow::anyhow!("creating the bootstrap owner: {e}"))?
            {
                tracing::info!(%email, "created the owner from EXECUTOR_BOOTSTRAP_ADMIN_EMAIL");
            }
        }
        (Some(_), None) | (None, Some(_)) => bail!(
            "EXECUTOR_BOOTSTRAP_ADMIN_EMAIL and EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD go together"
        ),
        (None, None) => {}
    }
    let purging = accounts.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PURGE_EVERY);
        loop {
            tick.tick().await;
            if let Err(e) = purging.purge_expired().await {
                tracing::warn!(error = %e, "could not purge expired sign-ins");
            }
        }
    });
    Ok(accounts)
}

/// What the operator is told at start.
pub(crate) async fn announce(accounts: &Accounts) {
    let base = accounts.base_url();
    match accounts.needs_setup().await {
        Ok(true) => println!("Open {base}/setup to create the owner account."),
        Ok(false) => println!("Sign in at {base}/login."),
        Err(e) => tracing::warn!(error = %e, "could not read the accounts"),
    }
}
