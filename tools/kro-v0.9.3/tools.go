//go:build tools

// Package tools pins upstream kro v0.9.3 for the migration tests: `go build
// github.com/kubernetes-sigs/kro/cmd/controller` in this module builds upstream's controller
// of the version go.mod requires.
package tools

import _ "github.com/kubernetes-sigs/kro/cmd/controller"
