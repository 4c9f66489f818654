#!/usr/bin/env bash
# compute-sanitizer over every GPU test kernel and every stage example, on the GPU machine:
#   . .device/prelude.sh && bash tests/sanitize.sh            (tests/gpu_all.sh runs it after pytest)
#
# Tools: memcheck, racecheck, synccheck, initcheck (--tools to choose). Targets, each a separate process:
#   - tests/gpu/test_runtime_gpu.py under pytest: every examples/artifacts and tests/gpu/artifacts kernel the
#     runtime GPU tests launch (add, scalars, matmul, matmul_big_smem, cluster_add, grid_sync, tma_scale,
#     tma_host_copy). memcheck/initcheck run it twice: the non-graph tests with torch's caching allocator
#     off (PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is its own allocation, so an access past a
#     tensor's end is caught) and the two CUDA-graph tests with it on (capture needs it);
#     racecheck/synccheck (shared memory, barriers: the allocator is irrelevant) run the file once.
#   - examples/stages/run_<kernel>.py on the stage artifacts of this GPU's family (sm90 on 9.x, sm80 on 8.x),
#     as tests/gpu/test_examples_gpu.py runs them. The five stage builds of a kernel give the same cubin, so
#     each distinct (cubin sha256, launch data) runs once per tool and the others are listed as covered
#     by it (SANITIZE_ALL_STAGES=1 runs every one).
#   - tests/gpu/test_stress_gpu.py with 200 launches per thread, memcheck only (threads, 2 streams,
#     stream-ordered scratch allocations under the sanitizer); and, where the file exists, the GPU cases of
#     tests/runtime/test_bad_inputs.py, memcheck only (every refused call must leave the device untouched).
# Jobs run SANITIZE_JOBS at a time (default 6) on the one GPU, each under `timeout`; a job not started within
# the time budget (SANITIZE_BUDGET_S, default 180 s) is reported NOT RUN. One line per (tool, target), then a
# total. Full logs: $OUT/sanitizer/ when OUT is set, else ./sanitizer-logs.
# Exit: 0 all clean; 1 sanitizer errors, a target that failed, or no sanitizer summary; 2 only NOT RUN ones.
# Two known false reports are not counted: initcheck's "Uninitialized __global__ memory read" in the kernels
# that build TMA descriptors on the device, tma_scale and fp8_matmul (Triton writes the descriptors into
# global scratch with tensormap.cp_fenceproxy, which initcheck does not see as a write), and memcheck's
# CUDA_ERROR_INVALID_VALUE from cuGetProcAddress (cuda-bindings probing for driver entry points). tests/sanitizer_log.py reads the logs and says exactly what it discounts; every
# other report stays an error. initcheck runs print every report (--print-limit 0) so each one is seen.
#
# Options: --tools memcheck,racecheck  --jobs N  --budget SECONDS  --dry-run (print the jobs, run nothing)
# Env: COMPUTE_SANITIZER (binary), PYTHON (default python3), SANITIZE_FAMILY (sm90|sm80, else from the GPU),
#      SANITIZE_STRESS_LAUNCHES (200), SANITIZE_TIMEOUT_PYTEST_S (150), SANITIZE_TIMEOUT_STAGE_S (90),
#      SANITIZE_TIMEOUT_STRESS_S (120).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

TOOLS="${SANITIZE_TOOLS:-memcheck,racecheck,synccheck,initcheck}"
JOBS="${SANITIZE_JOBS:-6}"
BUDGET="${SANITIZE_BUDGET_S:-180}"
DRY=0
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) TOOLS="${2:?--tools needs a value}"; shift 2 ;;
    --tools=*) TOOLS="${1#*=}"; shift ;;
    --jobs) JOBS="${2:?--jobs needs a value}"; shift 2 ;;
    --jobs=*) JOBS="${1#*=}"; shift ;;
    --budget) BUDGET="${2:?--budget needs a value}"; shift 2 ;;
    --budget=*) BUDGET="${1#*=}"; shift ;;
    --dry-run|--list) DRY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sanitize.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
  esac
done
case "$JOBS" in ''|*[!0-9]*|0) echo "sanitize.sh: --jobs must be a positive integer, got '$JOBS'" >&2; exit 64 ;; esac
case "$BUDGET" in ''|*[!0-9]*) echo "sanitize.sh: --budget must be whole seconds, got '$BUDGET'" >&2; exit 64 ;; esac
TOOL_LIST=()
for t in ${TOOLS//,/ }; do
  case "$t" in memcheck|racecheck|synccheck|initcheck) TOOL_LIST+=("$t") ;;
    *) echo "sanitize.sh: unknown tool '$t' (memcheck, racecheck, synccheck, initcheck)" >&2; exit 64 ;; esac
done
[ ${#TOOL_LIST[@]} -gt 0 ] || { echo "sanitize.sh: no tools selected" >&2; exit 64; }
T_PYTEST="${SANITIZE_TIMEOUT_PYTEST_S:-150}"
T_STAGE="${SANITIZE_TIMEOUT_STAGE_S:-90}"
T_STRESS="${SANITIZE_TIMEOUT_STRESS_S:-120}"
STRESS_LAUNCHES="${SANITIZE_STRESS_LAUNCHES:-200}"

# -- python, the repo on its path, pytest ------------------------------------------------------------------
PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null 2>&1 || PY=python
command -v "$PY" >/dev/null 2>&1 || { echo "sanitize.sh: no python3/python on PATH" >&2; exit 1; }
case ":${PYTHONPATH:-}:" in *":$ROOT:"*) ;; *) export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" ;; esac
if ! "$PY" -c "import pytest" >/dev/null 2>&1 && ls .device/extra/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/extra .device/extra/*.whl >/dev/null 2>&1 || true
  export PYTHONPATH="$PYTHONPATH:/tmp/extra"
fi
if [ "$DRY" = 0 ]; then
  "$PY" -c "import pytest" >/dev/null 2>&1 || { echo "sanitize.sh: pytest is not importable by $PY (carry .device with .device/extra, or pip install pytest)" >&2; exit 1; }
fi

# -- compute-sanitizer and timeout -------------------------------------------------------------------------
find_sanitizer() {
  if [ -n "${COMPUTE_SANITIZER:-}" ]; then echo "$COMPUTE_SANITIZER"; return 0; fi
  command -v compute-sanitizer 2>/dev/null && return 0
  local c versioned=()
  for c in /usr/local/cuda-*/bin/compute-sanitizer /usr/local/cuda-*/compute-sanitizer/compute-sanitizer; do
    [ -x "$c" ] && versioned+=("$c")
  done
  for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
           ${versioned[@]+$(printf '%s\n' "${versioned[@]}" | sort -rV)} /opt/cuda/bin/compute-sanitizer; do
    if [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  return 1
}
SAN="$(find_sanitizer)"
if [ -z "$SAN" ]; then
  if [ "$DRY" = 1 ]; then SAN=compute-sanitizer; else
    echo "sanitize.sh: compute-sanitizer not found (PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin); set COMPUTE_SANITIZER=/path/to/compute-sanitizer" >&2
    exit 1
  fi
fi
command -v timeout >/dev/null 2>&1 || { echo "sanitize.sh: coreutils 'timeout' is missing" >&2; exit 1; }
PORT_OPTS=0; API_OPT=0; LIMIT_OPT=0
if [ "$DRY" = 0 ]; then
  SAN_HELP="$("$SAN" --help 2>&1)"
  SAN_VERSION="$("$SAN" --version 2>&1 | tail -1)"
  # Concurrent sanitizer sessions each get their own port range where this version has the options.
  if grep -q -- '--port' <<<"$SAN_HELP" && grep -q -- '--max-connections' <<<"$SAN_HELP"; then PORT_OPTS=1; fi
  if grep -q -- '--report-api-errors' <<<"$SAN_HELP"; then API_OPT=1; fi
  if grep -q -- '--print-limit' <<<"$SAN_HELP"; then LIMIT_OPT=1; fi
fi

# -- this GPU's family and the stage examples to run ---------------------------------------------------------
FAMILY="${SANITIZE_FAMILY:-}"
if [ -z "$FAMILY" ] && [ "$DRY" = 0 ]; then
  FAMILY="$("$PY" - <<'EOF' 2>/dev/null
try:
    from cuda.bindings import driver
except ImportError:
    from cuda import cuda as driver
driver.cuInit(0)
_, dev = driver.cuDeviceGet(0)
_, major, _ = driver.cuDeviceComputeCapability(dev)
print({8: "sm80", 9: "sm90"}.get(int(major), "sm%d0" % int(major)))
EOF
)"
  if [ -z "$FAMILY" ] && command -v nvidia-smi >/dev/null 2>&1; then
    cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)"
    case "$cap" in 8.*) FAMILY=sm80 ;; 9.*) FAMILY=sm90 ;; esac
  fi
  [ -n "$FAMILY" ] || { echo "sanitize.sh: no CUDA device found (cuda.bindings and nvidia-smi both failed); nothing to sanitize" >&2; exit 1; }
fi
FAMILY="${FAMILY:-sm90}"

# "run|kernel|name" for each stage artifact to run; "dup|kernel|name|representative" for the identical ones.
STAGE_LINES="$(SANITIZE_ALL_STAGES="${SANITIZE_ALL_STAGES:-0}" "$PY" - "$FAMILY" <<'EOF'
import json, os, sys
family = sys.argv[1]
stages = os.path.join("examples", "stages")
entries = json.load(open(os.path.join(stages, "stages.json")))["kernels"]
seen, dups = {}, {}
for e in entries:
    kernel, fam, _stage = e["name"].rsplit("_", 2)
    if fam != family:
        continue
    meta = json.load(open(os.path.join(stages, "artifacts", e["name"], "metadata.json")))
    key = (kernel, json.dumps([[v["cubin"]["sha256"], v["entry"], v["launch"], v.get("scratch")] for v in meta["variants"]], sort_keys=True))
    if key in seen and os.environ.get("SANITIZE_ALL_STAGES") != "1":
        dups.setdefault(seen[key], (kernel, []))[1].append(e["name"])
    else:
        seen.setdefault(key, e["name"])
        print(f"run|{kernel}|{e['name']}")
for rep, (kernel, names) in dups.items():
    print(f"dup|{kernel}|{', '.join(names)}|{rep}")
EOF
)" || { echo "sanitize.sh: could not read examples/stages/stages.json" >&2; exit 1; }

# -- the jobs ----------------------------------------------------------------------------------------------
J_TOOL=(); J_TARGET=(); J_LABEL=(); J_TMO=()
add_job() { J_TOOL+=("$1"); J_TARGET+=("$2"); J_LABEL+=("$3"); J_TMO+=("$4"); }
PYTEST_RT="pytest test_runtime_gpu.py"
# initcheck leaves out the graph test that launches tma_scale 100 times: each launch repeats the known false
# report (see above) some 700 times, millions of log lines that outlast the time limit; the non-graph job
# runs tma_scale under initcheck, and memcheck/racecheck/synccheck run this test too.
graph_filter() { [ "$1" = initcheck ] && echo "graph and not scratch_kernel" || echo "graph"; }
for tool in "${TOOL_LIST[@]}"; do  # the long ones first
  case "$tool" in
    memcheck|initcheck)
      add_job "$tool" rt_uncached "$PYTEST_RT -k 'not graph' (uncached allocator)" "$T_PYTEST"
      add_job "$tool" rt_graph "$PYTEST_RT -k '$(graph_filter "$tool")'" "$T_PYTEST" ;;
    *) add_job "$tool" rt_all "$PYTEST_RT" "$T_PYTEST" ;;
  esac
done
for tool in "${TOOL_LIST[@]}"; do
  [ "$tool" = memcheck ] || continue
  [ -f tests/runtime/test_bad_inputs.py ] && add_job memcheck bad_inputs "pytest test_bad_inputs.py -m gpu (uncached allocator)" "$T_PYTEST"
  add_job memcheck stress "pytest test_stress_gpu.py ($STRESS_LAUNCHES launches/thread, uncached allocator)" "$T_STRESS"
done
DUPS=()
while IFS='|' read -r kind kernel name rep; do
  [ -n "$kind" ] || continue
  if [ "$kind" = dup ]; then DUPS+=("run_$kernel.py $name: same cubin and launch data as $rep, not run separately"); continue; fi
  for tool in "${TOOL_LIST[@]}"; do add_job "$tool" "stage:$kernel:$name" "run_$kernel.py $name" "$T_STAGE"; done
done <<<"$STAGE_LINES"
NJ=${#J_TOOL[@]}

# The command of a job: sets ARGV.
job_argv() {
  local target="$1" tool="$2" uncached=()
  case "$tool" in memcheck|initcheck) uncached=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;; esac
  local pytest=("$PY" -m pytest -q -rs -p no:cacheprovider -m gpu)
  case "$target" in
    rt_uncached) ARGV=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${pytest[@]}" tests/gpu/test_runtime_gpu.py -k "not graph") ;;
    rt_graph) ARGV=(env "${pytest[@]}" tests/gpu/test_runtime_gpu.py -k "$(graph_filter "$tool")") ;;
    rt_all) ARGV=(env "${pytest[@]}" tests/gpu/test_runtime_gpu.py) ;;
    bad_inputs) ARGV=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${pytest[@]}" tests/runtime/test_bad_inputs.py) ;;
    stress) ARGV=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1 TMLR_STRESS_LAUNCHES="$STRESS_LAUNCHES" TMLR_STRESS_TIMEOUT_S=$((T_STRESS - 20)) "${pytest[@]}" tests/gpu/test_stress_gpu.py) ;;
    stage:*)
      local rest="${target#stage:}"; local kernel="${rest%%:*}" name="${rest#*:}"
      ARGV=(env ${uncached[@]+"${uncached[@]}"} "$PY" "examples/stages/run_$kernel.py" "examples/stages/artifacts/$name") ;;
    *) echo "sanitize.sh: internal error, unknown target $target" >&2; exit 70 ;;
  esac
}
san_opts() {  # tool, slot, target
  SOPTS=(--tool "$1" --target-processes all)
  # No --error-exitcode: the exit status stays the target's own, and errors are counted from the log, less
  # the known false reports (see the header); every report is printed so that none is discounted unseen.
  [ "$LIMIT_OPT" = 1 ] && SOPTS+=(--print-limit 0)
  if [ "$PORT_OPTS" = 1 ]; then SOPTS+=(--port $((49152 + 64 * $2)) --max-connections 32); fi
  # Bad-input cases may make the driver refuse something on purpose (a cubin for another arch, an address
  # CUDA does not know): not a memory error. Device-side checks stay on.
  if [ "$3" = bad_inputs ] && [ "$API_OPT" = 1 ]; then SOPTS+=(--report-api-errors no); fi
}
slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_'; }

if [ -n "${OUT:-}" ]; then LOGDIR="$OUT/sanitizer"; else LOGDIR="$ROOT/sanitizer-logs"; fi
J_LOG=()
for ((i = 0; i < NJ; i++)); do J_LOG+=("$LOGDIR/$(printf '%02d' "$i")_${J_TOOL[i]}__$(slug "${J_TARGET[i]}").log"); done

if [ "$DRY" = 1 ]; then
  echo "sanitize.sh --dry-run: $NJ jobs for $FAMILY, $JOBS at a time, budget ${BUDGET}s, sanitizer: $SAN"
  for ((i = 0; i < NJ; i++)); do
    job_argv "${J_TARGET[i]}" "${J_TOOL[i]}"; san_opts "${J_TOOL[i]}" 0 "${J_TARGET[i]}"
    printf '%-9s %s  [timeout %ss]\n    %s %s %s\n' "${J_TOOL[i]}" "${J_LABEL[i]}" "${J_TMO[i]}" "$SAN" "${SOPTS[*]}" "${ARGV[*]}"
  done
  for d in ${DUPS[@]+"${DUPS[@]}"}; do echo "covered   $d"; done
  echo "logs would go to $LOGDIR"
  exit 0
fi

mkdir -p "$LOGDIR" || { echo "sanitize.sh: cannot create $LOGDIR" >&2; exit 1; }
STATE="$(mktemp -d)" || exit 1  # per job: NN.pid (the timeout process), NN.rc ("exit seconds")
trap 'rm -rf "$STATE"' EXIT
echo "sanitize.sh: $NJ jobs (${TOOL_LIST[*]}) for $FAMILY, $JOBS at a time, budget ${BUDGET}s; $SAN ($SAN_VERSION); logs in $LOGDIR"

# -- run: at most JOBS at once; each job is `timeout ... compute-sanitizer ...` writing NN_tool__target.log/.rc
SLOT_JOB=(); for ((s = 0; s < JOBS; s++)); do SLOT_JOB+=(-1); done
J_STATE=(); J_SECS=(); for ((i = 0; i < NJ; i++)); do J_STATE+=(pending); J_SECS+=(0); done
T0=$(date +%s); DEADLINE=$((T0 + BUDGET))
# shellcheck disable=SC2329  # called by the trap below
stop_all() {
  local s j
  echo "sanitize.sh: interrupted, stopping running jobs" >&2
  for ((s = 0; s < JOBS; s++)); do
    j=${SLOT_JOB[s]}
    if [ "$j" -ge 0 ] && [ -f "$STATE/$j.pid" ]; then kill -TERM "$(cat "$STATE/$j.pid")" 2>/dev/null; fi
  done
  exit 130
}
trap stop_all INT TERM

next=0; running=0
while [ "$next" -lt "$NJ" ] || [ "$running" -gt 0 ]; do
  for ((s = 0; s < JOBS; s++)); do  # collect finished jobs
    j=${SLOT_JOB[s]}
    if [ "$j" -ge 0 ] && [ -s "$STATE/$j.rc" ]; then
      read -r rc secs <"$STATE/$j.rc"
      J_STATE[j]="rc=$rc"; J_SECS[j]=$secs; SLOT_JOB[s]=-1; running=$((running - 1))
      echo "  [$(( $(date +%s) - T0 ))s] done ${J_TOOL[j]} ${J_LABEL[j]} (exit $rc, ${secs}s)"
    fi
  done
  for ((s = 0; s < JOBS && next < NJ; s++)); do  # start new ones in free slots
    [ "${SLOT_JOB[s]}" -lt 0 ] || continue
    now=$(date +%s)
    if [ "$now" -ge "$DEADLINE" ]; then
      J_STATE[next]=budget; next=$((next + 1)); s=$((s - 1)); continue
    fi
    j=$next; next=$((next + 1))
    tmo=${J_TMO[j]}; left=$((DEADLINE + 20 - now))
    [ "$left" -lt "$tmo" ] && tmo=$left
    [ "$tmo" -lt 15 ] && tmo=15
    J_TMO[j]=$tmo
    job_argv "${J_TARGET[j]}" "${J_TOOL[j]}"; san_opts "${J_TOOL[j]}" "$s" "${J_TARGET[j]}"
    log="${J_LOG[j]}"
    {
      echo "# ${J_TOOL[j]} ${J_LABEL[j]} (timeout ${tmo}s)"
      echo "# $SAN ${SOPTS[*]} ${ARGV[*]}"
    } >"$log"
    (
      started=$(date +%s)
      timeout -k 10 "$tmo" "$SAN" "${SOPTS[@]}" "${ARGV[@]}" >>"$log" 2>&1 </dev/null &
      echo $! >"$STATE/$j.pid"
      wait $!
      rc=$?
      echo "$rc $(( $(date +%s) - started ))" >"$STATE/$j.rc"
    ) &
    SLOT_JOB[s]=$j; running=$((running + 1)); J_STATE[j]=running
    echo "  [$((now - T0))s] start ${J_TOOL[j]} ${J_LABEL[j]} (timeout ${tmo}s)"
  done
  sleep 0.5
done
trap - INT TERM

# -- summary -----------------------------------------------------------------------------------------------
sum_numbers() { awk '{ s += $1 } END { print s + 0 }'; }
log_counts() {  # tool log -> "errors known" (tests/sanitizer_log.py); a log it cannot read counts as 1 error, never as clean
  local out
  out=$("$PY" tests/sanitizer_log.py "$1" "$2" 2>/dev/null | head -1)
  if [[ "$out" =~ ^[0-9]+\ [0-9]+$ ]]; then echo "$out"; else echo "1 0"; fi
}
n_clean=0; n_err=0; n_fail=0; n_notrun=0; total_errors=0
SUMMARY="$LOGDIR/summary.txt"
{
  echo "== compute-sanitizer summary ($FAMILY; $SAN_VERSION) =="
  for ((i = 0; i < NJ; i++)); do
    tool=${J_TOOL[i]}; label=${J_LABEL[i]}; log=${J_LOG[i]}; state=${J_STATE[i]}
    if [ "$state" = budget ]; then
      echo "$tool $label: NOT RUN (time budget of ${BUDGET}s used up before it could start)"; n_notrun=$((n_notrun + 1)); continue
    fi
    rc=${state#rc=}
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      echo "$tool $label: NOT RUN (timed out after ${J_TMO[i]}s; partial log $(basename "$log"))"; n_notrun=$((n_notrun + 1)); continue
    fi
    n_sum=$(grep -cE 'ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard' "$log")
    read -r errs known <<<"$(log_counts "$tool" "$log")"
    errs=$((errs - known))
    race=$(grep -oE 'RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)' "$log")
    warn=0
    if [ -n "$race" ]; then
      rerr=$(sed -E 's/.*\(([0-9]+) error.*/\1/' <<<"$race" | sum_numbers)
      warn=$(sed -E 's/.*, ([0-9]+) warning.*/\1/' <<<"$race" | sum_numbers)
      [ "$rerr" -gt "$errs" ] && errs=$rerr
    fi
    detail=""
    res=$(grep -E '^(PASS|FAIL) ' "$log" | tail -1)
    [ -n "$res" ] || res=$(grep -v '^=========' "$log" | grep -E '[0-9]+ (passed|failed|error|errors|skipped|deselected)(,| in )' | tail -1 | sed -E 's/^=+ //; s/ =+$//')
    [ ${#res} -gt 110 ] && res="${res:0:107}..."
    [ -n "$res" ] && detail="$res; "
    detail="${detail}${J_SECS[i]}s"
    wtxt=""; [ "$warn" -gt 0 ] && wtxt=" ($warn racecheck warnings)"
    [ "$known" -gt 0 ] && wtxt="$wtxt ($known known false reports not counted, see tests/sanitizer_log.py)"
    if [ "$n_sum" -eq 0 ]; then
      echo "$tool $label: NO SANITIZER SUMMARY (exit $rc) [$detail] - see $(basename "$log")"; n_fail=$((n_fail + 1))
    elif [ "$errs" -gt 0 ]; then
      echo "$tool $label: $errs errors$wtxt [$detail]"; n_err=$((n_err + 1)); total_errors=$((total_errors + errs))
      if [ "$known" -gt 0 ]; then  # the reports other than the known one
        "$PY" tests/sanitizer_log.py "$tool" "$log" | tail -n +2 | sed 's/^/    ========= /'
      else
        grep -E '^========= +(Invalid|Error|Race|Warning|Uninitialized|Barrier|Program hit|Potential|Malloc|Cuda|Fatal|Hazard|Out-of-range|Misaligned|Unused)' "$log" \
          | grep -vE "didn't terminate|Target application returned" | head -3 | sed 's/^/    /'
      fi
    elif [ "$rc" != 0 ]; then
      echo "$tool $label: 0 errors$wtxt, but the target FAILED (exit $rc) [$detail]"; n_fail=$((n_fail + 1))
    else
      echo "$tool $label: 0 errors$wtxt [$detail]"; n_clean=$((n_clean + 1))
    fi
  done
  for d in ${DUPS[@]+"${DUPS[@]}"}; do echo "covered: $d"; done
  verdict=PASS
  [ "$n_notrun" -gt 0 ] && verdict="INCOMPLETE"
  [ $((n_err + n_fail)) -gt 0 ] && verdict=FAIL
  echo "sanitize total: $NJ runs in $(( $(date +%s) - T0 ))s: $n_clean clean, $n_err with errors ($total_errors errors), $n_fail target failures/no summary, $n_notrun not run -> $verdict (logs: $LOGDIR)"
} >"$SUMMARY"  # not a pipe: the counters above must survive into the exit status below
cat "$SUMMARY"
[ $((n_err + n_fail)) -gt 0 ] && exit 1
[ "$n_notrun" -gt 0 ] && exit 2
exit 0
