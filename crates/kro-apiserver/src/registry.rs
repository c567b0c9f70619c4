//! The resource types the server serves: the built-in Kubernetes 1.33 resources (from the
//! vendored discovery documents, `data/README.md`) and, later, those of CustomResourceDefinitions.

use std::collections::BTreeMap;
use std::sync::Arc;

use kro_schema::{Gvk, Schema, Validator};
use serde::Deserialize;
use serde_json::{Value, json};

/// The aggregated discovery documents of kube-apiserver 1.33, filtered (see `data/README.md`).
const BUILT_IN_DISCOVERY: &str = include_str!("../data/discovery-1.33.json");

/// A subresource of a resource type (`status`, `scale`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// `status` or `scale`.
    pub name: String,
    /// The kind the subresource returns: the resource's own kind for `status`,
    /// `autoscaling/v1 Scale` for `scale`.
    pub response_kind: Gvk,
    /// Verbs (`get`, `patch`, `update`).
    pub verbs: Vec<String>,
}

/// One resource type: what discovery says about it, and how it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// Group, version and kind of its objects.
    pub gvk: Gvk,
    /// The plural resource name in URLs (`deployments`).
    pub plural: String,
    /// The singular name (`deployment`).
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Verbs the resource supports.
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Subresources.
    pub subresources: Vec<Subresource>,
    /// For the resources of a CustomResourceDefinition: its schema and subresource paths.
    pub custom: Option<Arc<CustomResource>>,
}

/// What the server knows about a custom resource type, from its definition.
#[derive(Debug)]
pub struct CustomResource {
    /// The definition's name (`widgets.example.com`).
    pub crd_name: String,
    /// The version's structural schema.
    pub schema: Schema,
    /// The schema compiled for validation.
    pub validator: Validator,
    /// Where the scale subresource reads and writes, if the version has one.
    pub scale: Option<ScalePaths>,
    /// `additionalPrinterColumns`.
    pub columns: Vec<PrinterColumn>,
    /// The field-selector names of the version's `selectableFields` (`spec.color` for the
    /// JSON path `.spec.color`), beyond `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// The definition's resourceVersion this was built from.
    pub(crate) revision: String,
}

impl PartialEq for CustomResource {
    fn eq(&self, other: &Self) -> bool {
        self.crd_name == other.crd_name && self.revision == other.revision
    }
}

impl Eq for CustomResource {}

/// The paths of a scale subresource (`.spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`.
    pub spec_replicas: String,
    /// `statusReplicasPath`.
    pub status_replicas: String,
    /// `labelSelectorPath`, if given.
    pub label_selector: Option<String>,
}

/// One additional printer column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub column_type: String,
    /// Optional format.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0 for the default view, more for `-o wide`.
    pub priority: i64,
    /// Where the value is (`.spec.replicas`).
    pub json_path: String,
}

impl ResourceType {
    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.gvk.group()
    }

    /// The kind of the list type (`DeploymentList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.gvk.kind())
    }

    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        self.gvk.api_version()
    }

    /// Whether the resource has the named subresource.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources
            .iter()
            .find(|subresource| subresource.name == name)
    }

    /// Whether the resource supports a verb.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|supported| supported == verb)
    }

    /// The URL prefix of its group-version: `/api/v1` or `/apis/apps/v1`.
    pub fn group_version_path(&self) -> String {
        group_version_path(self.group(), self.gvk.version())
    }
}

/// `/api/v1` for the core group, `/apis/<group>/<version>` otherwise.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// One API group with its versions in preference order.
#[derive(Debug, Clone)]
pub struct ApiGroup {
    /// The group name (empty for the core group).
    pub name: String,
    /// Versions, preferred first, each with its resources sorted by name.
    pub versions: Vec<(String, Vec<Arc<ResourceType>>)>,
}

/// Every resource type the server serves, by group and version.
#[derive(Debug, Clone)]
pub struct Registry {
    groups: Vec<ApiGroup>,
    by_path: BTreeMap<(String, String, String), Arc<ResourceType>>,
}

/// The error of loading discovery documents (only possible for corrupt vendored data).
#[derive(Debug, thiserror::Error)]
#[error("malformed discovery document: {0}")]
pub struct DiscoveryDataError(#[from] serde_json::Error);

#[derive(Deserialize)]
struct DiscoveryData {
    api: DiscoveryList,
    apis: DiscoveryList,
}

#[derive(Deserialize)]
struct DiscoveryList {
    items: Vec<DiscoveryGroup>,
}

#[derive(Deserialize)]
struct DiscoveryGroup {
    metadata: GroupMeta,
    versions: Vec<DiscoveryVersion>,
}

#[derive(Deserialize)]
struct GroupMeta {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct DiscoveryVersion {
    version: String,
    resources: Vec<DiscoveryResource>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoveryResource {
    resource: String,
    response_kind: ResponseKind,
    scope: String,
    #[serde(default)]
    singular_resource: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    subresources: Vec<DiscoverySubresource>,
}

#[derive(Deserialize)]
struct ResponseKind {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    kind: String,
}

#[derive(Deserialize)]
struct DiscoverySubresource {
    subresource: String,
    #[serde(rename = "responseKind")]
    response_kind: ResponseKind,
    #[serde(default)]
    verbs: Vec<String>,
}

impl Registry {
    /// The built-in Kubernetes 1.33 resources.
    ///
    /// # Errors
    /// Only if the vendored data is corrupt, which the crate's tests rule out.
    pub fn built_in() -> Result<Registry, DiscoveryDataError> {
        let data: DiscoveryData = serde_json::from_str(BUILT_IN_DISCOVERY)?;
        let mut registry = Registry {
            groups: Vec::new(),
            by_path: BTreeMap::new(),
        };
        for group in data.api.items.into_iter().chain(data.apis.items) {
            let name = group.metadata.name;
            for version in group.versions {
                for resource in version.resources {
                    let kind_or = |kind: &ResponseKind, group: &str, version: &str| {
                        let kind_group = if kind.version.is_empty() {
                            group
                        } else {
                            kind.group.as_str()
                        };
                        let kind_version = if kind.version.is_empty() {
                            version
                        } else {
                            kind.version.as_str()
                        };
                        Gvk::new(kind_group, kind_version, &kind.kind)
                    };
                    let subresources = resource
                        .subresources
                        .iter()
                        .map(|subresource| Subresource {
                            name: subresource.subresource.clone(),
                            response_kind: kind_or(
                                &subresource.response_kind,
                                &name,
                                &version.version,
                            ),
                            verbs: subresource.verbs.clone(),
                        })
                        .collect();
                    registry.insert(ResourceType {
                        gvk: Gvk::new(&name, &version.version, &resource.response_kind.kind),
                        singular: resource.singular_resource,
                        plural: resource.resource,
                        namespaced: resource.scope == "Namespaced",
                        verbs: resource.verbs,
                        short_names: resource.short_names,
                        categories: resource.categories,
                        subresources,
                        custom: None,
                    });
                }
            }
        }
        Ok(registry)
    }

    /// Adds or replaces a resource type; a new group goes last, a new version of a known group
    /// after its existing versions.
    pub fn insert(&mut self, resource: ResourceType) {
        let group = resource.group().to_owned();
        let version = resource.gvk.version().to_owned();
        let resource = Arc::new(resource);
        self.by_path.insert(
            (group.clone(), version.clone(), resource.plural.clone()),
            Arc::clone(&resource),
        );
        let index = match self.groups.iter().position(|known| known.name == group) {
            Some(index) => index,
            None => {
                self.groups.push(ApiGroup {
                    name: group,
                    versions: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        let api_group = &mut self.groups[index];
        let resources = match api_group
            .versions
            .iter()
            .position(|(known, _)| *known == version)
        {
            Some(position) => &mut api_group.versions[position].1,
            None => {
                api_group.versions.push((version, Vec::new()));
                let last = api_group.versions.len() - 1;
                &mut api_group.versions[last].1
            }
        };
        resources.retain(|known| known.plural != resource.plural);
        resources.push(resource);
        resources.sort_by(|a, b| a.plural.cmp(&b.plural));
    }

    /// Removes a resource type (its group-version goes when it was the last one).
    pub fn remove(&mut self, group: &str, version: &str, plural: &str) {
        self.by_path
            .remove(&(group.to_owned(), version.to_owned(), plural.to_owned()));
        for api_group in &mut self.groups {
            if api_group.name != group {
                continue;
            }
            for (known, resources) in &mut api_group.versions {
                if known == version {
                    resources.retain(|resource| resource.plural != plural);
                }
            }
            api_group
                .versions
                .retain(|(_, resources)| !resources.is_empty());
        }
        self.groups
            .retain(|api_group| !api_group.versions.is_empty());
    }

    /// The resource served at `/apis/<group>/<version>/<plural>`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_path
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// The resource type serving a kind.
    pub fn find_kind(&self, gvk: &Gvk) -> Option<Arc<ResourceType>> {
        self.by_path
            .iter()
            .find(|((group, version, _), resource)| {
                group == gvk.group() && version == gvk.version() && resource.gvk == *gvk
            })
            .map(|(_, resource)| Arc::clone(resource))
    }

    /// The groups, core group first.
    pub fn groups(&self) -> &[ApiGroup] {
        &self.groups
    }

    /// Every served (group, version), in discovery order.
    pub fn group_versions(&self) -> Vec<(String, String)> {
        self.groups
            .iter()
            .flat_map(|group| {
                group
                    .versions
                    .iter()
                    .map(|(version, _)| (group.name.clone(), version.clone()))
            })
            .collect()
    }

    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&ApiGroup> {
        self.groups.iter().find(|group| group.name == name)
    }

    /// Every resource type.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.by_path.values()
    }
}

/// The `Content-Type` clients recognise aggregated discovery by.
pub const AGGREGATED_DISCOVERY_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The beta form kubectl 1.27 to 1.29 ask for.
pub const AGGREGATED_DISCOVERY_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

fn aggregated_resource(resource: &ResourceType) -> Value {
    let mut entry = json!({
        "resource": resource.plural,
        "responseKind": {
            "group": resource.group(),
            "version": resource.gvk.version(),
            "kind": resource.gvk.kind(),
        },
        "scope": if resource.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": resource.singular,
        "verbs": resource.verbs,
    });
    if !resource.short_names.is_empty() {
        entry["shortNames"] = json!(resource.short_names);
    }
    if !resource.categories.is_empty() {
        entry["categories"] = json!(resource.categories);
    }
    if !resource.subresources.is_empty() {
        entry["subresources"] = resource
            .subresources
            .iter()
            .map(|subresource| {
                json!({
                    "subresource": subresource.name,
                    "responseKind": {
                        "group": subresource.response_kind.group(),
                        "version": subresource.response_kind.version(),
                        "kind": subresource.response_kind.kind(),
                    },
                    "verbs": subresource.verbs,
                })
            })
            .collect();
    }
    entry
}

fn aggregated_group(group: &ApiGroup) -> Value {
    json!({
        "metadata": { "name": group.name, "creationTimestamp": null },
        "versions": group.versions.iter().map(|(version, resources)| json!({
            "version": version,
            "resources": resources.iter().map(|resource| aggregated_resource(resource)).collect::<Vec<_>>(),
            "freshness": "Current",
        })).collect::<Vec<_>>(),
    })
}

impl Registry {
    /// The aggregated discovery document of `/api` (`legacy_core`) or `/apis`, in the
    /// requested version (`v2` or `v2beta1`).
    pub fn aggregated_discovery(&self, legacy_core: bool, version: &str) -> Value {
        let items: Vec<Value> = self
            .groups
            .iter()
            .filter(|group| group.name.is_empty() == legacy_core)
            .map(aggregated_group)
            .collect();
        json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": format!("apidiscovery.k8s.io/{version}"),
            "metadata": {},
            "items": items,
        })
    }

    /// The legacy `/api` document (`APIVersions`).
    pub fn legacy_api_versions(&self) -> Value {
        let versions: Vec<&str> = self
            .group("")
            .map(|core| core.versions.iter().map(|(v, _)| v.as_str()).collect())
            .unwrap_or_default();
        json!({
            "kind": "APIVersions",
            "versions": versions,
            "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1" }],
        })
    }

    fn legacy_group(group: &ApiGroup) -> Value {
        let versions: Vec<Value> = group
            .versions
            .iter()
            .map(|(version, _)| {
                json!({ "groupVersion": format!("{}/{version}", group.name), "version": version })
            })
            .collect();
        json!({
            "name": group.name,
            "versions": versions,
            "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
        })
    }

    /// The legacy `/apis` document (`APIGroupList`).
    pub fn legacy_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups
            .iter()
            .filter(|group| !group.name.is_empty())
            .map(Registry::legacy_group)
            .collect();
        json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
    }

    /// The legacy `/apis/<group>` document (`APIGroup`).
    pub fn legacy_group_document(&self, name: &str) -> Option<Value> {
        let group = self.group(name).filter(|group| !group.name.is_empty())?;
        let mut document = Registry::legacy_group(group);
        document["kind"] = json!("APIGroup");
        document["apiVersion"] = json!("v1");
        Some(document)
    }

    /// The legacy `/api/v1` or `/apis/<group>/<version>` document (`APIResourceList`).
    pub fn legacy_resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let api_group = self.group(group)?;
        let (_, resources) = api_group
            .versions
            .iter()
            .find(|(known, _)| known == version)?;
        let mut entries = Vec::new();
        for resource in resources {
            let mut entry = json!({
                "name": resource.plural,
                "singularName": resource.singular,
                "namespaced": resource.namespaced,
                "kind": resource.gvk.kind(),
                "verbs": resource.verbs,
            });
            if !resource.short_names.is_empty() {
                entry["shortNames"] = json!(resource.short_names);
            }
            if !resource.categories.is_empty() {
                entry["categories"] = json!(resource.categories);
            }
            entries.push(entry);
            for subresource in &resource.subresources {
                let mut entry = json!({
                    "name": format!("{}/{}", resource.plural, subresource.name),
                    "singularName": "",
                    "namespaced": resource.namespaced,
                    "kind": subresource.response_kind.kind(),
                    "verbs": subresource.verbs,
                });
                if subresource.response_kind.group() != group
                    || subresource.response_kind.version() != version
                {
                    entry["group"] = json!(subresource.response_kind.group());
                    entry["version"] = json!(subresource.response_kind.version());
                }
                entries.push(entry);
            }
        }
        let group_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        Some(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": entries,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_registry_loads_the_resources_the_issue_lists() {
        let registry = Registry::built_in().expect("vendored discovery loads");
        for (group, plural, kind, namespaced) in [
            ("", "namespaces", "Namespace", false),
            ("", "configmaps", "ConfigMap", true),
            ("", "secrets", "Secret", true),
            ("", "services", "Service", true),
            ("", "serviceaccounts", "ServiceAccount", true),
            ("", "pods", "Pod", true),
            ("", "persistentvolumeclaims", "PersistentVolumeClaim", true),
            ("", "events", "Event", true),
            ("apps", "deployments", "Deployment", true),
            ("apps", "replicasets", "ReplicaSet", true),
            ("apps", "statefulsets", "StatefulSet", true),
            ("apps", "daemonsets", "DaemonSet", true),
            ("batch", "jobs", "Job", true),
            ("batch", "cronjobs", "CronJob", true),
            ("networking.k8s.io", "ingresses", "Ingress", true),
            (
                "networking.k8s.io",
                "networkpolicies",
                "NetworkPolicy",
                true,
            ),
            ("rbac.authorization.k8s.io", "roles", "Role", true),
            (
                "rbac.authorization.k8s.io",
                "clusterroles",
                "ClusterRole",
                false,
            ),
            ("coordination.k8s.io", "leases", "Lease", true),
            (
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                false,
            ),
        ] {
            let resource = registry
                .find(group, "v1", plural)
                .unwrap_or_else(|| panic!("{group}/{plural} is served"));
            assert_eq!(resource.gvk.kind(), kind);
            assert_eq!(resource.namespaced, namespaced, "{plural}");
        }
        let hpa = registry
            .find("autoscaling", "v2", "horizontalpodautoscalers")
            .expect("HPA v2");
        assert!(hpa.subresource("status").is_some());
        let deployment = registry
            .find("apps", "v1", "deployments")
            .expect("deployments");
        assert_eq!(deployment.short_names, ["deploy"]);
        assert_eq!(deployment.categories, ["all"]);
        let scale = deployment.subresource("scale").expect("scale");
        assert_eq!(scale.response_kind, Gvk::new("autoscaling", "v1", "Scale"));
    }

    #[test]
    fn legacy_discovery_lists_subresources_with_their_kind() {
        let registry = Registry::built_in().expect("vendored discovery loads");
        let list = registry
            .legacy_resource_list("apps", "v1")
            .expect("apps/v1");
        let resources = list["resources"].as_array().expect("resources");
        let scale = resources
            .iter()
            .find(|entry| entry["name"] == "deployments/scale")
            .expect("deployments/scale");
        assert_eq!(scale["group"], "autoscaling");
        assert_eq!(scale["kind"], "Scale");
        let status = resources
            .iter()
            .find(|entry| entry["name"] == "deployments/status")
            .expect("deployments/status");
        assert_eq!(status["kind"], "Deployment");
        assert!(status.get("group").is_none());
    }

    #[test]
    fn removing_the_last_resource_removes_the_group() {
        let mut registry = Registry::built_in().expect("vendored discovery loads");
        registry.insert(ResourceType {
            gvk: Gvk::new("example.com", "v1", "Widget"),
            plural: "widgets".to_owned(),
            singular: "widget".to_owned(),
            namespaced: true,
            verbs: vec!["get".to_owned()],
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
            custom: None,
        });
        assert!(registry.group("example.com").is_some());
        assert!(
            registry
                .find_kind(&Gvk::new("example.com", "v1", "Widget"))
                .is_some()
        );
        registry.remove("example.com", "v1", "widgets");
        assert!(registry.group("example.com").is_none());
        assert!(registry.find("example.com", "v1", "widgets").is_none());
    }
}
