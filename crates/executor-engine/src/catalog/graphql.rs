//! Adding and configuring graphql integrations: the catalog writes of the kind whose protocol
//! `kinds::graphql` speaks.

use crate::Engine;
use crate::caller::Caller;
use crate::error::{EngineError, EngineResult};
use crate::kinds::graphql::*;
use executor_core::auth::{AuthMethod, AuthMethodInput, assign_auth_slugs, merge_auth_methods};
use executor_core::now_ms;
use executor_graphql::GraphqlError;
use executor_store::IntegrationRecord;
use std::sync::Arc;

impl Engine {
    /// Adds a GraphQL endpoint. With `introspection_json` the schema is read offline; otherwise
    /// the endpoint is introspected without credentials first: a schema is stored as the
    /// snapshot, an auth wall (401/403) is accepted (the first connection introspects with its
    /// credentials), and anything else (not GraphQL, unreachable) is a
    /// `GraphqlIntrospection` error with nothing stored.
    pub async fn add_graphql_integration(
        &self,
        caller: &Caller,
        input: AddGraphqlIntegration,
    ) -> EngineResult<GraphqlIntegrationAdded> {
        self.ensure_may_write(caller, None, "add integrations")
            .await?;
        let endpoint = input.endpoint.trim().to_owned();
        let url = check_endpoint(&endpoint)?;
        let slug = match input
            .slug
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(s) => {
                check_slug(s)?;
                s.to_owned()
            }
            None => default_slug(&url),
        };
        let authentication_template = assign_auth_slugs(input.authentication_template);
        let exists = slug == crate::BUILTIN_INTEGRATION
            || self
                .inner
                .store
                .get_integration(caller.scope(), &slug)
                .await?
                .is_some();
        if exists {
            return Err(EngineError::IntegrationAlreadyExists { slug });
        }

        let (schema, supplied) = match &input.introspection_json {
            Some(json) => (Some(parse_supplied(json)?), true),
            None => {
                self.inner
                    .check_url(&endpoint)
                    .map_err(|refused| introspection_error(refused.to_string()))?;
                match executor_graphql::introspect(
                    self.inner.http(),
                    &endpoint,
                    &input.headers,
                    &input.query_params,
                )
                .await
                {
                    Ok(schema) => (Some(schema), false),
                    Err(GraphqlError::AuthRejected { status, .. }) => {
                        tracing::info!(%endpoint, status, "GraphQL endpoint needs credentials to introspect; the first connection will");
                        (None, false)
                    }
                    Err(e) => return Err(introspection_error(e.to_string())),
                }
            }
        };
        let schema_hash = match &schema {
            Some(schema) => {
                check_fields(schema)?;
                let hash = store_schema(&self.inner.kind_env(caller), schema).await?;
                Some(hash)
            }
            None => None,
        };

        let name = input
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map_or_else(|| slug.clone(), str::to_owned);
        let config = GraphqlConfig {
            endpoint,
            name: name.clone(),
            headers: input.headers,
            query_params: input.query_params,
            authentication_template,
            schema_hash: schema_hash.clone(),
            schema_supplied: supplied,
        };
        let description = input
            .description
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        self.insert_new_integration(caller, &slug, PLUGIN_ID, name.clone(), description, &config)
            .await?;
        if let (Some(hash), Some(schema)) = (schema_hash, schema) {
            self.inner
                .documents
                .put_graphql_schema(&hash, Arc::new(schema));
        }
        Ok(GraphqlIntegrationAdded { slug, name })
    }

    /// The GraphQL integration `slug`, or `None` when unknown or of another kind.
    async fn graphql_record(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<(IntegrationRecord, GraphqlConfig)>> {
        let Some(record) = self
            .inner
            .store
            .get_integration(caller.scope(), slug)
            .await?
        else {
            return Ok(None);
        };
        if record.plugin_id != PLUGIN_ID {
            return Ok(None);
        }
        let config = GraphqlConfig::from_record(&record)?;
        Ok(Some((record, config)))
    }

    /// `None` when the slug is unknown or not a GraphQL integration.
    pub async fn get_graphql_integration(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<GraphqlIntegrationView>> {
        let Some((record, config)) = self.graphql_record(caller, slug).await? else {
            return Ok(None);
        };
        let view = crate::IntegrationView::from_record(&record);
        Ok(Some(GraphqlIntegrationView {
            config: config.view(&record),
            slug: record.slug,
            name: view.name,
            description: view.description,
            kind: record.plugin_id,
            can_remove: record.can_remove,
            can_refresh: record.can_refresh,
            has_schema: config.schema_hash.is_some(),
            schema_supplied: config.schema_supplied,
        }))
    }

    /// The public config, or `None` when the slug is unknown or not a GraphQL integration.
    pub async fn get_graphql_config(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<GraphqlConfigView>> {
        Ok(self
            .graphql_record(caller, slug)
            .await?
            .map(|(record, config)| config.view(&record)))
    }

    /// Sets the integration's auth methods (`replace`), or merges them in (same slug replaces in
    /// place, others are appended). Connections re-sync, as after any tool-affecting change.
    /// Returns the stored methods.
    pub async fn set_graphql_auth(
        &self,
        caller: &Caller,
        slug: &str,
        methods: Vec<AuthMethodInput>,
        replace: bool,
    ) -> EngineResult<Vec<AuthMethod>> {
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
        let (mut record, mut config) =
            self.graphql_record(caller, slug).await?.ok_or_else(|| {
                EngineError::IntegrationNotFound {
                    slug: slug.to_owned(),
                }
            })?;
        config.authentication_template = if replace {
            assign_auth_slugs(methods)
        } else {
            merge_auth_methods(
                std::mem::take(&mut config.authentication_template),
                methods,
                random_suffix,
            )
        };
        let now = now_ms();
        record.config =
            serde_json::to_value(&config).map_err(|e| EngineError::Internal(e.to_string()))?;
        record.config_revised_at = Some(now);
        record.updated_at = now;
        self.inner
            .store
            .upsert_integration(caller.scope(), &record)
            .await?;
        self.catalog_changed();
        Ok(config.authentication_template)
    }
}
