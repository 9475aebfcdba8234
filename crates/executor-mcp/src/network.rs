//! The server's upstream HTTP clients connect only where [`NetworkAccess`] allows.
//!
//! Two checks, because either alone leaves a door: names are resolved by [`GuardedResolver`],
//! which drops the addresses that are not allowed (so nothing is even dialled for them), and
//! every connection, whatever made it (an IP written in the URL, which reqwest never resolves,
//! or a redirect), is checked on the address it reached before a byte of the request is sent
//! ([`AddressCheckLayer`]). Checking the connected address also defeats DNS rebinding: a name
//! that answers a public address to one lookup and a private one to the next is judged on the
//! address actually used. A connection through a plain-HTTP proxy is the proxy's to judge.

use executor_core::network::{AddressNotAllowed, NetworkAccess};
use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `builder` with both checks for `access`, following redirects as `fetch` does (at most 10)
/// except to an address written in the URL that is refused (not even dialled).
pub fn guarded(builder: reqwest::ClientBuilder, access: NetworkAccess) -> reqwest::ClientBuilder {
    builder
        .dns_resolver(Arc::new(GuardedResolver { access }))
        .connector_layer(AddressCheckLayer { access })
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if let Some(host) = attempt.url().host_str()
                && let Err(refused) = access.check_host(host)
            {
                return attempt.error(refused);
            }
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            attempt.follow()
        }))
}

const MAX_REDIRECTS: usize = 10;

/// `Ok` unless `url`'s host is an address `access` refuses: checked before a request, so such a
/// host is not even dialled (a name is judged on what it resolves to, when it is).
pub fn check_url(access: NetworkAccess, url: &str) -> Result<(), AddressNotAllowed> {
    match url::Url::parse(url.trim()) {
        Ok(parsed) => parsed
            .host_str()
            .map_or(Ok(()), |host| access.check_host(host)),
        // Not a URL: whatever sends it says so.
        Err(_) => Ok(()),
    }
}

/// Resolves with the system resolver, keeping the allowed addresses; a name with none left is
/// refused with the first address it had.
struct GuardedResolver {
    access: NetworkAccess,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let access = self.access;
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let allowed = allowed_addresses(access, found)?;
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The addresses of `found` that `access` allows; the first refusal when none is.
pub(crate) fn allowed_addresses(
    access: NetworkAccess,
    found: Vec<SocketAddr>,
) -> Result<Vec<SocketAddr>, BoxError> {
    let mut refusal = None;
    let allowed: Vec<SocketAddr> = found
        .into_iter()
        .filter(|addr| match access.check(addr.ip()) {
            Ok(()) => true,
            Err(e) => {
                refusal.get_or_insert(e);
                false
            }
        })
        .collect();
    match (allowed.is_empty(), refusal) {
        (true, Some(refusal)) => Err(Box::new(refusal)),
        _ => Ok(allowed),
    }
}

/// Wraps reqwest's connector: a connection to an address `access` does not allow is dropped.
#[derive(Clone)]
struct AddressCheckLayer {
    access: NetworkAccess,
}

impl<S> tower_layer::Layer<S> for AddressCheckLayer {
    type Service = AddressCheck<S>;
    fn layer(&self, inner: S) -> Self::Service {
        AddressCheck {
            inner,
            access: self.access,
        }
    }
}

#[derive(Clone)]
struct AddressCheck<S> {
    inner: S,
    access: NetworkAccess,
}

impl<S, R> tower_service::Service<R> for AddressCheck<S>
where
    S: tower_service::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let access = self.access;
        let connecting = self.inner.call(request);
        Box::pin(async move {
            let conn = connecting.await.map_err(Into::into)?;
            check_connected(access, &conn)?;
            Ok(conn)
        })
    }
}

fn check_connected(access: NetworkAccess, conn: &impl Connection) -> Result<(), AddressNotAllowed> {
    let connected = conn.connected();
    if connected.is_proxied() {
        return Ok(());
    }
    let mut extras = http::Extensions::new();
    connected.get_extras(&mut extras);
    match extras.get::<HttpInfo>() {
        Some(info) => access.check(info.remote_addr().ip()),
        // Not a TCP connection (reqwest's connections always carry it): nothing to judge.
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use executor_core::network::AddressClass;

    async fn answering() -> (SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (addr, task)
    }

    fn client(access: NetworkAccess) -> reqwest::Client {
        guarded(reqwest::Client::builder(), access).build().unwrap()
    }

    fn refusal(e: &reqwest::Error) -> AddressNotAllowed {
        AddressNotAllowed::find(e)
            .cloned()
            .unwrap_or_else(|| panic!("not refused for its address: {e:?}"))
    }

    #[tokio::test]
    async fn a_loopback_server_answers_only_where_private_networks_are_allowed() {
        let (addr, _server) = answering().await;
        for url in [
            format!("http://{addr}/"),
            format!("http://localhost:{}/", addr.port()),
            // 2130706433 is 127.0.0.1 written as one number.
            format!("http://2130706433:{}/", addr.port()),
        ] {
            let ok = client(NetworkAccess::LOCAL).get(&url).send().await.unwrap();
            assert_eq!(ok.text().await.unwrap(), "hello", "{url}");
            let e = client(NetworkAccess::PUBLIC_ONLY)
                .get(&url)
                .send()
                .await
                .unwrap_err();
            let refused = refusal(&e);
            assert_eq!(refused.class, AddressClass::Loopback, "{url}");
            assert!(refused.operator_may_allow);
        }
    }

    #[tokio::test]
    async fn a_redirect_to_a_refused_address_is_not_followed() {
        // A loopback server is allowed here; the metadata address it redirects to never is.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/",
            axum::routing::get(|| async {
                axum::response::Redirect::temporary("http://169.254.169.254/latest/meta-data/")
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let e = client(NetworkAccess::LOCAL)
            .get(format!("http://{addr}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(refusal(&e).class, AddressClass::Metadata);
    }

    #[test]
    fn an_address_in_a_url_is_judged_before_anything_is_dialled() {
        let team = NetworkAccess::PUBLIC_ONLY;
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://0x7f.1/",
            "http://2130706433/",
            "https://[::1]:8443/mcp",
            "http://10.0.0.1:8080/graphql",
        ] {
            assert!(check_url(team, url).is_err(), "{url}");
        }
        assert!(check_url(team, "https://api.example.com/v1").is_ok());
        assert!(check_url(NetworkAccess::LOCAL, "http://127.0.0.1:9/").is_ok());
        assert!(check_url(NetworkAccess::LOCAL, "http://169.254.169.254/").is_err());
    }

    #[test]
    fn a_name_keeps_only_its_allowed_addresses() {
        let found: Vec<SocketAddr> = vec![
            "10.0.0.1:443".parse().unwrap(),
            "93.184.216.34:443".parse().unwrap(),
        ];
        let kept = allowed_addresses(NetworkAccess::PUBLIC_ONLY, found.clone()).unwrap();
        assert_eq!(kept, vec![found[1]]);
        let e = allowed_addresses(NetworkAccess::PUBLIC_ONLY, vec![found[0]]).unwrap_err();
        assert!(e.to_string().contains("10.0.0.1"), "{e}");
    }
}
