//! Any JSON object as a template, and [`ObjectRef`]: references into an object of any kind
//! (by path, and its metadata). Above both [`template`](crate::template) and the generated
//! [`k8s`](crate::k8s) kinds, whose `ObjectMetaRef` it hands out.

use serde_json::Value as Json;

use crate::k8s::apimachinery::pkg::apis::meta::v1::ObjectMetaRef;
use crate::reference::{FromPath, Ref};
use crate::template::{Template, TemplateError};

impl Template for Json {
    type Ref = ObjectRef;

    fn to_template(&self) -> Result<Json, TemplateError> {
        Ok(self.clone())
    }
}

/// References into an object of any kind: by path, and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    path: String,
}

impl FromPath for ObjectRef {
    fn from_path(path: String) -> Self {
        ObjectRef { path }
    }
}

impl ObjectRef {
    /// A reference to the field at `path` (`status.readyReplicas`), of the type given.
    ///
    /// ```
    /// # use kro_compose::{FromPath, ObjectRef};
    /// let bucket = ObjectRef::from_path("bucket".to_owned());
    /// assert_eq!(bucket.path::<String>("status.url").expression(), "bucket.status.url");
    /// ```
    pub fn path<T>(&self, path: &str) -> Ref<T> {
        Ref::raw_path(format!("{}.{path}", self.path))
    }

    /// `metadata`.
    ///
    /// ```
    /// # use kro_compose::{FromPath, ObjectRef};
    /// let bucket = ObjectRef::from_path("bucket".to_owned());
    /// assert_eq!(bucket.metadata().name().expression(), "bucket.metadata.name");
    /// ```
    pub fn metadata(&self) -> ObjectMetaRef {
        FromPath::from_path(format!("{}.metadata", self.path))
    }
}
