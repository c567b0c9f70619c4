//! Compositions inside compositions, and references to instances of other compositions.
//!
//! A nested composition's resources join the outer graph under prefixed ids (`database` +
//! `deployment` → `databaseDeployment`); the values given for its spec replace its
//! `schema.spec` references; its status fields become the expressions they stand for wherever
//! the outer composition reads them. The rewriting works on the variable paths of each
//! expression (`kro_cel::variable_paths`), so nothing of the inner names is left in the RGD.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde_json::{Map, Value as Json};

use super::{Composition, Mistake, Resource, ResourceEntry};
use crate::reference::{FromPath, Typed};
use crate::schema::{Field, KroSchema, SchemaType, Types};
use crate::template::{ToJson, Value};

/// A composition nested in another, as [`Composition::nest`] returns it: references to its
/// status, typed by its status struct.
pub struct Nested<Status: Typed> {
    prefix: String,
    status: Status::Ref,
}

impl<Status: Typed> Nested<Status> {
    /// References into the nested composition's status: each stands for the expression the
    /// nested composition gives that field.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)] struct DbSpec { name: String }
    /// # #[derive(KroSchema)] struct DbStatus { host: String }
    /// # let mut database = Composition::<DbSpec, DbStatus>::new("database", "Database");
    /// # let service = database.add("service", k8s::api::core::v1::Service::default().with("metadata.name", spec::<DbSpec>().name()));
    /// # database.status(DbStatusValues { host: service.spec().cluster_ip().into() });
    /// # #[derive(KroSchema)] struct AppSpec { name: String }
    /// # #[derive(KroSchema)] struct AppStatus { db: String }
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let db = app.nest("db", &database, DbSpecValues { name: instance_name().into() });
    /// app.status(AppStatusValues { db: db.status().host().into() });
    /// assert_eq!(app.to_rgd()?["spec"]["schema"]["status"]["db"], "${dbService.spec.clusterIP}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn status(&self) -> &Status::Ref {
        &self.status
    }

    /// The id an inner resource has in the outer graph (`database` + `deployment` →
    /// `databaseDeployment`).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)] struct DbSpec { name: String }
    /// # #[derive(KroSchema)] struct DbStatus { host: String }
    /// # let mut database = Composition::<DbSpec, DbStatus>::new("database", "Database");
    /// # let service = database.add("service", k8s::api::core::v1::Service::default().with("metadata.name", spec::<DbSpec>().name()));
    /// # database.status(DbStatusValues { host: service.spec().cluster_ip().into() });
    /// # #[derive(KroSchema)] struct AppSpec { name: String }
    /// # #[derive(KroSchema)] struct AppStatus { db: String }
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let db = app.nest("db", &database, DbSpecValues { name: instance_name().into() });
    /// assert_eq!(db.id("service"), "dbService");
    /// ```
    pub fn id(&self, inner_id: &str) -> String {
        prefixed(&self.prefix, inner_id)
    }
}

/// References into an instance of another composition (see
/// [`Composition::external_instance`]): its spec and status, typed by its structs.
pub struct InstanceRef<Spec, Status> {
    path: String,
    types: PhantomData<fn() -> (Spec, Status)>,
}

impl<Spec, Status> FromPath for InstanceRef<Spec, Status> {
    fn from_path(path: String) -> Self {
        InstanceRef {
            path,
            types: PhantomData,
        }
    }
}

impl<Spec: Typed, Status: Typed> InstanceRef<Spec, Status> {
    /// The instance's spec.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)] struct DbSpec { name: String }
    /// # #[derive(KroSchema)] struct DbStatus { host: String }
    /// # let mut database = Composition::<DbSpec, DbStatus>::new("database", "Database");
    /// # let service = database.add("service", k8s::api::core::v1::Service::default().with("metadata.name", spec::<DbSpec>().name()));
    /// # database.status(DbStatusValues { host: service.spec().cluster_ip().into() });
    /// # #[derive(KroSchema)] struct AppSpec { name: String }
    /// # #[derive(KroSchema)] struct AppStatus { db: String }
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let shared = app.external_instance("shared", &database, "main-db", None);
    /// assert_eq!(shared.spec().name().expression(), "shared.spec.name");
    /// ```
    pub fn spec(&self) -> Spec::Ref {
        Spec::Ref::from_path(format!("{}.spec", self.path))
    }

    /// The instance's status.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)] struct DbSpec { name: String }
    /// # #[derive(KroSchema)] struct DbStatus { host: String }
    /// # let mut database = Composition::<DbSpec, DbStatus>::new("database", "Database");
    /// # let service = database.add("service", k8s::api::core::v1::Service::default().with("metadata.name", spec::<DbSpec>().name()));
    /// # database.status(DbStatusValues { host: service.spec().cluster_ip().into() });
    /// # #[derive(KroSchema)] struct AppSpec { name: String }
    /// # #[derive(KroSchema)] struct AppStatus { db: String }
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let shared = app.external_instance("shared", &database, "main-db", None);
    /// assert_eq!(shared.status().host().expression(), "shared.status.host");
    /// ```
    pub fn status(&self) -> Status::Ref {
        Status::Ref::from_path(format!("{}.status", self.path))
    }

    /// The instance's metadata.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)] struct DbSpec { name: String }
    /// # #[derive(KroSchema)] struct DbStatus { host: String }
    /// # let mut database = Composition::<DbSpec, DbStatus>::new("database", "Database");
    /// # let service = database.add("service", k8s::api::core::v1::Service::default().with("metadata.name", spec::<DbSpec>().name()));
    /// # database.status(DbStatusValues { host: service.spec().cluster_ip().into() });
    /// # #[derive(KroSchema)] struct AppSpec { name: String }
    /// # #[derive(KroSchema)] struct AppStatus { db: String }
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let shared = app.external_instance("shared", &database, "main-db", None);
    /// assert_eq!(shared.metadata().name().expression(), "shared.metadata.name");
    /// ```
    pub fn metadata(&self) -> crate::k8s::apimachinery::pkg::apis::meta::v1::ObjectMetaRef {
        FromPath::from_path(format!("{}.metadata", self.path))
    }
}

/// `database` + `deployment` → `databaseDeployment`.
fn prefixed(prefix: &str, id: &str) -> String {
    let mut characters = id.chars();
    match characters.next() {
        Some(first) => format!(
            "{prefix}{}{}",
            first.to_ascii_uppercase(),
            characters.as_str()
        ),
        None => prefix.to_owned(),
    }
}

/// What `schema.spec` of a nested composition stands for: CEL per field, `None` for a field
/// given no value and without a default.
enum SpecValue {
    Field(Option<String>),
    Object(BTreeMap<String, SpecValue>),
}

impl<Spec: KroSchema, Status: KroSchema> Composition<Spec, Status> {
    /// Nests `inner` under `prefix`: its resources join this graph with ids prefixed
    /// (`prefix` + the id with its first letter capitalized), `spec` gives its spec (an
    /// unset field takes its default), and the returned handle's status references stand for
    /// what the inner composition's status fields are.
    ///
    /// ```
    /// use kro_compose::k8s::api::core::v1::ConfigMap;
    /// use kro_compose::{Composition, KroSchema, Template, Value, spec, fmt_cel};
    ///
    /// #[derive(KroSchema)]
    /// struct DatabaseSpec { name: String, #[kro(default = 10)] size: i64 }
    /// #[derive(KroSchema)]
    /// struct DatabaseStatus { endpoint: String }
    ///
    /// let mut database = Composition::<DatabaseSpec, DatabaseStatus>::new("database", "Database");
    /// let db = spec::<DatabaseSpec>();
    /// let config = database.add("config", ConfigMap::default().with("metadata.name", db.name()));
    /// database.status(DatabaseStatusValues { endpoint: fmt_cel!("{}:5432", config.metadata().name()).into() });
    ///
    /// #[derive(KroSchema)]
    /// struct AppSpec { name: String }
    /// #[derive(KroSchema)]
    /// struct AppStatus { database: String }
    ///
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let store = app.nest("store", &database, DatabaseSpecValues {
    ///     name: fmt_cel!("{}-db", spec::<AppSpec>().name()).into(),
    ///     size: Value::Unset,
    /// });
    /// app.status(AppStatusValues { database: store.status().endpoint().into() });
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][0]["id"], "storeConfig");
    /// assert_eq!(
    ///     rgd["spec"]["resources"][0]["template"]["metadata"]["name"],
    ///     "${schema.spec.name + \"-db\"}"
    /// );
    /// assert_eq!(
    ///     rgd["spec"]["schema"]["status"]["database"],
    ///     "${storeConfig.metadata.name + \":5432\"}"
    /// );
    /// # Ok::<(), kro_compose::ComposeError>(())
    /// ```
    pub fn nest<InnerSpec: KroSchema, InnerStatus: KroSchema>(
        &mut self,
        prefix: &str,
        inner: &Composition<InnerSpec, InnerStatus>,
        spec: InnerSpec::Values,
    ) -> Nested<InnerStatus> {
        let placeholder = format!("__nested{}", self.nested.len());
        let nested = Nested {
            prefix: prefix.to_owned(),
            status: InnerStatus::Ref::from_path(placeholder.clone()),
        };
        if let Err(mistake) = self.merge(prefix, inner, &spec.to_json(), placeholder) {
            self.mistakes.push(mistake);
        }
        nested
    }

    fn merge<InnerSpec: KroSchema, InnerStatus: KroSchema>(
        &mut self,
        prefix: &str,
        inner: &Composition<InnerSpec, InnerStatus>,
        given: &Json,
        placeholder: String,
    ) -> Result<(), Mistake> {
        let fail = |message: String| Mistake::Nested {
            prefix: prefix.to_owned(),
            message,
        };
        if let Some(mistake) = inner.mistakes.first() {
            return Err(fail(mistake.to_string()));
        }
        let SchemaType::Object(fields) = InnerSpec::schema_type(&mut Types::default()) else {
            return Err(fail("its spec is not a struct".to_owned()));
        };
        let spec = spec_values(&fields, given);
        let ids: Vec<String> = inner
            .resources
            .iter()
            .map(|entry| entry.id.clone())
            .collect();
        let rename = |cel: &str| -> Result<String, Mistake> {
            rewrite(cel, |names| {
                let root = names[0];
                if ids.iter().any(|id| id == root) {
                    return Ok(Some((1, prefixed(prefix, root))));
                }
                if root != "schema" {
                    return Ok(None);
                }
                match names.get(1) {
                    Some(&"metadata") => Ok(None),
                    Some(&"spec") => {
                        let (used, cel) = spec_cel(&spec, &names[2..]).map_err(|field| {
                            Mistake::NestedSpecMissing {
                                prefix: prefix.to_owned(),
                                field,
                            }
                        })?;
                        Ok(Some((2 + used, cel)))
                    }
                    _ => Err(fail(format!(
                        "it reads `{}`, which only `schema.spec` and `schema.metadata` may be",
                        names.join(".")
                    ))),
                }
            })
            .map_err(|error| match error {
                RewriteError::Mistake(mistake) => mistake,
                RewriteError::Text(message) => fail(message),
            })
        };
        let mut entries = inner.resolved_resources()?;
        for entry in &mut entries {
            entry.id = prefixed(prefix, &entry.id);
            if self
                .resources
                .iter()
                .any(|existing| existing.id == entry.id)
            {
                return Err(fail(format!("the id {} is taken", entry.id)));
            }
            map_expressions(entry, &rename)?;
        }
        let mut status = Json::Object(inner.status.clone());
        inner.resolve_nested(&mut status)?;
        map_strings(&mut status, &rename)?;
        let Json::Object(status) = status else {
            return Err(fail("its status is not an object".to_owned()));
        };
        self.resources.extend(entries);
        self.nested.push((placeholder, status));
        Ok(())
    }

    /// Adds an externalRef to an instance of the composition `other` (named `name`, in
    /// `namespace` or the instance's), read through references typed by `other`'s spec and
    /// status structs: the platform team's database used by an app team's composition.
    #[track_caller]
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)] struct DbSpec { name: String }
    /// # #[derive(KroSchema)] struct DbStatus { host: String }
    /// # let mut database = Composition::<DbSpec, DbStatus>::new("database", "Database");
    /// # let service = database.add("service", k8s::api::core::v1::Service::default().with("metadata.name", spec::<DbSpec>().name()));
    /// # database.status(DbStatusValues { host: service.spec().cluster_ip().into() });
    /// # #[derive(KroSchema)] struct AppSpec { name: String }
    /// # #[derive(KroSchema)] struct AppStatus { db: String }
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let shared = app.external_instance("shared", &database, "main-db", None);
    /// app.status(AppStatusValues { db: shared.status().host().into() });
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(rgd["spec"]["resources"][0]["externalRef"]["kind"], "Database");
    /// assert_eq!(rgd["spec"]["schema"]["status"]["db"], "${shared.status.host}");
    /// # Ok::<(), ComposeError>(())
    /// ```
    pub fn external_instance<OtherSpec: KroSchema, OtherStatus: KroSchema>(
        &mut self,
        id: &str,
        other: &Composition<OtherSpec, OtherStatus>,
        name: impl Into<Value<String>>,
        namespace: Option<&str>,
    ) -> Resource<InstanceRef<OtherSpec, OtherStatus>> {
        self.external_ref_of(id, &other.api_version(), other.kind(), name, namespace)
    }

    /// The resources with references into nested compositions replaced.
    pub(crate) fn resolved_resources(&self) -> Result<Vec<ResourceEntry>, Mistake> {
        let mut entries = self.resources.clone();
        if self.nested.is_empty() {
            return Ok(entries);
        }
        for entry in &mut entries {
            map_expressions(entry, &|cel: &str| self.resolve_cel(cel))?;
        }
        Ok(entries)
    }

    /// Replaces references into nested compositions in every string of `value`.
    pub(crate) fn resolve_nested(&self, value: &mut Json) -> Result<(), Mistake> {
        if self.nested.is_empty() {
            return Ok(());
        }
        map_strings(value, &|cel: &str| self.resolve_cel(cel))
    }

    fn resolve_cel(&self, cel: &str) -> Result<String, Mistake> {
        let fail = |message: String| Mistake::Nested {
            prefix: String::new(),
            message,
        };
        rewrite(cel, |names| {
            let Some((_, status)) = self
                .nested
                .iter()
                .find(|(placeholder, _)| placeholder == names[0])
            else {
                return Ok(None);
            };
            let (used, cel) = status_cel(status, &names[1..]).map_err(fail)?;
            Ok(Some((1 + used, cel)))
        })
        .map_err(|error| match error {
            RewriteError::Mistake(mistake) => mistake,
            RewriteError::Text(message) => fail(message),
        })
    }
}

/// The CEL each field of a nested spec stands for: the value given, else the default.
fn spec_values(fields: &[Field], given: &Json) -> BTreeMap<String, SpecValue> {
    fields
        .iter()
        .map(|field| {
            let value = given.get(&field.name);
            let spec = match &field.ty {
                SchemaType::Object(inner) => {
                    let empty = Json::Object(Map::new());
                    SpecValue::Object(spec_values(inner, value.unwrap_or(&empty)))
                }
                _ => SpecValue::Field(match value {
                    Some(value) => Some(cel_of(value)),
                    None => field.markers.default.clone(),
                }),
            };
            (field.name.clone(), spec)
        })
        .collect()
}

/// A value given in Rust as CEL: an expression as it is, a literal as its JSON (which CEL
/// reads as the same value).
fn cel_of(value: &Json) -> String {
    if let Json::String(text) = value
        && let Ok(expressions) = kro_graph::find_expressions(text)
        && let [only] = expressions.as_slice()
        && only.start == 0
        && only.end == text.len()
    {
        return only.cel.clone();
    }
    value.to_string()
}

/// What `schema.spec.<names>` stands for, and how many names that used; the error is the
/// path of a field with no value.
fn spec_cel(spec: &BTreeMap<String, SpecValue>, names: &[&str]) -> Result<(usize, String), String> {
    let Some((first, rest)) = names.split_first() else {
        return object_cel(spec, "").map(|cel| (0, cel));
    };
    match spec.get(*first) {
        None => Err((*first).to_owned()),
        Some(SpecValue::Field(Some(cel))) => Ok((1, cel.clone())),
        Some(SpecValue::Field(None)) => Err((*first).to_owned()),
        Some(SpecValue::Object(inner)) => spec_cel(inner, rest)
            .map(|(used, cel)| (used + 1, cel))
            .map_err(|field| format!("{first}.{field}")),
    }
}

/// A CEL map literal of a spec object.
fn object_cel(spec: &BTreeMap<String, SpecValue>, path: &str) -> Result<String, String> {
    let mut entries = Vec::new();
    for (name, value) in spec {
        let cel = match value {
            SpecValue::Field(Some(cel)) => format!("({cel})"),
            SpecValue::Field(None) => return Err(format!("{path}{name}")),
            SpecValue::Object(inner) => object_cel(inner, &format!("{path}{name}."))?,
        };
        entries.push(format!("{}: {cel}", Json::String(name.clone())));
    }
    Ok(format!("{{{}}}", entries.join(", ")))
}

/// What `<nested status>.<names>` stands for, and how many names that used.
fn status_cel(status: &Map<String, Json>, names: &[&str]) -> Result<(usize, String), String> {
    let Some((first, rest)) = names.split_first() else {
        let mut entries = Vec::new();
        for (name, value) in status {
            let cel = match value {
                Json::Object(inner) => status_cel(inner, &[])?.1,
                Json::String(text) => format!("({})", status_field_cel(name, text)?),
                other => other.to_string(),
            };
            entries.push(format!("{}: {cel}", Json::String(name.clone())));
        }
        return Ok((0, format!("{{{}}}", entries.join(", "))));
    };
    match status.get(*first) {
        None => Err(format!("the nested status has no field {first}")),
        Some(Json::Object(inner)) => status_cel(inner, rest).map(|(used, cel)| (used + 1, cel)),
        Some(Json::String(text)) => Ok((1, status_field_cel(first, text)?)),
        Some(other) => Ok((1, other.to_string())),
    }
}

/// The CEL of a status field `${...}` (with a `| scaleSelector` marker or not).
fn status_field_cel(name: &str, text: &str) -> Result<String, String> {
    let text = text.strip_suffix(" | scaleSelector").unwrap_or(text);
    match kro_graph::find_expressions(text) {
        Ok(expressions) => match expressions.as_slice() {
            [only] if only.start == 0 && only.end == text.len() => Ok(only.cel.clone()),
            _ => Err(format!(
                "the nested status field {name} is not one expression (kro fills it)"
            )),
        },
        Err(error) => Err(error.to_string()),
    }
}

enum RewriteError {
    Mistake(Mistake),
    Text(String),
}

impl From<Mistake> for RewriteError {
    fn from(mistake: Mistake) -> Self {
        RewriteError::Mistake(mistake)
    }
}

/// Rewrites the variable paths of `cel`: `replace` sees a path's names and answers how many
/// of them to replace (from the variable on) and with what CEL, or `None` to keep it. The
/// replacement is parenthesized unless it is the whole expression or a plain path or literal.
fn rewrite(
    cel: &str,
    mut replace: impl FnMut(&[&str]) -> Result<Option<(usize, String)>, Mistake>,
) -> Result<String, RewriteError> {
    let paths = kro_cel::variable_paths(cel)
        .map_err(|error| RewriteError::Text(format!("`{cel}` does not parse: {error}")))?;
    let mut replacements = Vec::new();
    for path in &paths {
        let names = path.names();
        if let Some((used, text)) = replace(&names)? {
            let start = path.segments[0].1.start as usize;
            let last = used.clamp(1, path.segments.len()) - 1;
            let end = path.segments[last].1.end as usize;
            let whole = start == 0 && end == cel.len();
            let text = if whole || is_simple(&text) {
                text
            } else {
                format!("({text})")
            };
            replacements.push((start, end, text));
        }
    }
    let mut out = cel.to_owned();
    for (start, end, text) in replacements.into_iter().rev() {
        out.replace_range(start..end, text.as_str());
    }
    Ok(out)
}

/// Whether CEL text needs no parentheses as an operand: a dotted path, a number, or a string
/// literal without quotes inside.
fn is_simple(cel: &str) -> bool {
    let path = cel.split('.').all(|part| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    let string = cel.len() >= 2
        && cel.starts_with('"')
        && cel.ends_with('"')
        && !cel[1..cel.len() - 1].contains(['"', '\\']);
    path || string
}

/// Applies `rewrite` to every expression of a string (`${...}`), keeping the text around them.
fn rewrite_string(
    text: &str,
    rewrite: &dyn Fn(&str) -> Result<String, Mistake>,
) -> Result<String, Mistake> {
    let expressions = kro_graph::find_expressions(text).map_err(|error| Mistake::Nested {
        prefix: String::new(),
        message: error.to_string(),
    })?;
    if expressions.is_empty() {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut position = 0;
    for expression in expressions {
        out.push_str(&text[position..expression.start]);
        out.push_str("${");
        out.push_str(&rewrite(&expression.cel)?);
        out.push('}');
        position = expression.end;
    }
    out.push_str(&text[position..]);
    Ok(out)
}

fn map_strings(
    value: &mut Json,
    rewrite: &dyn Fn(&str) -> Result<String, Mistake>,
) -> Result<(), Mistake> {
    match value {
        Json::String(text) => *text = rewrite_string(text, rewrite)?,
        Json::Array(items) => {
            for item in items {
                map_strings(item, rewrite)?;
            }
        }
        Json::Object(fields) => {
            for field in fields.values_mut() {
                map_strings(field, rewrite)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Rewrites every expression of a resource: its body and its conditions and collections.
fn map_expressions(
    entry: &mut ResourceEntry,
    rewrite: &dyn Fn(&str) -> Result<String, Mistake>,
) -> Result<(), Mistake> {
    map_strings(&mut entry.body.1, rewrite)?;
    for text in entry
        .include_when
        .iter_mut()
        .chain(entry.ready_when.iter_mut())
        .chain(entry.for_each.iter_mut().map(|(_, over)| over))
        .chain(entry.for_each_item.iter_mut())
        .chain(entry.lifecycle.iter_mut())
    {
        *text = rewrite_string(text, rewrite)?;
    }
    Ok(())
}
