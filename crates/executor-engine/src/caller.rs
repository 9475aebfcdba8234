//! Who a request acts for. Every engine entry point that reads or writes tenant data takes a
//! [`Caller`]; the engine holds none of its own, so one engine serves many tenants and users.

use std::sync::Arc;

use executor_store::Scope;

/// The tenant and subject whose rows a request sees, where its policies come from, and what
/// kind of principal authenticated it. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    scope: Scope,
    principal: Principal,
    policies: PolicySource,
    /// A signed-in member of a team server, by email: their role is read from the store at each
    /// workspace write (and their tool calls are audited). `None`: a local owner or an embedder,
    /// who may write everything.
    member: Option<Arc<str>>,
    /// The scope as caches key it, made once: a tool call looks caches up several times, and
    /// cloning this copies no string.
    rows: RowsKey,
}

/// How the caller proved who it is. Nothing is decided by it yet; roles and per-principal rules
/// build on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Principal {
    /// The person who runs this executor on their own machine.
    LocalOwner,
    /// A person signed in to the team server.
    UserSession,
    /// An API key of the organisation or of a user.
    ApiKey,
    /// A token handed to an agent.
    AgentToken,
}

impl Principal {
    fn as_str(self) -> &'static str {
        match self {
            Principal::LocalOwner => "localOwner",
            Principal::UserSession => "userSession",
            Principal::ApiKey => "apiKey",
            Principal::AgentToken => "agentToken",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            Principal::LocalOwner,
            Principal::UserSession,
            Principal::ApiKey,
            Principal::AgentToken,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }
}

/// Which rules gate the caller's tool calls.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PolicySource {
    /// The tenant's policies (and the subject's own).
    Global,
    /// A toolkit's rules, by its id (toolkits are a later step: today it resolves like
    /// `Global`, but caches keep the two apart).
    Toolkit(String),
}

impl Caller {
    pub fn new(scope: Scope, principal: Principal, policies: PolicySource) -> Self {
        let subject = scope.subject.as_deref().filter(|s| !s.is_empty());
        let rows = RowsKey(Arc::from(scope.tenant.as_str()), subject.map(Arc::from));
        Self {
            scope,
            principal,
            policies,
            member: None,
            rows,
        }
    }

    /// A member of team server `tenant` (`user_id` is the subject): the role is theirs to check
    /// at each workspace write.
    pub fn member(
        tenant: impl Into<String>,
        user_id: impl Into<String>,
        email: &str,
        principal: Principal,
    ) -> Self {
        let mut caller = Self::new(
            Scope::new(tenant, Some(user_id.into())),
            principal,
            PolicySource::Global,
        );
        caller.member = Some(Arc::from(email));
        caller
    }

    /// The email of the team member this caller is, if it is one.
    pub fn member_email(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// The owner of a local executor: `tenant` with subject `"local"`, global policies.
    pub fn local(tenant: impl Into<String>) -> Self {
        Self::new(
            Scope::local(tenant),
            Principal::LocalOwner,
            PolicySource::Global,
        )
    }

    /// A person of `tenant` (`subject: None` for an organisation-only caller, which sees only
    /// org rows).
    pub fn user(tenant: impl Into<String>, subject: Option<String>) -> Self {
        Self::new(
            Scope::new(tenant, subject),
            Principal::UserSession,
            PolicySource::Global,
        )
    }

    /// The same caller under another policy source.
    pub fn with_policies(mut self, policies: PolicySource) -> Self {
        self.policies = policies;
        self
    }

    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = principal;
        self
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    pub fn tenant(&self) -> &str {
        &self.scope.tenant
    }

    pub fn subject(&self) -> Option<&str> {
        self.scope.subject.as_deref().filter(|s| !s.is_empty())
    }

    pub fn principal(&self) -> Principal {
        self.principal
    }

    pub fn policies(&self) -> &PolicySource {
        &self.policies
    }

    /// The slug of the toolkit the caller is bound to, if any.
    pub fn toolkit(&self) -> Option<&str> {
        match &self.policies {
            PolicySource::Toolkit(slug) => Some(slug),
            PolicySource::Global => None,
        }
    }

    /// What a saved pause keeps of its caller beyond the scope (the store's row has that): the
    /// principal and the policy source, so a resume after a restart replays under them.
    pub(crate) fn recorded(&self) -> serde_json::Value {
        let policies = match &self.policies {
            PolicySource::Global => serde_json::Value::Null,
            PolicySource::Toolkit(id) => serde_json::json!({ "toolkit": id }),
        };
        serde_json::json!({ "principal": self.principal.as_str(), "policies": policies })
    }

    /// This caller (the resuming one, whose scope matched) under what [`Self::recorded`] kept;
    /// anything missing or unknown (a pause from an older build) keeps this caller's own.
    pub(crate) fn with_recorded(mut self, recorded: Option<&serde_json::Value>) -> Self {
        let Some(recorded) = recorded else {
            return self;
        };
        if let Some(principal) = recorded["principal"].as_str().and_then(Principal::parse) {
            self.principal = principal;
        }
        match recorded["policies"]["toolkit"].as_str() {
            Some(id) => self.policies = PolicySource::Toolkit(id.to_owned()),
            None if recorded["policies"].is_null() => self.policies = PolicySource::Global,
            None => {}
        }
        self
    }

    /// The key of every per-caller cache whose rows depend on the tenant and subject.
    pub(crate) fn rows_key(&self) -> RowsKey {
        self.rows.clone()
    }

    /// [`Self::rows_key`], borrowed.
    pub(crate) fn rows(&self) -> &RowsKey {
        &self.rows
    }

    /// The key of state shared by everyone who sees a row of `owner`: the tenant for org rows,
    /// the tenant and subject for a user's own.
    pub(crate) fn owner_key(&self, owner: executor_core::Owner) -> RowsKey {
        match owner {
            executor_core::Owner::Org => RowsKey(self.rows.0.clone(), None),
            executor_core::Owner::User => self.rows_key(),
        }
    }

    /// The key of caches that also depend on the policy source (policy sets, search).
    pub(crate) fn policy_key(&self) -> PolicyKey {
        PolicyKey(self.rows_key(), self.policies.clone())
    }

    /// Whether this caller may see and answer an execution started by `owner`: the same tenant
    /// and the same subject (a user's execution is theirs; an org-only caller's is any org-only
    /// caller's of the tenant). Roles come later.
    pub(crate) fn may_act_for(&self, owner: &Scope) -> bool {
        self.scope.tenant == owner.tenant
            && self.subject() == owner.subject.as_deref().filter(|s| !s.is_empty())
    }

    /// Whether this caller may see, answer or read the outcome of an execution that `scope`
    /// started under `policies`: [`Self::may_act_for`] the scope, and through the same policy
    /// source. A pause answers only where it was made (`/mcp` or one toolkit's endpoint): a
    /// toolkit's agent must not receive what a call its toolkit does not grant returned, and a
    /// pause made under a toolkit is not answered under other rules (issue #39).
    pub(crate) fn may_answer(&self, scope: &Scope, policies: &PolicySource) -> bool {
        self.may_act_for(scope) && self.policies == *policies
    }

    /// The policy source [`Self::recorded`] kept; `None` when nothing was kept (a pause of an
    /// older build, or a settled row, whose pending interaction is gone).
    pub(crate) fn recorded_policies(recorded: Option<&serde_json::Value>) -> Option<PolicySource> {
        let policies = recorded?.get("policies")?;
        if policies.is_null() {
            return Some(PolicySource::Global);
        }
        policies["toolkit"]
            .as_str()
            .map(|id| PolicySource::Toolkit(id.to_owned()))
    }
}

/// Tenant and subject, as caches key their entries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowsKey(Arc<str>, Option<Arc<str>>);

/// [`RowsKey`] and the policy source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PolicyKey(RowsKey, PolicySource);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_execution_is_answerable_only_by_its_tenant_and_subject() {
        let alice = Caller::user("acme", Some("alice".into()));
        let bob = Caller::user("acme", Some("bob".into()));
        let org = Caller::user("acme", None);
        let other = Caller::user("globex", Some("alice".into()));
        assert!(alice.may_act_for(alice.scope()));
        assert!(!bob.may_act_for(alice.scope()));
        assert!(!org.may_act_for(alice.scope()));
        assert!(!alice.may_act_for(org.scope()));
        assert!(org.may_act_for(&Scope::new("acme", Some(String::new()))));
        assert!(!other.may_act_for(alice.scope()));
    }

    #[test]
    fn a_resumed_pause_keeps_the_principal_and_policy_source_it_was_made_under() {
        let agent = Caller::local("t")
            .with_principal(Principal::AgentToken)
            .with_policies(PolicySource::Toolkit("kit".into()));
        let saved = agent.recorded();
        let resumed = Caller::local("t").with_recorded(Some(&saved));
        assert_eq!(resumed, agent);
        // A pause from a build that recorded nothing keeps the resuming caller's own.
        assert_eq!(Caller::local("t").with_recorded(None), Caller::local("t"));
        let global = Caller::local("t").recorded();
        let back = Caller::local("t")
            .with_policies(PolicySource::Toolkit("other".into()))
            .with_recorded(Some(&global));
        assert_eq!(back.policies(), &PolicySource::Global);
    }

    #[test]
    fn a_toolkit_caller_keys_policy_caches_apart_but_shares_rows() {
        let global = Caller::local("t");
        let kit = global
            .clone()
            .with_policies(PolicySource::Toolkit("k".into()));
        assert_eq!(global.rows_key(), kit.rows_key());
        assert_ne!(global.policy_key(), kit.policy_key());
    }
}
