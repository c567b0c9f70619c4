//! A composition: the instance's schema, its resources (JSON templates holding typed
//! references), their conditions, and the status; emitted as a ResourceGraphDefinition that
//! kro-graph's compiler has checked.

mod lifecycle;
mod nest;
mod status;

use std::marker::PhantomData;
use std::ops::Deref;

use serde_json::{Map, Value as Json, json};

pub use lifecycle::Lifecycle;
pub use nest::{InstanceRef, Nested};

use crate::object::ObjectRef;
use crate::reference::{FromPath, Ref, Typed};
use crate::schema::{KroSchema, SimpleSchema, simple_schema};
use crate::template::{Kind, Template, TemplateError, ToJson, Value};

/// Why a composition is not a valid RGD.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComposeError {
    /// kro's compiler refused the RGD: the same errors as `kro validate`, and where the
    /// resources they are about were added in the Rust code.
    #[error(
        "the composition {name} is not a valid RGD: {errors}{}",
        call_sites_text(call_sites)
    )]
    Invalid {
        /// The composition's name.
        name: String,
        /// What the compiler said, field paths included.
        errors: kro_graph::BuildErrors,
        /// The resources the errors are about, each with where it was added
        /// (`src/main.rs:42:17`).
        call_sites: Vec<(String, String)>,
    },
    /// The composition was put together wrongly, before any RGD could be made.
    #[error("the composition {name}: {mistake}")]
    Mistake {
        /// The composition's name.
        name: String,
        /// What is wrong.
        mistake: Mistake,
    },
    /// The RGD could not be written as YAML.
    #[error("the composition {name} cannot be written as YAML: {message}")]
    Yaml {
        /// The composition's name.
        name: String,
        /// Why.
        message: String,
    },
    /// The emitted RGD does not decode (a bug of this crate).
    #[error("the composition {name} does not decode as an RGD: {message}")]
    Decode {
        /// The composition's name.
        name: String,
        /// Why.
        message: String,
    },
}

fn call_sites_text(call_sites: &[(String, String)]) -> String {
    call_sites
        .iter()
        .map(|(id, site)| format!("\n  the resource {id} was added at {site}"))
        .collect()
}

/// Something wrong in how a composition was put together, found before the RGD is compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mistake {
    /// A resource's template could not be written (a field set by path with `with`).
    #[error("the resource {id}: {error}")]
    Template {
        /// The resource's id.
        id: String,
        /// What went wrong.
        error: TemplateError,
    },
    /// A status field was given no value.
    #[error("the status field {field} is given no value: every field of the status type needs one")]
    StatusMissing {
        /// The field's path (`endpoints.public`).
        field: String,
    },
    /// A `scale` status field was given a value: kro fills it.
    #[error("the status field {field} is a scale field, which kro fills: give it no value")]
    ScaleStatusGiven {
        /// The field's path.
        field: String,
    },
    /// A nested composition's spec field has no value and no default.
    #[error(
        "the nested composition {prefix}: the spec field {field} is given no value and has no default"
    )]
    NestedSpecMissing {
        /// The nested composition's prefix.
        prefix: String,
        /// The field's path.
        field: String,
    },
    /// An expression of a nested composition or of a reference into one could not be rewritten.
    #[error("the nested composition {prefix}: {message}")]
    Nested {
        /// The nested composition's prefix.
        prefix: String,
        /// What went wrong.
        message: String,
    },
    /// `depends_on` was asked of something it cannot order.
    #[error("{dependent} cannot depend on {dependency}: {reason}")]
    DependsOn {
        /// The dependent resource's id.
        dependent: String,
        /// The dependency's id.
        dependency: String,
        /// Why.
        reason: String,
    },
}

/// One resource of a composition, as [`Composition::add`] returns it: its id, and typed
/// references into what the server will hold of it: a `Resource<DeploymentRef>` derefs to
/// a [`DeploymentRef`](crate::k8s::api::apps::v1::DeploymentRef), so
/// `deployment.status().available_replicas()` is a `Ref<i64>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource<R = ObjectRef> {
    id: String,
    refs: R,
}

impl<R> Deref for Resource<R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.refs
    }
}

impl<R: FromPath> Resource<R> {
    fn new(id: &str) -> Resource<R> {
        Resource {
            id: id.to_owned(),
            refs: R::from_path(id.to_owned()),
        }
    }
}

impl<R> Resource<R> {
    /// Its id in the RGD.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let settings = app.add("settings", ConfigMap::default());
    /// assert_eq!(settings.id(), "settings");
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A reference to a field of the object, by its path (`status.availableReplicas`).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let settings = app.add("settings", serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    /// assert_eq!(settings.path::<String>("data.color").expression(), "settings.data.color");
    /// ```
    pub fn path<T>(&self, path: &str) -> Ref<T> {
        Ref::raw_path(format!("{}.{path}", self.id))
    }

    /// The objects of a collection (a resource made one with `for_each` or
    /// `for_each_item`), as a typed list: `workers.collection::<Deployment>().size()`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let maps = app.add("maps", ConfigMap::default());
    /// app.for_each_item(&maps, &spec::<AppSpec>().queues());
    /// let names = maps.collection::<ConfigMap>().map(|map| map.metadata().name()).join(",");
    /// assert_eq!(names.expression(), "maps.map(x1, x1.metadata.name).join(\",\")");
    /// ```
    pub fn collection<K: Typed<Ref = R>>(&self) -> Ref<Vec<K>> {
        Ref::raw_path(self.id.clone())
    }

    /// `metadata.name`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let settings = app.add("settings", ConfigMap::default());
    /// assert_eq!(settings.name().expression(), "settings.metadata.name");
    /// ```
    pub fn name(&self) -> Ref<String> {
        self.path("metadata.name")
    }

    /// `metadata.namespace`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let settings = app.add("settings", ConfigMap::default());
    /// assert_eq!(settings.namespace().expression(), "settings.metadata.namespace");
    /// ```
    pub fn namespace(&self) -> Ref<String> {
        self.path("metadata.namespace")
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ResourceEntry {
    /// Where the composition's code added it, for the compiler's errors about it.
    added_at: &'static std::panic::Location<'static>,
    id: String,
    /// `template`, `data` or `externalRef`, and its body.
    body: (&'static str, Json),
    include_when: Vec<String>,
    ready_when: Vec<String>,
    /// The dimensions of a collection, in order: name and the list it runs over.
    for_each: Vec<(String, String)>,
    /// The seed's form: one list, the item read as `each.item`.
    for_each_item: Option<String>,
    /// `lifecycle`: a `${...}` of the `kro.policy` library.
    lifecycle: Option<String>,
}

/// A composition of resources behind a typed API (see the crate docs): a kind whose spec is
/// `Spec` and whose status is `Status` (`()` for none).
pub struct Composition<Spec, Status = ()> {
    name: String,
    kind: String,
    version: String,
    group: Option<String>,
    schema: SimpleSchema,
    status: Map<String, Json>,
    resources: Vec<ResourceEntry>,
    /// What was put together wrongly, in order.
    mistakes: Vec<Mistake>,
    /// Nested compositions' status values, by the placeholder variable references to them
    /// read (`__nested0`), already free of the inner names.
    nested: Vec<(String, Map<String, Json>)>,
    /// The `<Kind>Set` kind of `spec.scaling`.
    scaling: Option<String>,
    /// The gates of the controller the RGD is for (upstream's defaults: all off).
    features: kro_graph::FeatureGates,
    types: PhantomData<fn() -> (Spec, Status)>,
}

impl<Spec, Status> Clone for Composition<Spec, Status> {
    fn clone(&self) -> Self {
        Composition {
            name: self.name.clone(),
            kind: self.kind.clone(),
            version: self.version.clone(),
            group: self.group.clone(),
            schema: self.schema.clone(),
            status: self.status.clone(),
            resources: self.resources.clone(),
            mistakes: self.mistakes.clone(),
            nested: self.nested.clone(),
            scaling: self.scaling.clone(),
            features: self.features,
            types: PhantomData,
        }
    }
}

impl<Spec, Status> std::fmt::Debug for Composition<Spec, Status> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Composition")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("resources", &self.resources.len())
            .finish_non_exhaustive()
    }
}

impl<Spec: KroSchema, Status: KroSchema> Composition<Spec, Status> {
    /// A composition named `name` (the RGD's name) defining the kind `kind` (version
    /// `v1alpha1`, kro's group).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// # #[derive(KroSchema)]
    /// # struct AppStatus { url: String }
    /// let app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// assert_eq!((app.name(), app.kind(), app.api_version().as_str()), ("app", "App", "kro.run/v1alpha1"));
    /// ```
    pub fn new(name: &str, kind: &str) -> Self {
        Composition {
            name: name.to_owned(),
            kind: kind.to_owned(),
            version: "v1alpha1".to_owned(),
            group: None,
            schema: simple_schema::<Spec>(),
            status: Map::new(),
            resources: Vec::new(),
            mistakes: Vec::new(),
            nested: Vec::new(),
            scaling: None,
            features: kro_graph::FeatureGates::upstream_defaults(),
            types: PhantomData,
        }
    }

    /// For a controller running with these feature gates (its `--feature-gates`). The RGD is
    /// checked as that controller would check it, so by default (upstream's gates, all off) it
    /// compiles on any kro. With [`Feature::CelOmitFunction`](kro_graph::Feature) on, a template
    /// field may be set from an optional spec field (`Option<T>`): it is left out while the
    /// spec has no value (`has(p) ? p : omit()`); with it off, `to_rgd()` refuses such a field
    /// and names the gate.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// let mut composition = Composition::<AppSpec>::new("app", "App");
    /// composition.add("settings", ConfigMap::default()
    ///     .with("metadata.name", instance_name())
    ///     .with("data.tag", app.tag()));
    /// let error = composition.to_rgd().unwrap_err().to_string();
    /// assert!(error.contains("--feature-gates=CELOmitFunction=true"), "{error}");
    /// let composition =
    ///     composition.feature_gates(FeatureGates::default().with(Feature::CelOmitFunction, true));
    /// assert!(composition.to_rgd().is_ok());
    /// ```
    #[must_use]
    pub fn feature_gates(mut self, gates: kro_graph::FeatureGates) -> Self {
        self.features = gates;
        self
    }

    /// In the API group `group` (kro's own by default).
    #[must_use]
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let app = Composition::<AppSpec>::new("app", "App").group("platform.example.com");
    /// assert_eq!(app.api_version(), "platform.example.com/v1alpha1");
    /// ```
    pub fn group(mut self, group: &str) -> Self {
        self.group = Some(group.to_owned());
        self
    }

    /// At API version `version` (`v1alpha1` by default).
    #[must_use]
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let app = Composition::<AppSpec>::new("app", "App").version("v1");
    /// assert_eq!(app.api_version(), "kro.run/v1");
    /// ```
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.to_owned();
        self
    }

    /// Also generates a `<Kind>Set` (`spec.scaling`, method `replicas`): a kind whose
    /// instances each run a number of instances of this one. The spec needs a `scale` field.
    #[must_use]
    ///
    /// ```
    /// # use kro_compose::*;
    /// #[derive(KroSchema)]
    /// struct SiteSpec { #[kro(scale, default = 1)] replicas: i64 }
    /// #[derive(KroSchema)]
    /// struct SiteStatus { #[kro(scale)] replicas: i64 }
    ///
    /// let mut site = Composition::<SiteSpec, SiteStatus>::new("site", "Site").scaling("SiteSet");
    /// site.status(SiteStatusValues { replicas: Value::Unset });
    /// let rgd = site.to_rgd()?;
    /// assert_eq!(rgd["spec"]["scaling"]["kind"], "SiteSet");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn scaling(mut self, set_kind: &str) -> Self {
        self.scaling = Some(set_kind.to_owned());
        self
    }

    /// The composition's name (its RGD's).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// assert_eq!(Composition::<AppSpec>::new("app", "App").name(), "app");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds a resource made from `template`: a built-in kind's typed template
    /// ([`k8s`](crate::k8s)), or any JSON (in which a [`Ref`] serializes as `${...}`). The
    /// handle gives typed references into the object.
    ///
    /// ```
    /// use kro_compose::k8s::api::core::v1::ConfigMap;
    /// use kro_compose::k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// use kro_compose::{Composition, KroSchema, instance_name, spec};
    ///
    /// #[derive(KroSchema)]
    /// struct AppSpec {
    ///     color: String,
    /// }
    ///
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let settings = app.add("settings", ConfigMap {
    ///     metadata: ObjectMeta { name: instance_name().into(), ..Default::default() }.into(),
    ///     data: [("color", spec::<AppSpec>().color())].into(),
    ///     ..Default::default()
    /// });
    /// assert_eq!(settings.data().expression(), "settings.data");
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][0]["template"]["data"]["color"], "${schema.spec.color}");
    /// # Ok::<(), kro_compose::ComposeError>(())
    /// ```
    #[track_caller]
    pub fn add<T: Template>(&mut self, id: &str, template: T) -> Resource<T::Ref> {
        let body = match template.to_template() {
            Ok(body) => body,
            Err(error) => {
                self.mistakes.push(Mistake::Template {
                    id: id.to_owned(),
                    error,
                });
                Json::Null
            }
        };
        self.push(id, "template", body);
        Resource::new(id)
    }

    /// Adds a data node: values computed once (references in them are evaluated) that other
    /// resources read as `handle.path("field")`.
    #[track_caller]
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let naming = app.data("naming", serde_json::json!({"prefix": fmt_cel!("{}-app", instance_name())}));
    /// let prefix = naming.path::<String>("prefix");
    /// app.add("settings", ConfigMap::default().with("metadata.name", prefix));
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][0]["data"]["prefix"], "${schema.metadata.name + \"-app\"}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn data(&mut self, id: &str, values: Json) -> Resource {
        self.push(id, "data", values);
        Resource::new(id)
    }

    /// Adds an externalRef by name to an object of the built-in kind `K`: an existing object
    /// kro reads and waits for, and never writes. `name` may be a reference; `namespace` is
    /// the instance's unless given. The handle's references are typed by the kind.
    ///
    /// ```
    /// use kro_compose::k8s::api::core::v1::ConfigMap;
    /// use kro_compose::{Composition, KroSchema};
    ///
    /// #[derive(KroSchema)]
    /// struct AppSpec {
    ///     color: String,
    /// }
    ///
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let shared = app.external_ref::<ConfigMap>("shared", "platform-settings", None);
    /// assert_eq!(shared.data().expression(), "shared.data");
    /// ```
    #[track_caller]
    pub fn external_ref<K: Kind + Template>(
        &mut self,
        id: &str,
        name: impl Into<Value<String>>,
        namespace: Option<&str>,
    ) -> Resource<K::Ref> {
        self.external_ref_of(id, K::API_VERSION, K::KIND, name, namespace)
    }

    /// Adds an externalRef by name to an object of any kind (`apiVersion`, `kind`), read
    /// through the handle's paths (see [`external_ref`](Self::external_ref)).
    #[track_caller]
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let bucket = app.external_ref_of::<ObjectRef>("bucket", "s3.example.com/v1", "Bucket", "assets", None);
    /// assert_eq!(bucket.path::<String>("status.url").expression(), "bucket.status.url");
    /// ```
    pub fn external_ref_of<R: FromPath>(
        &mut self,
        id: &str,
        api_version: &str,
        kind: &str,
        name: impl Into<Value<String>>,
        namespace: Option<&str>,
    ) -> Resource<R> {
        let mut metadata = Map::new();
        ToJson::write_field(&name.into(), &mut metadata, "name");
        if let Some(namespace) = namespace {
            metadata.insert("namespace".to_owned(), json!(namespace));
        }
        self.push(
            id,
            "externalRef",
            json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}),
        );
        Resource::new(id)
    }

    /// Adds an externalRef by label selector: every object of the kind (in `namespace`, else
    /// the instance's) whose labels match `match_labels`, read as a list. Label values may be
    /// references.
    #[track_caller]
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let team = app.external_ref_selector("team", "v1", "ConfigMap", serde_json::json!({"team": spec::<AppSpec>().name()}), None);
    /// let count: Ref<i64> = Ref::raw(format!("size({})", team.id()));
    /// let summary = ConfigMap::default().with("metadata.name", instance_name());
    /// app.add("summary", summary.with("data.count", fmt_cel!("{}", count)));
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][1]["template"]["data"]["count"], "${string(size(team))}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn external_ref_selector(
        &mut self,
        id: &str,
        api_version: &str,
        kind: &str,
        match_labels: Json,
        namespace: Option<&str>,
    ) -> Resource {
        let mut metadata = json!({"selector": {"matchLabels": match_labels}});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        self.push(
            id,
            "externalRef",
            json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}),
        );
        Resource::new(id)
    }

    /// Makes `resource` a collection in the seed's form: one object per item of `over`, read
    /// in the template through [`each_item`](crate::each_item) (and `each_index`).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let maps = app.add("maps", ConfigMap::default().with("metadata.name", each_item::<String>()));
    /// app.for_each_item(&maps, &spec::<AppSpec>().queues());
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][0]["forEach"], "${schema.spec.queues}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn for_each_item<T, R>(&mut self, resource: &Resource<R>, over: &Ref<Vec<T>>) {
        if let Some(entry) = self.entry(resource) {
            entry.for_each_item = Some(over.to_string());
        }
    }

    /// Makes `resource` a collection: one object per item of `over`, the item bound to
    /// `dimension` (read it in the template through [`dimension`](crate::dimension)). Several
    /// dimensions make the cartesian product.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let maps = app.add("maps", ConfigMap::default().with("metadata.name", dimension::<String>("queue")));
    /// app.for_each(&maps, "queue", &spec::<AppSpec>().queues());
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][0]["forEach"], serde_json::json!([{"queue": "${schema.spec.queues}"}]));
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn for_each<T, R>(&mut self, resource: &Resource<R>, dimension: &str, over: &Ref<Vec<T>>) {
        if let Some(entry) = self.entry(resource) {
            entry
                .for_each
                .push((dimension.to_owned(), over.to_string()));
        }
    }

    #[track_caller]
    fn push(&mut self, id: &str, field: &'static str, body: Json) {
        self.resources.push(ResourceEntry {
            added_at: std::panic::Location::caller(),
            id: id.to_owned(),
            body: (field, body),
            include_when: Vec::new(),
            ready_when: Vec::new(),
            for_each: Vec::new(),
            for_each_item: None,
            lifecycle: None,
        });
    }

    /// What becomes of the resource's object when kro would delete it: at instance deletion
    /// and when it is pruned (removed, or excluded by includeWhen), a retained object is
    /// released instead (see [`Lifecycle`]).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let data = app.add("data", ConfigMap::default().with("metadata.name", instance_name()));
    /// app.lifecycle(&data, Lifecycle::retain_when(&spec::<AppSpec>().enabled()));
    /// assert_eq!(
    ///     app.to_rgd()?["spec"]["resources"][0]["lifecycle"],
    ///     "${schema.spec.enabled ? policy().withRetain() : policy()}"
    /// );
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn lifecycle<R>(&mut self, resource: &Resource<R>, lifecycle: Lifecycle) {
        if let Some(entry) = self.entry(resource) {
            entry.lifecycle = Some(format!("${{{}}}", lifecycle.expression()));
        }
    }

    /// The resource is part of the instance only while `condition` holds (`includeWhen`).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let extra = app.add("extra", ConfigMap::default().with("metadata.name", instance_name()));
    /// app.include_when(&extra, &spec::<AppSpec>().enabled());
    /// assert_eq!(app.to_rgd()?["spec"]["resources"][0]["includeWhen"][0], "${schema.spec.enabled}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn include_when<R>(&mut self, resource: &Resource<R>, condition: &Ref<bool>) {
        if let Some(entry) = self.entry(resource) {
            entry.include_when.push(condition.to_string());
        }
    }

    /// Each object of the collection `resource` is ready only when `condition` holds of it:
    /// `condition` gets typed references into the object (`each` in the RGD).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// use kro_compose::k8s::api::apps::v1::Deployment;
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let workers = app.add("workers", Deployment::default().with("metadata.name", each_item::<String>()));
    /// app.for_each_item(&workers, &spec::<AppSpec>().queues());
    /// app.ready_when_each(&workers, |each| each.status().ready_replicas().eq(1));
    /// assert_eq!(app.to_rgd()?["spec"]["resources"][0]["readyWhen"][0], "${each.status.readyReplicas == 1}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn ready_when_each<R: FromPath>(
        &mut self,
        resource: &Resource<R>,
        condition: impl FnOnce(R) -> Ref<bool>,
    ) {
        let condition = condition(R::from_path("each".to_owned()));
        self.ready_when(resource, &condition);
    }

    /// The resource is ready only when `condition` holds (`readyWhen`).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// use kro_compose::k8s::api::apps::v1::Deployment;
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let web = app.add("web", Deployment::default().with("metadata.name", instance_name()));
    /// app.ready_when(&web, &web.status().available_replicas().eq(spec::<AppSpec>().replicas()));
    /// assert_eq!(
    ///     app.to_rgd()?["spec"]["resources"][0]["readyWhen"][0],
    ///     "${web.status.availableReplicas == schema.spec.replicas}"
    /// );
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn ready_when<R>(&mut self, resource: &Resource<R>, condition: &Ref<bool>) {
        if let Some(entry) = self.entry(resource) {
            entry.ready_when.push(condition.to_string());
        }
    }

    /// Makes `dependent` wait for `dependency` although it reads nothing of it: an
    /// annotation `compose.kro.run/depends-on-<id>` on the dependent holds the dependency's
    /// name, which gives kro the edge (kro orders resources by what their expressions read).
    /// Both must be single objects: templates, or externalRefs by name.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// let first = app.add("first", ConfigMap::default().with("metadata.name", instance_name().concat("-a")));
    /// let second = app.add("second", ConfigMap::default().with("metadata.name", instance_name().concat("-b")));
    /// app.depends_on(&second, &first);
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(
    ///     rgd["spec"]["resources"][1]["template"]["metadata"]["annotations"]["compose.kro.run/depends-on-first"],
    ///     "${first.metadata.name}"
    /// );
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn depends_on<R, D>(&mut self, dependent: &Resource<R>, dependency: &Resource<D>) {
        let mistake = |reason: &str| Mistake::DependsOn {
            dependent: dependent.id.clone(),
            dependency: dependency.id.clone(),
            reason: reason.to_owned(),
        };
        let single = |entry: &ResourceEntry| {
            entry.for_each.is_empty()
                && entry.for_each_item.is_none()
                && (entry.body.0 == "template"
                    || (entry.body.0 == "externalRef"
                        && entry.body.1["metadata"].get("selector").is_none()))
        };
        let Some(target) = self
            .resources
            .iter()
            .find(|entry| entry.id == dependency.id)
        else {
            return self
                .mistakes
                .push(mistake("it is not a resource of this composition"));
        };
        if !single(target) {
            return self.mistakes.push(mistake(
                "it is not one object (a collection, a data node or a selector)",
            ));
        }
        let annotation = format!("compose.kro.run/depends-on-{}", dependency.id);
        let value = Json::String(format!("${{{}.metadata.name}}", dependency.id));
        let Some(entry) = self.entries_mut(&dependent.id) else {
            return self.mistakes.push(mistake(
                "the dependent is not a resource of this composition",
            ));
        };
        if entry.body.0 != "template" {
            let reason = "only a template can depend on something";
            return self.mistakes.push(mistake(reason));
        }
        let metadata = &mut entry.body.1["metadata"];
        if metadata.is_null() {
            *metadata = json!({});
        }
        let annotations = &mut metadata["annotations"];
        if annotations.is_null() {
            *annotations = json!({});
        }
        if let Json::Object(annotations) = annotations {
            annotations.insert(annotation, value);
        }
    }

    fn entries_mut(&mut self, id: &str) -> Option<&mut ResourceEntry> {
        self.resources.iter_mut().find(|entry| entry.id == id)
    }

    fn entry<R>(&mut self, resource: &Resource<R>) -> Option<&mut ResourceEntry> {
        self.resources
            .iter_mut()
            .find(|entry| entry.id == resource.id)
    }

    /// The RGD, checked by kro's compiler against the built-in Kubernetes schemas (the
    /// errors are `kro validate`'s).
    ///
    /// # Errors
    /// [`ComposeError::Invalid`] with every problem the compiler found.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// app.add("settings", ConfigMap::default().with("metadata.name", Ref::<String>::raw("nothere.metadata.name")));
    /// let error = app.to_rgd().unwrap_err();
    /// assert!(error.to_string().contains("nothere"), "{error}");
    /// ```
    pub fn to_rgd(&self) -> Result<Json, ComposeError> {
        self.compile().map(|(rgd, _)| rgd)
    }

    /// The RGD as YAML (see [`to_rgd`](Self::to_rgd)), the same text on every run.
    ///
    /// # Errors
    /// [`ComposeError`] as for `to_rgd`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// let mut app = Composition::<AppSpec>::new("app", "App");
    /// app.add("settings", ConfigMap::default().with("metadata.name", instance_name()));
    /// let yaml = app.to_rgd_yaml()?;
    /// assert!(yaml.starts_with("apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\n"));
    /// assert_eq!(yaml, app.to_rgd_yaml()?);
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn to_rgd_yaml(&self) -> Result<String, ComposeError> {
        let rgd = self.to_rgd()?;
        serde_saphyr::to_string(&rgd).map_err(|error| ComposeError::Yaml {
            name: self.name.clone(),
            message: error.to_string(),
        })
    }

    /// The RGD and its compiled graph.
    pub(crate) fn compile(&self) -> Result<(Json, kro_graph::CompiledGraph), ComposeError> {
        if let Some(mistake) = self.mistakes.first() {
            return Err(ComposeError::Mistake {
                name: self.name.clone(),
                mistake: mistake.clone(),
            });
        }
        let rgd = self.rgd_json().map_err(|mistake| ComposeError::Mistake {
            name: self.name.clone(),
            mistake,
        })?;
        let decoded = kro_graph::ResourceGraphDefinition::from_json(&rgd).map_err(|error| {
            ComposeError::Decode {
                name: self.name.clone(),
                message: error.to_string(),
            }
        })?;
        let config = kro_graph::BuildConfig {
            features: self.features,
            ..kro_graph::BuildConfig::default()
        };
        let graph = kro_graph::build_graph_with(&decoded, &kro_graph::BuiltinCatalog, &config)
            .map_err(|errors| {
                let mut call_sites: Vec<(String, String)> = Vec::new();
                for id in errors
                    .errors
                    .iter()
                    .filter_map(|error| error.resource.as_deref())
                {
                    let known = call_sites.iter().any(|(seen, _)| seen == id);
                    let entry = self.resources.iter().find(|entry| entry.id == id);
                    if let (false, Some(entry)) = (known, entry) {
                        call_sites.push((id.to_owned(), entry.added_at.to_string()));
                    }
                }
                ComposeError::Invalid {
                    name: self.name.clone(),
                    errors,
                    call_sites,
                }
            })?;
        Ok((rgd, graph))
    }

    /// Whether it declares status fields.
    #[cfg(feature = "deploy")]
    pub(crate) fn declares_status(&self) -> bool {
        !self.status.is_empty()
    }

    /// The `apiVersion` of its instances.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// assert_eq!(Composition::<AppSpec>::new("app", "App").api_version(), "kro.run/v1alpha1");
    /// ```
    pub fn api_version(&self) -> String {
        format!(
            "{}/{}",
            self.group.as_deref().unwrap_or(kro_graph::metadata::GROUP),
            self.version
        )
    }

    /// The kind of its instances.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # use kro_compose::k8s::api::core::v1::ConfigMap;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
    /// assert_eq!(Composition::<AppSpec>::new("app", "App").kind(), "App");
    /// ```
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The RGD as JSON, in kro's field order, unchecked; references into nested
    /// compositions are replaced by what they stand for.
    fn rgd_json(&self) -> Result<Json, Mistake> {
        let mut schema = Map::new();
        schema.insert("apiVersion".to_owned(), json!(self.version));
        schema.insert("kind".to_owned(), json!(self.kind));
        if let Some(group) = &self.group {
            schema.insert("group".to_owned(), json!(group));
        }
        schema.insert("spec".to_owned(), self.schema.spec.clone());
        if self
            .schema
            .types
            .as_object()
            .is_some_and(|types| !types.is_empty())
        {
            schema.insert("types".to_owned(), self.schema.types.clone());
        }
        if !self.status.is_empty() {
            let mut status = Json::Object(self.status.clone());
            self.resolve_nested(&mut status)?;
            schema.insert("status".to_owned(), status);
        }
        let resources: Vec<Json> = self
            .resolved_resources()?
            .iter()
            .map(|entry| {
                let mut resource = Map::new();
                resource.insert("id".to_owned(), json!(entry.id));
                if !entry.include_when.is_empty() {
                    resource.insert("includeWhen".to_owned(), json!(entry.include_when));
                }
                if !entry.ready_when.is_empty() {
                    resource.insert("readyWhen".to_owned(), json!(entry.ready_when));
                }
                if let Some(lifecycle) = &entry.lifecycle {
                    resource.insert("lifecycle".to_owned(), json!(lifecycle));
                }
                if let Some(over) = &entry.for_each_item {
                    resource.insert("forEach".to_owned(), json!(over));
                } else if !entry.for_each.is_empty() {
                    let dimensions: Vec<Json> = entry
                        .for_each
                        .iter()
                        .map(|(name, over)| json!({ name.as_str(): over }))
                        .collect();
                    resource.insert("forEach".to_owned(), Json::Array(dimensions));
                }
                resource.insert(entry.body.0.to_owned(), entry.body.1.clone());
                Json::Object(resource)
            })
            .collect();
        let mut spec = json!({"schema": Json::Object(schema), "resources": resources});
        if let Some(kind) = &self.scaling {
            spec["scaling"] = json!({"kind": kind, "method": "replicas"});
        }
        Ok(json!({
            "apiVersion": kro_graph::metadata::API_VERSION,
            "kind": kro_graph::metadata::RGD_KIND,
            "metadata": {"name": self.name},
            "spec": spec,
        }))
    }
}
