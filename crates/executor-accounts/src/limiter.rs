//! The limits of the public doors, kept in the database (`account_attempt`) so that replicas
//! on one PostgreSQL share them. An attempt first reserves a slot of every limit it counts
//! against (atomically: all or none), then does its work; an attempt that turns out not to
//! count (a sign-in that succeeded, a request the server was too busy to run, a guess that hit)
//! gives its slots back. A slot frees when it leaves the window.
//!
//! Sign-in counts against two limits: the pair (account, source address) and the source address.
//! Neither is the account alone, so nobody who knows an email can lock its owner out: an
//! attacker's failures fill their own pair and address, and the owner signing in from an address
//! that has not failed still gets in. A guesser spread over many addresses still gets only
//! `PER_PAIR` guesses per address per window, each slowed by the pair's earlier failures.

use std::time::Duration;

use executor_core::now_ms;
use executor_store::{AttemptLimit, Reservation};

use crate::{AccountError, AccountResult, Accounts, secrets};

pub(crate) const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Failed sign-ins of one account from one address, per window.
pub(crate) const PER_PAIR: i64 = 5;
/// Failed sign-ins from one address (any accounts), per window.
pub(crate) const PER_ADDRESS: i64 = 20;
/// Client registrations (RFC 7591) from one address, per window.
pub(crate) const REGISTRATIONS_PER_ADDRESS: i64 = 20;
/// Device logins started from one address, per window.
pub(crate) const DEVICE_CODES_PER_ADDRESS: i64 = 20;
/// Device codes (typed user codes, polled device codes) one address may get wrong, per window.
pub(crate) const DEVICE_MISSES_PER_ADDRESS: i64 = 10;

/// The address of a request without one (a test, a socket without a peer).
const UNKNOWN: &str = "unknown";

/// A reserved attempt: its id (to give back), and how many were in the window before it.
pub(crate) struct Slot {
    pub(crate) id: String,
    pub(crate) before: Vec<i64>,
}

impl Accounts {
    /// Reserves a slot of each `(key, limit)` or answers `TooManyAttempts`.
    pub(crate) async fn reserve(&self, limits: &[(String, i64)]) -> AccountResult<Slot> {
        let id = secrets::new_id("att");
        let limits: Vec<AttemptLimit> = limits
            .iter()
            .map(|(key, limit)| AttemptLimit {
                key: format!("{}\n{key}", self.tenant()),
                limit: *limit,
            })
            .collect();
        match self
            .store()
            .reserve_attempt(&id, &limits, now_ms(), WINDOW.as_millis() as i64)
            .await?
        {
            Reservation::Reserved { before } => Ok(Slot { id, before }),
            Reservation::Refused { retry_after_ms } => Err(AccountError::TooManyAttempts {
                retry_after_secs: (retry_after_ms as u64).div_ceil(1000).max(1),
            }),
        }
    }

    /// Gives an attempt's slots back.
    pub(crate) async fn release(&self, slot: &Slot) {
        if let Err(e) = self.store().release_attempt(&slot.id).await {
            tracing::warn!(error = %e, "could not give back an attempt's slots");
        }
    }

    /// Frees every slot of `key` (a success clears the failures of its pair).
    pub(crate) async fn clear(&self, key: &str) {
        if let Err(e) = self
            .store()
            .clear_attempts(&format!("{}\n{key}", self.tenant()))
            .await
        {
            tracing::warn!(error = %e, "could not clear the failures of a sign-in");
        }
    }
}

/// The source of a request, as limits name it.
pub(crate) fn source(address: Option<&str>) -> &str {
    address.filter(|a| !a.is_empty()).unwrap_or(UNKNOWN)
}

/// The limit keys of a sign-in of `account` from `address`: the pair first, then the address.
pub(crate) fn sign_in_keys(account: &str, address: Option<&str>) -> [(String, i64); 2] {
    let address = source(address);
    [
        (format!("sign-in:pair:{account}\n{address}"), PER_PAIR),
        (format!("sign-in:address:{address}"), PER_ADDRESS),
    ]
}

/// How long an attempt waits after `failures` failures of its pair: 0, 250 ms, 500 ms, 1 s, 2 s
/// (a person mistyping barely notices, a guesser is slowed).
pub(crate) fn delay(failures: i64) -> Duration {
    match failures {
        n if n <= 0 => Duration::ZERO,
        n => Duration::from_millis(250 << (n - 1).min(3)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stop_growing() {
        assert_eq!(delay(0), Duration::ZERO);
        assert_eq!(delay(1), Duration::from_millis(250));
        assert_eq!(delay(4), Duration::from_secs(2));
        assert_eq!(delay(40), Duration::from_secs(2));
    }

    #[test]
    fn a_pair_is_its_account_and_address() {
        let [pair, address] = sign_in_keys("a@x", Some("1.2.3.4"));
        assert_ne!(pair.0, sign_in_keys("a@x", Some("5.6.7.8"))[0].0);
        assert_eq!(address.0, sign_in_keys("b@x", Some("1.2.3.4"))[1].0);
        assert_eq!(source(None), "unknown");
    }
}
