//! The RGD of the `levels` and `direct` benches: `LEVELS` levels of `WIDTH` ConfigMaps, each
//! depending on one of the level before.

/// Levels of the graph.
pub const LEVELS: usize = 4;
/// ConfigMaps per level.
pub const WIDTH: usize = 5;

/// The RGD (`kind: Layers`) as YAML.
pub fn rgd() -> String {
    let mut yaml = String::from(
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: layers}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Layers\n    spec: {}\n  resources:\n",
    );
    for level in 0..LEVELS {
        for item in 0..WIDTH {
            let id = format!("l{level}i{item}");
            let from = if level == 0 {
                "${schema.metadata.name}".to_owned()
            } else {
                format!("${{l{}i{item}.metadata.name}}", level - 1)
            };
            yaml.push_str(&format!(
                "    - id: {id}\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {{name: \"${{schema.metadata.name + '-{id}'}}\"}}\n        data: {{from: \"{from}\"}}\n"
            ));
        }
    }
    yaml
}
