#!/usr/bin/env bash
# make dev: the whole thing on one machine. Builds (or reuses) the control
# plane, starts it, starts the terdut-server TEST DOUBLE on loopback, installs
# the provider's CRDs, runs the provider out of cluster against the double,
# applies the examples, waits for them to be Ready and shows them. It stays
# up until Ctrl-C; `make dev-down` stops everything from another shell.
#
#   dev.sh up     (make dev)
#   dev.sh down   (make dev-down)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=cluster/local/local.sh
source "$ROOT/cluster/local/local.sh"

PROVIDER_METRICS_PORT=$((18090 + OFF))
PROVIDER_HEALTH_PORT=$((18091 + OFF))

up() {
  local t0=$SECONDS
  cmd_build
  cmd_up
  export KUBECONFIG=$RUN/kubeconfig

  step "provider and terdut-double: building"
  mkdir -p "$RUN/bin"
  (cd "$ROOT" && go build -o "$RUN/bin/provider" ./cmd/provider && go build -o "$RUN/bin/terdut-double" ./cmd/terdut-double)

  rm -f "$RUN/double.url"
  start terdut-double "$RUN/bin/terdut-double" -listen 127.0.0.1:0 -admin-key-file "$RUN/double.key" -addr-file "$RUN/double.url" -users alice,bob
  wait_for terdut-double 10 test -s "$RUN/double.url"
  local url
  url=$(cat "$RUN/double.url")

  step "CRDs: installing package/provider/crds"
  kc apply --server-side -f "$ROOT/package/provider/crds" >/dev/null
  kc wait --for condition=established --timeout=60s -f "$ROOT/package/provider/crds" >/dev/null

  step "ClusterProviderConfig default -> $url (the double)"
  sed -e "s#^  endpoint: .*#  endpoint: $url#" -e "s#^  token: .*#  token: $(cat "$RUN/double.key")#" \
    "$ROOT/examples/providerconfig/clusterproviderconfig.yaml" | kc apply -f - >/dev/null

  start provider "$RUN/bin/provider" --poll=30s \
    --metrics-bind-address="127.0.0.1:$PROVIDER_METRICS_PORT" --health-probe-bind-address="127.0.0.1:$PROVIDER_HEALTH_PORT"

  step "examples: applying examples/terdut"
  kc apply -f "$ROOT/examples/terdut/00-namespace.yaml" >/dev/null
  kc apply -f "$ROOT/examples/terdut" >/dev/null
  step "waiting for the examples to be Ready"
  kc -n team-a wait --for=condition=Ready --timeout=180s team,escalationpolicy,deadmanswitch,integration --all >/dev/null

  step "up in $((SECONDS - t0)) s"
  echo
  echo "\$ kubectl get managed -A"
  kc get managed -A
  cat <<MSG

The control plane, the terdut-server test double ($url) and the provider run
on 127.0.0.1. In another shell:

  export KUBECONFIG=$RUN/kubeconfig
  kubectl get managed -A
  kubectl -n team-a describe integration prod-alertmanager
  curl -s $url/admin/state        # what the double holds

Logs: $RUN/provider.log, $RUN/terdut-double.log
Press Ctrl-C to stop everything (or run 'make dev-down' elsewhere).
MSG
  # Ctrl-C here stops everything; `make dev-down` elsewhere stops this
  # session (SIGTERM) and then everything else.
  echo $$ >"$RUN/dev-session.pid"
  trap 'echo; rm -f "$RUN/dev-session.pid"; cmd_down; exit 0' INT
  trap 'rm -f "$RUN/dev-session.pid"; exit 0' TERM
  while true; do sleep 3600 & wait $!; done
}

case ${1:-} in
up) up ;;
down) cmd_down ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
