//! Failed sign-ins, counted per account and per client address in a sliding window: each
//! failure makes the next answer slower, and past the limit every attempt (the right password
//! included) is refused until the window has room again. Kept in this process's memory: with
//! replicas each counts its own, so the limits hold per replica.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) const WINDOW: Duration = Duration::from_secs(15 * 60);
pub(crate) const PER_ACCOUNT: usize = 5;
pub(crate) const PER_ADDRESS: usize = 20;
/// Keys kept at most; the oldest are dropped first (an attacker rotating emails cannot grow
/// the map without bound).
const MAX_KEYS: usize = 10_000;

#[derive(Default)]
pub(crate) struct Limiter {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

/// What a sign-in attempt may do now.
pub(crate) enum Admission {
    /// Go ahead, after waiting this long.
    Proceed(Duration),
    /// Refused; try again after this long.
    Refused(Duration),
}

impl Limiter {
    /// Whether an attempt for `account` from `address` may run now.
    pub(crate) fn admit(&self, account: &str, address: Option<&str>) -> Admission {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let mut worst = Duration::ZERO;
        let mut recent = 0;
        for (key, limit) in keys(account, address) {
            let Some(times) = map.get_mut(&key) else {
                continue;
            };
            while times
                .front()
                .is_some_and(|t| now.duration_since(*t) > WINDOW)
            {
                times.pop_front();
            }
            if times.len() >= limit
                && let Some(oldest) = times.front()
            {
                worst = worst.max(WINDOW.saturating_sub(now.duration_since(*oldest)));
            }
            if limit == PER_ACCOUNT {
                recent = times.len();
            }
        }
        if worst > Duration::ZERO {
            return Admission::Refused(worst.max(Duration::from_secs(1)));
        }
        // 0, 250 ms, 500 ms, 1 s, 2 s: a person mistyping barely notices, a guesser is slowed.
        let delay = match recent {
            0 => Duration::ZERO,
            n => Duration::from_millis(250 << (n - 1).min(3)),
        };
        Admission::Proceed(delay)
    }

    pub(crate) fn failed(&self, account: &str, address: Option<&str>) {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_KEYS {
            map.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < WINDOW)
            });
            if map.len() >= MAX_KEYS {
                map.clear();
            }
        }
        for (key, _) in keys(account, address) {
            map.entry(key).or_default().push_back(now);
        }
    }

    /// A successful sign-in clears the account's failures (not the address's).
    pub(crate) fn succeeded(&self, account: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&format!("account:{account}"));
    }
}

fn keys(account: &str, address: Option<&str>) -> Vec<(String, usize)> {
    let mut keys = vec![(format!("account:{account}"), PER_ACCOUNT)];
    if let Some(address) = address {
        keys.push((format!("address:{address}"), PER_ADDRESS));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slows_then_refuses_an_account() {
        let l = Limiter::default();
        assert!(matches!(l.admit("a@x", Some("1.2.3.4")), Admission::Proceed(d) if d.is_zero()));
        for _ in 0..PER_ACCOUNT {
            assert!(matches!(
                l.admit("a@x", Some("1.2.3.4")),
                Admission::Proceed(_)
            ));
            l.failed("a@x", Some("1.2.3.4"));
        }
        assert!(matches!(
            l.admit("a@x", Some("5.6.7.8")),
            Admission::Refused(_)
        ));
        // Another account from the same address is not refused yet.
        assert!(matches!(
            l.admit("b@x", Some("1.2.3.4")),
            Admission::Proceed(_)
        ));
    }

    #[test]
    fn refuses_an_address_that_guesses_many_accounts() {
        let l = Limiter::default();
        for i in 0..PER_ADDRESS {
            l.failed(&format!("u{i}@x"), Some("9.9.9.9"));
        }
        assert!(matches!(
            l.admit("new@x", Some("9.9.9.9")),
            Admission::Refused(_)
        ));
        assert!(matches!(
            l.admit("new@x", Some("8.8.8.8")),
            Admission::Proceed(_)
        ));
    }

    #[test]
    fn success_clears_the_account() {
        let l = Limiter::default();
        l.failed("a@x", None);
        l.failed("a@x", None);
        assert!(matches!(l.admit("a@x", None), Admission::Proceed(d) if !d.is_zero()));
        l.succeeded("a@x");
        assert!(matches!(l.admit("a@x", None), Admission::Proceed(d) if d.is_zero()));
    }
}
