#!/usr/bin/env bash
# A real Crossplane v2 control plane on one machine, without containers:
# etcd, kube-apiserver, kube-controller-manager and Crossplane core, built
# once from the Go module proxy into a cache folder and run on 127.0.0.1.
#
#   local.sh build    build (or reuse) the binaries; cold: ~15 minutes
#   local.sh up       start everything; writes $RUN/kubeconfig
#   local.sh down     stop what `up` started (by PID file, nothing else)
#   local.sh status   say what runs
#   local.sh function build and run the composition function (cmd/function)
#                     with mTLS, registered with Crossplane core as the
#                     Function ryuvia-function-terdut, and install the
#                     Configuration's XRDs and Compositions; needs `up`
#   local.sh rbac     start Crossplane's RBAC manager (`crossplane rbac start`):
#                     it gives each installed provider revision its
#                     ClusterRoles and binds them to the revision's
#                     ServiceAccount; needs `up`. NOTE: it serves metrics on
#                     :8080 (no flag moves it), so one stack per machine
#                     runs it
#   local.sh path X   print the cached binary X (crank, crossplane, ...)
#
# Environment:
#   PROVIDER_TERDUT_CACHE  cache folder (default ~/.cache/provider-terdut)
#   TERDUT_RUN_DIR         state of one instance (default $CACHE/run/dev)
#   TERDUT_PORT_OFFSET     added to every port, to run two instances (default 0)
set -euo pipefail

CACHE=${PROVIDER_TERDUT_CACHE:-$HOME/.cache/provider-terdut}
BIN=$CACHE/bin
SRC=$CACHE/src
RUN=${TERDUT_RUN_DIR:-$CACHE/run/dev}
OFF=${TERDUT_PORT_OFFSET:-0}

ETCD_V=v3.6.5
K8S_V=v1.35.4
K8S_STAGING_V=v0.35.4
XP_V=v2.4.0
CRANK_V=v2.2.0
REGISTRY_V=v0.21.8
ALERTMANAGER_V=v0.35.0

ETCD=$BIN/etcd-$ETCD_V
APISERVER=$BIN/kube-apiserver-$K8S_V
KCM=$BIN/kube-controller-manager-$K8S_V
CROSSPLANE=$BIN/crossplane-$XP_V
CRANK=$BIN/crank-$CRANK_V
REGISTRY=$BIN/registry-$REGISTRY_V
ALERTMANAGER=$BIN/alertmanager-$ALERTMANAGER_V

ETCD_PORT=$((12379 + OFF))
ETCD_PEER_PORT=$((12380 + OFF))
API_PORT=$((16443 + OFF))
KCM_PORT=$((10257 + OFF))
XP_METRICS_PORT=$((18080 + OFF))
XP_HEALTH_PORT=$((18081 + OFF))
XP_WEBHOOK_PORT=$((19443 + OFF))
FN_PORT=$((19444 + OFF))

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The name Crossplane gives the Function of the Configuration's dependency
# xpkg.example.com/ryuvia/function-terdut; the Compositions refer to it.
FN_NAME=ryuvia-function-terdut

export GOTOOLCHAIN=local GOFLAGS=-mod=mod

step() { echo "==> [$(date +%H:%M:%S)] $*"; }

# built NAME PATH: true when PATH exists (a rebuild follows a version bump,
# since every binary's name carries its version).
built() {
  if [[ -x $2 ]]; then
    step "$1: cached ($2)"
    return 0
  fi
  return 1
}

gomodcache() { go env GOMODCACHE; }

build_etcd() {
  built etcd "$ETCD" && return
  step "etcd $ETCD_V: building (~1 min cold)"
  local d=$SRC/etcd-$ETCD_V
  mkdir -p "$d"
  cat >"$d/go.mod" <<MOD
module local/etcd

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_V
MOD
  cat >"$d/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$d" && go mod tidy && go build -o "$ETCD.tmp" . && mv "$ETCD.tmp" "$ETCD")
}

build_kube() {
  if [[ -x $APISERVER && -x $KCM ]]; then
    step "kube-apiserver, kube-controller-manager: cached"
    return
  fi
  step "kube-apiserver + kube-controller-manager $K8S_V: building (~6 min cold)"
  local d=$SRC/kubernetes-$K8S_V
  mkdir -p "$d"
  go mod download -json "k8s.io/kubernetes@$K8S_V" >/dev/null
  local kmod
  kmod=$(gomodcache)/cache/download/k8s.io/kubernetes/@v/$K8S_V.mod
  {
    echo "module local/kubernetes"
    echo
    echo "go 1.25"
    echo
    echo "require k8s.io/kubernetes $K8S_V"
    echo
    echo "replace ("
    awk -v v="$K8S_STAGING_V" '$2 == "=>" && $3 ~ /^\.\/staging\// { print "\t" $1 " => " $1 " " v }' "$kmod"
    echo ")"
  } >"$d/go.mod"
  local ld="-X k8s.io/component-base/version.gitVersion=$K8S_V -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35"
  (cd "$d" && go build -ldflags "$ld" -o "$APISERVER.tmp" k8s.io/kubernetes/cmd/kube-apiserver && mv "$APISERVER.tmp" "$APISERVER")
  step "kube-apiserver built; kube-controller-manager next (~1 min)"
  (cd "$d" && go build -ldflags "$ld" -o "$KCM.tmp" k8s.io/kubernetes/cmd/kube-controller-manager && mv "$KCM.tmp" "$KCM")
}

# crossplane_module DIR VERSION: a wrapper module with crossplane/v2's own
# requirements at VERSION, minus its replace of ./apis.
crossplane_module() {
  local d=$1 v=$2
  mkdir -p "$d"
  go mod download -json "github.com/crossplane/crossplane/v2@$v" >/dev/null
  local src
  src=$(gomodcache)/github.com/crossplane/crossplane/v2@$v/go.mod
  sed -e 's#^module .*#module local/crossplane#' \
    -e '/^replace github.com\/crossplane\/crossplane\/apis\/v2 => \.\/apis/d' \
    -e "s#^\(\s*github.com/crossplane/crossplane/apis/v2\) v.*#\1 $XP_V#" \
    "$src" >"$d/go.mod"
  printf '\nrequire github.com/crossplane/crossplane/v2 %s\n' "$v" >>"$d/go.mod"
}

build_crossplane() {
  built "crossplane core $XP_V" "$CROSSPLANE" && return
  step "crossplane core $XP_V: building (~6 min cold)"
  local d=$SRC/crossplane-$XP_V
  crossplane_module "$d" "$XP_V"
  (cd "$d" && go build -ldflags "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$XP_V" \
    -o "$CROSSPLANE.tmp" github.com/crossplane/crossplane/v2/cmd/crossplane && mv "$CROSSPLANE.tmp" "$CROSSPLANE")
}

build_crank() {
  built "crossplane CLI (crank) $CRANK_V" "$CRANK" && return
  step "crossplane CLI (crank) $CRANK_V: building (~2.5 min cold)"
  local d=$SRC/crank-$CRANK_V
  crossplane_module "$d" "$CRANK_V"
  sed -i "s#^\(\s*github.com/crossplane/crossplane/apis/v2\) v.*#\1 $CRANK_V#" "$d/go.mod"
  (cd "$d" && go build -ldflags "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$CRANK_V" \
    -o "$CRANK.tmp" github.com/crossplane/crossplane/v2/cmd/crank && mv "$CRANK.tmp" "$CRANK")
}

build_registry() {
  built "registry $REGISTRY_V" "$REGISTRY" && return
  step "registry $REGISTRY_V: building (seconds)"
  local d
  d=$(mktemp -d)
  GOBIN=$d GOFLAGS= go install "github.com/google/go-containerregistry/cmd/registry@$REGISTRY_V"
  mv "$d/registry" "$REGISTRY"
  rmdir "$d"
}

# build_alertmanager builds a real Alertmanager for the end-to-end suite
# (it reads an Integration's Secret). NOTE: its module carries no built web
# UI (ui/app/dist is made by npm at release time), so it is built from a copy
# of the module source with a placeholder page there; the API is complete.
build_alertmanager() {
  built "alertmanager $ALERTMANAGER_V" "$ALERTMANAGER" && return
  step "alertmanager $ALERTMANAGER_V: building from its Go module (~1 min cold)"
  go mod download -json "github.com/prometheus/alertmanager@$ALERTMANAGER_V" >/dev/null
  local d=$SRC/alertmanager-$ALERTMANAGER_V
  rm -rf "$d"
  cp -r "$(gomodcache)/github.com/prometheus/alertmanager@$ALERTMANAGER_V" "$d"
  chmod -R u+w "$d"
  local ui
  for ui in elm mantine; do
    mkdir -p "$d/ui/app/dist/$ui"
    echo '<html><body>Alertmanager built from its Go module for provider-terdut tests: no web UI; the API works.</body></html>' >"$d/ui/app/dist/$ui/index.html"
  done
  (cd "$d" && go build -ldflags "-X github.com/prometheus/common/version.Version=${ALERTMANAGER_V#v}" \
    -o "$ALERTMANAGER.tmp" ./cmd/alertmanager && mv "$ALERTMANAGER.tmp" "$ALERTMANAGER")
}

cmd_build() {
  mkdir -p "$BIN" "$SRC"
  local t0=$SECONDS
  build_etcd
  build_kube
  build_crossplane
  build_crank
  build_registry
  build_alertmanager
  step "all binaries ready in $BIN ($((SECONDS - t0)) s)"
}

# --- running ---------------------------------------------------------------

# start NAME CMD...: run CMD in the background with a PID file and a log.
start() {
  local name=$1
  shift
  if running "$name"; then
    step "$name: already running (pid $(cat "$RUN/$name.pid"))"
    return
  fi
  nohup "$@" >"$RUN/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
  step "$name: started (pid $!, log $RUN/$name.log)"
}

# running NAME: the PID file's process is alive and is the binary we started.
running() {
  local f=$RUN/$1.pid
  [[ -f $f ]] || return 1
  local pid
  pid=$(cat "$f")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && grep -q "$BIN\|$RUN\|cluster/local/dev.sh" "/proc/$pid/cmdline" 2>/dev/null
}

# wait_for WHAT SECONDS CMD...: retry CMD until it succeeds.
wait_for() {
  local what=$1 limit=$2
  shift 2
  local i
  for ((i = 0; i < limit * 2; i++)); do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  echo "timed out after ${limit}s waiting for $what" >&2
  return 1
}

certs() {
  local c=$RUN/pki
  [[ -f $c/apiserver.crt ]] && return
  mkdir -p "$c"
  step "certificates: a CA, the API server's (SAN 127.0.0.1), service-account keys"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=provider-terdut-local-ca" \
    -keyout "$c/ca.key" -out "$c/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$c/apiserver.key" -out "$c/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$c/ext.cnf"
  openssl x509 -req -in "$c/apiserver.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 3650 \
    -extfile "$c/ext.cnf" -out "$c/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
  local token
  token=$(openssl rand -hex 24)
  echo "$token,admin,admin-uid,\"system:masters\"" >"$c/tokens.csv"
  chmod 600 "$c"/*.key "$c/tokens.csv"
}

kubeconfig() {
  local token
  token=$(cut -d, -f1 "$RUN/pki/tokens.csv")
  cat >"$RUN/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $RUN/pki/ca.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
KC
  chmod 600 "$RUN/kubeconfig"
}

kc() { kubectl --kubeconfig "$RUN/kubeconfig" "$@"; }

# secret_key NAME KEY: the decoded KEY of the Secret crossplane-system/NAME.
secret_key() { kc -n crossplane-system get secret "$1" -o "jsonpath={.data.${2//./\\.}}" | base64 -d; }

cmd_up() {
  for b in "$ETCD" "$APISERVER" "$KCM" "$CROSSPLANE"; do
    [[ -x $b ]] || { echo "$b is missing: run '$0 build' first" >&2; exit 1; }
  done
  mkdir -p "$RUN"
  certs
  kubeconfig

  start etcd "$ETCD" --name local --data-dir "$RUN/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --listen-metrics-urls ""
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

  start kube-apiserver "$APISERVER" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --tls-cert-file "$RUN/pki/apiserver.crt" --tls-private-key-file "$RUN/pki/apiserver.key" \
    --client-ca-file "$RUN/pki/ca.crt" --token-auth-file "$RUN/pki/tokens.csv" \
    --authorization-mode RBAC --service-account-issuer "https://127.0.0.1:$API_PORT" \
    --service-account-key-file "$RUN/pki/sa.pub" --service-account-signing-key-file "$RUN/pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
    --disable-admission-plugins ServiceAccount --endpoint-reconciler-type none
  wait_for kube-apiserver 60 kc get --raw /readyz

  start kube-controller-manager "$KCM" --kubeconfig "$RUN/kubeconfig" \
    --authentication-kubeconfig "$RUN/kubeconfig" --authorization-kubeconfig "$RUN/kubeconfig" \
    --controllers garbagecollector,namespace,deployment,replicaset --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --use-service-account-credentials=false

  step "crossplane core init (CRDs, TLS secrets)"
  kc get namespace crossplane-system >/dev/null 2>&1 || kc create namespace crossplane-system >/dev/null
  local crds
  crds=$(gomodcache)/github.com/crossplane/crossplane/v2@$XP_V/cluster/crds
  [[ -d $crds ]] || go mod download "github.com/crossplane/crossplane/v2@$XP_V"
  local i
  for i in 1 2 3 4 5 6; do
    if KUBECONFIG=$RUN/kubeconfig "$CROSSPLANE" core init --cr-ds-path="$crds" --enable-webhooks=false \
      --namespace=crossplane-system --tlsca-secret-name=crossplane-root-ca \
      --tls-client-secret-name=crossplane-tls-client --tls-server-secret-name=crossplane-tls-server \
      >"$RUN/crossplane-init.log" 2>&1; then
      break
    fi
    [[ $i == 6 ]] && { cat "$RUN/crossplane-init.log" >&2; exit 1; }
    sleep 2 # "no matches for kind Lock" while CRDs settle
  done
  mkdir -p "$RUN/crossplane-tls-client" "$RUN/xpkg-cache" "$RUN/xfn-cache"
  local k
  for k in ca.crt tls.crt tls.key; do
    secret_key crossplane-tls-client "$k" >"$RUN/crossplane-tls-client/$k" 2>/dev/null || true
  done
  chmod 600 "$RUN/crossplane-tls-client/tls.key"

  # NOTE: crossplane core binds its metrics, health and webhook ports on all
  # interfaces (it has no flag for the host); webhooks are off.
  start crossplane env KUBECONFIG="$RUN/kubeconfig" "$CROSSPLANE" core start --namespace=crossplane-system \
    --enable-webhooks=false --package-runtime=External --tls-client-certs-dir="$RUN/crossplane-tls-client" \
    --xpkg-cache-dir="$RUN/xpkg-cache" --xfn-cache-dir="$RUN/xfn-cache" \
    --metrics-port="$XP_METRICS_PORT" --health-probe-port="$XP_HEALTH_PORT" --webhook-port="$XP_WEBHOOK_PORT" \
    --poll-interval=10s
  wait_for "crossplane core" 90 curl -fsS "http://127.0.0.1:$XP_HEALTH_PORT/healthz"
  step "control plane up: export KUBECONFIG=$RUN/kubeconfig"
}

# cmd_rbac starts Crossplane's RBAC manager, as a Crossplane install does
# (its own Deployment there).
cmd_rbac() {
  start rbac-manager env KUBECONFIG="$RUN/kubeconfig" "$CROSSPLANE" rbac start --poll-interval=10s
  # NOTE: it says nothing when it is up (without --debug); what it does is
  # seen in the ClusterRoles it makes. It exits at once if it cannot start
  # (:8080 taken).
  sleep 2
  running rbac-manager || { cat "$RUN/rbac-manager.log" >&2; echo "the RBAC manager exited" >&2; return 1; }
}

# cmd_function runs cmd/function as Crossplane core's composition function.
# Core dials functions only with mTLS, at the endpoint of an Active
# FunctionRevision: the function gets a server certificate from core's own
# CA (the Secret crossplane-root-ca), and the FunctionRevision is made by
# hand, paused (nothing pulls an image), with the endpoint in its status.
cmd_function() {
  local dir=$RUN/function-tls
  step "composition function: building cmd/function"
  mkdir -p "$RUN/bin" "$dir"
  (cd "$ROOT" && go build -o "$RUN/bin/function" ./cmd/function)

  step "composition function: server certificate for 127.0.0.1 from crossplane-root-ca"
  local k
  for k in tls.crt tls.key; do
    secret_key crossplane-root-ca "$k" >"$dir/ca-$k"
  done
  chmod 600 "$dir/ca-tls.key"
  mv "$dir/ca-tls.crt" "$dir/ca.crt"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$FN_NAME" \
    -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca-tls.key" -CAcreateserial -days 30 \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n') -out "$dir/tls.crt" 2>/dev/null
  rm -f "$dir/ca-tls.key" "$dir/tls.csr" "$dir/ca.srl"
  chmod 600 "$dir/tls.key"

  start function "$RUN/bin/function" --address "127.0.0.1:$FN_PORT" --tls-server-certs-dir "$dir"
  wait_for "the composition function" 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$FN_PORT"

  step "FunctionRevision $FN_NAME -> 127.0.0.1:$FN_PORT"
  kc apply -f - >/dev/null <<YAML
apiVersion: pkg.crossplane.io/v1
kind: FunctionRevision
metadata:
  name: $FN_NAME-local
  labels:
    pkg.crossplane.io/package: $FN_NAME
  annotations:
    crossplane.io/paused: "true"
spec:
  desiredState: Active
  image: xpkg.example.com/ryuvia/function-terdut:v0.1.0
  revision: 1
  ignoreCrossplaneConstraints: true
  skipDependencyResolution: true
YAML
  kc patch functionrevision "$FN_NAME-local" --subresource=status --type=merge \
    -p "{\"status\":{\"endpoint\":\"127.0.0.1:$FN_PORT\",\"capabilities\":[\"composition\"]}}" >/dev/null

  step "Configuration: XRDs and Compositions from package/configuration/apis"
  # NOTE: stderr only carries the legacy XRD's deprecation warning, unless
  # the apply fails.
  kc apply -f "$ROOT/package/configuration/apis" >/dev/null 2>"$RUN/configuration.log" ||
    { cat "$RUN/configuration.log" >&2; return 1; }
  kc wait --for condition=established --timeout=120s compositeresourcedefinition --all >/dev/null
  kc wait --for condition=offered --timeout=120s compositeresourcedefinition --all >/dev/null
}

# stop NAME: SIGTERM the PID in NAME's PID file, SIGKILL after 10 s.
stop() {
  local name=$1 f=$RUN/$1.pid
  [[ -f $f ]] || return 0
  if running "$name"; then
    local pid i
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    step "$name: stopped (pid $pid)"
  fi
  rm -f "$f"
}

cmd_down() {
  local n
  # A `make dev` session blocked in another shell: it exits on SIGTERM.
  stop dev-session
  # Anything else that scripts started in this run dir (provider, double).
  for f in "$RUN"/*.pid; do
    [[ -e $f ]] || continue
    n=$(basename "$f" .pid)
    case $n in etcd | kube-apiserver | kube-controller-manager | crossplane | rbac-manager | dev-session) ;; *) stop "$n" ;; esac
  done
  for n in rbac-manager crossplane kube-controller-manager kube-apiserver etcd; do
    stop "$n"
  done
}

cmd_status() {
  local f n
  for f in "$RUN"/*.pid; do
    [[ -e $f ]] || { echo "nothing runs in $RUN"; return; }
    n=$(basename "$f" .pid)
    if running "$n"; then echo "$n: running (pid $(cat "$f"))"; else echo "$n: not running"; fi
  done
}

# Sourced (by dev.sh), only the functions above are wanted.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0

case ${1:-} in
build) cmd_build ;;
up) cmd_up ;;
down) cmd_down ;;
function) cmd_function ;;
rbac) cmd_rbac ;;
status) cmd_status ;;
env) echo "export KUBECONFIG=$RUN/kubeconfig" ;;
path)
  case ${2:-} in
  crank) echo "$CRANK" ;;
  crossplane) echo "$CROSSPLANE" ;;
  etcd) echo "$ETCD" ;;
  kube-apiserver) echo "$APISERVER" ;;
  kube-controller-manager) echo "$KCM" ;;
  registry) echo "$REGISTRY" ;;
  alertmanager) echo "$ALERTMANAGER" ;;
  *) echo "usage: $0 path crank|crossplane|etcd|kube-apiserver|kube-controller-manager|registry|alertmanager" >&2; exit 2 ;;
  esac
  ;;
*)
  echo "usage: $0 build|up|down|function|rbac|status|env|path" >&2
  exit 2
  ;;
esac
