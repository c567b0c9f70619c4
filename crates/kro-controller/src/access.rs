//! Whether the controller may do what a graph needs with the kinds it uses, asked of the API
//! server with SelfSubjectAccessReviews: an RGD whose kinds the controller's RBAC does not
//! cover says so in its `ControllerReady` condition, instead of being reported ready while its
//! watches are refused.

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::json;

use kro_engine::kinds::ServedKind;

/// The verbs the controller uses on the kinds templates create.
pub(crate) const MANAGED_VERBS: [&str; 6] = ["get", "list", "watch", "create", "patch", "delete"];

/// The verbs the controller uses on the kinds externalRefs read.
pub(crate) const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

fn review_resource() -> ApiResource {
    ApiResource {
        group: "authorization.k8s.io".to_owned(),
        version: "v1".to_owned(),
        api_version: "authorization.k8s.io/v1".to_owned(),
        kind: "SelfSubjectAccessReview".to_owned(),
        plural: "selfsubjectaccessreviews".to_owned(),
    }
}

/// The permissions missing of `needs` (each kind with the verbs needed on it in every
/// namespace), one line per kind: `secrets: list, watch`. Empty when everything is allowed,
/// or when the server does not answer access reviews (then nothing can be said ahead).
///
/// # Errors
/// When a review fails for another reason.
pub(crate) async fn missing_permissions(
    client: &kube::Client,
    needs: &[(&ServedKind, &[&str])],
) -> Result<Vec<String>, kube::Error> {
    let reviews: Api<DynamicObject> = Api::all_with(client.clone(), &review_resource());
    let mut missing = Vec::new();
    for (kind, verbs) in needs {
        let resource = &kind.resource;
        let mut denied = Vec::new();
        for verb in *verbs {
            let review: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "metadata": {},
                "spec": {"resourceAttributes": {
                    "group": resource.group,
                    "resource": resource.plural,
                    "verb": verb,
                }},
            }))
            .map_err(kube::Error::SerdeError)?;
            let answer = match reviews.create(&PostParams::default(), &review).await {
                Ok(answer) => answer,
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 405 => {
                    return Ok(Vec::new());
                }
                Err(error) => return Err(error),
            };
            if answer.data["status"]["allowed"] != true {
                denied.push(*verb);
            }
        }
        if !denied.is_empty() {
            let name = if resource.group.is_empty() {
                resource.plural.clone()
            } else {
                format!("{}.{}", resource.plural, resource.group)
            };
            missing.push(format!("{name}: {}", denied.join(", ")));
        }
    }
    Ok(missing)
}
