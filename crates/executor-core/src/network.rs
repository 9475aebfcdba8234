//! Which addresses the server may fetch from (issue #39: a member could make the server fetch
//! any URL, the cloud's metadata service included).
//!
//! Every upstream connection (MCP, OpenAPI, GraphQL, OAuth, spec downloads) is checked against
//! [`NetworkAccess`] on the address it actually connects to, so a name that resolves to a
//! private address, a redirect and an IP written as a number are all caught. Link-local,
//! metadata, unspecified, multicast and broadcast addresses are never fetched; private and
//! loopback ones only where the operator allows them (the local server does, the team server
//! does not unless `--allow-private-network`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP is, as far as fetching from it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918, 100.64.0.0/10 (carrier-grade NAT), fc00::/7 (unique local), 198.18.0.0/15.
    Private,
    /// 169.254.0.0/16, fe80::/10: reachable only on the host's own link.
    LinkLocal,
    /// A cloud's instance metadata service (169.254.169.254, fd00:ec2::254, 100.100.100.200).
    Metadata,
    /// 0.0.0.0, :: (Linux connects them to the host itself).
    Unspecified,
    /// Multicast, broadcast and other addresses no server answers a fetch on.
    Reserved,
}

impl AddressClass {
    fn describe(self) -> &'static str {
        match self {
            AddressClass::Public => "a public address",
            AddressClass::Loopback => "a loopback address",
            AddressClass::Private => "a private-network address",
            AddressClass::LinkLocal => "a link-local address",
            AddressClass::Metadata => "a cloud metadata address",
            AddressClass::Unspecified => "the unspecified address",
            AddressClass::Reserved => "a reserved address",
        }
    }
}

/// The class of `ip`; an IPv4 address inside IPv6 (mapped, compatible or NAT64) is the class of
/// the IPv4 address it carries.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, d] = ip.octets();
    if [a, b, c, d] == [169, 254, 169, 254] || [a, b, c, d] == [100, 100, 100, 200] {
        AddressClass::Metadata
    } else if ip.is_unspecified() || a == 0 {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_link_local() {
        AddressClass::LinkLocal
    } else if ip.is_private()
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && b & 0xfe == 18)
    {
        AddressClass::Private
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let first = ip.segments()[0];
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        AddressClass::Metadata
    } else if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if first & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        // Unique local, and the deprecated site-local that some stacks still route.
        AddressClass::Private
    } else if ip.is_multicast() {
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

/// The IPv4 address an IPv6 one stands for: `::ffff:a.b.c.d`, `::a.b.c.d` and the NAT64 prefix
/// `64:ff9b::/96` all reach it.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4];
    // `::a.b.c.d` (deprecated "compatible"); `::` and `::1` are themselves.
    let compatible = s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1);
    (nat64 || compatible).then_some(tail)
}

/// Which addresses this server fetches from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkAccess {
    /// Private-network and loopback addresses too (the local server, where upstreams run on the
    /// same machine; the team server only with `--allow-private-network`).
    pub allow_private: bool,
}

impl NetworkAccess {
    /// The local server's: the person's own machine and network.
    pub const LOCAL: Self = Self {
        allow_private: true,
    };
    /// The team server's default: public addresses only.
    pub const PUBLIC_ONLY: Self = Self {
        allow_private: false,
    };

    /// `Ok` when the server may connect to `ip`.
    pub fn check(self, ip: IpAddr) -> Result<(), AddressNotAllowed> {
        let class = classify(ip);
        let allowed = match class {
            AddressClass::Public => true,
            AddressClass::Loopback | AddressClass::Private => self.allow_private,
            AddressClass::LinkLocal
            | AddressClass::Metadata
            | AddressClass::Unspecified
            | AddressClass::Reserved => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(AddressNotAllowed {
                address: ip,
                class,
                operator_may_allow: matches!(class, AddressClass::Loopback | AddressClass::Private),
            })
        }
    }

    /// `Ok` unless `host` (a URL's host, brackets allowed) is an IP address the server may not
    /// connect to. Names pass: they are checked on the addresses they resolve to.
    pub fn check_host(self, host: &str) -> Result<(), AddressNotAllowed> {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => self.check(ip),
            Err(_) => Ok(()),
        }
    }
}

/// A connection refused because of where it goes. The tool error code is
/// [`AddressNotAllowed::CODE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressNotAllowed {
    pub address: IpAddr,
    pub class: AddressClass,
    /// Whether `--allow-private-network` would allow it.
    pub operator_may_allow: bool,
}

impl AddressNotAllowed {
    pub const CODE: &'static str = "address_not_allowed";

    /// The refusal somewhere in `error`'s chain of sources, if that is why it failed.
    pub fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a AddressNotAllowed> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(found) = e.downcast_ref::<AddressNotAllowed>() {
                return Some(found);
            }
            // An I/O error's `source` skips the error it wraps: look at that one too.
            if let Some(found) = e
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<AddressNotAllowed>())
            {
                return Some(found);
            }
            next = e.source();
        }
        None
    }
}

impl fmt::Display for AddressNotAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "The server does not connect to {} ({})",
            self.address,
            self.class.describe()
        )?;
        if self.operator_may_allow {
            write!(
                f,
                "; its operator can allow private networks with --allow-private-network"
            )
        } else {
            write!(f, "; no setting allows it")
        }
    }
}

impl std::error::Error for AddressNotAllowed {}

impl AddressNotAllowed {
    /// What the agent's script sees: `{ok:false, error:{code:"address_not_allowed", …}}`.
    pub fn tool_error(&self) -> crate::ToolError {
        crate::ToolError::new(Self::CODE, self.to_string())
            .with_retryable(false)
            .with_status(403)
            .with_details(serde_json::json!({
                "address": self.address.to_string(),
                "operatorMayAllow": self.operator_may_allow,
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> AddressClass {
        classify(s.parse().unwrap())
    }

    #[test]
    fn every_kind_of_address_is_told_apart() {
        for (ip, want) in [
            ("8.8.8.8", AddressClass::Public),
            ("2606:4700::1111", AddressClass::Public),
            ("127.0.0.1", AddressClass::Loopback),
            ("127.8.9.10", AddressClass::Loopback),
            ("::1", AddressClass::Loopback),
            ("10.1.2.3", AddressClass::Private),
            ("172.16.0.1", AddressClass::Private),
            ("172.31.255.255", AddressClass::Private),
            ("192.168.1.1", AddressClass::Private),
            ("100.64.0.1", AddressClass::Private),
            ("198.18.0.1", AddressClass::Private),
            ("fd12:3456::1", AddressClass::Private),
            ("169.254.1.1", AddressClass::LinkLocal),
            ("fe80::1", AddressClass::LinkLocal),
            ("169.254.169.254", AddressClass::Metadata),
            ("100.100.100.200", AddressClass::Metadata),
            ("fd00:ec2::254", AddressClass::Metadata),
            ("0.0.0.0", AddressClass::Unspecified),
            ("0.1.2.3", AddressClass::Unspecified),
            ("::", AddressClass::Unspecified),
            ("224.0.0.1", AddressClass::Reserved),
            ("255.255.255.255", AddressClass::Reserved),
            ("ff02::1", AddressClass::Reserved),
            // IPv4 carried in IPv6 is the IPv4 address.
            ("::ffff:169.254.169.254", AddressClass::Metadata),
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("::10.0.0.1", AddressClass::Private),
            ("64:ff9b::a9fe:a9fe", AddressClass::Metadata),
            ("64:ff9b::808:808", AddressClass::Public),
            ("172.32.0.1", AddressClass::Public),
            ("100.128.0.1", AddressClass::Public),
        ] {
            assert_eq!(class(ip), want, "{ip}");
        }
    }

    #[test]
    fn metadata_and_link_local_are_refused_even_where_private_networks_are_allowed() {
        for ip in [
            "169.254.169.254",
            "fe80::1",
            "0.0.0.0",
            "::ffff:169.254.169.254",
        ] {
            let refused = NetworkAccess::LOCAL.check(ip.parse().unwrap()).unwrap_err();
            assert!(!refused.operator_may_allow, "{ip}");
            assert!(refused.to_string().contains("no setting allows it"));
        }
        for ip in ["127.0.0.1", "10.0.0.1", "::1"] {
            assert!(
                NetworkAccess::LOCAL.check(ip.parse().unwrap()).is_ok(),
                "{ip}"
            );
            let refused = NetworkAccess::PUBLIC_ONLY
                .check(ip.parse().unwrap())
                .unwrap_err();
            assert!(refused.operator_may_allow, "{ip}");
            assert!(refused.to_string().contains("--allow-private-network"));
        }
        assert!(
            NetworkAccess::PUBLIC_ONLY
                .check("1.1.1.1".parse().unwrap())
                .is_ok()
        );
    }

    #[test]
    fn a_host_is_checked_when_it_is_an_address_and_left_to_resolution_when_a_name() {
        let team = NetworkAccess::PUBLIC_ONLY;
        assert!(team.check_host("[::1]").is_err());
        assert!(team.check_host("127.0.0.1").is_err());
        assert!(team.check_host("example.com").is_ok());
        assert!(team.check_host("localhost").is_ok());
    }

    #[test]
    fn a_refusal_is_found_in_a_chain_of_errors() {
        #[derive(Debug)]
        struct Outer(AddressNotAllowed);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("connect failed")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let refusal = NetworkAccess::PUBLIC_ONLY
            .check("10.0.0.1".parse().unwrap())
            .unwrap_err();
        let outer = Outer(refusal.clone());
        assert_eq!(AddressNotAllowed::find(&outer), Some(&refusal));
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, refusal.clone());
        assert_eq!(AddressNotAllowed::find(&io), Some(&refusal));
        assert_eq!(AddressNotAllowed::find(&std::fmt::Error), None);
    }
}
