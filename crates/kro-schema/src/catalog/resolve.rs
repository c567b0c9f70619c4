//! The resolved view: schemas with every `$ref` replaced by the definition it names.

use super::Catalog;
use crate::openapi::{AdditionalProperties, Schema};

/// How many references deep inlining goes before it keeps a `$ref`: far deeper than any
/// Kubernetes type nests, and a bound on the recursion for documents made of long chains of
/// references.
const MAX_REFERENCE_DEPTH: usize = 128;

/// `schema`, the definition `name`, with every reference inlined.
pub(super) fn inline_definition<'c>(
    catalog: &'c Catalog,
    name: &'c str,
    schema: &Schema,
) -> Schema {
    let mut resolved = schema.clone();
    let mut stack = vec![name];
    inline(catalog, &mut resolved, &mut stack);
    resolved
}

/// `schema` with every reference inlined; a reference to a definition that is already being
/// inlined (a recursive type such as `JSONSchemaProps`) is kept as it is.
pub(super) fn inline_schema(catalog: &Catalog, schema: &Schema) -> Schema {
    let mut resolved = schema.clone();
    inline(catalog, &mut resolved, &mut Vec::new());
    resolved
}

fn inline<'c>(catalog: &'c Catalog, schema: &mut Schema, stack: &mut Vec<&'c str>) {
    if let Some((name, definition)) = catalog.referenced_definition(schema) {
        if stack.len() >= MAX_REFERENCE_DEPTH || stack.contains(&name) {
            return;
        }
        let mut resolved = definition.clone();
        stack.push(name);
        inline(catalog, &mut resolved, stack);
        stack.pop();
        overlay_reference_site(&mut resolved, schema);
        *schema = resolved;
        return;
    }
    for property in schema.properties.values_mut() {
        inline(catalog, property, stack);
    }
    if let Some(items) = &mut schema.items {
        inline(catalog, items, stack);
    }
    if let Some(AdditionalProperties::Schema(values)) = &mut schema.additional_properties {
        inline(catalog, values, stack);
    }
    for alternative in schema
        .all_of
        .iter_mut()
        .chain(&mut schema.one_of)
        .chain(&mut schema.any_of)
    {
        inline(catalog, alternative, stack);
    }
    if let Some(not) = &mut schema.not {
        inline(catalog, not, stack);
    }
}

/// Puts what is written beside a `$ref` (the only keywords the catalog allows there) over
/// the inlined definition: the field's own description and merge annotations win.
fn overlay_reference_site(resolved: &mut Schema, site: &Schema) {
    if site.description.is_some() {
        resolved.description.clone_from(&site.description);
    }
    if site.title.is_some() {
        resolved.title.clone_from(&site.title);
    }
    if site.default.is_some() {
        resolved.default.clone_from(&site.default);
    }
    resolved.nullable |= site.nullable;
    if site.x_kubernetes_list_type.is_some() {
        resolved
            .x_kubernetes_list_type
            .clone_from(&site.x_kubernetes_list_type);
    }
    if !site.x_kubernetes_list_map_keys.is_empty() {
        resolved
            .x_kubernetes_list_map_keys
            .clone_from(&site.x_kubernetes_list_map_keys);
    }
    if site.x_kubernetes_map_type.is_some() {
        resolved
            .x_kubernetes_map_type
            .clone_from(&site.x_kubernetes_map_type);
    }
    if site.x_kubernetes_patch_merge_key.is_some() {
        resolved
            .x_kubernetes_patch_merge_key
            .clone_from(&site.x_kubernetes_patch_merge_key);
    }
    if site.x_kubernetes_patch_strategy.is_some() {
        resolved
            .x_kubernetes_patch_strategy
            .clone_from(&site.x_kubernetes_patch_strategy);
    }
}
