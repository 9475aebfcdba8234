//! Server profiles: named servers in `$EXECUTOR_DATA_DIR/server-connections.json` (mode 0600),
//! `{version:1, defaultProfile, profiles:[{name, connection:{kind, origin, displayName?,
//! auth?:{kind:"bearer", token}}}]}` as the original writes it. Entries that do not parse are
//! dropped on read rather than failing every command.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::target::parse_origin;
use super::{CliError, CliResult};
use crate::control;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    pub(crate) name: String,
    pub(crate) origin: String,
    pub(crate) display_name: Option<String>,
    /// A bearer token stored with the profile; `None` = `EXECUTOR_API_KEY` at call time.
    pub(crate) token: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Profiles {
    pub(crate) default: Option<String>,
    pub(crate) profiles: Vec<Profile>,
}

pub(crate) fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("server-connections.json")
}

/// `[A-Za-z0-9_.-]+`, as the original.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl Profiles {
    pub(crate) fn load(data_dir: &Path) -> CliResult<Profiles> {
        let path = path(data_dir);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Profiles::default()),
            Err(e) => {
                return Err(CliError::failed(format!("reading {}: {e}", path.display())));
            }
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            CliError::failed(format!(
                "{} is not valid JSON ({e}); fix or remove it",
                path.display()
            ))
        })?;
        let profiles: Vec<Profile> = value["profiles"]
            .as_array()
            .map(|list| list.iter().filter_map(parse_profile).collect())
            .unwrap_or_default();
        let default = value["defaultProfile"]
            .as_str()
            .filter(|name| profiles.iter().any(|p| p.name == *name))
            .map(str::to_owned);
        Ok(Profiles { default, profiles })
    }

    pub(crate) fn save(&self, data_dir: &Path) -> CliResult<()> {
        use std::os::unix::fs::DirBuilderExt;
        let path = path(data_dir);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(data_dir)
            .map_err(|e| CliError::failed(format!("creating {}: {e}", data_dir.display())))?;
        let profiles: Vec<Value> = self
            .profiles
            .iter()
            .map(|p| {
                let mut connection = json!({"kind": "http", "origin": p.origin});
                if let Some(display) = &p.display_name {
                    connection["displayName"] = json!(display);
                }
                if let Some(token) = &p.token {
                    connection["auth"] = json!({"kind": "bearer", "token": token});
                }
                json!({"name": p.name, "connection": connection})
            })
            .collect();
        let body = json!({
            "version": 1,
            "defaultProfile": self.default,
            "profiles": profiles,
        });
        let text = serde_json::to_string_pretty(&body).unwrap_or_default();
        control::write_private(&path, text.as_bytes())
            .map_err(|e| CliError::failed(format!("writing {}: {e}", path.display())))
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    pub(crate) fn default_profile(&self) -> Option<&Profile> {
        self.default.as_deref().and_then(|name| self.get(name))
    }
}

fn parse_profile(value: &Value) -> Option<Profile> {
    let name = value["name"].as_str().filter(|n| valid_name(n))?;
    let connection = &value["connection"];
    let (origin, _) = parse_origin(connection["origin"].as_str()?).ok()?;
    let token = match connection["auth"]["kind"].as_str() {
        Some("bearer") => connection["auth"]["token"].as_str().map(str::to_owned),
        _ => None,
    };
    Some(Profile {
        name: name.to_owned(),
        origin,
        display_name: connection["displayName"].as_str().map(str::to_owned),
        token,
    })
}

/// `server add`.
pub(crate) fn add(
    data_dir: &Path,
    name: &str,
    origin: &str,
    display_name: Option<String>,
    make_default: bool,
    token_stdin: bool,
) -> CliResult {
    if !valid_name(name) {
        return Err(CliError::usage(format!(
            "profile name {name:?}: use letters, digits, '_', '.' and '-'"
        )));
    }
    let (origin, _) = parse_origin(origin)?;
    let token = if token_stdin {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| CliError::usage(format!("reading the token from stdin: {e}")))?;
        let token = line.trim().to_owned();
        if token.is_empty() {
            return Err(CliError::usage("--token-stdin: stdin held no token"));
        }
        Some(token)
    } else {
        None
    };
    let mut profiles = Profiles::load(data_dir)?;
    let profile = Profile {
        name: name.to_owned(),
        origin: origin.clone(),
        display_name,
        token,
    };
    let replaced = match profiles.profiles.iter_mut().find(|p| p.name == name) {
        Some(existing) => {
            *existing = profile;
            true
        }
        None => {
            profiles.profiles.push(profile);
            false
        }
    };
    if make_default {
        profiles.default = Some(name.to_owned());
    }
    profiles.save(data_dir)?;
    let verb = if replaced { "Updated" } else { "Saved" };
    println!("{verb} server profile \"{name}\" ({origin}).");
    if make_default {
        println!("Default server profile: {name}.");
    }
    Ok(ExitCode::SUCCESS)
}

/// `server list`.
pub(crate) fn list(data_dir: &Path) -> CliResult {
    let profiles = Profiles::load(data_dir)?;
    if profiles.profiles.is_empty() {
        println!("No server profiles configured.");
        println!("Add one: executor server add <name> <origin> [--default]");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = profiles
        .profiles
        .iter()
        .map(|p| {
            let star = if profiles.default.as_deref() == Some(p.name.as_str()) {
                "*"
            } else {
                ""
            };
            vec![
                star.to_owned(),
                p.name.clone(),
                p.origin.clone(),
                p.display_name.clone().unwrap_or_default(),
                if p.token.is_some() {
                    "stored-auth".to_owned()
                } else {
                    "env-auth".to_owned()
                },
            ]
        })
        .collect();
    print!(
        "{}",
        super::render::table(&["", "NAME", "ORIGIN", "DISPLAY NAME", "AUTH"], &rows)
    );
    Ok(ExitCode::SUCCESS)
}

/// `server use`.
pub(crate) fn use_profile(data_dir: &Path, name: &str) -> CliResult {
    let mut profiles = Profiles::load(data_dir)?;
    if profiles.get(name).is_none() {
        return Err(unknown(name));
    }
    profiles.default = Some(name.to_owned());
    profiles.save(data_dir)?;
    println!("Default server profile: {name}.");
    Ok(ExitCode::SUCCESS)
}

/// `server remove`.
pub(crate) fn remove(data_dir: &Path, name: &str) -> CliResult {
    let mut profiles = Profiles::load(data_dir)?;
    let before = profiles.profiles.len();
    profiles.profiles.retain(|p| p.name != name);
    if profiles.profiles.len() == before {
        return Err(unknown(name));
    }
    let was_default = profiles.default.as_deref() == Some(name);
    if was_default {
        profiles.default = None;
    }
    profiles.save(data_dir)?;
    println!("Removed server profile \"{name}\".");
    if was_default {
        println!(
            "No default server profile remains: commands use the local server (`executor server use <name>` sets one)."
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn unknown(name: &str) -> CliError {
    CliError::failed(format!("No server profile named \"{name}\"."))
}

/// `server rotate-token`: a new local API token. The running server keeps the old one until it
/// restarts, so say so.
pub(crate) fn rotate_token(data_dir: &Path) -> CliResult {
    control::mint_token(data_dir)?;
    println!(
        "Wrote a new API token to {}.",
        control::auth_path(data_dir).display()
    );
    if let Some(manifest) = control::read_manifest(data_dir).filter(|m| m.pid_alive()) {
        println!(
            "The server at {} (pid {}) still accepts the old token until it restarts: executor daemon restart",
            manifest.url, manifest.pid
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_invalid_entries_dropped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            path(dir.path()),
            r#"{"version":1,"defaultProfile":"gone","profiles":[
                {"name":"ok","connection":{"kind":"http","origin":"https://a.example/","auth":{"kind":"bearer","token":"t"}}},
                {"name":"bad name","connection":{"origin":"https://b.example"}},
                {"name":"nourl","connection":{"origin":"b.example/x"}},
                {"name":"oauth","connection":{"origin":"https://c.example","auth":{"kind":"oauth"}}}
            ]}"#,
        )
        .unwrap();
        let profiles = Profiles::load(dir.path()).unwrap();
        assert_eq!(profiles.profiles.len(), 2);
        assert_eq!(
            profiles.default, None,
            "a default naming no profile is dropped"
        );
        assert_eq!(profiles.get("ok").unwrap().origin, "https://a.example");
        assert_eq!(profiles.get("ok").unwrap().token.as_deref(), Some("t"));
        assert_eq!(profiles.get("oauth").unwrap().token, None);
        profiles.save(dir.path()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Profiles::load(dir.path()).unwrap();
        assert_eq!(again.profiles, profiles.profiles);
    }
}
