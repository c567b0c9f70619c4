//! Views of a kind's schema and of the fields inside it, by field path.

use super::Catalog;
use super::error::FieldPathError;
use super::resolve;
use super::semantics::MergeSemantics;
use crate::gvk::Gvk;
use crate::openapi::Schema;

/// How many lists of lists a path segment steps through to reach objects.
const MAX_LIST_NESTING: usize = 16;

/// A built-in kind: its group-version-kind, the definition describing it, and its schema.
#[derive(Debug, Clone, Copy)]
pub struct KindSchema<'a> {
    catalog: &'a Catalog,
    gvk: &'a Gvk,
    definition_name: &'a str,
    schema: &'a Schema,
}

impl<'a> KindSchema<'a> {
    pub(super) fn new(
        catalog: &'a Catalog,
        gvk: &'a Gvk,
        definition_name: &'a str,
        schema: &'a Schema,
    ) -> Self {
        KindSchema {
            catalog,
            gvk,
            definition_name,
            schema,
        }
    }

    /// The group-version-kind.
    pub fn gvk(&self) -> &'a Gvk {
        self.gvk
    }

    /// The name of the kind's definition, such as `io.k8s.api.apps.v1.Deployment`.
    pub fn definition_name(&self) -> &'a str {
        self.definition_name
    }

    /// The kind's schema with its `$ref`s kept (look them up with [`Catalog::definition`]).
    pub fn schema(&self) -> &'a Schema {
        self.schema
    }

    /// The kind's schema with every `$ref` inlined.
    ///
    /// The description and merge annotations written beside a reference override those of
    /// the inlined definition. A reference to a definition that is already being inlined
    /// (only `JSONSchemaProps`, inside `CustomResourceDefinition`, is recursive) is kept.
    pub fn resolved_schema(&self) -> Schema {
        resolve::inline_definition(self.catalog, self.definition_name, self.schema)
    }

    /// The whole object, as a field.
    pub fn root(&self) -> FieldSchema<'a> {
        FieldSchema {
            catalog: self.catalog,
            site: self.schema,
            definition: Some((self.definition_name, self.schema)),
        }
    }

    /// The field at `path`, such as `spec.template.spec.containers`.
    ///
    /// Segments are separated by `.`. A segment applied to a list applies to its items
    /// (`spec.template.spec.containers.image`), and one applied to a map (an object with
    /// `additionalProperties`) is a key (`metadata.labels.app`). The empty path is the whole
    /// object.
    ///
    /// # Errors
    /// [`FieldPathError::NoSuchField`] if a segment names no field, and
    /// [`FieldPathError::Untyped`] if it goes below a value that accepts anything.
    pub fn field(&self, path: &str) -> Result<FieldSchema<'a>, FieldPathError> {
        let mut current = self.root();
        if path.is_empty() {
            return Ok(current);
        }
        let mut found = 0;
        for segment in path.split('.') {
            let prefix = || path[..found].to_string();
            current = match current.child(segment) {
                Child::Field(field) => field,
                Child::Untyped => {
                    return Err(FieldPathError::Untyped {
                        path: prefix(),
                        field: segment.to_string(),
                    });
                }
                Child::Missing => {
                    return Err(FieldPathError::NoSuchField {
                        path: prefix(),
                        field: segment.to_string(),
                    });
                }
            };
            found = if found == 0 {
                segment.len()
            } else {
                found + 1 + segment.len()
            };
        }
        Ok(current)
    }
}

/// One field of a kind's schema: the schema written at the field, and the definition it
/// refers to, if any.
#[derive(Debug, Clone, Copy)]
pub struct FieldSchema<'a> {
    catalog: &'a Catalog,
    site: &'a Schema,
    definition: Option<(&'a str, &'a Schema)>,
}

enum Child<'a> {
    Field(FieldSchema<'a>),
    Untyped,
    Missing,
}

impl<'a> FieldSchema<'a> {
    fn at(catalog: &'a Catalog, site: &'a Schema) -> Self {
        FieldSchema {
            catalog,
            site,
            definition: catalog.referenced_definition(site),
        }
    }

    /// The schema as written at the field: for a field of a named type, a `$ref` with the
    /// field's description and merge annotations.
    pub fn schema(&self) -> &'a Schema {
        self.site
    }

    /// The name of the definition the field's value has (such as
    /// `io.k8s.api.apps.v1.DeploymentSpec`), if it is of a named type.
    pub fn definition_name(&self) -> Option<&'a str> {
        self.definition.map(|(name, _)| name)
    }

    /// The schema of the field's value: the referenced definition for a named type, otherwise
    /// the schema as written. Its own children may still be `$ref`s.
    pub fn value_schema(&self) -> &'a Schema {
        self.definition
            .map_or(self.site, |(_, definition)| definition)
    }

    /// Whether `null` is accepted, at the field or by its type.
    pub fn is_nullable(&self) -> bool {
        self.site.nullable || self.value_schema().nullable
    }

    /// The field `name` of an object value.
    pub fn property(&self, name: &str) -> Option<FieldSchema<'a>> {
        let property = self.value_schema().properties.get(name)?;
        Some(FieldSchema::at(self.catalog, property))
    }

    /// The items of a list value.
    pub fn items(&self) -> Option<FieldSchema<'a>> {
        let items = self.value_schema().items.as_deref()?;
        Some(FieldSchema::at(self.catalog, items))
    }

    /// The values of a map value (an object with an `additionalProperties` schema).
    pub fn map_values(&self) -> Option<FieldSchema<'a>> {
        let values = self.value_schema().additional_properties_schema()?;
        Some(FieldSchema::at(self.catalog, values))
    }

    /// How the field merges: list type, list map keys, map type, patch merge key and patch
    /// strategies, from the field and then from its definition.
    pub fn merge_semantics(&self) -> MergeSemantics {
        MergeSemantics::of(self.site, self.definition.map(|(_, schema)| schema))
    }

    /// The field's schema with every `$ref` inlined, as in [`KindSchema::resolved_schema`].
    pub fn resolved(&self) -> Schema {
        match self.definition {
            // The root of a kind: the site is the definition itself.
            Some((name, definition)) if std::ptr::eq(definition, self.site) => {
                resolve::inline_definition(self.catalog, name, definition)
            }
            _ => resolve::inline_schema(self.catalog, self.site),
        }
    }

    fn child(&self, segment: &str) -> Child<'a> {
        let mut container = *self;
        // Bounded, so that a list type whose items refer to itself cannot loop.
        for _ in 0..MAX_LIST_NESTING {
            match container.items() {
                Some(items) => container = items,
                None => break,
            }
        }
        if let Some(property) = container.property(segment) {
            return Child::Field(property);
        }
        if let Some(values) = container.map_values() {
            return Child::Field(values);
        }
        if container.value_schema().preserves_unknown_fields() {
            Child::Untyped
        } else {
            Child::Missing
        }
    }
}
