//! The status of a composition, typed by its status struct: every field is given a value
//! (`<Status>Values` has one per field); `scale` fields are declared for kro to fill, and
//! `scaleSelector` fields carry their marker.

use serde_json::{Map, Value as Json};

use super::{Composition, Mistake};
use crate::schema::{Field, KroSchema, SchemaType, Types};
use crate::template::ToJson;

impl<Spec: KroSchema, Status: KroSchema> Composition<Spec, Status> {
    /// The status: a value for every field of the status struct, each an expression
    /// (references, combinators, `fmt_cel!`). A field marked `scale` is filled by kro and
    /// given `Value::Unset`; an `Option` field may be left unset.
    ///
    /// ```
    /// use kro_compose::k8s::api::core::v1::ConfigMap;
    /// use kro_compose::{Composition, KroSchema, Template, fmt_cel, instance_name};
    ///
    /// #[derive(KroSchema)]
    /// struct AppSpec {
    ///     color: String,
    /// }
    /// #[derive(KroSchema)]
    /// struct AppStatus {
    ///     config: String,
    /// }
    ///
    /// let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    /// let settings = app.add("settings", ConfigMap::default().with("metadata.name", instance_name()));
    /// app.status(AppStatusValues {
    ///     config: fmt_cel!("{}/{}", settings.metadata().namespace(), settings.metadata().name()).into(),
    /// });
    /// let rgd = app.to_rgd()?;
    /// assert_eq!(
    ///     rgd["spec"]["schema"]["status"]["config"],
    ///     "${settings.metadata.namespace + \"/\" + settings.metadata.name}"
    /// );
    /// # Ok::<(), kro_compose::ComposeError>(())
    /// ```
    pub fn status(&mut self, values: Status::Values) {
        let SchemaType::Object(fields) = Status::schema_type(&mut Types::default()) else {
            return;
        };
        match status_fields(&fields, &values.to_json(), "") {
            Ok(status) => self.status = status,
            Err(mistake) => self.mistakes.push(mistake),
        }
    }
}

/// The RGD's status map for `fields` from the values `given`.
fn status_fields(
    fields: &[Field],
    given: &Json,
    prefix: &str,
) -> Result<Map<String, Json>, Mistake> {
    let mut status = Map::new();
    for field in fields {
        let path = format!("{prefix}{}", field.name);
        let value = given.get(&field.name);
        match &field.ty {
            SchemaType::Object(inner) => {
                let empty = Json::Object(Map::new());
                let nested = status_fields(inner, value.unwrap_or(&empty), &format!("{path}."))?;
                status.insert(field.name.clone(), Json::Object(nested));
            }
            ty if field.markers.scale => {
                if value.is_some() {
                    return Err(Mistake::ScaleStatusGiven { field: path });
                }
                let type_name = ty.name().unwrap_or_else(|| "integer".to_owned());
                status.insert(
                    field.name.clone(),
                    Json::String(format!("{type_name} | scale")),
                );
            }
            _ => match value {
                None if field.markers.required => {
                    return Err(Mistake::StatusMissing { field: path });
                }
                None => {}
                Some(Json::String(expression)) if field.markers.scale_selector => {
                    status.insert(
                        field.name.clone(),
                        Json::String(format!("{expression} | scaleSelector")),
                    );
                }
                // A literal is kept as given: kro's compiler says that status fields are
                // expressions.
                Some(value) => {
                    status.insert(field.name.clone(), value.clone());
                }
            },
        }
    }
    Ok(status)
}
