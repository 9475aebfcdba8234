//! Adding and configuring openapi integrations: the catalog writes of the kind whose protocol
//! `kinds::openapi` speaks.

use crate::Engine;
use crate::caller::Caller;
use crate::error::{EngineError, EngineResult};
use crate::kinds::openapi::*;
use executor_core::auth::{AuthMethod, AuthMethodInput, assign_auth_slugs, merge_auth_methods};
use executor_core::{now_ms, slugify};
use executor_openapi::{Extraction, Spec};
use executor_store::{IntegrationRecord, StoreError};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What `preview_openapi` found.
#[derive(Debug, Clone)]
pub struct OpenApiPreview {
    pub preview: executor_openapi::Preview,
    /// Operations that would not become tools.
    pub skipped: Vec<executor_openapi::ExtractionFailure>,
    /// The best probes for health checks (at most 20), best first.
    pub health_check_candidates: Vec<super::health::HealthCheckCandidate>,
}

impl Engine {
    /// Fetches (or takes) spec text; parse errors say why, nothing is stored.
    async fn openapi_spec_text(
        &self,
        source: &OpenApiSpecSource,
        headers: &BTreeMap<String, String>,
        query: &BTreeMap<String, String>,
    ) -> EngineResult<String> {
        match source {
            OpenApiSpecSource::Text(text) => {
                if text.trim().is_empty() {
                    return Err(EngineError::OpenApiParse {
                        message: "The OpenAPI spec is empty.".to_owned(),
                    });
                }
                Ok(text.clone())
            }
            OpenApiSpecSource::Url(url) => {
                let mut target = url.trim().to_owned();
                if !query.is_empty()
                    && let Ok(mut parsed) = reqwest::Url::parse(&target)
                {
                    parsed.query_pairs_mut().extend_pairs(query.iter());
                    target = parsed.to_string();
                }
                self.inner.check_url(&target).map_err(|refused| {
                    spec_error(executor_openapi::OpenApiError::Fetch(refused.to_string()))
                })?;
                executor_openapi::fetch_spec(self.inner.http(), &target, headers)
                    .await
                    .map_err(spec_error)
            }
        }
    }

    /// Parses and compiles spec text off the IO threads (a large spec takes a while).
    async fn compile_openapi(
        text: Arc<str>,
        overrides: Option<Value>,
        url: Option<String>,
    ) -> EngineResult<(Spec, Extraction)> {
        // The text is shared, not copied: a dereferenced spec is tens of MB (issue #18).
        tokio::task::spawn_blocking(move || {
            let spec = parse(&text, overrides.as_ref(), url.as_deref()).map_err(spec_error)?;
            let extraction = executor_openapi::extract(&spec);
            Ok((spec, extraction))
        })
        .await
        .map_err(|e| EngineError::Internal(format!("spec compile task: {e}")))?
    }

    /// What a spec holds before it is added (`POST /api/openapi/preview`). A spec given by URL
    /// is fetched: admins only on the team server.
    pub async fn preview_openapi(
        &self,
        caller: &Caller,
        spec: &str,
        spec_overrides: Option<Value>,
    ) -> EngineResult<OpenApiPreview> {
        let source = OpenApiSpecSource::url_or_text(spec);
        if let OpenApiSpecSource::Url(url) = &source {
            self.ensure_may_probe(caller, url, false).await?;
        }
        let text = self
            .openapi_spec_text(&source, &BTreeMap::new(), &BTreeMap::new())
            .await?;
        let url = match &source {
            OpenApiSpecSource::Url(u) => Some(u.clone()),
            OpenApiSpecSource::Text(_) => None,
        };
        let (spec, extraction) = Self::compile_openapi(text.into(), spec_overrides, url).await?;
        let mut health_check_candidates = super::health::openapi_candidates(&extraction);
        health_check_candidates.truncate(20);
        let mut skipped = extraction.failures;
        skipped.extend(executor_openapi::derive_auth(&spec).skipped);
        Ok(OpenApiPreview {
            preview: executor_openapi::preview(&spec),
            skipped,
            health_check_candidates,
        })
    }

    /// Adds an OpenAPI integration. Nothing is stored unless the spec loads; no connection is
    /// created (tools come with a connection).
    pub async fn add_openapi_spec(
        &self,
        caller: &Caller,
        input: AddOpenApiSpec,
    ) -> EngineResult<AddedOpenApiSpec> {
        self.ensure_may_write(caller, None, "add integrations")
            .await?;
        let explicit_slug = non_blank(input.slug.clone());
        if let Some(slug) = &explicit_slug {
            check_slug(slug)?;
            self.ensure_slug_free(caller, slug).await?;
        }
        let text: Arc<str> = self
            .openapi_spec_text(&input.spec, &input.headers, &input.query_params)
            .await?
            .into();
        let spec_url = match &input.spec {
            OpenApiSpecSource::Url(u) => Some(u.trim().to_owned()),
            OpenApiSpecSource::Text(_) => None,
        };
        let (spec, extraction) =
            Self::compile_openapi(text.clone(), input.spec_overrides.clone(), spec_url.clone())
                .await?;
        let slug = match explicit_slug {
            Some(s) => s,
            None => {
                let derived = spec.title.as_deref().map(slugify).unwrap_or_default();
                if derived.is_empty() {
                    return Err(EngineError::OpenApiParse {
                        message: "OpenAPI integration slug is required".to_owned(),
                    });
                }
                let derived = if derived.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("api_{derived}")
                } else {
                    derived
                };
                self.ensure_slug_free(caller, &derived).await?;
                derived
            }
        };
        require_tools(&extraction)?;
        for failure in &extraction.failures {
            tracing::warn!(integration = %slug, operation = %failure.operation, message = %failure.message, "operation skipped");
        }
        let mut auth_skipped = Vec::new();
        let authentication_template = match input.authentication_template {
            Some(methods) => assign_auth_slugs(methods),
            None => {
                let derived = executor_openapi::derive_auth(&spec);
                auth_skipped = derived.skipped;
                derived.methods
            }
        };
        let title = non_blank(spec.title.clone());
        let name = non_blank(input.name)
            .or_else(|| title.clone())
            .unwrap_or_else(|| slug.clone());
        let description = non_blank(input.description)
            .or_else(|| non_blank(spec.description.clone()))
            .or(title)
            .unwrap_or_else(|| slug.clone());
        // The parsed document is the largest thing alive here; nothing below needs it.
        drop(spec);
        let spec_hash = self
            .inner
            .store
            .put_blob(caller.scope(), text.as_bytes())
            .await?;
        let config = OpenApiConfig {
            spec_url: spec_url.clone(),
            spec_hash: spec_hash.clone(),
            base_url: non_blank(input.base_url),
            headers: input.headers,
            query_params: input.query_params,
            spec_overrides: input.spec_overrides,
            authentication_template,
            health_check: input.health_check.filter(|h| !h.is_null()),
        };
        let now = now_ms();
        let record = IntegrationRecord {
            slug: slug.clone(),
            plugin_id: PLUGIN_ID.to_owned(),
            name: Some(name),
            description: Some(description),
            config: to_config_value(&config)?,
            can_remove: true,
            can_refresh: spec_url.is_some(),
            config_revised_at: Some(now),
            created_at: now,
            updated_at: now,
        };
        let tool_count = extraction.tools.len();
        let mut skipped = extraction.failures.clone();
        // What of the spec's security could not be offered as written is reported beside the
        // skipped operations, never dropped silently.
        skipped.extend(auth_skipped);
        self.inner.documents.put_openapi_extraction(
            &compile_key(
                &spec_hash,
                config.spec_overrides.as_ref(),
                config.spec_url.as_deref(),
            ),
            Arc::new(extraction),
        );
        super::check_integration_text(
            Some(&record.slug),
            record.name.as_deref(),
            record.description.as_deref(),
        )?;
        match self
            .inner
            .store
            .insert_integration(caller.scope(), &record)
            .await
        {
            Ok(()) => {}
            Err(StoreError::AlreadyExists) => {
                self.delete_blob_if_unused(caller, &spec_hash).await?;
                return Err(EngineError::IntegrationAlreadyExists { slug });
            }
            Err(e) => {
                self.delete_blob_if_unused(caller, &spec_hash).await?;
                return Err(e.into());
            }
        }
        self.catalog_changed();
        Ok(AddedOpenApiSpec {
            slug,
            tool_count,
            skipped,
        })
    }

    async fn ensure_slug_free(&self, caller: &Caller, slug: &str) -> EngineResult<()> {
        if slug == crate::BUILTIN_INTEGRATION
            || self
                .inner
                .store
                .get_integration(caller.scope(), slug)
                .await?
                .is_some()
        {
            return Err(EngineError::IntegrationAlreadyExists {
                slug: slug.to_owned(),
            });
        }
        Ok(())
    }

    /// The OpenAPI integration's record; `None` when unknown or of another kind.
    async fn openapi_record(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<IntegrationRecord>> {
        Ok(self
            .inner
            .store
            .get_integration(caller.scope(), slug)
            .await?
            .filter(|r| r.plugin_id == PLUGIN_ID))
    }

    async fn require_openapi_record(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<IntegrationRecord> {
        self.openapi_record(caller, slug)
            .await?
            .ok_or_else(|| EngineError::IntegrationNotFound {
                slug: slug.to_owned(),
            })
    }

    /// `None` when the slug is unknown or not an OpenAPI integration.
    pub async fn get_openapi_integration(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<OpenApiIntegrationView>> {
        Ok(self.openapi_record(caller, slug).await?.map(|record| {
            let view = crate::IntegrationView::from_record(&record);
            OpenApiIntegrationView {
                slug: record.slug,
                description: view.description,
                kind: record.plugin_id,
                can_remove: record.can_remove,
                can_refresh: record.can_refresh,
            }
        }))
    }

    /// `None` when the slug is unknown or not an OpenAPI integration.
    pub async fn get_openapi_config(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<OpenApiConfigView>> {
        let Some(record) = self.openapi_record(caller, slug).await? else {
            return Ok(None);
        };
        let config = OpenApiConfig::from_record(&record)?;
        Ok(Some(OpenApiConfigView {
            spec_url: config.spec_url,
            base_url: config.base_url,
            headers: config.headers,
            query_params: config.query_params,
            spec_overrides: config.spec_overrides,
            authentication_template: config.authentication_template,
        }))
    }

    /// Changes the auth methods (merged or replaced) and/or the base URL. `base_url`:
    /// `None` = unchanged, `Some(None)` = cleared. Connections re-sync on their next read.
    /// Returns the stored auth methods.
    pub async fn configure_openapi(
        &self,
        caller: &Caller,
        slug: &str,
        authentication_template: Option<Vec<AuthMethodInput>>,
        mode: AuthTemplateMode,
        base_url: Option<Option<String>>,
    ) -> EngineResult<Vec<AuthMethod>> {
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
        let mut record = self.require_openapi_record(caller, slug).await?;
        let mut config = OpenApiConfig::from_record(&record)?;
        if let Some(inputs) = authentication_template {
            config.authentication_template = match mode {
                AuthTemplateMode::Replace => assign_auth_slugs(inputs),
                AuthTemplateMode::Merge => merge_auth_methods(
                    std::mem::take(&mut config.authentication_template),
                    inputs,
                    random_base36,
                ),
            };
        }
        if let Some(base_url) = base_url {
            config.base_url = non_blank(base_url);
        }
        let now = now_ms();
        record.config = to_config_value(&config)?;
        record.config_revised_at = Some(now);
        record.updated_at = now;
        self.inner
            .store
            .upsert_integration(caller.scope(), &record)
            .await?;
        self.catalog_changed();
        Ok(config.authentication_template)
    }

    /// Re-reads the spec (the given one, else the stored URL), swaps the operations, re-produces
    /// every visible connection's tools and marks the others stale. Auth, base URL, headers,
    /// description, connections and policies are kept. `spec_overrides`: `None` keeps the
    /// stored ones.
    pub async fn update_openapi_spec(
        &self,
        caller: &Caller,
        slug: &str,
        spec: Option<OpenApiSpecSource>,
        spec_overrides: Option<Value>,
    ) -> EngineResult<OpenApiSpecUpdate> {
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
        let mut record = self.require_openapi_record(caller, slug).await?;
        let old = OpenApiConfig::from_record(&record)?;
        let source = match spec {
            Some(s) => s,
            None => match &old.spec_url {
                Some(url) => OpenApiSpecSource::Url(url.clone()),
                None => {
                    return Err(EngineError::OpenApiParse {
                        message: format!(
                            "The integration {slug} was added from pasted text; send the new spec to update it."
                        ),
                    });
                }
            },
        };
        let text: Arc<str> = self
            .openapi_spec_text(&source, &old.headers, &old.query_params)
            .await?
            .into();
        let spec_url = match &source {
            OpenApiSpecSource::Url(u) => Some(u.trim().to_owned()),
            OpenApiSpecSource::Text(_) => None,
        };
        let overrides = spec_overrides.or_else(|| old.spec_overrides.clone());
        let (_, extraction) =
            Self::compile_openapi(text.clone(), overrides.clone(), spec_url.clone()).await?;
        require_tools(&extraction)?;
        let before: BTreeSet<String> = match compiled(&self.inner.kind_env(caller), &old).await {
            Ok(e) => e.tools.iter().map(|t| t.name.clone()).collect(),
            Err(e) => {
                tracing::warn!(integration = %slug, error = %e, "the previous spec no longer compiles");
                BTreeSet::new()
            }
        };
        let after: BTreeSet<String> = extraction.tools.iter().map(|t| t.name.clone()).collect();
        let spec_hash = self
            .inner
            .store
            .put_blob(caller.scope(), text.as_bytes())
            .await?;
        let config = OpenApiConfig {
            spec_url: spec_url.clone(),
            spec_hash: spec_hash.clone(),
            spec_overrides: overrides,
            ..old.clone()
        };
        let tool_count = extraction.tools.len();
        let skipped = extraction.failures.clone();
        self.inner.documents.put_openapi_extraction(
            &compile_key(
                &spec_hash,
                config.spec_overrides.as_ref(),
                config.spec_url.as_deref(),
            ),
            Arc::new(extraction),
        );
        let now = now_ms();
        record.config = to_config_value(&config)?;
        record.can_refresh = spec_url.is_some();
        record.config_revised_at = Some(now);
        record.updated_at = now;
        self.inner
            .store
            .upsert_integration(caller.scope(), &record)
            .await?;
        for connection in self.list_connections(caller, Some(slug), None).await? {
            self.produce_tools(caller, &record, &connection.key())
                .await?;
        }
        if old.spec_hash != spec_hash {
            self.delete_blob_if_unused(caller, &old.spec_hash).await?;
        }
        self.catalog_changed();
        Ok(OpenApiSpecUpdate {
            slug: slug.to_owned(),
            tool_count,
            added_tools: after.difference(&before).cloned().collect(),
            removed_tools: before.difference(&after).cloned().collect(),
            skipped,
        })
    }

    /// Removes an OpenAPI integration with its connections and tools, and its spec text unless
    /// another integration uses the same document. Unknown slugs succeed silently; a slug of
    /// another kind is `IntegrationNotFound`.
    pub async fn remove_openapi_integration(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<()> {
        self.ensure_may_write(caller, None, "remove integrations")
            .await?;
        let Some(record) = self
            .inner
            .store
            .get_integration(caller.scope(), slug)
            .await?
        else {
            return Ok(());
        };
        if record.plugin_id != PLUGIN_ID {
            return Err(EngineError::IntegrationNotFound {
                slug: slug.to_owned(),
            });
        }
        self.remove_integration(caller, slug).await?;
        if let Ok(config) = OpenApiConfig::from_record(&record) {
            self.delete_blob_if_unused(caller, &config.spec_hash)
                .await?;
        }
        Ok(())
    }

    /// Deletes a document blob no integration's config names any more.
    async fn delete_blob_if_unused(&self, caller: &Caller, hash: &str) -> EngineResult<()> {
        let integrations = self.inner.store.list_integrations(caller.scope()).await?;
        let used = integrations
            .iter()
            .any(|i| i.config.to_string().contains(hash));
        if !used {
            self.inner.store.delete_blob(caller.scope(), hash).await?;
        }
        Ok(())
    }
}
