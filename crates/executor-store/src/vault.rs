//! Secrets at rest: every stored credential value is sealed with AES-256-GCM under the data
//! directory's master key, with a fresh random 96-bit nonce and the record's identity as
//! associated data, so a sealed value copied to another record does not open. A row of the
//! `secret` table is bound to `(tenant, owner subject, item_id)` (`v2:`, [`MasterKey::seal_owned`]):
//! copied to another member's row it does not open. Other sealed values (execution code and
//! journals, the owner-less rows of builds before schema 12) are bound to `(tenant, item_id)`
//! (`v1:`).
//!
//! The master key comes from `EXECUTOR_SECRET_KEY` (32 bytes as 64 hex digits or base64), else
//! from `<data_dir>/secret.key`, generated on first use with mode 0600. Keeping the key apart
//! from `data.db` means a copied database (a backup, a bug report) reveals no credential.

use std::io::Write as _;
use std::path::Path;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::{Result, StoreError};

/// The environment variable that carries the master key.
pub const SECRET_KEY_ENV: &str = "EXECUTOR_SECRET_KEY";
/// The generated key file inside the data directory.
pub const SECRET_KEY_FILE: &str = "secret.key";
/// Prefix of values sealed bound to `(tenant, item_id)`; anything else in an owner-less row of
/// an older build is a plaintext value, sealed when the store opens.
pub(crate) const SEALED_PREFIX: &str = "v1:";
/// Prefix of `secret` rows, sealed bound to `(tenant, subject, item_id)`.
pub(crate) const OWNED_PREFIX: &str = "v2:";

const NONCE_LEN: usize = 12;

/// The key that seals secrets. Never printed.
#[derive(Clone)]
pub struct MasterKey(Key<Aes256Gcm>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    /// A random key (in-memory stores, tests).
    pub fn generate() -> Self {
        MasterKey(Aes256Gcm::generate_key(OsRng))
    }

    /// Reads a key given as 64 hex digits or as base64 of 32 bytes.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                .collect::<std::result::Result<Vec<u8>, _>>()
                .ok()
        } else {
            STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
                .ok()
        };
        match bytes {
            Some(b) if b.len() == 32 => {
                let mut raw = [0u8; 32];
                raw.copy_from_slice(&b);
                Ok(MasterKey(Key::<Aes256Gcm>::from(raw)))
            }
            _ => Err(StoreError::Config(format!(
                "{SECRET_KEY_ENV} must be 32 bytes written as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)"
            ))),
        }
    }

    /// `EXECUTOR_SECRET_KEY` when set, else the data directory's key file (created if absent).
    pub fn load(data_dir: &Path) -> Result<Self> {
        match std::env::var(SECRET_KEY_ENV) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text),
            _ => Self::from_file(&data_dir.join(SECRET_KEY_FILE)),
        }
    }

    fn from_file(path: &Path) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                crate::sql::tighten_file(path)?;
                Self::parse(&text).map_err(|_| {
                StoreError::Config(format!(
                    "the key file {} is not a 32-byte key; restore it from a backup, or move the data directory aside to start afresh",
                    path.display()
                ))
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate();
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt as _;
                    options.mode(0o600);
                }
                let mut file = options.open(path)?;
                file.write_all(STANDARD.encode(key.0).as_bytes())?;
                file.sync_all()?;
                Ok(key)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `v1:` + base64(nonce ‖ ciphertext ‖ tag), bound to `(tenant, item_id)`.
    pub(crate) fn seal(&self, tenant: &str, item_id: &str, plaintext: &str) -> Result<String> {
        self.seal_with(SEALED_PREFIX, &associated_data(tenant, item_id), plaintext)
    }

    pub(crate) fn open(&self, tenant: &str, item_id: &str, stored: &str) -> Result<String> {
        self.open_with(
            SEALED_PREFIX,
            &associated_data(tenant, item_id),
            item_id,
            stored,
        )
    }

    /// A `secret` row's value: `v2:` + base64(nonce ‖ ciphertext ‖ tag), bound to the tenant,
    /// the owner's subject (`""` for the organisation) and the item id.
    pub(crate) fn seal_owned(
        &self,
        tenant: &str,
        subject: &str,
        item_id: &str,
        plaintext: &str,
    ) -> Result<String> {
        self.seal_with(
            OWNED_PREFIX,
            &owned_associated_data(tenant, subject, item_id),
            plaintext,
        )
    }

    pub(crate) fn open_owned(
        &self,
        tenant: &str,
        subject: &str,
        item_id: &str,
        stored: &str,
    ) -> Result<String> {
        self.open_with(
            OWNED_PREFIX,
            &owned_associated_data(tenant, subject, item_id),
            item_id,
            stored,
        )
    }

    fn seal_with(&self, prefix: &str, aad: &[u8], plaintext: &str) -> Result<String> {
        let cipher = Aes256Gcm::new(&self.0);
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext.as_bytes(),
                    aad,
                },
            )
            .map_err(|_| StoreError::Corrupt("a secret could not be sealed".to_owned()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(format!("{prefix}{}", STANDARD.encode(out)))
    }

    fn open_with(&self, prefix: &str, aad: &[u8], item_id: &str, stored: &str) -> Result<String> {
        let undecodable = || {
            StoreError::Corrupt(format!(
                "the secret {item_id:?} cannot be opened: it was sealed with another master key ({SECRET_KEY_ENV} or {SECRET_KEY_FILE} changed) or is damaged"
            ))
        };
        let body = stored.strip_prefix(prefix).ok_or_else(undecodable)?;
        let bytes = STANDARD.decode(body).map_err(|_| undecodable())?;
        if bytes.len() < NONCE_LEN {
            return Err(undecodable());
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let mut nonce_bytes = [0u8; NONCE_LEN];
        nonce_bytes.copy_from_slice(nonce);
        let plain = Aes256Gcm::new(&self.0)
            .decrypt(&Nonce::from(nonce_bytes), Payload { msg: sealed, aad })
            .map_err(|_| undecodable())?;
        String::from_utf8(plain).map_err(|_| undecodable())
    }
}

fn associated_data(tenant: &str, item_id: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(tenant.len() + item_id.len() + 1);
    aad.extend_from_slice(tenant.as_bytes());
    aad.push(0);
    aad.extend_from_slice(item_id.as_bytes());
    aad
}

/// `v2 ‖ len(tenant) ‖ tenant ‖ len(subject) ‖ subject ‖ item_id`: lengths make every part's
/// end unambiguous, whatever the ids contain.
fn owned_associated_data(tenant: &str, subject: &str, item_id: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(2 + 16 + tenant.len() + subject.len() + item_id.len());
    aad.extend_from_slice(b"v2");
    for part in [tenant, subject] {
        aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
        aad.extend_from_slice(part.as_bytes());
    }
    aad.extend_from_slice(item_id.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_bound_to_the_record() {
        let key = MasterKey::generate();
        let sealed = key
            .seal("t", "connection:org:gh:main:token", "ghp_secret")
            .unwrap();
        assert!(sealed.starts_with(SEALED_PREFIX));
        assert!(!sealed.contains("ghp_secret"));
        assert_ne!(
            sealed,
            key.seal("t", "connection:org:gh:main:token", "ghp_secret")
                .unwrap(),
            "fresh nonce per seal"
        );
        assert_eq!(
            key.open("t", "connection:org:gh:main:token", &sealed)
                .unwrap(),
            "ghp_secret"
        );
        // Moved to another record or tenant, or opened with another key: refused.
        assert!(
            key.open("t", "connection:org:gh:other:token", &sealed)
                .is_err()
        );
        assert!(
            key.open("u", "connection:org:gh:main:token", &sealed)
                .is_err()
        );
        assert!(
            MasterKey::generate()
                .open("t", "connection:org:gh:main:token", &sealed)
                .is_err()
        );
        assert!(key.open("t", "x", "plaintext").is_err());
    }

    #[test]
    fn an_owned_secret_opens_only_in_its_owners_row() {
        let key = MasterKey::generate();
        let item = "connection:user:gh:main:token";
        let sealed = key.seal_owned("t", "alice", item, "ghp_alice").unwrap();
        assert!(sealed.starts_with(OWNED_PREFIX));
        assert_eq!(
            key.open_owned("t", "alice", item, &sealed).unwrap(),
            "ghp_alice"
        );
        // Copied to another member's row, the organisation's, another tenant's: refused.
        assert!(key.open_owned("t", "bob", item, &sealed).is_err());
        assert!(key.open_owned("t", "", item, &sealed).is_err());
        assert!(key.open_owned("u", "alice", item, &sealed).is_err());
        // Parts cannot be shifted between the tenant and the subject.
        let shifted = key.seal_owned("ta", "lice", item, "x").unwrap();
        assert!(key.open_owned("t", "alice", item, &shifted).is_err());
        // The two forms do not open as each other.
        assert!(key.open("t", item, &sealed).is_err());
        let v1 = key.seal("t", item, "old").unwrap();
        assert!(key.open_owned("t", "", item, &v1).is_err());
    }

    #[test]
    fn parses_hex_and_base64_keys_and_refuses_others() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let a = MasterKey::parse(hex).unwrap();
        let b64 = STANDARD.encode(a.0);
        let b = MasterKey::parse(&b64).unwrap();
        assert_eq!(a.0, b.0);
        assert!(MasterKey::parse("short").is_err());
        assert!(MasterKey::parse(&STANDARD.encode([1u8; 16])).is_err());
    }

    #[test]
    fn the_key_file_is_created_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SECRET_KEY_FILE);
        let first = MasterKey::from_file(&path).unwrap();
        let second = MasterKey::from_file(&path).unwrap();
        assert_eq!(first.0, second.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "garbage").unwrap();
        assert!(MasterKey::from_file(&path).is_err());
    }
}
