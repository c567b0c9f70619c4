#!/usr/bin/env bash
# A real Kubernetes control plane for tests: etcd + kube-apiserver, built from Go modules.
#
#   scripts/controlplane.sh build          build both binaries into target/controlplane/bin
#                                           (skipped when they exist and match the pinned versions)
#   scripts/controlplane.sh start          start a control plane (builds first if needed); the
#                                           last line of stdout is the path of its kubeconfig
#   scripts/controlplane.sh stop [WHICH]   stop a control plane and remove its temporary directory
#   scripts/controlplane.sh stop --all     stop every control plane started from this checkout
#   scripts/controlplane.sh env [WHICH]    print KUBECONFIG=... for a running control plane
#   scripts/controlplane.sh restart-apiserver [WHICH] [DOWN]
#                                           kill -9 kube-apiserver, wait DOWN seconds (default 0),
#                                           start it again on the same port (etcd keeps running)
#   scripts/controlplane.sh status         list the control planes started from this checkout
#
# WHICH is the kubeconfig path that `start` printed, the instance directory, or its name
# (kro-controlplane.XXXXXX); without it, the most recently started control plane is meant.
#
# The versions are pinned by the Go modules under tools/controlplane/ (see docs/testing.md).
# Everything the build writes (module cache, build cache, binaries) stays under
# target/controlplane/; a running control plane lives in a `mktemp -d` directory (certificates,
# etcd data, logs, kubeconfig) and is recorded in target/controlplane/run/ so that `stop` ends
# exactly the processes that `start` began.
#
# Environment:
#   KRO_CONTROLPLANE_TIMEOUT  seconds `start` waits for each component to be ready (default 60)
#   KRO_CONTROLPLANE_AUDIT    `1`: `start` turns on kube-apiserver's audit log, one JSON line per
#                             request stage at level Metadata (user agent, verb, resource), in
#                             audit.log beside the kubeconfig; kube-apiserver's own loopback
#                             requests are left out (the versus bench counts requests with it)
#   TMPDIR                    where the instance directories are created (default /tmp)
#   GOPROXY etc.              honoured by `build`; the Go module proxy must be reachable on a cold build
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS="$ROOT/tools/controlplane"
OUT="$ROOT/target/controlplane"
BIN="$OUT/bin"
RUN="$OUT/run"
STAMP="$BIN/versions.stamp"
# Bump when the way the binaries are built changes (flags, ldflags), to force a rebuild.
RECIPE=1
TIMEOUT=${KRO_CONTROLPLANE_TIMEOUT:-60}

log() { printf 'controlplane: %s\n' "$*" >&2; }
die() {
  printf 'controlplane: error: %s\n' "$*" >&2
  exit 1
}
require() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not installed ($2)"
}
usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
  exit 2
}

# The version a go.mod requires of a module (the `require` line, not a `replace` line).
required_version() {
  awk -v m="$2" '$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }' "$1"
}

KUBE_VERSION=$(required_version "$TOOLS/kube-apiserver/go.mod" k8s.io/kubernetes)
ETCD_VERSION=$(required_version "$TOOLS/etcd/go.mod" go.etcd.io/etcd/server/v3)
[ -n "$KUBE_VERSION" ] || die "no k8s.io/kubernetes requirement in tools/controlplane/kube-apiserver/go.mod"
[ -n "$ETCD_VERSION" ] || die "no go.etcd.io/etcd/server/v3 requirement in tools/controlplane/etcd/go.mod"

# ---------------------------------------------------------------------------------------------
# build

# What the binaries were built from: the pinned versions and every go.mod/go.sum line.
wanted_stamp() {
  printf 'kube-apiserver %s\netcd %s\nrecipe %s\n' "$KUBE_VERSION" "$ETCD_VERSION" "$RECIPE"
  cat "$TOOLS/kube-apiserver/go.mod" "$TOOLS/kube-apiserver/go.sum" \
    "$TOOLS/etcd/go.mod" "$TOOLS/etcd/go.sum" | sha256 | cut -d' ' -f1
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi
}

binaries_fresh() {
  [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ] && [ -f "$STAMP" ] &&
    [ "$(cat "$STAMP")" = "$(wanted_stamp)" ]
}

go_build() { # module-dir output package [ldflags]
  local dir=$1 out=$2 pkg=$3 ldflags=${4:-}
  log "go build $pkg (in tools/controlplane/$(basename "$dir"))"
  (
    cd "$dir"
    # Keep every byte the Go tool writes under target/controlplane: module and build caches,
    # and (through XDG_CONFIG_HOME) its telemetry counters, while still reading the user's
    # `go env -w` settings (GOPROXY and so on). -modcacherw so that `rm -rf target` (or
    # cargo clean) can delete the module cache.
    export GOENV="${GOENV:-$(go env GOENV)}" XDG_CONFIG_HOME="$OUT/config"
    export GOPATH="$OUT/gopath" GOMODCACHE="$OUT/gopath/pkg/mod" GOCACHE="$OUT/gocache"
    export GOFLAGS="-modcacherw -mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0
    go build -o "$out.tmp" -ldflags "-s -w $ldflags" "$pkg"
  )
  mv -f "$out.tmp" "$out"
}

cmd_build() {
  mkdir -p "$BIN"
  if binaries_fresh; then
    log "kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION are built ($BIN)"
    return 0
  fi
  # Two callers building at once (say, two test binaries) would race on the output files.
  require flock "util-linux"
  exec 9>"$OUT/build.lock"
  flock 9
  if ! binaries_fresh; then
    build_binaries
  else
    log "kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION are built ($BIN)"
  fi
  # Close the lock so that the daemons `start` spawns do not inherit it.
  exec 9>&-
}

build_binaries() {
  require go "install Go 1.24 or newer from https://go.dev/dl/; the build fetches modules from the Go module proxy"
  log "building kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION with $(go version)"
  log "a cold build downloads ~600 MB of Go modules and compiles for several minutes"
  rm -f "$STAMP"
  local start=$SECONDS
  local v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version minor
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  # What the Kubernetes release build stamps (hack/lib/version.sh), so that /version and
  # `kube-apiserver --version` report the real release rather than v0.0.0-master.
  local kube_ldflags="-X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor"
  kube_ldflags+=" -X $cv.gitVersion=$KUBE_VERSION -X $cv.gitMajor=1 -X $cv.gitMinor=$minor"
  go_build "$TOOLS/etcd" "$BIN/etcd" go.etcd.io/etcd/server/v3
  go_build "$TOOLS/kube-apiserver" "$BIN/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver \
    "$kube_ldflags"
  wanted_stamp >"$STAMP"
  log "built in $((SECONDS - start))s: $("$BIN/etcd" --version | head -1), kube-apiserver $("$BIN/kube-apiserver" --version | cut -d' ' -f2)"
}

# ---------------------------------------------------------------------------------------------
# process bookkeeping

linux_only() {
  [ -r /proc/self/stat ] || die "start/stop/env/status need Linux (/proc); build works anywhere"
}

# Field 22 of /proc/PID/stat: the start time in clock ticks since boot. A PID together with its
# start time names one process, even after the PID has been reused.
proc_start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # The command name (field 2) may contain spaces; count fields after its closing paren.
  stat=${stat##*) }
  echo "$stat" | cut -d' ' -f20
}

# Whether PID is still the process recorded as (PID, START, EXE) and has not exited.
same_process() {
  local pid=$1 start=$2 exe=$3 now state
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  now=$(proc_start_time "$pid") || return 1
  [ "$now" = "$start" ] || return 1
  # An exited process that nobody reaped yet (a zombie) counts as gone.
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null)
  [ "$state" != Z ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]
}

# Start a daemon in its own session, detached from our stdout so that a caller reading `start`
# through a pipe sees EOF, and print "PID START".
spawn() { # logfile exe args...
  local logfile=$1 exe=$2
  shift 2
  setsid "$exe" "$@" </dev/null >"$logfile" 2>&1 9>&- &
  local pid=$!
  # Wait for the exec so that /proc shows the daemon rather than the forked shell.
  for _ in $(seq 50); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && break
    sleep 0.02
  done
  echo "$pid $(proc_start_time "$pid" || echo 0)"
}

# SIGTERM, then SIGKILL after 10 s; returns once the process is gone.
terminate() { # name pid start exe
  local name=$1 pid=$2 start=$3 exe=$4
  if ! same_process "$pid" "$start" "$exe"; then
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    same_process "$pid" "$start" "$exe" || return 0
    sleep 0.1
  done
  log "$name (pid $pid) did not stop after SIGTERM; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    same_process "$pid" "$start" "$exe" || return 0
    sleep 0.1
  done
  die "$name (pid $pid) is still running"
}

# A free loopback TCP port below the ephemeral range. It can still be taken before the daemon
# binds it; `start` then retries with other ports.
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  die "no free loopback port found"
}

# ---------------------------------------------------------------------------------------------
# certificates

# A CA, a serving certificate for 127.0.0.1/localhost, an admin client certificate in
# system:masters, a service-account key pair and a static token. Own config files rather than
# the system openssl.cnf, and -extfile rather than OpenSSL 3's -copy_extensions, so that any
# OpenSSL 1.1.1+ gives the same result.
gen_certs() { # dir
  local d=$1
  (
    cd "$d"
    umask 077
    quiet() { "$@" 2>openssl.err || { cat openssl.err >&2; exit 1; }; }
    printf '[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n' >req.cnf
    printf '%s\n' "basicConstraints = critical,CA:TRUE" "keyUsage = critical,keyCertSign,cRLSign" \
      "subjectKeyIdentifier = hash" >ca.ext
    quiet openssl req -new -newkey rsa:2048 -nodes -config req.cnf -subj "/CN=kro-test-ca" \
      -keyout ca.key -out ca.csr
    quiet openssl x509 -req -in ca.csr -signkey ca.key -days 3650 -sha256 -extfile ca.ext -out ca.crt
    sign() { # name subject extension-lines...
      local name=$1 subj=$2
      shift 2
      printf '%s\n' "$@" >"$name.ext"
      quiet openssl req -new -newkey rsa:2048 -nodes -config req.cnf -subj "$subj" \
        -keyout "$name.key" -out "$name.csr"
      quiet openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
        -days 3650 -sha256 -extfile "$name.ext" -out "$name.crt"
    }
    sign apiserver "/CN=kube-apiserver" \
      "subjectAltName = IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
      "basicConstraints = critical,CA:FALSE" "keyUsage = critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage = serverAuth"
    sign admin "/O=system:masters/CN=kro-test-admin" \
      "basicConstraints = critical,CA:FALSE" "keyUsage = critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage = clientAuth"
    quiet openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
    quiet openssl pkey -in sa.key -pubout -out sa.pub
    # A bearer token for tools that prefer one: curl -H "Authorization: Bearer $(cat token)".
    openssl rand -hex 24 >token
    printf '%s,kro-test-admin,kro-test-admin,"system:masters"\n' "$(cat token)" >tokens.csv
    rm -f openssl.err req.cnf ./*.ext ./*.csr
  )
}

b64() { base64 | tr -d '\n'; }

write_kubeconfig() { # dir url
  local d=$1 url=$2
  (
    umask 077
    cat >"$d/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kro-test
  cluster:
    server: $url
    certificate-authority-data: $(b64 <"$d/certs/ca.crt")
users:
- name: kro-test-admin
  user:
    client-certificate-data: $(b64 <"$d/certs/admin.crt")
    client-key-data: $(b64 <"$d/certs/admin.key")
contexts:
- name: kro-test
  context:
    cluster: kro-test
    user: kro-test-admin
current-context: kro-test
EOF
  )
}

# ---------------------------------------------------------------------------------------------
# start / stop

# Load a state file into ST_* variables.
load_state() {
  local file=$1 key value
  ST_NAME="" ST_DIR="" ST_KUBECONFIG="" ST_URL=""
  ST_ETCD_PID="" ST_ETCD_START="" ST_APISERVER_PID="" ST_APISERVER_START=""
  ST_ETCD_PORT="" ST_API_PORT=""
  while IFS='=' read -r key value; do
    case $key in
      NAME | DIR | KUBECONFIG | URL | ETCD_PID | ETCD_START | APISERVER_PID | APISERVER_START | ETCD_PORT | API_PORT)
        printf -v "ST_$key" '%s' "$value"
        ;;
    esac
  done <"$file"
}

write_state() { # file
  {
    echo "NAME=$ST_NAME"
    echo "DIR=$ST_DIR"
    echo "KUBECONFIG=$ST_KUBECONFIG"
    echo "URL=$ST_URL"
    echo "ETCD_PID=$ST_ETCD_PID"
    echo "ETCD_START=$ST_ETCD_START"
    echo "APISERVER_PID=$ST_APISERVER_PID"
    echo "APISERVER_START=$ST_APISERVER_START"
    echo "ETCD_PORT=$ST_ETCD_PORT"
    echo "API_PORT=$ST_API_PORT"
  } >"$1.tmp"
  mv -f "$1.tmp" "$1"
}

# Stop what the loaded state records and remove its directory and state file.
teardown() {
  terminate kube-apiserver "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver"
  terminate etcd "$ST_ETCD_PID" "$ST_ETCD_START" "$BIN/etcd"
  # Only ever delete a directory that this script created.
  case $(basename "$ST_DIR") in
    kro-controlplane.*) [ -d "$ST_DIR" ] && rm -rf "$ST_DIR" ;;
  esac
  rm -f "$RUN/$ST_NAME.state"
  if [ "$(cat "$RUN/current" 2>/dev/null)" = "$ST_NAME" ]; then
    rm -f "$RUN/current"
  fi
}

fail_start() {
  local msg=$1 f
  for f in etcd kube-apiserver; do
    if [ -s "$ST_DIR/$f.log" ]; then
      printf '\n--- last lines of %s.log ---\n' "$f" >&2
      tail -n 25 "$ST_DIR/$f.log" >&2
    fi
  done
  teardown
  die "$msg"
}

# Poll until CMD succeeds or the process dies or TIMEOUT passes. Returns 0 when ready, 1 when
# the process exited, 2 on timeout.
wait_until() { # pid start exe cmd...
  local pid=$1 start=$2 exe=$3
  shift 3
  local deadline=$((SECONDS + TIMEOUT))
  while [ $SECONDS -lt $deadline ]; do
    "$@" && return 0
    same_process "$pid" "$start" "$exe" || return 1
    sleep 0.2
  done
  return 2
}

etcd_healthy() {
  curl -sf --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null | grep -q '"health":"true"'
}

apiserver_get() { # path
  curl -sf --max-time 5 -o /dev/null --cacert "$ST_DIR/certs/ca.crt" \
    --cert "$ST_DIR/certs/admin.crt" --key "$ST_DIR/certs/admin.key" "$ST_URL$1" 2>/dev/null
}

# /readyz, then the namespaces that the apiserver's own controllers create shortly afterwards.
apiserver_ready() {
  apiserver_get /readyz && apiserver_get /api/v1/namespaces/default &&
    apiserver_get /api/v1/namespaces/kube-system && apiserver_get /api/v1/namespaces/kube-public
}

# The audit policy of KRO_CONTROLPLANE_AUDIT=1: every request at level Metadata, once its
# response started (watches) and once it completed, except kube-apiserver's own.
write_audit_policy() { # file
  cat >"$1" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
POLICY
}

# Start kube-apiserver on API_PORT against the etcd on ETCD_PORT (ST_DIR, ST_URL set); prints
# "PID START". With an audit policy in ST_DIR (KRO_CONTROLPLANE_AUDIT=1 at start), it logs
# requests to ST_DIR/audit.log, across restarts too.
spawn_apiserver() { # api-port etcd-port
  local api_port=$1 etcd_port=$2
  local audit=()
  if [ -f "$ST_DIR/audit-policy.yaml" ]; then
    audit=(--audit-policy-file="$ST_DIR/audit-policy.yaml" --audit-log-path="$ST_DIR/audit.log"
      --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=0)
  fi
  spawn "$ST_DIR/kube-apiserver.log" "$BIN/kube-apiserver" "${audit[@]}" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 \
    --secure-port="$api_port" \
    --cert-dir="$ST_DIR/certs" \
    --tls-cert-file="$ST_DIR/certs/apiserver.crt" \
    --tls-private-key-file="$ST_DIR/certs/apiserver.key" \
    --client-ca-file="$ST_DIR/certs/ca.crt" \
    --token-auth-file="$ST_DIR/certs/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer="$ST_URL" \
    --service-account-key-file="$ST_DIR/certs/sa.pub" \
    --service-account-signing-key-file="$ST_DIR/certs/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount \
    --profiling=false
}

cmd_start() {
  linux_only
  require openssl "apt-get install openssl"
  require curl "apt-get install curl"
  require setsid "util-linux"
  cmd_build
  mkdir -p "$RUN"
  local t0=$SECONDS
  ST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kro-controlplane.XXXXXX")
  ST_NAME=$(basename "$ST_DIR")
  ST_KUBECONFIG="$ST_DIR/kubeconfig"
  ST_URL="" ST_ETCD_PID="" ST_ETCD_START="" ST_APISERVER_PID="" ST_APISERVER_START=""
  ST_ETCD_PORT="" ST_API_PORT=""
  local state="$RUN/$ST_NAME.state"
  write_state "$state"
  trap 'fail_start "interrupted"' INT TERM

  mkdir -p "$ST_DIR/certs" "$ST_DIR/etcd"
  chmod 700 "$ST_DIR/etcd"
  gen_certs "$ST_DIR/certs" || fail_start "generating certificates with openssl failed"
  if [ "${KRO_CONTROLPLANE_AUDIT:-0}" = 1 ]; then
    write_audit_policy "$ST_DIR/audit-policy.yaml"
  fi

  local rc=1 pid_start etcd_port peer_port api_port
  for _ in 1 2 3; do
    etcd_port=$(free_port) || fail_start "no free loopback port"
    peer_port=$(free_port) || fail_start "no free loopback port"
    [ "$peer_port" != "$etcd_port" ] || continue
    pid_start=$(spawn "$ST_DIR/etcd.log" "$BIN/etcd" \
      --name=kro-test \
      --data-dir="$ST_DIR/etcd" \
      --listen-client-urls="http://127.0.0.1:$etcd_port" \
      --advertise-client-urls="http://127.0.0.1:$etcd_port" \
      --listen-peer-urls="http://127.0.0.1:$peer_port" \
      --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
      --initial-cluster="kro-test=http://127.0.0.1:$peer_port" \
      --unsafe-no-fsync=true \
      --log-level=warn)
    read -r ST_ETCD_PID ST_ETCD_START <<<"$pid_start"
    write_state "$state"
    rc=0
    wait_until "$ST_ETCD_PID" "$ST_ETCD_START" "$BIN/etcd" etcd_healthy "$etcd_port" || rc=$?
    [ $rc -eq 0 ] && break
    [ $rc -eq 2 ] && fail_start "etcd was not healthy after ${TIMEOUT}s"
    grep -q 'address already in use' "$ST_DIR/etcd.log" || fail_start "etcd exited"
    log "etcd: port taken, retrying"
  done
  [ $rc -eq 0 ] || fail_start "etcd could not bind a port"

  for _ in 1 2 3; do
    api_port=$(free_port) || fail_start "no free loopback port"
    ST_URL="https://127.0.0.1:$api_port"
    pid_start=$(spawn_apiserver "$api_port" "$etcd_port")
    read -r ST_APISERVER_PID ST_APISERVER_START <<<"$pid_start"
    write_state "$state"
    rc=0
    wait_until "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver" apiserver_ready || rc=$?
    [ $rc -eq 0 ] && break
    [ $rc -eq 2 ] && fail_start "kube-apiserver was not ready after ${TIMEOUT}s"
    grep -q 'address already in use' "$ST_DIR/kube-apiserver.log" || fail_start "kube-apiserver exited"
    log "kube-apiserver: port taken, retrying"
  done
  [ $rc -eq 0 ] || fail_start "kube-apiserver could not bind a port"

  ST_ETCD_PORT=$etcd_port ST_API_PORT=$api_port
  write_kubeconfig "$ST_DIR" "$ST_URL"
  write_state "$state"
  echo "$ST_NAME" >"$RUN/current"
  trap - INT TERM
  log "ready in $((SECONDS - t0))s: kube-apiserver $KUBE_VERSION at $ST_URL (pid $ST_APISERVER_PID), etcd $ETCD_VERSION at 127.0.0.1:$etcd_port (pid $ST_ETCD_PID), logs in $ST_DIR"
  log "stop it with: scripts/controlplane.sh stop $ST_KUBECONFIG"
  echo "$ST_KUBECONFIG"
}

# The state file meant by WHICH (see the header), or the current one.
find_state() { # [which]
  local which=${1:-} name
  if [ -z "$which" ]; then
    name=$(cat "$RUN/current" 2>/dev/null) || die "no control plane is running (nothing recorded in $RUN)"
  else
    which=${which%/}
    case $which in
      */kubeconfig) which=$(dirname "$which") ;;
    esac
    name=$(basename "$which")
  fi
  [ -f "$RUN/$name.state" ] || die "no control plane named $name is recorded in $RUN"
  echo "$RUN/$name.state"
}

cmd_stop() {
  local state
  if [ "${1:-}" = --all ]; then
    for state in "$RUN"/*.state; do
      [ -f "$state" ] || continue
      load_state "$state"
      teardown
      log "stopped $ST_NAME"
    done
    return 0
  fi
  state=$(find_state "${1:-}")
  load_state "$state"
  teardown
  log "stopped $ST_NAME"
}

# Kill kube-apiserver with SIGKILL (etcd keeps running), wait DOWN seconds, and start it again on
# the same port with the same certificates: what a crashed and restarted apiserver does to its
# clients (broken watches, a fresh watch cache that answers 410 to old resourceVersions).
cmd_restart_apiserver() { # [which] [down-seconds]
  local state
  state=$(find_state "${1:-}")
  load_state "$state"
  [ -n "$ST_API_PORT" ] && [ -n "$ST_ETCD_PORT" ] ||
    die "$ST_NAME was started by an older version of this script (no ports recorded)"
  if same_process "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver"; then
    kill -KILL "$ST_APISERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do
      same_process "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver" || break
      sleep 0.1
    done
  fi
  sleep "${2:-0}"
  local pid_start rc=0
  pid_start=$(spawn_apiserver "$ST_API_PORT" "$ST_ETCD_PORT")
  read -r ST_APISERVER_PID ST_APISERVER_START <<<"$pid_start"
  write_state "$state"
  wait_until "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver" apiserver_ready || rc=$?
  [ $rc -eq 0 ] || die "kube-apiserver of $ST_NAME did not come back (see $ST_DIR/kube-apiserver.log)"
  log "restarted kube-apiserver of $ST_NAME (pid $ST_APISERVER_PID)"
}

cmd_env() {
  local state
  state=$(find_state "${1:-}")
  load_state "$state"
  same_process "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver" ||
    die "the kube-apiserver of $ST_NAME is no longer running (clean up with: $0 stop $ST_NAME)"
  echo "KUBECONFIG=$ST_KUBECONFIG"
}

cmd_status() {
  local state current api etcd
  current=$(cat "$RUN/current" 2>/dev/null || true)
  for state in "$RUN"/*.state; do
    [ -f "$state" ] || continue
    load_state "$state"
    api=stopped etcd=stopped
    same_process "$ST_APISERVER_PID" "$ST_APISERVER_START" "$BIN/kube-apiserver" && api="pid $ST_APISERVER_PID"
    same_process "$ST_ETCD_PID" "$ST_ETCD_START" "$BIN/etcd" && etcd="pid $ST_ETCD_PID"
    printf '%s%s  %s  kube-apiserver: %s  etcd: %s  kubeconfig: %s\n' "$ST_NAME" \
      "$([ "$ST_NAME" = "$current" ] && echo ' (current)')" "$ST_URL" "$api" "$etcd" "$ST_KUBECONFIG"
  done
}

case ${1:-} in
  build) cmd_build ;;
  start) cmd_start ;;
  stop) linux_only && cmd_stop "${2:-}" ;;
  env) linux_only && cmd_env "${2:-}" ;;
  restart-apiserver) linux_only && cmd_restart_apiserver "${2:-}" "${3:-0}" ;;
  status) linux_only && cmd_status ;;
  -h | --help | help) usage ;;
  *) usage ;;
esac
