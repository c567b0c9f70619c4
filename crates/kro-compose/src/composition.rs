//! A composition: the instance's schema, its resources (JSON templates holding typed
//! references), their conditions, and the status; emitted as a ResourceGraphDefinition that
//! kro-graph's compiler has checked.

use std::ops::Deref;

use serde_json::{Map, Value as Json, json};

use crate::template::{Kind, ObjectRef, Template, TemplateError};
use crate::{FromPath, KroSchema, Ref, SimpleSchema, Value, simple_schema};

/// Why a composition is not a valid RGD.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComposeError {
    /// kro's compiler refused the RGD: the same errors as `kro validate`.
    #[error("the composition {name} is not a valid RGD: {errors}")]
    Invalid {
        /// The composition's name.
        name: String,
        /// What the compiler said, field paths included.
        errors: kro_graph::BuildErrors,
    },
    /// A resource's template could not be written (a field set by path with `with`).
    #[error("the resource {id} of the composition {name}: {error}")]
    Template {
        /// The composition's name.
        name: String,
        /// The resource's id.
        id: String,
        /// What went wrong.
        error: TemplateError,
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
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A reference to a field of the object, by its path (`status.availableReplicas`).
    pub fn path<T>(&self, path: &str) -> Ref<T> {
        Ref::raw_path(format!("{}.{path}", self.id))
    }

    /// `metadata.name`.
    pub fn name(&self) -> Ref<String> {
        self.path("metadata.name")
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Ref<String> {
        self.path("metadata.namespace")
    }
}

#[derive(Debug, Clone)]
struct ResourceEntry {
    id: String,
    /// `template`, `data` or `externalRef`, and its body.
    body: (&'static str, Json),
    include_when: Vec<String>,
    ready_when: Vec<String>,
    /// The dimensions of a collection, in order: name and the list it runs over.
    for_each: Vec<(String, String)>,
    /// The seed's form: one list, the item read as `each.item`.
    for_each_item: Option<String>,
}

/// A composition of resources behind a typed API (see the crate docs).
#[derive(Debug, Clone)]
pub struct Composition {
    name: String,
    kind: String,
    version: String,
    group: Option<String>,
    schema: SimpleSchema,
    status: Map<String, Json>,
    resources: Vec<ResourceEntry>,
    /// Templates that could not be written, by resource id.
    errors: Vec<(String, TemplateError)>,
}

impl Composition {
    /// A composition named `name` (the RGD's name) defining the kind `kind` (version
    /// `v1alpha1`, kro's group) whose spec is `Spec`.
    pub fn new<Spec: KroSchema>(name: &str, kind: &str) -> Composition {
        Composition {
            name: name.to_owned(),
            kind: kind.to_owned(),
            version: "v1alpha1".to_owned(),
            group: None,
            schema: simple_schema::<Spec>(),
            status: Map::new(),
            resources: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// In the API group `group` (kro's own by default).
    #[must_use]
    pub fn group(mut self, group: &str) -> Composition {
        self.group = Some(group.to_owned());
        self
    }

    /// At API version `version` (`v1alpha1` by default).
    #[must_use]
    pub fn version(mut self, version: &str) -> Composition {
        self.version = version.to_owned();
        self
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
    /// let mut app = Composition::new::<AppSpec>("app", "App");
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
    pub fn add<T: Template>(&mut self, id: &str, template: T) -> Resource<T::Ref> {
        let body = match template.to_template() {
            Ok(body) => body,
            Err(error) => {
                self.errors.push((id.to_owned(), error));
                Json::Null
            }
        };
        self.push(id, "template", body);
        Resource::new(id)
    }

    /// Adds a data node: values computed once (references in them are evaluated) that other
    /// resources read as `handle.path("field")`.
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
    /// let mut app = Composition::new::<AppSpec>("app", "App");
    /// let shared = app.external_ref::<ConfigMap>("shared", "platform-settings", None);
    /// assert_eq!(shared.data().expression(), "shared.data");
    /// ```
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
    pub fn external_ref_of<R: FromPath>(
        &mut self,
        id: &str,
        api_version: &str,
        kind: &str,
        name: impl Into<Value<String>>,
        namespace: Option<&str>,
    ) -> Resource<R> {
        let mut metadata = Map::new();
        name.into().write_to(&mut metadata, "name");
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
    pub fn for_each_item<T, R>(&mut self, resource: &Resource<R>, over: &Ref<Vec<T>>) {
        if let Some(entry) = self.entry(resource) {
            entry.for_each_item = Some(over.to_string());
        }
    }

    /// Makes `resource` a collection: one object per item of `over`, the item bound to
    /// `dimension` (read it in the template through [`dimension`](crate::dimension)). Several
    /// dimensions make the cartesian product.
    pub fn for_each<T, R>(&mut self, resource: &Resource<R>, dimension: &str, over: &Ref<Vec<T>>) {
        if let Some(entry) = self.entry(resource) {
            entry
                .for_each
                .push((dimension.to_owned(), over.to_string()));
        }
    }

    fn push(&mut self, id: &str, field: &'static str, body: Json) {
        self.resources.push(ResourceEntry {
            id: id.to_owned(),
            body: (field, body),
            include_when: Vec::new(),
            ready_when: Vec::new(),
            for_each: Vec::new(),
            for_each_item: None,
        });
    }

    /// The resource is part of the instance only while `condition` holds (`includeWhen`).
    pub fn include_when<R>(&mut self, resource: &Resource<R>, condition: &Ref<bool>) {
        if let Some(entry) = self.entry(resource) {
            entry.include_when.push(condition.to_string());
        }
    }

    /// The resource is ready only when `condition` holds (`readyWhen`).
    pub fn ready_when<R>(&mut self, resource: &Resource<R>, condition: &Ref<bool>) {
        if let Some(entry) = self.entry(resource) {
            entry.ready_when.push(condition.to_string());
        }
    }

    /// The status field at `field` (dotted: `endpoints.public`) is `value`.
    pub fn status<T>(&mut self, field: &str, value: &Ref<T>) {
        let mut map = &mut self.status;
        let mut parts = field.split('.').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                map.insert(part.to_owned(), json!(value.to_string()));
                break;
            }
            let next = map
                .entry(part.to_owned())
                .or_insert_with(|| Json::Object(Map::new()));
            if !next.is_object() {
                *next = Json::Object(Map::new());
            }
            let Json::Object(inner) = next else {
                break;
            };
            map = inner;
        }
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
    pub fn to_rgd(&self) -> Result<Json, ComposeError> {
        self.compile().map(|(rgd, _)| rgd)
    }

    /// The RGD and its compiled graph.
    pub(crate) fn compile(&self) -> Result<(Json, kro_graph::CompiledGraph), ComposeError> {
        if let Some((id, error)) = self.errors.first() {
            return Err(ComposeError::Template {
                name: self.name.clone(),
                id: id.clone(),
                error: error.clone(),
            });
        }
        let rgd = self.rgd_json();
        let decoded = kro_graph::ResourceGraphDefinition::from_json(&rgd).map_err(|error| {
            ComposeError::Decode {
                name: self.name.clone(),
                message: error.to_string(),
            }
        })?;
        let graph =
            kro_graph::build_graph(&decoded, &kro_graph::BuiltinCatalog).map_err(|errors| {
                ComposeError::Invalid {
                    name: self.name.clone(),
                    errors,
                }
            })?;
        Ok((rgd, graph))
    }

    /// The `apiVersion` of its instances.
    pub fn api_version(&self) -> String {
        format!(
            "{}/{}",
            self.group.as_deref().unwrap_or(kro_graph::metadata::GROUP),
            self.version
        )
    }

    /// The kind of its instances.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The RGD as JSON, in kro's field order, unchecked.
    fn rgd_json(&self) -> Json {
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
            schema.insert("status".to_owned(), Json::Object(self.status.clone()));
        }
        let resources: Vec<Json> = self
            .resources
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
        json!({
            "apiVersion": kro_graph::metadata::API_VERSION,
            "kind": kro_graph::metadata::RGD_KIND,
            "metadata": {"name": self.name},
            "spec": {"schema": Json::Object(schema), "resources": resources},
        })
    }
}
