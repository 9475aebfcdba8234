//! Owners and tool addresses: `tools.<integration>.<owner>.<connection>.<tool>`.

use std::fmt;
use std::str::FromStr;

/// Who a connection (or policy) belongs to: the whole tenant (`org`) or one subject (`user`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Org,
    User,
}

impl Owner {
    pub fn as_str(self) -> &'static str {
        match self {
            Owner::Org => "org",
            Owner::User => "user",
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Owner {
    type Err = AddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "org" => Ok(Owner::Org),
            "user" => Ok(Owner::User),
            other => Err(AddressError::BadOwner(other.to_owned())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("owner must be \"org\" or \"user\", got {0:?}")]
    BadOwner(String),
    #[error(
        "a tool address needs five non-empty segments: tools.<integration>.<owner>.<connection>.<tool>"
    )]
    Shape,
}

/// A parsed dynamic tool address. The tool part may itself contain dots (`query.hello`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolAddress {
    pub integration: String,
    pub owner: Owner,
    pub connection: String,
    pub tool: String,
}

impl ToolAddress {
    /// Parses `tools.<integration>.<owner>.<connection>.<tool>`; the `tools.` root is required.
    pub fn parse(address: &str) -> Result<Self, AddressError> {
        let rest = address.strip_prefix("tools.").ok_or(AddressError::Shape)?;
        Self::parse_path(rest)
    }

    /// Parses the sandbox form without the `tools.` root: `<integration>.<owner>.<connection>.<tool>`.
    pub fn parse_path(path: &str) -> Result<Self, AddressError> {
        let mut parts = path.splitn(4, '.');
        let integration = parts.next().unwrap_or_default();
        let owner = parts.next().unwrap_or_default();
        let connection = parts.next().unwrap_or_default();
        let tool = parts.next().unwrap_or_default();
        if integration.is_empty()
            || owner.is_empty()
            || connection.is_empty()
            || tool.is_empty()
            || tool.split('.').any(str::is_empty)
        {
            return Err(AddressError::Shape);
        }
        Ok(Self {
            integration: integration.to_owned(),
            owner: owner.parse()?,
            connection: connection.to_owned(),
            tool: tool.to_owned(),
        })
    }

    /// The sandbox path (no `tools.` root).
    pub fn path(&self) -> String {
        format!(
            "{}.{}.{}.{}",
            self.integration, self.owner, self.connection, self.tool
        )
    }

    /// `tools.<integration>.<owner>.<connection>`, the address of the connection.
    pub fn connection_address(&self) -> String {
        connection_address(&self.integration, self.owner, &self.connection)
    }
}

impl fmt::Display for ToolAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tools.{}", self.path())
    }
}

/// `tools.<integration>.<owner>.<name>`.
pub fn connection_address(integration: &str, owner: Owner, name: &str) -> String {
    format!("tools.{integration}.{owner}.{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses_with_dotted_tools() {
        let a = ToolAddress::parse("tools.gql.org.main.query.hello").unwrap();
        assert_eq!(a.integration, "gql");
        assert_eq!(a.owner, Owner::Org);
        assert_eq!(a.connection, "main");
        assert_eq!(a.tool, "query.hello");
        assert_eq!(a.to_string(), "tools.gql.org.main.query.hello");
        assert_eq!(a.path(), "gql.org.main.query.hello");
        assert_eq!(a.connection_address(), "tools.gql.org.main");
    }

    #[test]
    fn rejects_bad_addresses() {
        for bad in [
            "gql.org.main.x",
            "tools.gql.org.main",
            "tools.gql.team.main.x",
            "tools..org.main.x",
            "tools.gql.org..x",
            "tools.gql.org.main.a..b",
            "tools.gql.org.main.",
        ] {
            assert!(ToolAddress::parse(bad).is_err(), "{bad} should not parse");
        }
        assert_eq!(
            ToolAddress::parse("tools.a.team.c.d"),
            Err(AddressError::BadOwner("team".into()))
        );
    }

    #[test]
    fn owner_round_trips() {
        assert_eq!("org".parse::<Owner>().unwrap(), Owner::Org);
        assert_eq!("user".parse::<Owner>().unwrap().as_str(), "user");
        assert!("Org".parse::<Owner>().is_err());
    }
}
