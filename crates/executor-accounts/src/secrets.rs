//! What is handed out and what is kept of it: random tokens (only their SHA-256 is stored),
//! argon2id password hashes (computed on blocking threads: a hash is tens of milliseconds of
//! CPU, which must not hold an IO worker), invite and device codes people type.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use rand::Rng;
use sha2::{Digest, Sha256};

/// The symbols of codes people read and type: no 0/O, 1/I.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A new token `<prefix><43 base64url characters>` (32 random bytes) and its stored hash.
pub(crate) fn mint(prefix: &str) -> (String, String) {
    let bytes: [u8; 32] = rand::rng().random();
    let token = format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = token_hash(&token);
    (token, hash)
}

/// SHA-256 (hex) of a token, as stored. Tokens carry 256 bits of randomness, so a fast hash
/// is enough; a database leak yields nothing usable.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A random id `<prefix>_<26 base32 characters>`.
pub(crate) fn new_id(prefix: &str) -> String {
    let mut rng = rand::rng();
    let body: String = (0..26)
        .map(|_| {
            char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]).to_ascii_lowercase()
        })
        .collect();
    format!("{prefix}_{body}")
}

/// `groups` groups of four symbols joined by `-` (`XXXX-XXXX-XXXX` for invites).
pub(crate) fn code(groups: usize) -> String {
    let mut rng = rand::rng();
    (0..groups)
        .map(|_| {
            (0..4)
                .map(|_| char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// A code as people type it: trimmed, upper-cased, with the dashes where they belong.
pub(crate) fn normalise_code(raw: &str, groups: usize) -> Option<String> {
    let symbols: String = raw
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if symbols.len() != groups * 4 || !symbols.bytes().all(|b| CODE_ALPHABET.contains(&b)) {
        return None;
    }
    Some(
        symbols
            .as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("-"),
    )
}

fn argon() -> Argon2<'static> {
    // OWASP's argon2id minimum: 19 MiB, 2 passes, one lane.
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// An argon2id PHC string of `password`, computed off the async workers.
pub(crate) async fn hash_password(password: String) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        let salt_bytes: [u8; 16] = rand::rng().random();
        let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| e.to_string())?;
        argon()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Whether `password` matches the stored hash, checked off the async workers. `None` stored
/// hash (no such account) still costs one hash, so timing does not tell which emails exist.
pub(crate) async fn verify_password(password: String, stored: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        let known = stored.is_some();
        let stored = stored.unwrap_or_else(|| dummy_hash().to_owned());
        let Ok(parsed) = PasswordHash::new(&stored) else {
            return false;
        };
        argon()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
            && known
    })
    .await
    .unwrap_or(false)
}

/// The hash of a random password nobody knows, verified against when the account is missing.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt_bytes: [u8; 16] = rand::rng().random();
        let password: [u8; 16] = rand::rng().random();
        SaltString::encode_b64(&salt_bytes)
            .ok()
            .and_then(|salt| {
                argon()
                    .hash_password(&password, &salt)
                    .ok()
                    .map(|h| h.to_string())
            })
            .unwrap_or_default()
    })
}

/// RFC 7636 S256: `BASE64URL(SHA256(verifier)) == challenge`.
pub(crate) fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let digest = Sha256::digest(verifier.as_bytes());
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    computed.len() == challenge.len()
        && computed
            .bytes()
            .zip(challenge.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_in_the_alphabet_and_normalise() {
        let c = code(3);
        assert_eq!(c.len(), 14);
        assert_eq!(
            normalise_code(&c.to_lowercase(), 3).as_deref(),
            Some(c.as_str())
        );
        assert_eq!(
            normalise_code(&c.replace('-', " "), 3).as_deref(),
            Some(c.as_str())
        );
        assert_eq!(normalise_code("ABCD-EFGH-IJK0", 3), None);
        assert_eq!(normalise_code("ABCD", 3), None);
    }

    #[test]
    fn tokens_are_distinct_and_hashed() {
        let (a, ha) = mint("exk_");
        let (b, _) = mint("exk_");
        assert_ne!(a, b);
        assert!(a.starts_with("exk_") && a.len() == 4 + 43);
        assert_eq!(token_hash(&a), ha);
        assert!(!ha.contains(&a));
    }

    #[test]
    fn pkce_s256() {
        // RFC 7636 appendix B.
        assert!(pkce_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!pkce_matches(
            "x",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
    }

    #[tokio::test]
    async fn passwords_verify_and_wrong_ones_do_not() {
        let hash = hash_password("correct horse".to_owned()).await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse".to_owned(), Some(hash.clone())).await);
        assert!(!verify_password("wrong".to_owned(), Some(hash)).await);
        assert!(!verify_password("anything".to_owned(), None).await);
    }
}
