#!/usr/bin/env bash
# make dev: the whole thing on one machine. cluster/local/stackctl (the Go
# package cluster/local/stack, shared with the end-to-end suite) builds and
# starts the control plane, the terdut-server TEST DOUBLE on loopback,
# Crossplane's RBAC manager, installs the provider's package through the
# package manager, applies the ClusterProviderConfig and runs the provider as
# its revision's ServiceAccount; this script
# applies the examples, runs the composition function (mTLS) with the
# Configuration's XRDs and Compositions, claims a TerdutServer (on a second,
# fresh double) and a TerdutTeam, waits for all of it to be Ready and shows
# it. It stays up until Ctrl-C; `make dev-down` stops everything from
# another shell.
#
#   dev.sh up     (make dev)
#   dev.sh down   (make dev-down)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=cluster/local/local.sh
source "$ROOT/cluster/local/local.sh"

up() {
  local t0=$SECONDS
  # NOTE: every session starts from an empty cluster (stack.Up wipes the run
  # directory): the doubles are in memory, so objects kept from an earlier
  # session would point at servers that are gone.
  step "stack: control plane, terdut-double, RBAC manager, the provider's package, ClusterProviderConfig, provider (cluster/local/stack)"
  (cd "$ROOT" && go run ./cluster/local/stackctl up -name dev -offset "$OFF" -- --poll=30s)
  export KUBECONFIG=$RUN/kubeconfig
  local url
  url=$(cat "$RUN/terdut-double.url")

  step "examples: applying examples/terdut"
  kc apply -f "$ROOT/examples/terdut/00-namespace.yaml" >/dev/null
  kc apply -f "$ROOT/examples/terdut" >/dev/null
  step "waiting for the examples to be Ready"
  kc -n team-a wait --for=condition=Ready --timeout=180s team,escalationpolicy,deadmanswitch,integration --all >/dev/null

  cmd_function

  # NOTE: the claim's pod turns Ready on kwok's fake node but runs nothing: the
  # provider reaches a second, fresh double (which the claim's bootstrap
  # ServiceAccount registers on) through the claim's endpoint override.
  rm -f "$RUN/claims.url"
  start terdut-double-claims "$RUN/bin/terdut-double" -listen 127.0.0.1:0 -fresh -addr-file "$RUN/claims.url"
  wait_for terdut-double-claims 10 test -s "$RUN/claims.url"
  local claims_url
  claims_url=$(cat "$RUN/claims.url")
  step "claims: examples/claims as written (TerdutServer, replicas 1; endpoint -> $claims_url)"
  kc apply -f "$ROOT/examples/claims/00-namespaces.yaml" >/dev/null
  sed -e "s#^  replicas: 1\$#  replicas: 1\n  endpoint: $claims_url#" "$ROOT/examples/claims/terdutserver.yaml" | kc apply -f - >/dev/null
  step "waiting for the TerdutServer claim to be Ready (the provider bootstraps the fresh server)"
  kc -n platform-oncall wait --for=condition=Ready --timeout=240s terdutserver/terdut >/dev/null
  # NOTE: only after the bootstrap: a server with a user is no longer fresh.
  curl -fsS -X POST -d '{"username":"alice"}' "$claims_url/admin/users" >/dev/null # the team's policy pages alice
  kc apply -f "$ROOT/examples/claims/terdutteam.yaml" >/dev/null
  step "waiting for the TerdutTeam claim to be Ready"
  kc -n team-a wait --for=condition=Ready --timeout=240s terdutteam/web >/dev/null

  step "up in $((SECONDS - t0)) s"
  echo
  echo "\$ kubectl get terdutserver,terdutteam -A"
  kc get terdutserver,terdutteam -A
  echo
  echo "\$ kubectl get deploy -n platform-oncall"
  kc get deploy -n platform-oncall
  echo
  echo "\$ kubectl get managed -A"
  kc get managed -A
  cat <<MSG

The control plane, the terdut-server test double ($url) and the provider run
on 127.0.0.1. In another shell:

  export KUBECONFIG=$RUN/kubeconfig
  kubectl get managed -A
  kubectl -n team-a describe integration prod-alertmanager
  kubectl -n team-a describe terdutteam web
  curl -s $url/admin/state        # what the double holds
  curl -s $claims_url/admin/state      # what the claims' server (a second double) holds

The provider runs as its revision's ServiceAccount (kubeconfig $RUN/provider.kubeconfig).
Logs: $RUN/provider.log, $RUN/terdut-double.log, $RUN/function.log, $RUN/rbac-manager.log
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
