//! How a field merges: list types, list map keys, map types and strategic-merge-patch
//! annotations, as typed values.

use crate::openapi::Schema;

/// `x-kubernetes-list-type`: how a list is merged by server-side apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListType {
    /// `atomic`: the list is replaced as a whole.
    Atomic,
    /// `set`: items are scalars, each owned separately.
    Set,
    /// `map`: items are objects identified by their list map keys.
    Map,
}

impl ListType {
    /// The value as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map => "map",
        }
    }

    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "atomic" => Some(ListType::Atomic),
            "set" => Some(ListType::Set),
            "map" => Some(ListType::Map),
            _ => None,
        }
    }
}

/// `x-kubernetes-map-type`: how an object or map is merged by server-side apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapType {
    /// `atomic`: the object is replaced as a whole.
    Atomic,
    /// `granular`: each key is owned separately (the default).
    Granular,
}

impl MapType {
    /// The value as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            MapType::Atomic => "atomic",
            MapType::Granular => "granular",
        }
    }

    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "atomic" => Some(MapType::Atomic),
            "granular" => Some(MapType::Granular),
            _ => None,
        }
    }
}

/// One entry of `x-kubernetes-patch-strategy` (a comma-separated list), for strategic merge
/// patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchStrategy {
    /// `merge`: lists are merged item by item, by the patch merge key.
    Merge,
    /// `retainKeys`: fields the patch does not name are cleared.
    RetainKeys,
    /// `replace`: the value is replaced as a whole.
    Replace,
}

impl PatchStrategy {
    /// The value as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchStrategy::Merge => "merge",
            PatchStrategy::RetainKeys => "retainKeys",
            PatchStrategy::Replace => "replace",
        }
    }

    /// The strategies of a comma-separated `x-kubernetes-patch-strategy`, or `None` if one is
    /// unknown.
    pub(crate) fn parse_list(value: &str) -> Option<Vec<Self>> {
        value
            .split(',')
            .map(|part| match part.trim() {
                "merge" => Some(PatchStrategy::Merge),
                "retainKeys" => Some(PatchStrategy::RetainKeys),
                "replace" => Some(PatchStrategy::Replace),
                _ => None,
            })
            .collect()
    }
}

/// How a field merges under server-side apply and strategic merge patch.
///
/// Annotations written beside a `$ref` take precedence over those of the referenced
/// definition, as in the resolved view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSemantics {
    /// `x-kubernetes-list-type`, for lists.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys`: the fields identifying items of a `map` list.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`, for objects and maps.
    pub map_type: Option<MapType>,
    /// `x-kubernetes-patch-merge-key`: the field identifying list items for strategic merge
    /// patch.
    pub patch_merge_key: Option<String>,
    /// `x-kubernetes-patch-strategy`, in the order written (empty when absent).
    pub patch_strategies: Vec<PatchStrategy>,
}

impl MergeSemantics {
    /// The annotations of `site`, falling back one by one to those of `definition` (the
    /// schema `site` refers to, if any).
    pub(crate) fn of(site: &Schema, definition: Option<&Schema>) -> Self {
        let pick =
            |get: fn(&Schema) -> Option<&str>| get(site).or_else(|| definition.and_then(get));
        let list_map_keys = match definition {
            Some(definition) if site.x_kubernetes_list_map_keys.is_empty() => {
                definition.x_kubernetes_list_map_keys.clone()
            }
            _ => site.x_kubernetes_list_map_keys.clone(),
        };
        MergeSemantics {
            list_type: pick(|s| s.x_kubernetes_list_type.as_deref()).and_then(ListType::parse),
            list_map_keys,
            map_type: pick(|s| s.x_kubernetes_map_type.as_deref()).and_then(MapType::parse),
            patch_merge_key: pick(|s| s.x_kubernetes_patch_merge_key.as_deref())
                .map(str::to_string),
            // Values were checked when the catalog was built, so nothing is dropped here.
            patch_strategies: pick(|s| s.x_kubernetes_patch_strategy.as_deref())
                .and_then(PatchStrategy::parse_list)
                .unwrap_or_default(),
        }
    }
}
