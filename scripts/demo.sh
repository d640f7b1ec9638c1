#!/bin/sh
# The README's first command: set up, build, start the embedded API server, apply the example
# CRD, run examples/01-minimal/example.cpp with `kopf run`, create the example object with
# kubectl, show the handler's log line and the resulting status, then stop everything started.
set -eu
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset default
# Only what the demo runs: libkopf, the `kopf` command and the embedded API server.
cmake --build --preset default --target kopf_cli

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kopf-demo-XXXXXX")
APISERVER_PID=""
OPERATOR_PID=""
cleanup() {
    if [ -n "$OPERATOR_PID" ]; then kill -TERM "$OPERATOR_PID" 2>/dev/null || true; fi
    if [ -n "$OPERATOR_PID" ]; then wait "$OPERATOR_PID" 2>/dev/null || true; fi
    if [ -n "$APISERVER_PID" ]; then kill -TERM "$APISERVER_PID" 2>/dev/null || true; fi
    if [ -n "$APISERVER_PID" ]; then wait "$APISERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for FILE TEXT SECONDS: until FILE contains TEXT; fails (showing FILE) on timeout.
wait_for() {
    i=0
    while ! grep -qF "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt $(($3 * 10)) ]; then
            echo "demo: timed out waiting for '$2' in $1:" >&2
            cat "$1" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
}

echo "==> Starting the embedded API server"
build/bin/kopf apiserver --port 0 --kubeconfig-out "$WORK/kubeconfig" >"$WORK/apiserver.log" 2>&1 &
APISERVER_PID=$!
wait_for "$WORK/apiserver.log" "serving on" 30
export KUBECONFIG="$WORK/kubeconfig"
export KOPF_CACHE_DIR="$WORK/cache"

echo "==> kubectl apply -f examples/crd.yaml"
kubectl apply -f examples/crd.yaml

echo "==> kopf run examples/01-minimal/example.cpp -n default --verbose"
build/bin/kopf run examples/01-minimal/example.cpp -n default --verbose >"$WORK/operator.log" 2>&1 &
OPERATOR_PID=$!
wait_for "$WORK/operator.log" "Serving resource kopfexamples.v1.kopf.dev" 180

echo "==> kubectl apply -f examples/obj.yaml"
kubectl apply -f examples/obj.yaml
wait_for "$WORK/operator.log" "Handler 'create_fn' succeeded." 60
wait_for "$WORK/operator.log" "Handling cycle is finished" 30

echo "==> The handler's log line:"
grep -F "And here we are!" "$WORK/operator.log"
echo "==> The resulting status (kubectl get kex kopf-example-1 -o jsonpath='{.status}'):"
kubectl get kex kopf-example-1 -o jsonpath='{.status}'
echo

echo "==> kubectl delete -f examples/obj.yaml"
kubectl delete -f examples/obj.yaml
wait_for "$WORK/operator.log" "Deleted, really deleted, and we are notified." 30

echo "==> Stopping the operator and the API server"
kill -TERM "$OPERATOR_PID"
wait "$OPERATOR_PID" && status=0 || status=$?
OPERATOR_PID=""
tail -n 2 "$WORK/operator.log"
echo "kopf run exited with status $status"
