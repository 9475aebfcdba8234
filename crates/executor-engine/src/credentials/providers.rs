//! Credential providers (spec §1.4): where a connection's values live. One registry per engine,
//! in registration order: `vault` (the sealed secret table of the store; the default writable
//! provider, where pasted values go), `file` (a user-managed JSON file, read-only from here) and,
//! in builds with the `keychain` feature, `keychain` (the OS keychain, service `executor`),
//! registered only when a probe entry can be written and deleted at startup.
//!
//! A provider answers item ids with values and lists its items by name; listings never carry
//! values. A connection records its provider's key and `{variable: itemId}`; its values are read
//! through the registry on every call, so an edited `auth.json` applies without a restart.
//!
//! `providers.rs` is the credential-provider registry (§1.4), built once per engine in registration
//! order from `EngineConfig::providers`: `vault` (the store's sealed secret table; the first
//! writable provider, so pasted values go there), `file` (`auth.json`, path resolved by
//! `auth_file_path` from `EXECUTOR_DATA_DIR` / `XDG_DATA_HOME` / `HOME` in the binary and injected,
//! so tests point it at a temp dir) and, behind the `keychain` cargo feature (keyring, off by
//! default), `keychain`, registered only if a probe entry can be written and deleted at startup (on
//! a thread of its own, bounded to 5 s). Each provider answers `get(id)`, `list_items()` (ids and
//! names, never values) and, when writable, `put`/`delete`. The `file` provider is read-only from
//! our side: the file belongs to the user (they edit it by hand or with other tools), so writing it
//! could clobber their edits or formatting; it is re-read on every access (no mtime cache, which
//! coarse timestamps could fool) so an edit applies to the next call, a missing file has no items,
//! and a mode looser than 0600 is logged (never the values). A connection stores its provider's key
//! and `{variable: itemId}`; creation checks the provider is registered (else
//! `CredentialProviderNotRegistered`), and removal deletes only the items the connection wrote
//! (`connection:<owner>:<integration>:<name>:<variable>`), never referenced ones. `credentials.rs`
//! reads a connection's values through the registry (an unregistered provider or a missing item is
//! `connection_value_missing`) and renders its auth method for every kind; health checks read
//! through the same registry.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use executor_core::Owner;
use executor_store::{ConnectionRecord, Scope, Store};

use crate::caller::{Caller, Principal};

use crate::error::{EngineError, EngineResult};

/// Key of the sealed store provider (the default writable one).
pub(crate) const VAULT: &str = "vault";
/// Key of the JSON-file provider.
pub(crate) const FILE: &str = "file";
/// Key of the OS-keychain provider.
#[cfg(feature = "keychain")]
pub(crate) const KEYCHAIN: &str = "keychain";

/// The file name of the file provider.
pub const AUTH_FILE_NAME: &str = "auth.json";

/// Which providers besides the vault an engine registers.
#[derive(Debug, Clone, Default)]
pub struct ProvidersConfig {
    /// The `file` provider's JSON file (see [`auth_file_path`]); `None` leaves it unregistered.
    pub auth_file: Option<PathBuf>,
    /// Try the OS keychain at startup. Only builds with the `keychain` cargo feature have it;
    /// it is registered only if a probe entry can be written and deleted.
    pub keychain: bool,
}

/// An item a provider holds: its id and a display name, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderItem {
    pub id: String,
    pub name: String,
}

/// Where the `file` provider reads: `$EXECUTOR_DATA_DIR/auth.json` when that is set, else
/// `$XDG_DATA_HOME/executor/auth.json` (an absolute `XDG_DATA_HOME` only, as the XDG spec
/// says), else `~/.local/share/executor/auth.json`. Empty values count as unset; `None` when
/// none of the three is known.
pub fn auth_file_path(
    executor_data_dir: Option<&OsStr>,
    xdg_data_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    let set = |v: Option<&OsStr>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(executor_data_dir) {
        return Some(dir.join(AUTH_FILE_NAME));
    }
    if let Some(dir) = set(xdg_data_home).filter(|d| d.is_absolute()) {
        return Some(dir.join("executor").join(AUTH_FILE_NAME));
    }
    set(home).map(|h| {
        h.join(".local")
            .join("share")
            .join("executor")
            .join(AUTH_FILE_NAME)
    })
}

/// [`auth_file_path`] from this process's environment.
pub fn auth_file_from_env() -> Option<PathBuf> {
    let var = std::env::var_os;
    auth_file_path(
        var("EXECUTOR_DATA_DIR").as_deref(),
        var("XDG_DATA_HOME").as_deref(),
        var("HOME").as_deref(),
    )
}

/// One source of credential values.
#[async_trait]
pub(crate) trait CredentialProvider: Send + Sync + 'static {
    fn key(&self) -> &'static str;
    /// Whether values can be written here (pasted values go to the first writable provider).
    fn writable(&self) -> bool {
        false
    }
    /// Whether its items belong to the machine rather than to a tenant (a file, the OS
    /// keychain): only the local owner may use such a provider.
    fn of_the_machine(&self) -> bool {
        true
    }
    /// Items are their owner's (the vault: the scope's organisation for `org`, the scope's
    /// subject alone for `user`) or the machine's (the others ignore `scope` and `owner`).
    async fn get(&self, scope: &Scope, owner: Owner, id: &str) -> EngineResult<Option<String>>;
    /// Whether a connection of `owner` may name the item `id` (`from`): the vault says whether
    /// that owner has it; the machine's providers cannot tell an item to come and say yes.
    async fn usable_by(&self, _scope: &Scope, _owner: Owner, _id: &str) -> EngineResult<bool> {
        Ok(true)
    }
    /// The items of `owners` by name; empty for providers that cannot enumerate.
    async fn list_items(
        &self,
        _scope: &Scope,
        _owners: &[Owner],
    ) -> EngineResult<Vec<ProviderItem>> {
        Ok(Vec::new())
    }
    async fn put(
        &self,
        _scope: &Scope,
        _owner: Owner,
        _id: &str,
        _value: &str,
    ) -> EngineResult<()> {
        Err(EngineError::Internal(format!(
            "the credential provider {} is read-only",
            self.key()
        )))
    }
    /// Removes an item written here; read-only providers leave theirs alone.
    async fn delete(&self, _scope: &Scope, _owner: Owner, _id: &str) -> EngineResult<()> {
        Ok(())
    }
}

/// The registered providers, in registration order.
pub(crate) struct Providers {
    list: Vec<Arc<dyn CredentialProvider>>,
}

impl Providers {
    pub(crate) fn new(store: Arc<dyn Store>, config: &ProvidersConfig) -> Self {
        let mut list: Vec<Arc<dyn CredentialProvider>> = vec![Arc::new(VaultProvider { store })];
        if let Some(path) = &config.auth_file {
            list.push(Arc::new(FileProvider::new(path.clone())));
        }
        #[cfg(feature = "keychain")]
        if config.keychain
            && let Some(keychain) = keychain::KeychainProvider::probe()
        {
            list.push(Arc::new(keychain));
        }
        #[cfg(not(feature = "keychain"))]
        if config.keychain {
            tracing::debug!("this build has no keychain provider (cargo feature `keychain`)");
        }
        Providers { list }
    }

    /// The providers `caller` may use: the machine's only for the local owner.
    fn usable<'a>(&'a self, caller: &Caller) -> impl Iterator<Item = &'a dyn CredentialProvider> {
        let local = caller.principal() == Principal::LocalOwner;
        self.list
            .iter()
            .map(|p| &**p)
            .filter(move |p| local || !p.of_the_machine())
    }

    pub(crate) fn keys(&self, caller: &Caller) -> Vec<String> {
        self.usable(caller).map(|p| p.key().to_owned()).collect()
    }

    pub(crate) fn get(&self, caller: &Caller, key: &str) -> Option<&dyn CredentialProvider> {
        self.usable(caller).find(|p| p.key() == key)
    }

    /// Where pasted values go: the first writable provider.
    pub(crate) fn default_writable(
        &self,
        caller: &Caller,
    ) -> EngineResult<&dyn CredentialProvider> {
        self.usable(caller)
            .find(|p| p.writable())
            .ok_or_else(|| EngineError::Internal("no writable credential provider".to_owned()))
    }

    /// `{variable: value}` of a connection, read from its provider among its owner's items
    /// (items it lacks are left out). `None` when the connection's provider is not registered
    /// in this process.
    pub(crate) async fn connection_values(
        &self,
        caller: &Caller,
        connection: &ConnectionRecord,
    ) -> EngineResult<Option<BTreeMap<String, String>>> {
        let ids = item_ids(&connection.item_ids);
        if ids.is_empty() {
            return Ok(Some(BTreeMap::new()));
        }
        let Some(provider) = self.get(caller, &connection.provider) else {
            return Ok(None);
        };
        let mut values = BTreeMap::new();
        for (variable, item) in ids {
            if let Some(value) = provider
                .get(caller.scope(), connection.owner, &item)
                .await?
            {
                values.insert(variable, value);
            }
        }
        Ok(Some(values))
    }
}

impl crate::Engine {
    /// The registered provider keys, in registration order.
    pub fn list_providers(&self, caller: &Caller) -> Vec<String> {
        self.inner.providers.keys(caller)
    }

    /// A provider's items the caller may name in a connection, names only: the caller's own
    /// and, when it may write workspace rows, the organisation's. Empty for unknown providers
    /// and for providers that cannot enumerate.
    pub async fn provider_items(
        &self,
        caller: &Caller,
        key: &str,
    ) -> EngineResult<Vec<ProviderItem>> {
        let Some(provider) = self.inner.providers.get(caller, key) else {
            return Ok(Vec::new());
        };
        let owners = self.usable_owners(caller).await?;
        provider.list_items(caller.scope(), &owners).await
    }

    /// Whose items the caller may use in a connection it makes: its own (when it has a
    /// subject) and the organisation's when it may write workspace rows.
    async fn usable_owners(&self, caller: &Caller) -> EngineResult<Vec<Owner>> {
        let mut owners = Vec::with_capacity(2);
        if caller.subject().is_some() {
            owners.push(Owner::User);
        }
        if self.may_write_org(caller).await? {
            owners.push(Owner::Org);
        }
        Ok(owners)
    }

    /// Checks that every item `items` names is one a connection of `owner` may use, before
    /// anything is written: the vault's items are their owner's (a personal connection names
    /// only its user's, a workspace one only the organisation's, and only a caller who may
    /// write workspace rows). Missing and someone else's read the same.
    pub(crate) async fn check_referenced_items<'a>(
        &self,
        caller: &Caller,
        provider: &dyn CredentialProvider,
        owner: Owner,
        items: impl IntoIterator<Item = &'a String>,
    ) -> EngineResult<()> {
        let allowed = match owner {
            Owner::User => caller.subject().is_some(),
            Owner::Org => self.may_write_org(caller).await?,
        };
        for id in items {
            if !allowed || !provider.usable_by(caller.scope(), owner, id).await? {
                return Err(EngineError::InvalidConnectionInput {
                    message: format!(
                        "The credential provider {:?} has no item {id:?} that a {} connection of yours may use.",
                        provider.key(),
                        match owner {
                            Owner::User => "personal",
                            Owner::Org => "workspace",
                        }
                    ),
                });
            }
        }
        Ok(())
    }
}

// ---- vault ------------------------------------------------------------------------------

/// The store's sealed secret table (AES-256-GCM at rest), per owner: the organisation's items
/// and each member's own.
struct VaultProvider {
    store: Arc<dyn Store>,
}

#[async_trait]
impl CredentialProvider for VaultProvider {
    fn key(&self) -> &'static str {
        VAULT
    }

    fn writable(&self) -> bool {
        true
    }

    fn of_the_machine(&self) -> bool {
        false
    }

    async fn get(&self, scope: &Scope, owner: Owner, id: &str) -> EngineResult<Option<String>> {
        Ok(self.store.get_secret(scope, owner, id).await?)
    }

    async fn usable_by(&self, scope: &Scope, owner: Owner, id: &str) -> EngineResult<bool> {
        Ok(self.store.get_secret(scope, owner, id).await?.is_some())
    }

    async fn list_items(&self, scope: &Scope, owners: &[Owner]) -> EngineResult<Vec<ProviderItem>> {
        let mut ids = Vec::new();
        for owner in owners {
            ids.extend(self.store.list_secret_ids(scope, *owner).await?);
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids
            .into_iter()
            .map(|id| ProviderItem {
                name: id.clone(),
                id,
            })
            .collect())
    }

    async fn put(&self, scope: &Scope, owner: Owner, id: &str, value: &str) -> EngineResult<()> {
        Ok(self.store.put_secret(scope, owner, id, value).await?)
    }

    async fn delete(&self, scope: &Scope, owner: Owner, id: &str) -> EngineResult<()> {
        Ok(self.store.delete_secret(scope, owner, id).await?)
    }
}

// ---- file -------------------------------------------------------------------------------

/// `auth.json`: `{"<id>": "<secret>", …}`, written by the user (this process never writes
/// it). Read on every access, so edits apply to the next call; a missing file holds no items.
/// A file readable by group or others is used, with a warning.
struct FileProvider {
    path: PathBuf,
    /// A loose mode was reported; reset once it is fixed so a later loosening warns again.
    warned_mode: AtomicBool,
    /// A malformed file was reported; reset once it reads cleanly.
    warned_parse: AtomicBool,
}

impl FileProvider {
    fn new(path: PathBuf) -> Self {
        FileProvider {
            path,
            warned_mode: AtomicBool::new(false),
            warned_parse: AtomicBool::new(false),
        }
    }

    async fn read(&self) -> BTreeMap<String, String> {
        let bytes = match tokio::fs::read(&self.path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot read the credentials file");
                return BTreeMap::new();
            }
        };
        self.check_mode().await;
        match parse_auth_file(&bytes) {
            Ok((values, skipped)) => {
                if !skipped.is_empty() && !self.warned_parse.swap(true, Ordering::Relaxed) {
                    tracing::warn!(path = %self.path.display(), items = ?skipped, "credentials file: items whose value is not a string are ignored");
                } else if skipped.is_empty() {
                    self.warned_parse.store(false, Ordering::Relaxed);
                }
                values
            }
            Err(reason) => {
                if !self.warned_parse.swap(true, Ordering::Relaxed) {
                    tracing::warn!(path = %self.path.display(), %reason, "credentials file ignored: it must be a JSON object of strings");
                }
                BTreeMap::new()
            }
        }
    }

    #[cfg(unix)]
    async fn check_mode(&self) {
        use std::os::unix::fs::PermissionsExt as _;
        let Ok(meta) = tokio::fs::metadata(&self.path).await else {
            return;
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode_is_loose(mode) {
            if !self.warned_mode.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    path = %self.path.display(),
                    mode = %format!("{mode:o}"),
                    "the credentials file is readable by others; restrict it with `chmod 600`"
                );
            }
        } else {
            self.warned_mode.store(false, Ordering::Relaxed);
        }
    }

    #[cfg(not(unix))]
    async fn check_mode(&self) {}
}

/// Any permission for group or others.
fn mode_is_loose(mode: u32) -> bool {
    mode & 0o077 != 0
}

/// The values of an `auth.json`, and the ids whose value is not a string (skipped). The error
/// says where the JSON is broken, never what it holds.
fn parse_auth_file(bytes: &[u8]) -> Result<(BTreeMap<String, String>, Vec<String>), String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((BTreeMap::new(), Vec::new()));
    }
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("not JSON (line {}, column {})", e.line(), e.column()))?;
    let serde_json::Value::Object(map) = value else {
        return Err("not a JSON object".to_owned());
    };
    let mut values = BTreeMap::new();
    let mut skipped = Vec::new();
    for (id, value) in map {
        match value {
            serde_json::Value::String(s) => {
                values.insert(id, s);
            }
            _ => skipped.push(id),
        }
    }
    Ok((values, skipped))
}

#[async_trait]
impl CredentialProvider for FileProvider {
    fn key(&self) -> &'static str {
        FILE
    }

    async fn get(&self, _scope: &Scope, _owner: Owner, id: &str) -> EngineResult<Option<String>> {
        Ok(self.read().await.remove(id))
    }

    async fn list_items(
        &self,
        _scope: &Scope,
        _owners: &[Owner],
    ) -> EngineResult<Vec<ProviderItem>> {
        Ok(self
            .read()
            .await
            .into_keys()
            .map(|id| ProviderItem {
                name: id.clone(),
                id,
            })
            .collect())
    }
}

impl std::fmt::Debug for FileProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileProvider")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

// ---- keychain ---------------------------------------------------------------------------

#[cfg(feature = "keychain")]
mod keychain {
    use std::time::Duration;

    use async_trait::async_trait;

    use super::{CredentialProvider, KEYCHAIN, Owner, Scope};
    use crate::error::{EngineError, EngineResult};

    /// The keychain service every item is stored under.
    const SERVICE: &str = "executor";
    /// A keychain that does not answer the probe in this time is not used (a locked desktop
    /// keyring may wait for a person).
    const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

    /// The OS keychain (macOS Keychain, Windows Credential Manager, the Secret Service).
    /// Items are `(service "executor", account <item id>)`; the keychain cannot be enumerated
    /// here, so it lists no items.
    pub(super) struct KeychainProvider;

    impl KeychainProvider {
        /// The provider if a probe entry can be written and deleted, on a thread of its own
        /// (the platform store may block).
        pub(super) fn probe() -> Option<Self> {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("keychain-probe".to_owned())
                .spawn(move || {
                    let _ = tx.send(probe_once());
                })
                .ok()?;
            match rx.recv_timeout(PROBE_TIMEOUT) {
                Ok(Ok(())) => Some(KeychainProvider),
                Ok(Err(e)) => {
                    tracing::info!(error = %e, "no usable OS keychain: the keychain provider is not registered");
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        "the OS keychain did not answer in time: the keychain provider is not registered"
                    );
                    None
                }
            }
        }
    }

    fn probe_once() -> keyring::Result<()> {
        let entry = keyring::Entry::new(SERVICE, &format!("probe-{}", uuid::Uuid::new_v4()))?;
        entry.set_password("probe")?;
        entry.delete_credential()
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> keyring::Result<T> + Send + 'static,
    ) -> EngineResult<T> {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| EngineError::Internal(format!("keychain task: {e}")))?
            .map_err(|e| EngineError::Internal(format!("keychain: {e}")))
    }

    #[async_trait]
    impl CredentialProvider for KeychainProvider {
        fn key(&self) -> &'static str {
            KEYCHAIN
        }

        fn writable(&self) -> bool {
            true
        }

        async fn get(
            &self,
            _scope: &Scope,
            _owner: Owner,
            id: &str,
        ) -> EngineResult<Option<String>> {
            let id = id.to_owned();
            blocking(
                move || match keyring::Entry::new(SERVICE, &id)?.get_password() {
                    Ok(value) => Ok(Some(value)),
                    Err(keyring::Error::NoEntry) => Ok(None),
                    Err(e) => Err(e),
                },
            )
            .await
        }

        async fn put(
            &self,
            _scope: &Scope,
            _owner: Owner,
            id: &str,
            value: &str,
        ) -> EngineResult<()> {
            let (id, value) = (id.to_owned(), value.to_owned());
            blocking(move || keyring::Entry::new(SERVICE, &id)?.set_password(&value)).await
        }

        async fn delete(&self, _scope: &Scope, _owner: Owner, id: &str) -> EngineResult<()> {
            let id = id.to_owned();
            blocking(
                move || match keyring::Entry::new(SERVICE, &id)?.delete_credential() {
                    Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                    Err(e) => Err(e),
                },
            )
            .await
        }
    }
}

/// `{variable: itemId}` of a stored connection.
pub(crate) fn item_ids(value: &serde_json::Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    #[test]
    fn auth_file_path_prefers_the_data_dir_then_xdg_then_home() {
        assert_eq!(
            auth_file_path(os("/data"), os("/xdg"), os("/home/me")),
            Some(PathBuf::from("/data/auth.json"))
        );
        assert_eq!(
            auth_file_path(None, os("/xdg"), os("/home/me")),
            Some(PathBuf::from("/xdg/executor/auth.json"))
        );
        assert_eq!(
            auth_file_path(None, None, os("/home/me")),
            Some(PathBuf::from("/home/me/.local/share/executor/auth.json"))
        );
        // Empty counts as unset; a relative XDG_DATA_HOME is ignored (XDG spec).
        assert_eq!(
            auth_file_path(os(""), os(""), os("/home/me")),
            Some(PathBuf::from("/home/me/.local/share/executor/auth.json"))
        );
        assert_eq!(
            auth_file_path(None, os("relative/dir"), os("/home/me")),
            Some(PathBuf::from("/home/me/.local/share/executor/auth.json"))
        );
        assert_eq!(auth_file_path(None, None, None), None);
        assert_eq!(auth_file_path(None, None, os("")), None);
    }

    #[test]
    fn parses_objects_of_strings_and_says_where_json_breaks_without_quoting_it() {
        let (values, skipped) =
            parse_auth_file(br#"{"GITHUB_TOKEN": "ghp_1", "N": 5, "X": "y"}"#).unwrap();
        assert_eq!(
            values,
            BTreeMap::from([
                ("GITHUB_TOKEN".to_owned(), "ghp_1".to_owned()),
                ("X".to_owned(), "y".to_owned())
            ])
        );
        assert_eq!(skipped, vec!["N".to_owned()]);
        assert!(parse_auth_file(b"  \n").unwrap().0.is_empty());
        let broken = parse_auth_file(br#"{"A": "sekrit-value""#).unwrap_err();
        assert!(broken.starts_with("not JSON (line 1"), "{broken}");
        assert!(!broken.contains("sekrit"), "{broken}");
        assert_eq!(
            parse_auth_file(br#"["sekrit"]"#).unwrap_err(),
            "not a JSON object"
        );
    }

    #[test]
    fn loose_modes_are_any_group_or_other_bit() {
        assert!(!mode_is_loose(0o600));
        assert!(!mode_is_loose(0o400));
        assert!(mode_is_loose(0o640));
        assert!(mode_is_loose(0o644));
        assert!(mode_is_loose(0o604));
    }

    #[tokio::test]
    async fn the_file_provider_reads_edits_at_once_and_tolerates_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(AUTH_FILE_NAME);
        let file = FileProvider::new(path.clone());
        let scope = Scope::local("t");
        assert!(!file.writable());
        assert_eq!(file.get(&scope, Owner::Org, "A").await.unwrap(), None);
        assert!(
            file.list_items(&scope, &[Owner::Org])
                .await
                .unwrap()
                .is_empty()
        );
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"A": "one", "B": "two"}"#).unwrap();
        assert_eq!(
            file.get(&scope, Owner::Org, "A").await.unwrap().as_deref(),
            Some("one")
        );
        assert_eq!(
            file.list_items(&scope, &[Owner::Org]).await.unwrap(),
            vec![
                ProviderItem {
                    id: "A".into(),
                    name: "A".into()
                },
                ProviderItem {
                    id: "B".into(),
                    name: "B".into()
                }
            ]
        );
        // Same length, same instant: still the new value (no mtime cache to fool).
        std::fs::write(&path, r#"{"A": "uno", "B": "two"}"#).unwrap();
        assert_eq!(
            file.get(&scope, Owner::Org, "A").await.unwrap().as_deref(),
            Some("uno")
        );
        // Broken JSON reads as empty (and is reported once in the log).
        std::fs::write(&path, "{").unwrap();
        assert_eq!(file.get(&scope, Owner::Org, "A").await.unwrap(), None);
        assert!(
            file.put(&scope, Owner::Org, "A", "x").await.is_err(),
            "read-only"
        );
    }
}
