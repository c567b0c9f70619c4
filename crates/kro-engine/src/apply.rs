//! The apply engine: server-side apply of one level's desired objects at once (bounded
//! concurrency), with force, as one field manager; and the memory of what was last applied, so
//! that an object whose intent is unchanged, and which nobody else has touched since (same UID,
//! same fields owned by the manager), is not applied again.
//!
//! The instance controller uses one [`Applier`] per generated kind, its memory scoped by
//! instance UID; anything else that applies a runtime plan level by level (a deploy without an
//! instance) can use one the same way.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::{StreamExt, stream};
use kro_runtime::{DesiredObject, ObjectKey, Observed};
use kube::api::{Patch, PatchParams};
use serde_json::Value as Json;

use crate::json::text;
use crate::kinds::{KindError, Kinds};
use kro_graph::metadata::APPLY_MANAGER;

/// How an [`Applier`] applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyConfig {
    /// Objects applied at once within a level (0 counts as 1).
    pub concurrency: usize,
    /// The field manager of the applies: it owns the fields applied, and only its fields are
    /// compared to tell whether someone else changed an object.
    pub field_manager: String,
    /// Send every apply with `dryRun=All`: the server checks and answers, and stores nothing.
    pub dry_run: bool,
}

impl Default for ApplyConfig {
    /// 16 at once, as [`APPLY_MANAGER`].
    fn default() -> Self {
        ApplyConfig {
            concurrency: 16,
            field_manager: APPLY_MANAGER.to_owned(),
            dry_run: false,
        }
    }
}

impl ApplyConfig {
    /// With `concurrency` objects applied at once.
    #[must_use]
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Applies with `dryRun=All` when `dry_run`.
    #[must_use]
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// With `field_manager` as the field manager.
    #[must_use]
    pub fn field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = field_manager.into();
        self
    }
}

/// What applying one object did.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyOutcome {
    /// The object did not exist (as far as the caller had observed); the server's answer.
    Created(Json),
    /// The object existed and was applied again; the server's answer.
    Updated(Json),
    /// Not applied: its intent is what was last applied and nobody changed the fields the
    /// manager owns since.
    Unchanged,
}

impl ApplyOutcome {
    /// The object as the server answered, when it was applied.
    pub fn applied(&self) -> Option<&Json> {
        match self {
            ApplyOutcome::Created(object) | ApplyOutcome::Updated(object) => Some(object),
            ApplyOutcome::Unchanged => None,
        }
    }

    /// The object as the server answered, when it was applied.
    pub fn into_applied(self) -> Option<Json> {
        match self {
            ApplyOutcome::Created(object) | ApplyOutcome::Updated(object) => Some(object),
            ApplyOutcome::Unchanged => None,
        }
    }
}

/// Why an object could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The server does not serve the object's kind.
    #[error(transparent)]
    Kind(KindError),
    /// The server refused the apply (or could not be reached).
    #[error(transparent)]
    Api(kube::Error),
    /// The server's answer cannot be represented as JSON (a bug).
    #[error("the applied object cannot be represented as JSON: {0}")]
    Json(#[source] serde_json::Error),
}

impl ApplyError {
    /// A stable CamelCase reason (for logs, events and metric labels).
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::Kind(_) => "KindNotServed",
            ApplyError::Api(_) => "ApplyFailed",
            ApplyError::Json(_) => "InternalError",
        }
    }
}

/// One object of a level, applied or not.
#[derive(Debug)]
pub struct AppliedObject {
    /// The object.
    pub key: ObjectKey,
    /// What became of it.
    pub outcome: Result<ApplyOutcome, ApplyError>,
}

/// What was last applied of one object.
#[derive(Debug, Clone, PartialEq)]
struct Applied {
    intent: u64,
    uid: String,
    /// A digest of the fields the manager owned by apply in the server's answer.
    fields: Option<u64>,
    /// `metadata.generation` in the server's answer.
    generation: Option<i64>,
    /// Until a watch cache shows this write (or a later state): the resourceVersion the server
    /// answered, and when. Meanwhile a cache that lacks the object, or holds an older state of
    /// it, is behind kro's own write rather than changed by someone else, as
    /// kube-controller-manager's expectations read their caches.
    unseen: Option<(u64, Instant)>,
}

/// How long a write waits to show in the watch caches before they are taken at their word
/// again (a cache catches up in milliseconds; this bounds the wait when its watch broke and the
/// object went away meanwhile; kube-controller-manager's expectations wait five minutes).
pub const CACHE_CATCH_UP: Duration = Duration::from_secs(30);

impl Applied {
    /// Whether the caches may still be behind this write: no cache has shown it yet, `current`
    /// (as the caller knows the object now) is not at this write's resourceVersion or later,
    /// and the write is recent.
    fn awaits_cache(&self, current: Option<&Json>) -> bool {
        let Some((written, since)) = self.unseen else {
            return false;
        };
        let seen = current.and_then(resource_version);
        !(seen.is_some_and(|seen| seen >= written) || since.elapsed() >= CACHE_CATCH_UP)
    }

    /// A watch cache holds the object as `cached`: at this write's resourceVersion or later,
    /// the caches have caught up, and an absence from them later means the object is gone.
    /// Only a cache ends the wait: the server's answer to the write, which a reconcile plans
    /// with right after applying, shows the write too, but the caches may still be behind it
    /// at the next reconcile (a burst of instances showed that as re-applies of objects the
    /// cache did not hold yet).
    fn cache_showed(&mut self, cached: &Json) {
        if let Some((written, _)) = self.unseen
            && resource_version(cached).is_some_and(|seen| seen >= written)
        {
            self.unseen = None;
        }
    }
}

/// `metadata.resourceVersion` as a number: kube-apiserver's (etcd's revision) and the embedded
/// server's are; an opaque one is `None`, and then nothing waits for the caches.
pub fn resource_version(object: &Json) -> Option<u64> {
    text(object, "/metadata/resourceVersion").parse().ok()
}

/// Applies the desired objects of a plan, one level at a time, and remembers what it applied.
///
/// The memory is kept per scope (an instance's UID, say): [`forget`](Self::forget) a scope
/// when its objects are gone.
///
/// Applying a plan's levels in order (an engine would plan again with what it observed, and
/// wait for readiness, before going on to the next level):
///
/// ```no_run
/// # async fn deploy(client: kube::Client, plan: &kro_runtime::Plan) {
/// use kro_engine::{Applier, ApplyConfig};
/// use kro_runtime::Observed;
///
/// let applier = Applier::new(client, ApplyConfig::default().field_manager("kro.run/direct"));
/// let mut observed = Observed::new();
/// for level in plan.desired_by_level() {
///     let level: Vec<_> = level.into_iter().cloned().collect();
///     for applied in applier.apply_level("my-deployment", &level, &observed).await {
///         match applied.outcome {
///             Ok(outcome) => {
///                 if let Some(object) = outcome.into_applied() {
///                     observed.insert(object);
///                 }
///             }
///             Err(error) => eprintln!("{}: {error} ({})", applied.key, error.reason()),
///         }
///     }
/// }
/// # }
/// ```
pub struct Applier {
    client: kube::Client,
    kinds: Kinds,
    config: ApplyConfig,
    params: PatchParams,
    memory: Mutex<HashMap<String, HashMap<ObjectKey, Applied>>>,
}

impl std::fmt::Debug for Applier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Applier {
    /// An applier writing through `client`, with a discovery cache of its own.
    pub fn new(client: kube::Client, config: ApplyConfig) -> Self {
        let kinds = Kinds::new(client.clone());
        let mut params = PatchParams::apply(&config.field_manager).force();
        params.dry_run = config.dry_run;
        Applier {
            client,
            kinds,
            config,
            params,
            memory: Mutex::default(),
        }
    }

    /// The same, resolving kinds through `kinds` (a discovery cache shared with others).
    #[must_use]
    pub fn with_kinds(mut self, kinds: Kinds) -> Self {
        self.kinds = kinds;
        self
    }

    /// How it applies.
    pub fn config(&self) -> &ApplyConfig {
        &self.config
    }

    /// Whether `desired` must be applied in `scope`: nothing was remembered of applying this
    /// intent to this object, or `current` (the object as last observed, `None` when absent)
    /// shows that someone else changed the fields the manager owns, or recreated it. A cache
    /// that has not shown kro's last write of the object yet shows nothing of the kind: the
    /// object is not applied again until the cache catches up (its watch event reconciles
    /// anyway), so a reconcile that runs early sends nothing twice.
    pub fn needs_apply(
        &self,
        scope: &str,
        desired: &DesiredObject,
        current: Option<&Json>,
    ) -> bool {
        let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        let record = memory
            .get(scope)
            .and_then(|records| records.get(&desired.key));
        let intent = intent(&desired.object);
        if let Some(record) = record
            && record.intent == intent
            && record.awaits_cache(current)
        {
            return false;
        }
        let reason = apply_reason(record, intent, current, &self.config.field_manager);
        if let Some(reason) = reason {
            tracing::debug!(object = %desired.key, reason, "to apply");
        }
        reason.is_some()
    }

    /// Whether a watch cache has yet to show this applier's last write of `key` in `scope`
    /// (for at most 30 s after it), `current` being the object as the caller knows it now.
    pub fn awaits_cache(&self, scope: &str, key: &ObjectKey, current: Option<&Json>) -> bool {
        self.memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(scope)
            .and_then(|records| records.get(key))
            .is_some_and(|record| record.awaits_cache(current))
    }

    /// Applies the objects of one level at once (at most
    /// [`concurrency`](ApplyConfig::concurrency) in flight), each by server-side apply with
    /// force, and remembers them in `scope`. `observed` holds what the caller knows of the
    /// objects now: those that need no apply (see [`needs_apply`](Self::needs_apply)) are
    /// [`Unchanged`](ApplyOutcome::Unchanged), those it does not hold are
    /// [`Created`](ApplyOutcome::Created).
    ///
    /// Returns one [`AppliedObject`] per object of `level`, in the order the applies finish;
    /// an object that fails does not stop the others.
    pub async fn apply_level(
        &self,
        scope: &str,
        level: &[DesiredObject],
        observed: &Observed,
    ) -> Vec<AppliedObject> {
        let mut results = Vec::with_capacity(level.len());
        let mut pending = Vec::new();
        for desired in level {
            let current = observed.get(&desired.key);
            if self.needs_apply(scope, desired, current) {
                pending.push((desired, current.is_some()));
            } else {
                results.push(AppliedObject {
                    key: desired.key.clone(),
                    outcome: Ok(ApplyOutcome::Unchanged),
                });
            }
        }
        // Collected first: a lazy `map` over borrowed objects inside the stream makes the
        // compiler fail to prove the reconcile future `Send` (rust-lang/rust#102211).
        let applies: Vec<_> = pending
            .into_iter()
            .map(|(desired, existed)| self.apply_reporting(scope, desired, existed))
            .collect();
        let applied: Vec<AppliedObject> = stream::iter(applies)
            .buffer_unordered(self.config.concurrency.max(1))
            .collect()
            .await;
        results.extend(applied);
        results
    }

    /// Brings `current` (the object `key` as a watch cache holds it) up to what the server
    /// answered this applier's last apply of it in `scope`, when the cache is older (the same
    /// UID with a lower `metadata.generation`): its generation becomes the answered one, so its
    /// status reads as not yet observed for what was last applied, as it is. A readiness check
    /// on a cache that lags behind kro's own write would otherwise judge the object's previous
    /// spec. `true` when `current` was changed.
    ///
    /// Only objects read from a watch cache come here: seeing kro's last write of the object in
    /// one ends [`needs_apply`](Self::needs_apply)'s wait for the caches.
    pub fn catch_up(&self, scope: &str, key: &ObjectKey, current: &mut Json) -> bool {
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(record) = memory
            .get_mut(scope)
            .and_then(|records| records.get_mut(key))
        else {
            return false;
        };
        record.cache_showed(current);
        let Some(applied) = record.generation else {
            return false;
        };
        let cached = current
            .pointer("/metadata/generation")
            .and_then(Json::as_i64);
        if text(current, "/metadata/uid") != record.uid
            || cached.is_some_and(|cached| cached >= applied)
        {
            return false;
        }
        match current.pointer_mut("/metadata") {
            Some(Json::Object(metadata)) => {
                metadata.insert("generation".to_owned(), Json::from(applied));
                true
            }
            _ => false,
        }
    }

    /// Forgets what was applied in `scope`.
    pub fn forget(&self, scope: &str) {
        self.memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(scope);
    }

    /// Forgets every scope but those `keep` answers `true` for.
    pub fn retain(&self, mut keep: impl FnMut(&str) -> bool) {
        self.memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|scope, _| keep(scope));
    }

    /// Applies one object: what became of it.
    async fn apply_reporting(
        &self,
        scope: &str,
        desired: &DesiredObject,
        existed: bool,
    ) -> AppliedObject {
        let outcome = self.apply_one(scope, desired).await.map(|applied| {
            if existed {
                ApplyOutcome::Updated(applied)
            } else {
                ApplyOutcome::Created(applied)
            }
        });
        AppliedObject {
            key: desired.key.clone(),
            outcome,
        }
    }

    /// Applies one object and remembers it.
    async fn apply_one(&self, scope: &str, desired: &DesiredObject) -> Result<Json, ApplyError> {
        let key = &desired.key;
        let api_version = text(&desired.object, "/apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let kind = self
            .kinds
            .resolve(&key.group, version, &key.kind)
            .await
            .map_err(ApplyError::Kind)?;
        let object = kind
            .api(&self.client, key.namespace.as_deref())
            .patch(&key.name, &self.params, &Patch::Apply(&desired.object))
            .await
            .map_err(ApplyError::Api)?;
        let applied = serde_json::to_value(&object).map_err(ApplyError::Json)?;
        let record = Applied {
            intent: intent(&desired.object),
            uid: text(&applied, "/metadata/uid").to_owned(),
            fields: owned_fields(&applied, &self.config.field_manager),
            generation: applied
                .pointer("/metadata/generation")
                .and_then(Json::as_i64),
            // A dry run writes nothing for a cache to show.
            unseen: resource_version(&applied)
                .filter(|_| !self.config.dry_run)
                .map(|written| (written, Instant::now())),
        };
        self.memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(scope.to_owned())
            .or_default()
            .insert(key.clone(), record);
        Ok(applied)
    }
}

/// Whether an object must be applied: nothing is remembered of applying this intent to this
/// object, or someone else changed the fields `manager` owns since.
#[cfg(test)]
fn needs_apply(
    record: Option<&Applied>,
    intent: u64,
    current: Option<&Json>,
    manager: &str,
) -> bool {
    apply_reason(record, intent, current, manager).is_some()
}

/// Why an object must be applied (see [`needs_apply`](Applier::needs_apply)), if it must.
fn apply_reason(
    record: Option<&Applied>,
    intent: u64,
    current: Option<&Json>,
    manager: &str,
) -> Option<&'static str> {
    let Some(record) = record else {
        return Some("never applied");
    };
    if record.intent != intent {
        return Some("new intent");
    }
    let Some(current) = current else {
        return Some("absent");
    };
    if text(current, "/metadata/uid") != record.uid {
        Some("recreated")
    } else if owned_fields(current, manager) != record.fields {
        Some("its fields changed")
    } else {
        None
    }
}

/// A digest of the fields `manager` owns on an object by apply (read from a
/// [compacted](compact_managed_fields) entry as it is).
fn owned_fields(object: &Json, manager: &str) -> Option<u64> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Json::as_array)?
        .iter()
        .find(|entry| entry["manager"] == manager && entry["operation"] == "Apply")
        .and_then(|entry| entry.get("fieldsV1"))
        .map(fields_digest)
}

/// The key of the one field a compacted `fieldsV1` holds: no managed-fields set has it (their
/// keys start with `f:`, `k:`, `v:`, `i:` or are `.`).
const FIELDS_DIGEST_KEY: &str = "kro.run/digest";

/// A digest of a `fieldsV1` set, or the digest a compacted one holds.
fn fields_digest(fields: &Json) -> u64 {
    if let Some(digest) = fields
        .as_object()
        .filter(|fields| fields.len() == 1)
        .and_then(|fields| fields.get(FIELDS_DIGEST_KEY))
        .and_then(Json::as_str)
        .and_then(|digest| u64::from_str_radix(digest, 16).ok())
    {
        return digest;
    }
    intent(fields)
}

/// Shrinks the managedFields of an object a watch cache keeps to what
/// [`Applier::needs_apply`] reads of them: the entries of apply operations, each with a
/// digest in place of its field set. The sets are most of a small object's bytes (more than
/// half of a ConfigMap kro applies), and a controller caching ten thousand instances' children
/// keeps every one of them.
pub fn compact_managed_fields(metadata: &mut kube::api::ObjectMeta) {
    let Some(entries) = metadata.managed_fields.as_mut() else {
        return;
    };
    entries.retain(|entry| entry.operation.as_deref() == Some("Apply"));
    for entry in entries.iter_mut() {
        if let Some(fields) = entry.fields_v1.as_mut() {
            let digest = fields_digest(&fields.0);
            fields.0 = serde_json::json!({ FIELDS_DIGEST_KEY: format!("{digest:016x}") });
        }
        entry.time = None;
    }
    if entries.is_empty() {
        metadata.managed_fields = None;
    }
}

/// A fingerprint of a desired object (or of any JSON value: a status written, say).
pub fn intent(object: &Json) -> u64 {
    let mut hasher = DefaultHasher::new();
    object.to_string().hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The flake this fixes: a Deployment just updated by kro, still cached with its previous
    /// generation and a status that matched it, read as ready for the new spec.
    #[tokio::test]
    async fn a_cache_older_than_the_last_apply_is_brought_up_to_its_generation() {
        let applier = Applier::new(
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap()))
                .unwrap(),
            ApplyConfig::default(),
        );
        let key = ObjectKey {
            group: "apps".to_owned(),
            kind: "Deployment".to_owned(),
            namespace: Some("default".to_owned()),
            name: "web".to_owned(),
        };
        applier
            .memory
            .lock()
            .unwrap()
            .entry("scope".to_owned())
            .or_default()
            .insert(
                key.clone(),
                Applied {
                    intent: 1,
                    uid: "u1".to_owned(),
                    fields: None,
                    generation: Some(3),
                    unseen: None,
                },
            );
        let cached = |uid: &str, generation: i64| {
            json!({"metadata": {"uid": uid, "generation": generation},
                "status": {"observedGeneration": generation}})
        };
        let mut stale = cached("u1", 2);
        assert!(applier.catch_up("scope", &key, &mut stale));
        assert_eq!(stale["metadata"]["generation"], 3);
        assert_eq!(
            stale["status"]["observedGeneration"], 2,
            "the status is left as seen"
        );
        for (mut current, why) in [
            (cached("u1", 3), "as new as the answer"),
            (cached("u1", 4), "newer than the answer"),
            (cached("u2", 1), "another object (recreated)"),
        ] {
            assert!(!applier.catch_up("scope", &key, &mut current), "{why}");
        }
        assert!(
            !applier.catch_up("other", &key, &mut cached("u1", 2)),
            "another scope"
        );
    }

    #[test]
    fn an_object_is_applied_again_only_when_its_intent_or_owned_fields_changed() {
        let object = json!({
            "metadata": {"uid": "u1", "managedFields": [
                {"manager": APPLY_MANAGER, "operation": "Apply", "fieldsV1": {"f:data": {}}},
                {"manager": "someone", "operation": "Update", "fieldsV1": {"f:x": {}}},
            ]}
        });
        let record = Applied {
            intent: 7,
            uid: "u1".to_owned(),
            fields: Some(fields_digest(&json!({"f:data": {}}))),
            generation: Some(1),
            unseen: None,
        };
        fn needs_apply(record: Option<&Applied>, intent: u64, current: Option<&Json>) -> bool {
            super::needs_apply(record, intent, current, APPLY_MANAGER)
        }
        assert!(!needs_apply(Some(&record), 7, Some(&object)));
        assert!(needs_apply(Some(&record), 8, Some(&object)), "new intent");
        assert!(needs_apply(None, 7, Some(&object)), "never applied");
        assert!(needs_apply(Some(&record), 7, None), "gone");
        let mut taken = object.clone();
        taken["metadata"]["managedFields"][0]["fieldsV1"] = json!({});
        assert!(needs_apply(Some(&record), 7, Some(&taken)), "drifted");
        let mut recreated = object.clone();
        recreated["metadata"]["uid"] = json!("u2");
        assert!(needs_apply(Some(&record), 7, Some(&recreated)), "recreated");

        // The same, read from a watch cache that compacts managedFields.
        let compacted = |object: &Json| {
            let mut metadata: kube::api::ObjectMeta =
                serde_json::from_value(object["metadata"].clone()).unwrap();
            compact_managed_fields(&mut metadata);
            json!({ "metadata": metadata })
        };
        let cached = compacted(&object);
        let entries = cached["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 1, "only apply entries are kept: {cached}");
        assert!(
            entries[0]["fieldsV1"].get("f:data").is_none(),
            "the set gives way to its digest: {cached}"
        );
        assert!(!needs_apply(Some(&record), 7, Some(&cached)));
        assert!(
            needs_apply(Some(&record), 7, Some(&compacted(&taken))),
            "drifted"
        );
        assert_eq!(
            compacted(&cached),
            cached,
            "compacting twice changes nothing"
        );
    }

    /// The spurious re-applies this prevents: a reconcile that runs before the watch cache
    /// shows kro's own write saw the object missing (or as it was) and applied it again.
    #[test]
    fn a_cache_behind_the_last_write_does_not_bring_an_apply_again() {
        let mut record = Applied {
            intent: 7,
            uid: "u1".to_owned(),
            fields: None,
            generation: None,
            unseen: Some((12, Instant::now())),
        };
        let at = |version: &str| json!({"metadata": {"uid": "u1", "resourceVersion": version, "managedFields": []}});
        assert!(record.awaits_cache(None), "not in the cache yet");
        assert!(record.awaits_cache(Some(&at("11"))), "an older state");
        assert!(!record.awaits_cache(Some(&at("12"))), "the write itself");
        assert!(
            record.awaits_cache(None),
            "the answer to the write is not a cache: the caches may still lack it"
        );
        record.cache_showed(&at("11"));
        assert!(record.awaits_cache(None), "a cache still behind");
        record.cache_showed(&at("12"));
        assert!(record.unseen.is_none(), "seen once in a cache is enough");
        assert!(!record.awaits_cache(None), "gone after a cache showed it");

        record.unseen = Some((12, Instant::now()));
        assert!(!record.awaits_cache(Some(&at("30"))), "a later state");
        record.unseen = Some((12, Instant::now() - CACHE_CATCH_UP));
        assert!(!record.awaits_cache(None), "waited long enough");
        record.unseen = Some((12, Instant::now()));
        assert!(
            record.awaits_cache(Some(&at("not-a-number"))),
            "an opaque version is no proof"
        );
    }

    #[test]
    fn only_the_fields_of_the_configured_manager_count() {
        let object = json!({"metadata": {"managedFields": [
            {"manager": "other", "operation": "Apply", "fieldsV1": {"f:x": {}}},
            {"manager": "mine", "operation": "Update", "fieldsV1": {"f:y": {}}},
            {"manager": "mine", "operation": "Apply", "fieldsV1": {"f:z": {}}},
        ]}});
        assert_eq!(
            owned_fields(&object, "mine"),
            Some(fields_digest(&json!({"f:z": {}})))
        );
        assert_eq!(owned_fields(&object, APPLY_MANAGER), None);
    }
}
