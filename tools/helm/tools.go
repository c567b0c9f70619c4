//go:build tools

// Package tools pins Helm for the chart's tests: `go build helm.sh/helm/v3/cmd/helm` in this
// module builds the helm command of the version go.mod requires.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
