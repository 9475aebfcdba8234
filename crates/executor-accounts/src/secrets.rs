//! What is handed out and what is kept of it: random tokens (only their SHA-256 is stored),
//! argon2id password hashes (computed on blocking threads: a hash is tens of milliseconds of
//! CPU, which must not hold an IO worker, and 19 MiB, so only a few run at once: [`Hasher`]),
//! invite and device codes people type.

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
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

type Blocks = Vec<argon2::Block>;

fn lock(buffers: &std::sync::Mutex<Vec<Blocks>>) -> std::sync::MutexGuard<'_, Vec<Blocks>> {
    buffers.lock().unwrap_or_else(|p| p.into_inner())
}

/// `blocks` sized for `argon`, keeping no more than that.
fn sized(blocks: &mut Blocks, argon: &Argon2<'_>) {
    let wanted = argon.params().block_count();
    blocks.resize(wanted, argon2::Block::default());
    if blocks.capacity() > wanted {
        blocks.shrink_to_fit();
    }
}

/// An argon2id PHC string of `password`, computed in `blocks` (the same string
/// `PasswordHasher::hash_password` makes, without allocating its memory).
fn hash_with(blocks: &mut Blocks, password: &[u8]) -> Result<String, String> {
    let argon = argon();
    let salt_bytes: [u8; 16] = rand::rng().random();
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| e.to_string())?;
    sized(blocks, &argon);
    let mut out = [0u8; argon2::Params::DEFAULT_OUTPUT_LEN];
    argon
        .hash_password_into_with_memory(password, &salt_bytes, &mut out, &mut blocks[..])
        .map_err(|e| e.to_string())?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: argon2::password_hash::ParamsString::try_from(argon.params())
            .map_err(|e| e.to_string())?,
        salt: Some(salt.as_salt()),
        hash: Some(argon2::password_hash::Output::new(&out).map_err(|e| e.to_string())?),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `stored`, computed in `blocks`; the comparison
/// takes the same time wherever the hashes differ (`Output`'s equality).
fn verify_with(blocks: &mut Blocks, password: &[u8], stored: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(stored) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) = (
        Algorithm::try_from(parsed.algorithm),
        Params::try_from(&parsed),
    ) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from) {
        None => Version::V0x13,
        Some(Ok(v)) => v,
        Some(Err(_)) => return false,
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let argon = Argon2::new(algorithm, version, params);
    sized(blocks, &argon);
    let mut out = vec![0u8; expected.len()];
    argon
        .hash_password_into_with_memory(password, salt, &mut out, &mut blocks[..])
        .is_ok()
        && argon2::password_hash::Output::new(&out).is_ok_and(|got| got == expected)
}

/// How many argon2 hashes run at once (each holds 19 MiB), how many requests may wait for one,
/// and how long they wait before the answer is "busy".
pub(crate) const HASHES_IN_FLIGHT: usize = 4;
pub(crate) const HASHES_WAITING: usize = 32;
const HASH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Every password hash of the process goes through here: at most [`HASHES_IN_FLIGHT`] run (on
/// blocking threads), a few more wait, the rest are refused at once. Nothing a request sends
/// can make the process hold more than `HASHES_IN_FLIGHT × 19 MiB` of hashing memory.
pub(crate) struct Hasher {
    permits: std::sync::Arc<tokio::sync::Semaphore>,
    /// Argon2's working memory, one buffer per slot, made once and reused: a hash that
    /// allocated its own left the blocking thread's allocator arena holding its 19 MiB after it
    /// (120 concurrent sign-ins grew the process by about 600 MiB with four hashes at a time).
    buffers: std::sync::Arc<std::sync::Mutex<Vec<Blocks>>>,
    waiting: std::sync::atomic::AtomicUsize,
    counters: std::sync::Arc<HashCounters>,
}

/// What the hasher did, for tests and metrics.
#[derive(Default)]
pub(crate) struct HashCounters {
    pub(crate) in_flight: std::sync::atomic::AtomicUsize,
    pub(crate) peak: std::sync::atomic::AtomicUsize,
    pub(crate) total: std::sync::atomic::AtomicU64,
    pub(crate) refused: std::sync::atomic::AtomicU64,
}

/// No hashing slot came free in time: the caller answers 503 with `Retry-After`.
#[derive(Debug)]
pub(crate) struct Busy;

impl Default for Hasher {
    fn default() -> Self {
        Hasher {
            permits: std::sync::Arc::new(tokio::sync::Semaphore::new(HASHES_IN_FLIGHT)),
            buffers: Default::default(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            counters: Default::default(),
        }
    }
}

impl Hasher {
    pub(crate) fn counters(&self) -> &HashCounters {
        &self.counters
    }

    async fn permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, Busy> {
        use std::sync::atomic::Ordering::SeqCst;
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, SeqCst) >= HASHES_WAITING {
            self.waiting.fetch_sub(1, SeqCst);
            self.counters.refused.fetch_add(1, SeqCst);
            return Err(Busy);
        }
        let got = tokio::time::timeout(HASH_WAIT, self.permits.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, SeqCst);
        match got {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                self.counters.refused.fetch_add(1, SeqCst);
                Err(Busy)
            }
        }
    }

    /// Runs `work` on a blocking thread holding a slot; the slot is the thread's until the
    /// hash is done, even when the request that asked is gone.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Blocks) -> T + Send + 'static,
    ) -> Result<Option<T>, Busy> {
        use std::sync::atomic::Ordering::SeqCst;
        let permit = self.permit().await?;
        let counters = self.counters.clone();
        let buffers = self.buffers.clone();
        let done = tokio::task::spawn_blocking(move || {
            let now = counters.in_flight.fetch_add(1, SeqCst) + 1;
            counters.peak.fetch_max(now, SeqCst);
            counters.total.fetch_add(1, SeqCst);
            // A slot's buffer: there are never more buffers than slots.
            let mut blocks = lock(&buffers).pop().unwrap_or_default();
            let out = work(&mut blocks);
            lock(&buffers).push(blocks);
            counters.in_flight.fetch_sub(1, SeqCst);
            drop(permit);
            out
        })
        .await;
        Ok(done.ok())
    }

    /// An argon2id PHC string of `password`.
    pub(crate) async fn hash_password(
        &self,
        password: String,
    ) -> Result<Result<String, String>, Busy> {
        let out = self
            .run(move |blocks| hash_with(blocks, password.as_bytes()))
            .await?;
        Ok(out.unwrap_or_else(|| Err("the hashing thread failed".to_owned())))
    }

    /// Whether `password` matches the stored hash. `None` stored hash (no such account) still
    /// costs one hash, so timing does not tell which emails exist.
    pub(crate) async fn verify_password(
        &self,
        password: String,
        stored: Option<String>,
    ) -> Result<bool, Busy> {
        let out = self
            .run(move |blocks| {
                let known = stored.is_some();
                let stored = stored.unwrap_or_else(|| dummy_hash().to_owned());
                verify_with(blocks, password.as_bytes(), &stored) && known
            })
            .await?;
        Ok(out.unwrap_or(false))
    }
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
    fn hashes_made_in_a_reused_buffer_are_the_standard_ones() {
        use argon2::password_hash::PasswordVerifier;
        let mut blocks = Blocks::new();
        let ours = hash_with(&mut blocks, b"a long enough secret").unwrap();
        // What the argon2 crate itself makes and checks, both ways, in the same buffer.
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            argon()
                .verify_password(b"a long enough secret", &parsed)
                .is_ok()
        );
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let theirs = argon()
            .hash_password(b"another", &salt)
            .unwrap()
            .to_string();
        assert!(verify_with(&mut blocks, b"another", &theirs));
        assert!(!verify_with(&mut blocks, b"anothe", &theirs));
        assert!(!verify_with(&mut blocks, b"a long enough secret", &theirs));
        assert!(verify_with(&mut blocks, b"a long enough secret", &ours));
        assert!(!verify_with(&mut blocks, b"x", "not a hash"));
        // The buffer is one hash's memory, whatever it was used for.
        assert_eq!(blocks.len(), argon().params().block_count());
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
        let hasher = Hasher::default();
        let hash = hasher
            .hash_password("correct horse".to_owned())
            .await
            .unwrap()
            .unwrap();
        assert!(hash.starts_with("$argon2id$"));
        let verify = |p: &str, h: Option<String>| hasher.verify_password(p.to_owned(), h);
        assert!(verify("correct horse", Some(hash.clone())).await.unwrap());
        assert!(!verify("wrong", Some(hash)).await.unwrap());
        assert!(!verify("anything", None).await.unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_a_few_hashes_run_at_once_and_the_rest_wait_or_are_refused() {
        use std::sync::atomic::Ordering::SeqCst;
        let hasher = std::sync::Arc::new(Hasher::default());
        let all: Vec<_> = (0..(HASHES_IN_FLIGHT + HASHES_WAITING + 8))
            .map(|_| {
                let hasher = hasher.clone();
                tokio::spawn(async move { hasher.verify_password("x".to_owned(), None).await })
            })
            .collect();
        let mut busy = 0;
        for task in all {
            if task.await.unwrap().is_err() {
                busy += 1;
            }
        }
        let c = hasher.counters();
        assert!(
            c.peak.load(SeqCst) <= HASHES_IN_FLIGHT,
            "peak {}",
            c.peak.load(SeqCst)
        );
        assert!(busy >= 1, "none refused");
        assert_eq!(
            c.total.load(SeqCst) + busy,
            (HASHES_IN_FLIGHT + HASHES_WAITING + 8) as u64
        );
        assert_eq!(c.in_flight.load(SeqCst), 0);
    }
}
