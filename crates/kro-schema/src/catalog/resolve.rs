//! The resolved view: schemas with every `$ref` replaced by the definition it names.
//!
//! Inlining asks [`ReferencedDefinitions`] for the definitions, which the catalog
//! implements, so this module depends on no catalog type.

use crate::openapi::{AdditionalProperties, Schema};

/// Where inlining finds the definition a `$ref` names.
pub(super) trait ReferencedDefinitions {
    /// The definition `schema.reference` names, with its name, if `schema` is a reference
    /// to one.
    fn referenced_definition(&self, schema: &Schema) -> Option<(&str, &Schema)>;
}

/// How many references deep inlining goes before it keeps a `$ref`: far deeper than any
/// Kubernetes type nests, and a bound on the recursion for documents made of long chains of
/// references.
const MAX_REFERENCE_DEPTH: usize = 128;

/// `schema`, the definition `name`, with every reference inlined.
pub(super) fn inline_definition<'c>(
    definitions: &'c impl ReferencedDefinitions,
    name: &'c str,
    schema: &Schema,
) -> Schema {
    let mut resolved = schema.clone();
    let mut stack = vec![name];
    inline(definitions, &mut resolved, &mut stack);
    resolved
}

/// `schema` with every reference inlined; a reference to a definition that is already being
/// inlined (a recursive type such as `JSONSchemaProps`) is kept as it is.
pub(super) fn inline_schema(definitions: &impl ReferencedDefinitions, schema: &Schema) -> Schema {
    let mut resolved = schema.clone();
    inline(definitions, &mut resolved, &mut Vec::new());
    resolved
}

fn inline<'c>(
    definitions: &'c impl ReferencedDefinitions,
    schema: &mut Schema,
    stack: &mut Vec<&'c str>,
) {
    if let Some((name, definition)) = definitions.referenced_definition(schema) {
        if stack.len() >= MAX_REFERENCE_DEPTH || stack.contains(&name) {
            return;
        }
        let mut resolved = definition.clone();
        stack.push(name);
        inline(definitions, &mut resolved, stack);
        stack.pop();
        overlay_reference_site(&mut resolved, schema);
        *schema = resolved;
        return;
    }
    for property in schema.properties.values_mut() {
        inline(definitions, property, stack);
    }
    if let Some(items) = &mut schema.items {
        inline(definitions, items, stack);
    }
    if let Some(AdditionalProperties::Schema(values)) = &mut schema.additional_properties {
        inline(definitions, values, stack);
    }
    for alternative in schema
        .all_of
        .iter_mut()
        .chain(&mut schema.one_of)
        .chain(&mut schema.any_of)
    {
        inline(definitions, alternative, stack);
    }
    if let Some(not) = &mut schema.not {
        inline(definitions, not, stack);
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
