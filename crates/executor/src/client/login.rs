//! `login`, `logout` and `whoami` against a team server: the device login (RFC 8628) ends in a
//! session token saved in a profile (0600, like every profile), which `call`, `tools` and `mcp`
//! then use.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::api::Api;
use super::profiles::{Profile, Profiles, valid_name};
use super::target::{self, ConnectFlags, parse_origin};
use super::{CliError, CliResult};

/// A profile name for an origin: its host and port, in the characters names allow.
fn name_for(origin: &str) -> String {
    let rest = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let name: String = rest
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    name.trim_matches('-').to_owned()
}

fn client(origin: &str) -> CliResult<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(5))
        .user_agent(concat!("executor-cli/", env!("CARGO_PKG_VERSION")));
    if origin.starts_with("http://") {
        builder = builder.tls_certs_only([]);
    }
    builder
        .build()
        .map_err(|e| CliError::failed(format!("building the HTTP client: {e}")))
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

fn unreachable(origin: &str, e: &reqwest::Error) -> CliError {
    CliError::unreachable(format!("could not reach {origin}: {e}"))
}

/// `executor login --base-url <origin> [--name <profile>]`.
pub(crate) async fn login(data_dir: &Path, base_url: &str, name: Option<&str>) -> CliResult {
    let (origin, _) = parse_origin(base_url)?;
    let name = name.map(str::to_owned).unwrap_or_else(|| name_for(&origin));
    if !valid_name(&name) {
        return Err(CliError::usage(format!(
            "profile name {name:?}: use letters, digits, '_', '.' and '-'"
        )));
    }
    let http = client(&origin)?;
    let discovery = http
        .get(format!("{origin}/api/auth/cli-login"))
        .send()
        .await
        .map_err(|e| unreachable(&origin, &e))?;
    let (status, discovery) = json_of(discovery).await;
    if status != 200 {
        return Err(CliError::failed(format!(
            "{origin} does not offer a sign-in ({status}): is it a team server (`executor serve`)? A local server needs no login"
        )));
    }
    let field = |k: &str| discovery[k].as_str().map(str::to_owned);
    let (Some(code_url), Some(token_url)) =
        (field("deviceAuthorizationEndpoint"), field("tokenEndpoint"))
    else {
        return Err(CliError::failed(format!(
            "{origin}'s sign-in discovery is incomplete"
        )));
    };
    let client_id = field("clientId").unwrap_or_else(|| "executor-cli".to_owned());
    let (status, code) = json_of(
        http.post(&code_url)
            .json(&json!({ "client_id": client_id }))
            .send()
            .await
            .map_err(|e| unreachable(&origin, &e))?,
    )
    .await;
    let (Some(device_code), Some(user_code)) = (
        code["device_code"].as_str().map(str::to_owned),
        code["user_code"].as_str().map(str::to_owned),
    ) else {
        return Err(CliError::failed(format!(
            "{origin} did not start a device login ({status})"
        )));
    };
    let link = code["verification_uri_complete"]
        .as_str()
        .or(code["verification_uri"].as_str())
        .unwrap_or_default();
    println!("To sign in, open {link}");
    println!("and confirm the code {user_code}.");
    let mut interval = Duration::from_secs(code["interval"].as_u64().unwrap_or(5).max(1));
    let deadline = Instant::now() + Duration::from_secs(code["expires_in"].as_u64().unwrap_or(600));
    loop {
        tokio::time::sleep(interval).await;
        if Instant::now() > deadline {
            return Err(CliError::failed(
                "the code expired before it was approved; run `executor login` again",
            ));
        }
        let Ok(response) = http
            .post(&token_url)
            .json(&json!({
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": device_code,
                "client_id": client_id,
            }))
            .send()
            .await
        else {
            // A blip of the network: keep polling until the code expires.
            continue;
        };
        let (status, body) = json_of(response).await;
        if status == 200
            && let Some(token) = body["access_token"].as_str()
        {
            let mut profiles = Profiles::load(data_dir)?;
            let profile = Profile {
                name: name.clone(),
                origin: origin.clone(),
                display_name: None,
                token: Some(token.to_owned()),
            };
            match profiles.profiles.iter_mut().find(|p| p.name == name) {
                Some(existing) => *existing = profile,
                None => profiles.profiles.push(profile),
            }
            profiles.default = Some(name.clone());
            profiles.save(data_dir)?;
            let email = body["user"]["email"].as_str().unwrap_or("you");
            println!(
                "Signed in to {origin} as {email}; saved as profile \"{name}\" (now the default)."
            );
            return Ok(ExitCode::SUCCESS);
        }
        match body["error"].as_str() {
            Some("authorization_pending") => {}
            Some("slow_down") => interval += Duration::from_secs(5),
            Some("access_denied") => return Err(CliError::failed("the sign-in was declined")),
            Some("expired_token") => {
                return Err(CliError::failed(
                    "the code expired; run `executor login` again",
                ));
            }
            _ => {
                return Err(CliError::failed(format!(
                    "{origin} refused the sign-in ({status}): {}",
                    body["error_description"]
                        .as_str()
                        .unwrap_or("no reason given")
                )));
            }
        }
    }
}

/// `executor logout`: ends the session on the server and forgets it here.
pub(crate) async fn logout(data_dir: &Path, connect: &ConnectFlags) -> CliResult {
    let target = target::resolve(connect, data_dir)?;
    let Some(profile_name) = (match &target.chosen {
        target::Chosen::Profile(name) | target::Chosen::DefaultProfile(name) => Some(name.clone()),
        _ => None,
    }) else {
        return Err(CliError::usage(
            "no signed-in profile to log out of (choose one with --server)",
        ));
    };
    let mut profiles = Profiles::load(data_dir)?;
    let Some(profile) = profiles
        .profiles
        .iter_mut()
        .find(|p| p.name == profile_name)
    else {
        return Err(CliError::usage(format!("no profile {profile_name:?}")));
    };
    let Some(token) = profile.token.take() else {
        println!("Profile \"{profile_name}\" holds no sign-in.");
        return Ok(ExitCode::SUCCESS);
    };
    let origin = profile.origin.clone();
    // Forgotten here whatever the server says: a server that cannot be reached now still must
    // not keep this machine signed in.
    profiles.save(data_dir)?;
    let revoked = match client(&origin)?
        .post(format!("{origin}/api/auth/sign-out"))
        .bearer_auth(&token)
        .send()
        .await
    {
        Ok(r) => r.status().is_success(),
        Err(_) => false,
    };
    if revoked {
        println!("Signed out of {origin} (profile \"{profile_name}\").");
    } else {
        println!(
            "Forgot the sign-in of profile \"{profile_name}\"; {origin} could not be told, so the session ends when it expires."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `executor whoami`.
pub(crate) async fn whoami(data_dir: &Path, connect: &ConnectFlags) -> CliResult {
    let target = target::resolve(connect, data_dir)?;
    let api = Api::new(target)?;
    let answer = api.get("/api/account/me").await?;
    if answer.status.as_u16() == 404 {
        println!(
            "{} is a local server: it has no accounts.",
            api.target.origin
        );
        return Ok(ExitCode::SUCCESS);
    }
    if answer.status.as_u16() == 401 {
        return Err(CliError::failed(format!(
            "not signed in to {origin}: run `executor login --base-url {origin}`",
            origin = api.target.origin
        )));
    }
    let me = api.expect_ok(answer)?;
    println!(
        "{} ({}) — {} on {} ({})",
        me["user"]["email"].as_str().unwrap_or("?"),
        me["user"]["name"].as_str().unwrap_or(""),
        me["role"].as_str().unwrap_or("?"),
        me["organization"]["name"].as_str().unwrap_or("?"),
        api.target.origin,
    );
    Ok(ExitCode::SUCCESS)
}
