//! CEL (Common Expression Language) for kro, implemented in Rust with no I/O.
//!
//! Every expression in a ResourceGraphDefinition is CEL: resource templates, `readyWhen`,
//! `includeWhen`, `forEach` and instance status. This crate will own the language end to end.
//!
//! **Owns:** the lexer and parser (positions on every node, bounded depth and size); macro
//! expansion into comprehensions; the type checker (overload resolution, type parameters, object
//! types supplied by the embedder); the interpreter with a cost budget; the standard library;
//! the cel-go extension libraries (strings, lists, encoders, optionals, bindings, two-variable
//! comprehensions), the Kubernetes libraries (quantity, url, regex, ip, cidr, semver, lists) and
//! kro's own functions; conversion between CEL values and JSON.
//!
//! **Must not:** do I/O, read clocks or the environment, or know Kubernetes object types.
