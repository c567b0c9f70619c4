#!/usr/bin/env bash
# The Go programs the tests run, built ahead of them.
#
#   scripts/go-tools.sh build    build the control plane (scripts/controlplane.sh build), then
#                                compile every program the tests build from tools/ into the
#                                shared Go build cache (target/controlplane/gocache)
#
# The tests build those programs themselves when they need them (kro-test-support's
# build_go_tool) and this is never required. It only moves the compiling earlier: scripts/test
# runs it in the background while cargo builds the tests, so that on a cold cache the two
# overlap and a test that needs Helm or upstream kro finds its packages compiled and only links.
# Two runs at once take turns (a lock under target/controlplane/).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/target/controlplane"

log() { printf 'go-tools: %s\n' "$*" >&2; }

# Module under tools/ and the package its tests build: keep in step with the build_go_tool
# calls (a package missing here is still built by its test, only later).
PROGRAMS=(
  "helm helm.sh/helm/v3/cmd/helm"
  "kro-v0.9.3 github.com/kubernetes-sigs/kro/cmd/controller"
  "kro-v0.9.4 github.com/kubernetes-sigs/kro/cmd/controller"
  "kro-crd ."
  "kube-protobuf ."
  "flect ."
  "kro-json ."
  "kro-features ."
  "kro-metrics ."
  "kro-hash ."
)

cmd_build() {
  "$ROOT/scripts/controlplane.sh" build
  command -v go >/dev/null 2>&1 || {
    log "go is not installed: nothing to compile ahead"
    return 0
  }
  mkdir -p "$OUT"
  exec 8>"$OUT/go-tools.lock"
  flock 8
  local start=$SECONDS program module package
  export GOENV="${GOENV:-$(go env GOENV)}" XDG_CONFIG_HOME="$OUT/config"
  export GOPATH="$OUT/gopath" GOMODCACHE="$OUT/gopath/pkg/mod" GOCACHE="$OUT/gocache"
  export GOFLAGS="-modcacherw -mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0
  for program in "${PROGRAMS[@]}"; do
    read -r module package <<<"$program"
    log "go build $package (in tools/$module)"
    # With a second package named, go build compiles into the cache and links nothing: the
    # binary is the test's to link and keep.
    (cd "$ROOT/tools/$module" && go build "$package" fmt)
  done
  exec 8>&-
  log "compiled in $((SECONDS - start))s"
}

case "${1:-}" in
  build) cmd_build ;;
  *)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
    ;;
esac
