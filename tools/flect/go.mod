// Pins github.com/gobuffalo/flect, the inflection library upstream kro names generated CRDs
// with (plural = flect.Pluralize(lower(kind))), for kro-graph's differential plural test.
module github.com/kro-rs/kro/tools/flect

go 1.23.0

require github.com/gobuffalo/flect v1.0.3
