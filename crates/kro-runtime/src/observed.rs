//! What the caller has seen of the cluster: objects by identity, and which lists were read;
//! and the [`Read`]s the planner asks for when something it needs has not been seen yet.
//!
//! The controller fills an [`Observed`] with the responses of its applies and reads; `kro
//! render` fills one from files and marks it [complete](Observed::complete) (whatever is not
//! in it does not exist). The planner only reads it.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use kro_schema::GroupKind;
use serde_json::Value as Json;

/// The identity of an object, independent of the API version it was read at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The object's group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }

    /// The key of an object from its `apiVersion`, `kind`, `metadata.namespace` and
    /// `metadata.name`, when they are all strings.
    pub fn of(object: &Json) -> Option<ObjectKey> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let metadata = object.get("metadata")?;
        let name = metadata.get("name")?.as_str()?;
        let namespace = match metadata.get("namespace") {
            Some(Json::String(namespace)) if !namespace.is_empty() => Some(namespace.clone()),
            _ => None,
        };
        Some(ObjectKey {
            group: group_of(api_version).to_owned(),
            kind: kind.to_owned(),
            namespace,
            name: name.to_owned(),
        })
    }
}

/// `kind.group/namespace/name`, as kubectl names objects (`deployment.apps/default/web`).
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.kind)?;
        } else {
            write!(f, "{}.{}", self.kind, self.group)?;
        }
        if let Some(namespace) = &self.namespace {
            write!(f, "/{namespace}")?;
        }
        write!(f, "/{}", self.name)
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → `""`).
pub fn group_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group)
}

/// A list the planner needs: the objects of a kind (in a namespace, or in all namespaces).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListKey {
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace, `None` for all namespaces (or a cluster-scoped kind).
    pub namespace: Option<String>,
}

impl ListKey {
    /// The listed group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }
}

/// A read the caller should make before planning again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Read {
    /// One object (an externalRef by name).
    Object(ObjectKey),
    /// A list (an externalRef by selector).
    List(ListKey),
}

/// Objects seen in the cluster, and which reads were made.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    objects: BTreeMap<ObjectKey, Json>,
    /// Objects looked up and found absent.
    absent: HashSet<ObjectKey>,
    /// Lists read: every object of the kind and namespace is in `objects`.
    listed: HashSet<ListKey>,
    /// Every object that exists is in `objects`.
    complete: bool,
}

impl Observed {
    /// Nothing seen yet: every object the plan needs is still to be read.
    pub fn new() -> Self {
        Observed::default()
    }

    /// A snapshot holding every object that exists (as `kro render` reads files): an object
    /// not in it does not exist, and every list is known.
    pub fn complete() -> Self {
        Observed {
            complete: true,
            ..Observed::default()
        }
    }

    /// Whether this is a complete snapshot.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Records an object (replacing what was seen of it before). Objects without an
    /// apiVersion, kind or name are ignored and `false` is returned.
    pub fn insert(&mut self, object: Json) -> bool {
        match ObjectKey::of(&object) {
            Some(key) => {
                self.absent.remove(&key);
                self.objects.insert(key, object);
                true
            }
            None => false,
        }
    }

    /// Records that an object was looked up and does not exist.
    pub fn insert_absent(&mut self, key: ObjectKey) {
        self.objects.remove(&key);
        self.absent.insert(key);
    }

    /// Records that every object of a list was inserted.
    pub fn insert_listed(&mut self, list: ListKey) {
        self.listed.insert(list);
    }

    /// An object, if seen.
    pub fn get(&self, key: &ObjectKey) -> Option<&Json> {
        self.objects.get(key)
    }

    /// Whether the object's existence is known (seen, known absent, or the snapshot is
    /// complete).
    pub fn is_known(&self, key: &ObjectKey) -> bool {
        self.complete || self.objects.contains_key(key) || self.absent.contains(key)
    }

    /// Whether the list's content is known.
    pub fn is_listed(&self, list: &ListKey) -> bool {
        self.complete
            || self.listed.contains(list)
            || (list.namespace.is_some()
                && self.listed.contains(&ListKey {
                    namespace: None,
                    ..list.clone()
                }))
    }

    /// The objects of a list, in key order.
    pub fn list<'a>(&'a self, list: &'a ListKey) -> impl Iterator<Item = &'a Json> + 'a {
        self.objects
            .iter()
            .filter(move |(key, _)| {
                key.group == list.group
                    && key.kind == list.kind
                    && (list.namespace.is_none() || key.namespace == list.namespace)
            })
            .map(|(_, object)| object)
    }

    /// Every object seen, in key order.
    pub fn objects(&self) -> impl Iterator<Item = (&ObjectKey, &Json)> {
        self.objects.iter()
    }

    /// How many objects were seen.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object was seen.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(namespace: &str, name: &str) -> Json {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}})
    }

    #[test]
    fn objects_are_keyed_by_group_kind_namespace_and_name() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}});
        let key = ObjectKey::of(&deployment).expect("a key");
        assert_eq!(key.to_string(), "Deployment.apps/prod/web");
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}});
        assert_eq!(
            ObjectKey::of(&namespace).map(|key| key.to_string()),
            Some("Namespace/prod".to_owned())
        );
        assert_eq!(ObjectKey::of(&json!({"kind": "X"})), None);
    }

    #[test]
    fn knowledge_of_absence_depends_on_what_was_read() {
        let mut observed = Observed::new();
        let key = ObjectKey::of(&config_map("a", "x")).expect("a key");
        assert!(!observed.is_known(&key));
        observed.insert_absent(key.clone());
        assert!(observed.is_known(&key) && observed.get(&key).is_none());
        assert!(observed.insert(config_map("a", "x")));
        assert!(observed.get(&key).is_some());
        assert!(Observed::complete().is_known(&key));
    }

    #[test]
    fn lists_filter_by_kind_and_namespace() {
        let mut observed = Observed::new();
        observed.insert(config_map("a", "x"));
        observed.insert(config_map("b", "y"));
        let in_a = ListKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("a".into()),
        };
        assert!(!observed.is_listed(&in_a));
        observed.insert_listed(ListKey {
            namespace: None,
            ..in_a.clone()
        });
        assert!(observed.is_listed(&in_a));
        let names: Vec<_> = observed
            .list(&in_a)
            .filter_map(|object| object["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["x"]);
    }
}
