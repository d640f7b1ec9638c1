#!/usr/bin/env bash
# The Kopf++ benchmark suite: one command that builds the optimised tree, starts the embedded
# API server and the benchmark operator as separate processes and measures them.
#
#   bench/run.sh                    # full suite, 3 runs, appends a results table to bench/README.md
#   bench/run.sh --smoke            # N=200, one run, no README (CI: proves the suite still works)
#   bench/run.sh --only create      # one group: rates, apiserver, limit, create, steady, resume, idle,
#                                   # micro, client, daemons, indexing, admission, standby
#
# Options:
#   --smoke                 small sizes, one run, short phases, no README append
#   --only NAME             run one group (repeatable)
#   --runs N                runs per figure; the table shows the median (default 3)
#   --sizes LIST            object counts for the create/idle figures (default 1000,10000,100000)
#   --rates LIST            arrival rates of the rates group, objects/s or "max" (as fast as the
#                           server accepts) (default 100,1000,5000,max)
#   --rate-objects N        objects created, then updated, at each rate (default 10000; at 100/s
#                           that is 100 s of creates and 100 s of updates per CRD)
#   --steady-objects N      objects in the steady-state phase (default 10000)
#   --steady-seconds S      duration of the steady-state phase (default 60)
#   --resume-objects N      objects in the resume phase (default 100000)
#   --daemon-sizes LIST     objects with a daemon each, in the daemons group (default 10000,100000)
#   --index-sizes LIST      indexed objects, in the indexing group (default 10000,100000)
#   --timer-objects N       objects with a 1 s timer each, in the daemons group (default 10000)
#   --timer-seconds S       the timers' measurement window (default 30)
#   --standby-objects N     objects watched by the standby, in the standby group (default 10000)
#   --standby-seconds S     the idle standby's measurement window (default 30)
#   --no-build              use the existing build tree
#   --build-dir DIR         the build tree (default: <repo>/build, the "default" preset)
#   --no-readme             print the table but do not append it to bench/README.md
#   --no-pin                do not pin processes to cores with taskset
#   --operator-args ARGS    more arguments for the benchmark operator's `kopf run` (split at
#                           spaces), e.g. "--metrics=http://127.0.0.1:0/metrics"
#
# Placement (when the machine has >= 2 cores and taskset exists): the API server and the load
# tools on core 0, the operator on core 1 — so the operator's CPU figures are its own. For the
# API-server figures the server gets core 0 and the load client core 1; for the client figures
# the client tool gets core 1. The daemons group's tool (core 0) starts the operator itself, on
# core 1.
# Every figure is printed as "figure: <name> = <value> <unit>"; tests/integration/bench checks
# that each one appears (never its value).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARGUMENTS="$*"
BUILD_DIR="$ROOT/build"
SMOKE=0
BUILD=1
README_APPEND=1
PIN=1
RUNS=3
SIZES="1000,10000,100000"
RATES="100,1000,5000,max"
RATE_OBJECTS=10000
STEADY_OBJECTS=10000
STEADY_SECONDS=60
RESUME_OBJECTS=100000
DAEMON_SIZES="10000,100000"
INDEX_SIZES="10000,100000"
TIMER_OBJECTS=10000
TIMER_SECONDS=30
STANDBY_OBJECTS=10000
STANDBY_SECONDS=30
ONLY=()
OPERATOR_ARGS=()

usage() { sed -n '2,41p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
# Fails the whole run, also from inside $(...) subshells (their exit alone would be ignored).
fail() {
    echo "bench/run.sh: $*" >&2
    [[ $BASHPID != "$$" ]] && kill -TERM $$
    exit 1
}
trap 'exit 1' TERM INT
need_value() { [[ $# -ge 2 && -n "$2" ]] || fail "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --smoke) SMOKE=1; shift ;;
        --only) need_value "$@"; ONLY+=("$2"); shift 2 ;;
        --runs) need_value "$@"; RUNS=$2; shift 2 ;;
        --sizes) need_value "$@"; SIZES=$2; shift 2 ;;
        --rates) need_value "$@"; RATES=$2; shift 2 ;;
        --rate-objects) need_value "$@"; RATE_OBJECTS=$2; shift 2 ;;
        --steady-objects) need_value "$@"; STEADY_OBJECTS=$2; shift 2 ;;
        --steady-seconds) need_value "$@"; STEADY_SECONDS=$2; shift 2 ;;
        --resume-objects) need_value "$@"; RESUME_OBJECTS=$2; shift 2 ;;
        --daemon-sizes) need_value "$@"; DAEMON_SIZES=$2; shift 2 ;;
        --index-sizes) need_value "$@"; INDEX_SIZES=$2; shift 2 ;;
        --timer-objects) need_value "$@"; TIMER_OBJECTS=$2; shift 2 ;;
        --timer-seconds) need_value "$@"; TIMER_SECONDS=$2; shift 2 ;;
        --standby-objects) need_value "$@"; STANDBY_OBJECTS=$2; shift 2 ;;
        --standby-seconds) need_value "$@"; STANDBY_SECONDS=$2; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --build-dir) need_value "$@"; BUILD_DIR=$(cd "$2" && pwd); shift 2 ;;
        --no-readme) README_APPEND=0; shift ;;
        --no-pin) PIN=0; shift ;;
        --operator-args) need_value "$@"; read -ra OPERATOR_ARGS <<<"$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) fail "unknown option '$1' (see --help)" ;;
    esac
done

# The benchmark operator's settings.queueing.idle_timeout: its objects' workers exit this long
# after their last event, and the create and rates figures wait for that exit.
OPERATOR_IDLE_TIMEOUT=5
IDLE_WINDOW=0.5  # wait_idle's quiet windows, seconds
if [[ $SMOKE == 1 ]]; then
    RATES="1000,max"; RATE_OBJECTS=200; OPERATOR_IDLE_TIMEOUT=0.5; IDLE_WINDOW=0.25
    RUNS=1; SIZES=200; STEADY_OBJECTS=200; STEADY_SECONDS=3; RESUME_OBJECTS=200; README_APPEND=0
    DAEMON_SIZES=200; TIMER_OBJECTS=200; TIMER_SECONDS=3; INDEX_SIZES=200
    STANDBY_OBJECTS=200; STANDBY_SECONDS=2
fi
GROUPS_ALL=(rates apiserver limit create steady resume idle micro client daemons indexing admission standby)
for name in "${ONLY[@]}"; do
    [[ " ${GROUPS_ALL[*]} " == *" $name "* ]] || fail "unknown group '$name' (one of: ${GROUPS_ALL[*]})"
done
for value in "$RUNS" "$STEADY_OBJECTS" "$STEADY_SECONDS" "$RESUME_OBJECTS" ${SIZES//,/ } \
    "$TIMER_OBJECTS" "$TIMER_SECONDS" ${DAEMON_SIZES//,/ } ${INDEX_SIZES//,/ } "$STANDBY_OBJECTS" \
    "$STANDBY_SECONDS" "$RATE_OBJECTS"; do
    [[ "$value" =~ ^[1-9][0-9]*$ ]] || fail "'$value' is not a positive integer"
done
for value in ${RATES//,/ }; do
    [[ "$value" =~ ^[1-9][0-9]*$ || $value == max ]] || fail "'$value' in --rates is neither a positive integer nor 'max'"
done
wanted() {
    [[ ${#ONLY[@]} -eq 0 ]] && return 0
    local name; for name in "${ONLY[@]}"; do [[ $name == "$1" ]] && return 0; done; return 1
}

# --- build -------------------------------------------------------------------------------
TARGETS=(kopf_cli operator_load apiserver_load micro_bench client_load handler_client_load daemons_load
    admission_load)
if [[ $BUILD == 1 ]]; then
    [[ $BUILD_DIR == "$ROOT/build" ]] || fail "--build-dir needs --no-build (the preset builds <repo>/build)"
    (cd "$ROOT" && cmake --preset default >/dev/null && cmake --build --preset default --target "${TARGETS[@]}")
fi
KOPF="$BUILD_DIR/bin/kopf"
OPERATOR_LOAD="$BUILD_DIR/bench/operator_load"
APISERVER_LOAD="$BUILD_DIR/bench/apiserver_load"
MICRO_BENCH="$BUILD_DIR/bench/micro_bench"
CLIENT_LOAD="$BUILD_DIR/bench/client_load"
HANDLER_CLIENT_LOAD="$BUILD_DIR/bench/handler_client_load"
DAEMONS_LOAD="$BUILD_DIR/bench/daemons_load"
ADMISSION_LOAD="$BUILD_DIR/bench/admission_load"
for tool in "$KOPF" "$OPERATOR_LOAD" "$APISERVER_LOAD" "$MICRO_BENCH" "$CLIENT_LOAD" "$HANDLER_CLIENT_LOAD" \
    "$DAEMONS_LOAD" "$ADMISSION_LOAD"; do
    [[ -x $tool ]] || fail "$tool is missing: build it (bench/run.sh without --no-build)"
done
OPERATOR_SOURCE="$ROOT/bench/operators/bench_operator.cpp"
DAEMONS_OPERATOR_SOURCE="$ROOT/bench/operators/daemons_operator.cpp"
INDEXING_OPERATOR_SOURCE="$ROOT/bench/operators/indexing_operator.cpp"
TIMERS_OPERATOR_SOURCE="$ROOT/bench/operators/timers_operator.cpp"
ADMISSION_OPERATOR_SOURCE="$ROOT/bench/operators/admission_operator.cpp"

# --- processes -----------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kopf-bench.XXXXXX")
export KOPF_CACHE_DIR="$BUILD_DIR/bench/plugin-cache"  # compile the operator once
export KOPF_PLUGIN_CXXFLAGS="-O2"
STARTED_PIDS=()
cleanup() {
    local pid
    for pid in "${STARTED_PIDS[@]}"; do stop_process "$pid"; done
    rm -rf "$WORK"
}
trap cleanup EXIT

CORES=$(nproc)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
# Command prefixes that pin a process to a core; empty when pinning is off or impossible.
# (A prefix, not a function: `prefix cmd &` execs cmd, so $! is the process measured.)
PIN_CORE0=()
PIN_CORE1=()
OPERATOR_CPU=()  # for daemons_load, which starts the operator itself
if [[ $PIN == 1 && $CORES -ge 2 ]] && command -v taskset >/dev/null; then
    PIN_CORE0=(taskset -c 0)
    PIN_CORE1=(taskset -c 1)
    OPERATOR_CPU=(--operator-cpu 1)
fi
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() {  # utime + stime of a process, in clock ticks
    local stat; stat=$(<"/proc/$1/stat"); stat=${stat##*) }
    local fields; read -ra fields <<<"$stat"; echo $(( fields[11] + fields[12] ))
}
proc_kb() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }
now_us() { date +%s%6N; }
seconds_between_us() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e6 }'; }

# Waits until the process used < 2 ticks of CPU in each of two consecutive windows of
# $IDLE_WINDOW s (0.5; the smoke run, which measures nothing, 0.25); prints the wall-clock µs
# when the quiet period began.
wait_idle() {
    local pid=$1 timeout=${2:-900} quiet=0 before after since=0 start; start=$(date +%s)
    before=$(cpu_ticks "$pid")
    while true; do
        local sample_at; sample_at=$(now_us)
        sleep "$IDLE_WINDOW"
        kill -0 "$pid" 2>/dev/null || fail "process $pid exited while the benchmark waited for it"
        after=$(cpu_ticks "$pid")
        if (( after - before < 2 )); then
            (( quiet == 0 )) && since=$sample_at
            quiet=$((quiet + 1))
            (( quiet >= 2 )) && { echo "$since"; return 0; }
        else
            quiet=0
        fi
        before=$after
        (( $(date +%s) - start < timeout )) || fail "process $pid did not become idle in ${timeout} s"
    done
}

SERVER_PID=""
SERVER_URL=""
start_server() {
    local log="$WORK/server.log"
    : >"$log"
    "${PIN_CORE0[@]}" "$KOPF" apiserver --port 0 --kubeconfig-out "$WORK/kubeconfig" >"$log" 2>&1 &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    local _
    for _ in $(seq 200); do
        SERVER_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)
        [[ -n $SERVER_URL && -s $WORK/kubeconfig ]] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    cat "$log" >&2
    fail "the API server did not start"
}
stop_process() {  # SIGTERM, then SIGKILL after 10 s
    local pid=$1 _
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

OPERATOR_PID=""
RECORDS=""
WORKER_IDLE_TIMEOUT=5  # settings.queueing.idle_timeout of the daemons group's operators
start_operator() {
    local log="$WORK/operator.log"
    : >"$log"
    "${PIN_CORE1[@]}" env KUBECONFIG="$WORK/kubeconfig" KOPF_BENCH_RECORDS="$RECORDS" \
        KOPF_BENCH_IDLE_TIMEOUT="$OPERATOR_IDLE_TIMEOUT" \
        "$KOPF" run "$OPERATOR_SOURCE" --standalone -n default "${OPERATOR_ARGS[@]}" >"$log" 2>&1 &
    OPERATOR_PID=$!
    STARTED_PIDS+=("$OPERATOR_PID")
    local _
    for _ in $(seq 1200); do  # the first start compiles the operator
        grep -q 'Serving resource benchobjects' "$log" && return 0
        kill -0 "$OPERATOR_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -20 "$log" >&2
    fail "the operator did not start serving benchobjects"
}

# --- figures -------------------------------------------------------------------------------
RESULTS="$WORK/results.tsv"  # name \t value \t unit, one line per measurement
: >"$RESULTS"
record() {  # record NAME VALUE UNIT [headline]: the table marks the headline rows
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$RESULTS"
    printf 'measured: %s = %s %s%s\n' "$1" "$2" "$3" "${4:+ ($4)}"
}
field() {  # field "TEXT" REGEX: the first capture group of REGEX in the first line matching it
    local line
    while IFS= read -r line; do
        [[ $line =~ $2 ]] && { echo "${BASH_REMATCH[1]}"; return 0; }
    done <<<"$1"
    fail "no line matches /$2/ in the tool's output: $1"
}

apiserver_figures() {
    local objects=10000 seconds=10 list_objects=100000
    [[ $SMOKE == 1 ]] && { objects=200; seconds=2; list_objects=200; }
    start_server
    local out
    out=$("${PIN_CORE1[@]}" "$APISERVER_LOAD" --url "$SERVER_URL" --objects "$objects" --seconds "$seconds" \
        --connections 4 --watchers 10)
    echo "$out"
    record "apiserver merge-patch rate (${objects} objects, 4 keep-alive connections)" \
        "$(field "$out" 'patch: [0-9]+ merge-patches in [0-9.]+ s = ([0-9]+) requests/s')" "requests/s"
    record "apiserver watch delivery (10 watchers)" \
        "$(field "$out" 'watch: [0-9]+ events delivered to [0-9]+ watchers = ([0-9]+) events/s')" "events/s"
    stop_process "$SERVER_PID"

    start_server
    out=$("${PIN_CORE1[@]}" "$APISERVER_LOAD" --url "$SERVER_URL" --objects "$list_objects" --seconds 0 \
        --connections 1 --watchers 0 --server-pid "$SERVER_PID")
    echo "$out"
    record "apiserver list of ${list_objects} objects" \
        "$(field "$out" 'list: [0-9]+ objects, [0-9.]+ MB in ([0-9.]+) s')" "s"
    record "apiserver RSS growth while listing ${list_objects} objects" \
        "$(field "$out" 'list-memory: .* \(\+([0-9.]+) MB for a')" "MB"
    record "apiserver list response size (${list_objects} objects)" \
        "$(field "$out" 'list: [0-9]+ objects, ([0-9.]+) MB in')" "MB"
    record "apiserver peak RSS (${list_objects} objects stored and listed)" \
        "$(( $(proc_kb "$SERVER_PID" VmHWM) / 1024 ))" "MB"
    stop_process "$SERVER_PID"
}

limit_figures() {
    local objects=10000 writes=$1
    [[ $SMOKE == 1 ]] && objects=200
    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    local out
    out=$("${PIN_CORE1[@]}" "$OPERATOR_LOAD" limit --url "$SERVER_URL" --objects "$objects" --patches "$writes")
    echo "$out"
    record "limit: create + ${writes} patches per object from a minimal client (${objects} objects)" \
        "$(field "$out" '= ([0-9]+) objects/s')" "objects/s"
    stop_process "$SERVER_PID"
}

# One operator lifetime over N objects: creation throughput, CPU, writes, memory; optionally the
# steady-state and the resume phases on the same objects.
operator_figures() {
    local n=$1 with_steady=$2 with_resume=$3
    RECORDS="$WORK/records.txt"
    : >"$RECORDS"
    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    start_operator
    wait_idle "$OPERATOR_PID" >/dev/null
    local rss0 cpu0 rv0
    rss0=$(proc_kb "$OPERATOR_PID" VmRSS)
    cpu0=$(cpu_ticks "$OPERATOR_PID")
    rv0=$("$OPERATOR_LOAD" rv --url "$SERVER_URL")
    if wanted idle; then record "idle RSS, 0 objects" "$((rss0 / 1024))" "MB"; fi

    local out
    out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" create --url "$SERVER_URL" --objects "$n" --spec-bytes 2048)
    echo "$out"
    # The objects' workers exit after settings.queueing.idle_timeout: part of each object's cost.
    wait_idle "$OPERATOR_PID" >/dev/null
    sleep "$OPERATOR_IDLE_TIMEOUT"
    wait_idle "$OPERATOR_PID" >/dev/null
    local cpu1 rv1 rss1 hwm
    cpu1=$(cpu_ticks "$OPERATOR_PID")
    rv1=$("$OPERATOR_LOAD" rv --url "$SERVER_URL")
    rss1=$(proc_kb "$OPERATOR_PID" VmRSS)
    hwm=$(proc_kb "$OPERATOR_PID" VmHWM)
    local writes_per_object cpu_seconds
    writes_per_object=$(awk -v a="$rv0" -v b="$rv1" -v n="$n" 'BEGIN { printf "%.2f", (b - a - n) / n }')
    cpu_seconds=$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    LAST_WRITES_PER_OBJECT=$writes_per_object
    if wanted create; then
        record "create ${n}: wall time until every result is in status" \
            "$(field "$out" 'handled: [0-9]+ objects in ([0-9.]+) s')" "s"
        record "create ${n}: end-to-end throughput" "$(field "$out" 'handled: .* = ([0-9]+) objects/s')" "objects/s"
        record "create ${n}: API server acceptance rate (4 connections)" \
            "$(field "$out" 'accepted: .* = ([0-9]+) objects/s')" "objects/s"
        record "create ${n}: operator CPU (user+sys)" "$cpu_seconds" "s"
        record "create ${n}: operator CPU per object" \
            "$(awk -v s="$cpu_seconds" -v n="$n" 'BEGIN { printf "%.0f", s * 1e6 / n }')" "µs"
        record "create ${n}: operator API writes per object" "$writes_per_object" "requests"
        record "create ${n}: operator peak RSS" "$((hwm / 1024))" "MB"
    fi
    if wanted idle; then
        local object_bytes
        object_bytes=$("$OPERATOR_LOAD" size --url "$SERVER_URL")
        record "idle RSS, ${n} objects" "$((rss1 / 1024))" "MB"
        record "idle RSS per watched object at ${n} objects, beyond RSS at 0 (object JSON: ${object_bytes} B)" \
            "$(( (rss1 - rss0) * 1024 / n ))" "B"
    fi

    if [[ $with_steady == 1 ]]; then
        local rate=$(( n / 10 > 0 ? n / 10 : 1 ))
        out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" update --url "$SERVER_URL" --objects "$n" --rate "$rate" \
            --seconds "$STEADY_SECONDS" --records "$RECORDS" --connections 8)
        echo "$out"
        record "steady ${n} objects, ${rate} updates/s: update-to-handler latency p50" \
            "$(field "$out" 'latency p50 ([0-9.]+) ms')" "ms"
        record "steady ${n} objects, ${rate} updates/s: update-to-handler latency p99" \
            "$(field "$out" 'p99 ([0-9.]+) ms')" "ms"
    fi

    if [[ $with_resume == 1 ]]; then
        stop_process "$OPERATOR_PID"
        : >"$RECORDS"
        local t0 idle_at
        t0=$(now_us)
        start_operator
        out=$("$OPERATOR_LOAD" resume --records "$RECORDS" --count "$n" --start-us "$t0")
        echo "$out"
        idle_at=$(wait_idle "$OPERATOR_PID")
        record "resume ${n}: last resume handler after the operator's start" \
            "$(field "$out" 'last ([0-9.]+) s after')" "s"
        record "resume ${n}: operator idle after its start" "$(seconds_between_us "$t0" "$idle_at")" "s"
    fi
    stop_process "$OPERATOR_PID"
    stop_process "$SERVER_PID"
}

micro_figures() {
    local min_time=0.5
    [[ $SMOKE == 1 ]] && min_time=0.01
    local out
    out=$("${PIN_CORE1[@]}" "$MICRO_BENCH" --benchmark_min_time="$min_time" --benchmark_format=csv 2>/dev/null)
    # CSV: name,iterations,real_time,cpu_time,time_unit,..., then user counters by their names
    local line name cpu unit
    while IFS=, read -r name _ _ cpu unit _; do
        name=${name//\"/}
        [[ $name == BM_* ]] || continue
        record "micro ${name}" "$(awk -v v="$cpu" 'BEGIN { printf "%.0f", v }')" "$unit"
    done <<<"$out"
    # The index's heap per entry (BM_IndexUpdate's counters), beside its value's own heap.
    local counters
    counters=$(awk -F, '{ gsub(/"/, "") }
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        /^BM_IndexUpdate/ && col["heap_bytes_per_entry"] {
            printf "%s %.0f %.0f\n", $1, $col["heap_bytes_per_entry"], $col["value_heap_bytes"] }' <<<"$out")
    while read -r name line cpu; do
        [[ -n $name ]] || continue
        record "micro ${name}: heap per index entry (the value's own JSON: ${cpu} B)" "$line" "B"
    done <<<"$counters"
}

# The client layer (src/clients) on its own: watch-stream parsing on one core, the real ApiClient
# watching while writers create objects, and the paged list's memory. The client tool runs on
# core 1 (its writer threads too, for the watch figure), the API server on core 0.
client_figures() {
    local objects=200 millis=2000 events=20000 list_objects=100000 page_size=500
    [[ $SMOKE == 1 ]] && { millis=100; events=200; list_objects=200; page_size=50; }
    local out size
    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    out=$("${PIN_CORE1[@]}" "$CLIENT_LOAD" parse --url "$SERVER_URL" --objects "$objects" --millis "$millis")
    echo "$out"
    for size in 2 5; do
        record "client watch-stream parsing, ~${size} KB objects, one core: bytes" \
            "$(field "$out" "parse-${size}KB: .*: ([0-9.]+) MB/s")" "MB/s"
        record "client watch-stream parsing, ~${size} KB objects, one core: events" \
            "$(field "$out" "parse-${size}KB: .* ([0-9]+) events/s on one core")" "events/s"
    done
    stop_process "$SERVER_PID"

    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    out=$("${PIN_CORE1[@]}" "$CLIENT_LOAD" watch --url "$SERVER_URL" --events "$events" --connections 4)
    echo "$out"
    record "client watch end to end (${events} ~2 KB objects created over 4 connections): events received" \
        "$(field "$out" 'watch: .* = ([0-9]+) events/s')" "events/s"
    record "client watch end to end: client thread CPU per event" \
        "$(field "$out" 'client thread CPU ([0-9.]+) us per event')" "µs"
    stop_process "$SERVER_PID"

    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    "$CLIENT_LOAD" populate --url "$SERVER_URL" --objects "$list_objects" --connections 4
    local mode label
    for mode in pages whole; do
        out=$("${PIN_CORE1[@]}" "$CLIENT_LOAD" list --url "$SERVER_URL" --mode "$mode" --page-size "$page_size")
        echo "$out"
        if [[ $mode == pages ]]; then
            label="client list of ${list_objects} objects page by page (${page_size} per page)"
        else
            label="client list of ${list_objects} objects joined into one list (ApiClient::list)"
        fi
        record "${label}: time" "$(field "$out" "list-${mode}: .* in ([0-9.]+) s, client CPU")" "s"
        record "${label}: client CPU" "$(field "$out" 'client CPU ([0-9.]+) s')" "s"
        record "${label}: peak RSS growth" "$(field "$out" 'peak RSS \+([0-9.]+) MB')" "MB"
    done
    record "client list of ${list_objects} objects: the objects' JSON" \
        "$(field "$out" "objects' JSON ([0-9.]+) MB")" "MB"
    stop_process "$SERVER_PID"

    # The public client (kopf::Api) from handlers of an operator embedded in the tool: gets and
    # merge-patches of one ConfigMap, one request at a time, from a synchronous handler (.wait()
    # on the worker pool) and an async one (co_await on the loop).
    local handler_requests=5000 form verb
    [[ $SMOKE == 1 ]] && handler_requests=50
    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    out=$("${PIN_CORE1[@]}" env KUBECONFIG="$WORK/kubeconfig" "$HANDLER_CLIENT_LOAD" --requests "$handler_requests")
    echo "$out"
    for form in sync async; do
        for verb in get merge-patch; do
            label="client from ${form} handlers (kopf::Api), ${verb}, one at a time"
            record "${label}: rate" "$(field "$out" "handler-${form} ${verb}: .* = ([0-9]+) requests/s")" "requests/s"
            record "${label}: client CPU per request" \
                "$(field "$out" "handler-${form} ${verb}: .* client CPU ([0-9.]+) us per request")" "µs"
        done
    done
    stop_process "$SERVER_PID"
}

# Daemons and timers. daemons_load (core 0, with the API server) creates the objects
# and starts the operator as its own child on core 1, so that it can also take the CPU of the
# operator's exit (wait4's rusage − the CPU clock read just before SIGTERM).
daemons_run() {  # MODE OBJECTS OPERATOR_SOURCE [more daemons_load options]: one operator lifetime
    "${PIN_CORE0[@]}" "$DAEMONS_LOAD" run --mode "$1" --objects "$2" --operator "$3" "${@:4}" \
        --url "$SERVER_URL" --server-pid "$SERVER_PID" --kopf "$KOPF" --kubeconfig "$WORK/kubeconfig" \
        --log "$WORK/operator.log" --records "$WORK/records.txt" --settle "$WORKER_IDLE_TIMEOUT" \
        "${OPERATOR_CPU[@]}"
}
daemons_create() {  # OBJECTS LABEL
    "${PIN_CORE0[@]}" "$DAEMONS_LOAD" create --url "$SERVER_URL" --objects "$1" --label "$2" --spec-bytes 200
}
per_object_bytes() {  # KB_AT_N KB_AT_0 N
    echo $(( ($1 - $2) * 1024 / $3 ))
}
daemons_figures() {
    local n out rss0 rss_plain rss_daemons cpu_plain cpu_daemons exit_plain exit_daemons object_bytes
    for n in "${DAEMON_SIZE_LIST[@]}"; do
        # The same operator and objects, but labelled so that the daemon's filter excludes them:
        # the per-object baseline, and the idle RSS at 0 objects first.
        start_server
        "$OPERATOR_LOAD" crd --url "$SERVER_URL"
        out=$(daemons_run idle 0 "$DAEMONS_OPERATOR_SOURCE"); echo "$out"
        rss0=$(field "$out" 'idle: operator RSS ([0-9]+) kB')
        out=$(daemons_create "$n" bench-daemon=off); echo "$out"
        out=$(daemons_run plain "$n" "$DAEMONS_OPERATOR_SOURCE"); echo "$out"
        rss_plain=$(field "$out" 'plain: .* RSS ([0-9]+) kB')
        cpu_plain=$(field "$out" 'plain: .* \(CPU ([0-9.]+) s\)')
        exit_plain=$(field "$out" 'exit: operator CPU ([0-9.]+) ms')
        stop_process "$SERVER_PID"

        start_server
        "$OPERATOR_LOAD" crd --url "$SERVER_URL"
        out=$(daemons_create "$n" bench-daemon=on); echo "$out"
        out=$(daemons_run daemons "$n" "$DAEMONS_OPERATOR_SOURCE"); echo "$out"
        rss_daemons=$(field "$out" 'daemons: .* RSS ([0-9]+) kB')
        cpu_daemons=$(field "$out" 'daemons: .* \(CPU ([0-9.]+) s\)')
        exit_daemons=$(field "$out" 'exit: operator CPU ([0-9.]+) ms')
        object_bytes=$("$OPERATOR_LOAD" size --url "$SERVER_URL")
        stop_process "$SERVER_PID"

        record "daemons operator: idle RSS, 0 objects" "$((rss0 / 1024))" "MB"
        record "daemons ${n}: RSS per object without a daemon (filtered out by label), beyond RSS at 0" \
            "$(per_object_bytes "$rss_plain" "$rss0" "$n")" "B"
        record "daemons ${n}: RSS per object with one coroutine daemon, beyond RSS at 0" \
            "$(per_object_bytes "$rss_daemons" "$rss0" "$n")" "B"
        record "daemons ${n}: RSS per daemon (with − without)" \
            "$(per_object_bytes "$rss_daemons" "$rss_plain" "$n")" "B"
        record "daemons ${n}: one object's JSON as the API server stores it" "$object_bytes" "B"
        record "daemons ${n}: all daemons running, after the operator's start" \
            "$(field "$out" 'the last ([0-9.]+) s after')" "s"
        record "daemons ${n}: operator CPU from its start until idle, with daemons" "$cpu_daemons" "s"
        record "daemons ${n}: operator CPU from its start until idle, without daemons" "$cpu_plain" "s"
        record "daemons ${n}: operator CPU from SIGTERM to exit, with daemons" "$exit_daemons" "ms"
        record "daemons ${n}: operator CPU from SIGTERM to exit, without daemons" "$exit_plain" "ms"
        record "daemons ${n}: operator CPU per daemon stopped at exit (with − without)" \
            "$(awk -v a="$exit_daemons" -v b="$exit_plain" -v n="$n" 'BEGIN { printf "%.1f", (a - b) * 1000 / n }')" "µs"
        record "daemons ${n}: wall time from SIGTERM to exit, with daemons" \
            "$(field "$out" 'exit: .* wall ([0-9.]+) s')" "s"
    done

    # Timers: the server's own patch capacity first (apiserver_load, as in the apiserver group,
    # with the objects of the same size and one watcher, like the operator's), then the operator.
    local patch_seconds=10
    [[ $SMOKE == 1 ]] && patch_seconds=2
    n=$TIMER_OBJECTS
    start_server
    out=$("${PIN_CORE1[@]}" "$APISERVER_LOAD" --url "$SERVER_URL" --objects "$n" --seconds "$patch_seconds" \
        --connections 4 --watchers 1)
    echo "$out"
    record "timers: apiserver merge-patch rate (${n} objects, 4 keep-alive connections, 1 watcher)" \
        "$(field "$out" 'patch: [0-9]+ merge-patches in [0-9.]+ s = ([0-9]+) requests/s')" "requests/s"
    stop_process "$SERVER_PID"

    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    out=$(daemons_run idle 0 "$TIMERS_OPERATOR_SOURCE"); echo "$out"
    rss0=$(field "$out" 'idle: operator RSS ([0-9]+) kB')
    out=$(daemons_create "$n" bench-timer=on); echo "$out"
    out=$(daemons_run timers "$n" "$TIMERS_OPERATOR_SOURCE" --seconds "$TIMER_SECONDS"); echo "$out"
    stop_process "$SERVER_PID"
    record "timers ${n}, 1 s interval: ticks per second (${n} at most)" \
        "$(field "$out" 'timers: .* = ([0-9]+) ticks/s')" "ticks/s"
    record "timers ${n}: operator CPU per tick (handler, its patch, the watch event it causes)" \
        "$(field "$out" 'timers: .* = ([0-9.]+) us per tick')" "µs"
    record "timers ${n}: API writes per tick" "$(field "$out" 'timers: .* ([0-9.]+) API writes per tick')" "requests"
    record "timers ${n}: API server CPU while ticking" \
        "$(field "$out" 'timers-server: .* = ([0-9]+)% of a core')" "% of a core"
    record "timers ${n}: tick lateness p50" "$(field "$out" 'timers: .* lateness p50 ([0-9.]+) ms')" "ms"
    record "timers ${n}: tick lateness p99" "$(field "$out" 'timers: .* p99 ([0-9.]+) ms')" "ms"
    record "timers ${n}: tick lateness max" "$(field "$out" 'timers: .* max ([0-9.]+) ms')" "ms"
    record "timers ${n}: operator RSS per object with a ticking timer, beyond RSS at 0" \
        "$(per_object_bytes "$(field "$out" 'timers: .* RSS ([0-9]+) kB')" "$rss0" "$n")" "B"
    record "timers ${n}: operator's open files (its API connections, mostly) while ticking" \
        "$(field "$out" 'timers: .* kB, ([0-9]+) open files')" "files"
    record "timers ${n}: operator CPU from SIGTERM to exit" "$(field "$out" 'exit: operator CPU ([0-9.]+) ms')" "ms"
}

# In-memory indexing, with daemons_load and the daemons group's operator as the
# baseline: the indexing operator is the same plus an index of every object. On objects that get
# no daemon (labelled off): the index's RSS and start-up CPU per object (with − without). On
# objects that get a daemon each: handling starts (the first daemon) only once the index holds
# every listed object, so the first daemon's time is when the indices were ready.
indexing_figures() {
    local n out rss_plain rss_indexed cpu_plain cpu_indexed ready ready_plain last last_plain
    for n in "${INDEX_SIZE_LIST[@]}"; do
        start_server
        "$OPERATOR_LOAD" crd --url "$SERVER_URL"
        out=$(daemons_create "$n" bench-daemon=off); echo "$out"
        out=$(daemons_run plain "$n" "$DAEMONS_OPERATOR_SOURCE"); echo "$out"
        rss_plain=$(field "$out" 'plain: .* RSS ([0-9]+) kB')
        cpu_plain=$(field "$out" 'plain: .* \(CPU ([0-9.]+) s\)')
        out=$(daemons_run plain "$n" "$INDEXING_OPERATOR_SOURCE"); echo "$out"
        rss_indexed=$(field "$out" 'plain: .* RSS ([0-9]+) kB')
        cpu_indexed=$(field "$out" 'plain: .* \(CPU ([0-9.]+) s\)')
        stop_process "$SERVER_PID"

        start_server
        "$OPERATOR_LOAD" crd --url "$SERVER_URL"
        out=$(daemons_create "$n" bench-daemon=on); echo "$out"
        out=$(daemons_run daemons "$n" "$DAEMONS_OPERATOR_SOURCE"); echo "$out"
        ready_plain=$(field "$out" 'the first ([0-9.]+) s and')
        last_plain=$(field "$out" 'the last ([0-9.]+) s after')
        out=$(daemons_run daemons "$n" "$INDEXING_OPERATOR_SOURCE"); echo "$out"
        ready=$(field "$out" 'the first ([0-9.]+) s and')
        last=$(field "$out" 'the last ([0-9.]+) s after')
        stop_process "$SERVER_PID"

        record "indexing ${n}: operator RSS per indexed object (with an index − without)" \
            "$(per_object_bytes "$rss_indexed" "$rss_plain" "$n")" "B"
        record "indexing ${n}: operator CPU per indexed object from its start until idle (with − without)" \
            "$(awk -v a="$cpu_indexed" -v b="$cpu_plain" -v n="$n" 'BEGIN { printf "%.1f", (a - b) * 1e6 / n }')" "µs"
        record "indexing ${n}: all indices ready (the first handler runs), after the operator's start" "$ready" "s"
        record "indexing ${n}: the first handler runs without an index, after the operator's start" "$ready_plain" "s"
        record "indexing ${n}: every object's daemon runs, with the index" "$last" "s"
        record "indexing ${n}: every object's daemon runs, without an index" "$last_plain" "s"
    done
}

# Admission webhooks: the operator (admission_operator.cpp: one validating handler, a
# kopf::WebhookServer, managed configurations) on core 1; admission_load sends reviews to it over
# one keep-alive HTTPS connection from core 0, as fast as answered and then at a fixed rate. The
# create rate of N objects through the API server (operator_load limit --patches 0, 4
# connections) on a fresh server without the webhook, and on the operator's with it.
WEBHOOK_URL=""
start_admission_operator() {
    local log="$WORK/operator.log"
    : >"$log"
    "${PIN_CORE1[@]}" env KUBECONFIG="$WORK/kubeconfig" KOPF_BENCH_WEBHOOK_CA="$WORK/webhook-ca.pem" \
        "$KOPF" run "$ADMISSION_OPERATOR_SOURCE" --standalone -n default "${OPERATOR_ARGS[@]}" >"$log" 2>&1 &
    OPERATOR_PID=$!
    STARTED_PIDS+=("$OPERATOR_PID")
    local _
    for _ in $(seq 1200); do  # the first start compiles the operator
        if grep -q 'Reconfiguring the mutating webhook' "$log"; then
            WEBHOOK_URL=$(grep -o "'validate_fn' (validating) is served at https://[^ ]*" "$log" | head -1)
            WEBHOOK_URL=${WEBHOOK_URL##* }
            [[ -n $WEBHOOK_URL ]] && return 0
        fi
        kill -0 "$OPERATOR_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -20 "$log" >&2
    fail "the admission operator did not configure its webhooks"
}
admission_figures() {
    local seconds=10 rate=1000 objects=1000 out cpu0 cpu1 reviews
    [[ $SMOKE == 1 ]] && { seconds=1; objects=200; }
    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" limit --url "$SERVER_URL" --objects "$objects" --patches 0 --spec-bytes 1024)
    echo "$out"
    record "admission: create ${objects} objects through the API server, no webhook (4 connections)" \
        "$(field "$out" '= ([0-9]+) objects/s')" "objects/s"
    stop_process "$SERVER_PID"

    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    start_admission_operator
    wait_idle "$OPERATOR_PID" >/dev/null
    out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" limit --url "$SERVER_URL" --objects "$objects" --patches 0 --spec-bytes 1024)
    echo "$out"
    record "admission: create ${objects} objects through the API server, validating webhook (4 connections)" \
        "$(field "$out" '= ([0-9]+) objects/s')" "objects/s"
    wait_idle "$OPERATOR_PID" >/dev/null

    cpu0=$(cpu_ticks "$OPERATOR_PID")
    out=$("${PIN_CORE0[@]}" "$ADMISSION_LOAD" reviews --url "$WEBHOOK_URL" --ca "$WORK/webhook-ca.pem" \
        --seconds "$seconds")
    cpu1=$(cpu_ticks "$OPERATOR_PID")
    echo "$out"
    reviews=$(field "$out" 'reviews: ([0-9]+) reviews in')
    record "admission: reviews/s of a validating handler, one keep-alive HTTPS connection, operator on one core" \
        "$(field "$out" '= ([0-9]+) reviews/s')" "reviews/s"
    record "admission: review latency p50, as fast as answered" "$(field "$out" 'latency p50 ([0-9.]+) ms')" "ms"
    record "admission: review latency p99, as fast as answered" "$(field "$out" 'p99 ([0-9.]+) ms')" "ms"
    # The warm-up second before the measurement is included in the ticks: a small overestimate.
    record "admission: operator CPU per review (user+sys)" \
        "$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" -v n="$reviews" -v s="$seconds" \
            'BEGIN { printf "%.0f", t / hz * 1e6 / (n * (s + 1) / s) }')" "µs"

    out=$("${PIN_CORE0[@]}" "$ADMISSION_LOAD" reviews --url "$WEBHOOK_URL" --ca "$WORK/webhook-ca.pem" \
        --seconds "$seconds" --rate "$rate")
    echo "$out"
    record "admission: review latency p50 at ${rate} reviews/s" "$(field "$out" 'latency p50 ([0-9.]+) ms')" "ms"
    record "admission: review latency p99 at ${rate} reviews/s" "$(field "$out" 'p99 ([0-9.]+) ms')" "ms"
    stop_process "$OPERATOR_PID"
    stop_process "$SERVER_PID"
}

# Active/standby replicas on a Lease (issue 20): two replicas of the benchmark operator with
# `--lease bench-operator` (identities from $POD_ID), the leader on core 0 beside the API server,
# the standby on core 1. The leader handles N objects while the standby watches them; the
# standby's CPU over an idle window and its RSS; then `kill -9` of the leader and the seconds
# until the first object created after the kill shows its result (operator_load create, started
# right after the kill: its start and its watch's set-up are included). With the default lease
# settings (15 s lease, 10 s renew deadline, 2 s retry period) and with shortened ones (3 s, 2 s,
# 0.5 s); the smoke run only the shortened ones.
REPLICA_PID=""
start_replica() {  # NAME LEASE_SETTINGS PIN...: one replica; its log is $WORK/NAME.log
    local name=$1 lease=$2; shift 2
    : >"$WORK/$name.log"
    "$@" env KUBECONFIG="$WORK/kubeconfig" POD_ID="$name" KOPF_BENCH_LEASE="$lease" \
        "$KOPF" run "$OPERATOR_SOURCE" --standalone -n default --lease bench-operator \
        "${OPERATOR_ARGS[@]}" >"$WORK/$name.log" 2>&1 &
    REPLICA_PID=$!
    STARTED_PIDS+=("$REPLICA_PID")
}
wait_for_log() {  # NAME PATTERN PID
    local _
    for _ in $(seq 1200); do  # the first start compiles the operator
        grep -q "$2" "$WORK/$1.log" && return 0
        kill -0 "$3" 2>/dev/null || break
        sleep 0.1
    done
    tail -20 "$WORK/$1.log" >&2
    fail "the $1 replica did not log '$2'"
}
standby_failover() {  # LABEL LEASE_SETTINGS MEASURE_IDLE(0/1)
    local label=$1 lease=$2 idle=$3 leader standby out cpu0 cpu1 killed handled
    start_server
    "$OPERATOR_LOAD" crd --url "$SERVER_URL"
    start_replica leader "$lease" "${PIN_CORE0[@]}"
    leader=$REPLICA_PID
    wait_for_log leader "Acquired the lease default/bench-operator" "$leader"
    start_replica standby "$lease" "${PIN_CORE1[@]}"
    standby=$REPLICA_PID
    wait_for_log standby "Competing for the lease default/bench-operator as 'standby'" "$standby"
    wait_for_log standby "Serving resource benchobjects" "$standby"
    "${PIN_CORE0[@]}" "$OPERATOR_LOAD" create --url "$SERVER_URL" --objects "$STANDBY_OBJECTS" >/dev/null
    wait_idle "$standby" >/dev/null
    if [[ $idle == 1 ]]; then
        cpu0=$(cpu_ticks "$standby")
        sleep "$STANDBY_SECONDS"
        cpu1=$(cpu_ticks "$standby")
        record "standby: idle CPU, watching ${STANDBY_OBJECTS} objects (${STANDBY_SECONDS} s)" \
            "$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" -v s="$STANDBY_SECONDS" \
                'BEGIN { printf "%.3f", t / hz / s * 100 }')" "% of a core"
        record "standby: idle RSS, watching ${STANDBY_OBJECTS} objects" \
            "$(awk -v kb="$(proc_kb "$standby" VmRSS)" 'BEGIN { printf "%.1f", kb / 1024 }')" "MB"
    fi
    kill -KILL "$leader"
    killed=$(now_us)
    wait "$leader" 2>/dev/null || true
    out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" create --url "$SERVER_URL" --objects 1 \
        --first "$STANDBY_OBJECTS" --timeout 120)
    handled=$(now_us)
    echo "$out"
    wait_for_log standby "Acquired the lease default/bench-operator" "$standby"
    record "standby: failover, kill -9 of the leader to the first handled object on the standby ($label)" \
        "$(seconds_between_us "$killed" "$handled")" "s"
    stop_process "$standby"
    stop_process "$SERVER_PID"
}
standby_figures() {
    if [[ $SMOKE == 0 ]]; then standby_failover "default lease settings: 15 s, 10 s, 2 s" "" 1; fi
    standby_failover "lease 3 s, renew deadline 2 s, retry 0.5 s" "3,2,0.5" "$SMOKE"
}

# Creates and updates at fixed arrival rates (issue 24). Two CRDs: one with a status
# subresource (the headline: the operator sends the result to .../status in a second patch, as
# with Kopf's examples and most real CRDs) and the same without it (the result rides in the one
# patch of the object). For each: the minimal client's limit for that request pattern (create +
# 1 patch, + 1 status patch to /status with the subresource; the client on core 1, where the
# operator runs otherwise); then, for each rate, a fresh server and operator: N objects created at
# the rate (the i-th due at start + i/R over 4 connections; "max": as fast as the server
# accepts), then each of them updated once at the same rate (spec.round: the diff, the update
# handler and the field handler, the diff base rewritten). The operator's CPU of each phase runs
# from idle before it to idle after the objects' workers have exited; its API writes are the
# server's resourceVersion advance beyond the load's own requests.
PHASE_CPU_SECONDS=0
PHASE_WRITES=0
phase_start() { PHASE_CPU_SECONDS=$(cpu_ticks "$OPERATOR_PID"); PHASE_WRITES=$("$OPERATOR_LOAD" rv --url "$SERVER_URL"); }
phase_end() {  # N: the load's own writes in the phase
    wait_idle "$OPERATOR_PID" >/dev/null
    sleep "$OPERATOR_IDLE_TIMEOUT"
    wait_idle "$OPERATOR_PID" >/dev/null
    local ticks rv
    ticks=$(( $(cpu_ticks "$OPERATOR_PID") - PHASE_CPU_SECONDS ))
    rv=$("$OPERATOR_LOAD" rv --url "$SERVER_URL")
    PHASE_CPU_SECONDS=$(awk -v t="$ticks" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f", t / hz }')
    PHASE_WRITES=$(awk -v a="$PHASE_WRITES" -v b="$rv" -v n="$1" 'BEGIN { printf "%.2f", (b - a - n) / n }')
}
per_item_us() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.0f", s * 1e6 / n }'; }
rates_figures() {
    local crd status label rate n=$RATE_OBJECTS limit out pace name headline limit_name
    local -a pace_args
    for crd in status plain; do
        if [[ $crd == status ]]; then
            status=1; label="status subresource"; limit_name="create + 1 patch + 1 status patch"
        else
            status=0; label="no status subresource"; limit_name="create + 1 patch"
        fi
        start_server
        "$OPERATOR_LOAD" crd --url "$SERVER_URL" --status-subresource "$status"
        out=$("${PIN_CORE1[@]}" "$OPERATOR_LOAD" limit --url "$SERVER_URL" --objects "$n" --patches 1 \
            --status-patches "$status")
        echo "$out"
        limit=$(field "$out" '= ([0-9]+) objects/s')
        record "rates, ${label}: limit, ${limit_name} per object from a minimal client (${n} objects, 4 connections)" \
            "$limit" "objects/s"
        stop_process "$SERVER_PID"

        for rate in "${RATE_LIST[@]}"; do
            # The smoke run takes each path once, to stay short: the status subresource at the
            # paced rates, the second row at "max" (with its ratio to the limit).
            if [[ $SMOKE == 1 ]] && { [[ $crd == status && $rate == max ]] || [[ $crd == plain && $rate != max ]]; }; then
                continue
            fi
            if [[ $rate == max ]]; then
                pace="max"; pace_args=()
            else
                pace="${rate}/s"; pace_args=(--rate "$rate" --timeout $(( n / rate + 600 )))
            fi
            headline=""
            [[ $crd == status && ( $rate == 1000 || $rate == max ) ]] && headline=headline
            RECORDS="$WORK/records.txt"
            : >"$RECORDS"
            start_server
            "$OPERATOR_LOAD" crd --url "$SERVER_URL" --status-subresource "$status"
            start_operator
            wait_idle "$OPERATOR_PID" >/dev/null

            phase_start
            out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" create --url "$SERVER_URL" --objects "$n" --spec-bytes 2048 \
                "${pace_args[@]}")
            echo "$out"
            phase_end "$n"
            name="create ${n} at ${pace}, ${label}"
            record "${name}: operator CPU per object" "$(per_item_us "$PHASE_CPU_SECONDS" "$n")" "µs" "$headline"
            record "${name}: operator API writes per object" "$PHASE_WRITES" "requests"
            record "${name}: creates accepted" "$(field "$out" 'accepted: .* = ([0-9]+) objects/s')" "objects/s"
            record "${name}: end-to-end throughput" "$(field "$out" 'handled: .* = ([0-9]+) objects/s')" \
                "objects/s" "$headline"
            if [[ $rate == max ]]; then
                record "${name}: end-to-end throughput, % of the minimal client's limit" \
                    "$(awk -v a="$(field "$out" 'handled: .* = ([0-9]+) objects/s')" -v b="$limit" \
                        'BEGIN { printf "%.0f", a * 100 / b }')" "%" "$headline"
            fi

            phase_start
            out=$("${PIN_CORE0[@]}" "$OPERATOR_LOAD" update-once --url "$SERVER_URL" --objects "$n" --round 1 \
                "${pace_args[@]}")
            echo "$out"
            phase_end "$n"
            name="update ${n} at ${pace}, ${label}"
            record "${name}: operator CPU per update" "$(per_item_us "$PHASE_CPU_SECONDS" "$n")" "µs"
            record "${name}: operator API writes per update" "$PHASE_WRITES" "requests"
            record "${name}: updates accepted" "$(field "$out" 'updated: .* = ([0-9]+) updates/s')" "updates/s"
            record "${name}: end-to-end throughput" "$(field "$out" 'handled: .* = ([0-9]+) updates/s')" "updates/s"
            stop_process "$OPERATOR_PID"
            stop_process "$SERVER_PID"
        done
    done
}

# --- the suite -----------------------------------------------------------------------------
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
IFS=, read -r -a RATE_LIST <<<"$RATES"
IFS=, read -r -a DAEMON_SIZE_LIST <<<"$DAEMON_SIZES"
IFS=, read -r -a INDEX_SIZE_LIST <<<"$INDEX_SIZES"
LAST_WRITES_PER_OBJECT=2
for run in $(seq "$RUNS"); do
    echo "=== run $run of $RUNS"
    if wanted rates; then rates_figures; fi
    if wanted apiserver; then apiserver_figures; fi
    if wanted create || wanted idle || wanted steady || wanted resume || wanted limit; then
        covered_steady=0; covered_resume=0
        for n in "${SIZE_LIST[@]}"; do
            if wanted create || wanted idle || { wanted steady && [[ $n == "$STEADY_OBJECTS" ]]; } ||
                { wanted resume && [[ $n == "$RESUME_OBJECTS" ]]; } || { wanted limit && [[ $n == "${SIZE_LIST[0]}" ]]; }; then
                s=0; r=0
                if wanted steady && [[ $n == "$STEADY_OBJECTS" ]]; then s=1; covered_steady=1; fi
                if wanted resume && [[ $n == "$RESUME_OBJECTS" ]]; then r=1; covered_resume=1; fi
                operator_figures "$n" "$s" "$r"
            fi
        done
        if wanted steady && [[ $covered_steady == 0 ]]; then operator_figures "$STEADY_OBJECTS" 1 0; fi
        if wanted resume && [[ $covered_resume == 0 ]]; then operator_figures "$RESUME_OBJECTS" 0 1; fi
    fi
    if wanted limit; then
        limit_figures "$(awk -v w="$LAST_WRITES_PER_OBJECT" 'BEGIN { printf "%d", w + 0.5 }')"
    fi
    if wanted micro; then micro_figures; fi
    if wanted client; then client_figures; fi
    if wanted daemons; then daemons_figures; fi
    if wanted indexing; then indexing_figures; fi
    if wanted admission; then admission_figures; fi
    if wanted standby; then standby_figures; fi
done

# Medians per figure, in the order first measured.
TABLE=$(awk -F'\t' '
    { if (!($1 in n)) { order[++count] = $1; unit[$1] = $3; mark[$1] = $4 } values[$1, ++n[$1]] = $2 }
    END {
        for (i = 1; i <= count; i++) {
            name = order[i]; k = n[name]
            for (a = 1; a <= k; a++) v[a] = values[name, a]
            # insertion sort by numeric value, keeping the measured text (e.g. "1.00")
            for (a = 2; a <= k; a++) { x = v[a]; b = a - 1; while (b >= 1 && v[b] + 0 > x + 0) { v[b + 1] = v[b]; b-- } v[b + 1] = x }
            median = (k % 2) ? v[(k + 1) / 2] : sprintf("%.2f", (v[k / 2] + v[k / 2 + 1]) / 2)
            shown = mark[name] == "headline" ? "**" name "** (headline)" : name
            printf "| %s | %s %s | %d |\n", shown, median, unit[name], k
        }
    }' "$RESULTS")

echo
echo "=== results (median of each figure)"
while IFS= read -r row; do
    [[ -z $row ]] && continue
    name=$(echo "$row" | awk -F' \\| ' '{ sub(/^\| /, "", $1); print $1 }')
    name=${name//\*\*/}
    value=$(echo "$row" | awk -F' \\| ' '{ print $2 }')
    echo "figure: $name = $value"
done <<<"$TABLE"

if [[ $README_APPEND == 1 ]]; then
    cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    dirty=$(git -C "$ROOT" status --porcelain 2>/dev/null | head -1)
    [[ -n $dirty ]] && commit="$commit (with uncommitted changes)"
    {
        echo
        echo "### $(date -u '+%Y-%m-%d %H:%M UTC') — commit $commit"
        echo
        echo "Machine: ${CORES} cores, ${cpu_model:-unknown CPU}, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM;" \
             "load average before the run: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)." \
             "Command: \`bench/run.sh${ARGUMENTS:+ $ARGUMENTS}\`; runs: $RUNS (median shown)."
        echo
        echo "| Figure | Median | Runs |"
        echo "|---|---|---|"
        echo "$TABLE"
    } >>"$ROOT/bench/README.md"
    echo "appended the table to bench/README.md"
fi
