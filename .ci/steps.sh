# Steps for .ci/run: each step's output is kept in its own log ($CI_LOGS/NAME.log), its wall
# time, test count and compile count are recorded, and `account` prints them as a table.
#
#   step NAME COMMAND...         runs in the foreground, its output shown as it comes
#   begin NAME COMMAND...        starts in the background (the other core's work); its output
#                                is kept apart and shown whole when `finish` collects it
#   begin --idle NAME COMMAND... the same in the idle scheduling class (SCHED_IDLE, and nice 19):
#                                it runs only when the foreground leaves a core free, and a
#                                foreground process that wakes takes the core from it at once,
#                                so a step that times itself is not slowed by it (for work
#                                without deadlines: builds)
#   begin --after STEP NAME COMMAND...
#                                starts in the background at once but runs COMMAND only when
#                                the background step STEP has passed (its wall time counts
#                                from then); if STEP failed, so does NAME, without running
#                                (with --idle too: then at the lowest priority)
#   finish NAME...               waits for background steps; the first that failed fails CI
#   account                      the table: every step, its wall time, CPU time, tests and compiles
#
# A step's cpu is the user and system time of everything it ran (the processes it waited for,
# and theirs): on two cores the whole run cannot take less than half the sum of the column.
# A step's tests are the closing lines of the runners it printed: Swift Testing's "Test run
# with N tests", and the plain "…: N passed, N failed" of the project's own scripts. Its
# compiles are SwiftPM's "Compiling" lines (a module, or a C file; not its plugins): a step
# that reuses a build shows 0.
CI_LOGS="${CI_LOGS:-$PWD/.build/ci}"
rm -rf "$CI_LOGS"
mkdir -p "$CI_LOGS"
ci_steps=()
ci_started=$(date +%s)
declare -A ci_pids=()

# A test run that ran no tests (a filter that matches nothing, a suite switched off) fails
# its step: a green step must have checked something.
ci_no_empty_runs() {
  if grep -qE '(✔|✘) Test run with 0 tests' "$CI_LOGS/$1.log"; then
    echo "== step $1: a test run in it ran 0 tests" | tee -a "$CI_LOGS/$1.log"
    return 1
  fi
}

# Runs "$@" in a process of its own and writes the CPU seconds it and its children used to $1
# (bash's `times` in that process: its children's user and system time).
ci_timed() {
  local cpu=$1; shift
  local status=0
  # (`times` itself, not in a pipeline: a pipeline's stage is a process of its own, with no children.)
  ( "$@" || status=$?; times > "$cpu.times"
    awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%d\n", t }' "$cpu.times" > "$cpu"
    exit "$status" ) || status=$?
  return "$status"
}

# Runs "$@" with its output in $CI_LOGS/$1.log and writes "status start end" to $1.result.
ci_run() {
  local name=$1; shift
  local start end status=0
  start=$(date +%s)
  ci_timed "$CI_LOGS/$name.cpu" "$@" > "$CI_LOGS/$name.log" 2>&1 < /dev/null || status=$?
  [ "$status" -ne 0 ] || ci_no_empty_runs "$name" || status=1
  end=$(date +%s)
  echo "$status $start $end" > "$CI_LOGS/$name.result"
  return "$status"
}

step() {
  local name=$1; shift
  ci_steps+=("$name")
  echo "== step $name: $*"
  local start end status=0
  start=$(date +%s)
  ci_timed "$CI_LOGS/$name.cpu" "$@" < /dev/null 2>&1 | tee "$CI_LOGS/$name.log" || status=${PIPESTATUS[0]}
  [ "$status" -ne 0 ] || ci_no_empty_runs "$name" || status=1
  end=$(date +%s)
  echo "$status $start $end" > "$CI_LOGS/$name.result"
  echo "== step $name: $( [ "$status" -eq 0 ] && echo passed || echo "FAILED (status $status)" ) in $((end - start)) s"
  [ "$status" -eq 0 ] || ci_fail "$name"
}

# Waits until the background step $1 has ended; succeeds if it passed.
ci_await() {
  while [ ! -f "$CI_LOGS/$1.result" ]; do sleep 2; done
  local status
  read -r status _ < "$CI_LOGS/$1.result"
  [ "$status" -eq 0 ] || { echo "not run: step $1, which it needs, failed"; return 1; }
}

begin() {
  local idle="" after=""
  while :; do
    case "$1" in
      --idle) idle=yes; shift ;;
      --after) after=$2; shift 2 ;;
      *) break ;;
    esac
  done
  local name=$1; shift
  ci_steps+=("$name")
  echo "== step $name (beside the others${idle:+, at the lowest priority}${after:+, once $after has passed}, output kept apart): $*"
  local run=(ci_run "$name")
  [ -z "$idle" ] || run+=(chrt --idle 0 nice -n 19)
  if [ -n "$after" ]; then
    { ci_await "$after" > "$CI_LOGS/$name.log" 2>&1 || { echo "1 $(date +%s) $(date +%s)" > "$CI_LOGS/$name.result"; exit 1; }
      "${run[@]}" "$@"; } &
  else
    "${run[@]}" "$@" &
  fi
  ci_pids[$name]=$!
  [ -z "$idle" ] || ci_keep_idle "${ci_pids[$name]}" &
}

# Every process under $1, children first.
ci_descendants() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do ci_descendants "$child"; echo "$child"; done
}

# Keeps every process under $1 at nice 19 while it runs: SwiftPM's build system starts each
# compiler at the default nice value, whatever its own, so it is set again each second. (The
# idle class is inherited by every compiler, which is what keeps a compiler that has not been
# reniced yet from taking a core from the foreground: nice alone left a new compiler at the
# default priority for up to a second, and the viewer's p99 latency at 68 ms once.)
ci_keep_idle() {
  local pid
  while kill -0 "$1" 2>/dev/null; do
    for pid in $(ci_descendants "$1"); do renice 19 -p "$pid" > /dev/null 2>&1 || true; done
    sleep 1
  done
}

finish() {
  local name failed=""
  for name in "$@"; do
    local status=0
    wait "${ci_pids[$name]}" || status=$?
    unset "ci_pids[$name]"
    local start end
    read -r _ start end < "$CI_LOGS/$name.result"
    echo "== step $name, its output:"
    cat "$CI_LOGS/$name.log"
    echo "== step $name: $( [ "$status" -eq 0 ] && echo passed || echo "FAILED (status $status)" ) in $((end - start)) s"
    [ "$status" -eq 0 ] || failed="${failed:-$name}"
  done
  [ -z "$failed" ] || ci_fail "$failed"
}

ci_kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do ci_kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

# A failed step fails CI: the steps still running beside it are stopped, the table printed.
ci_fail() {
  local pid
  for pid in "${ci_pids[@]}"; do ci_kill_tree "$pid"; done
  account failed
  echo "CI FAILED: step $1 (its log: $CI_LOGS/$1.log)"
  exit 1
}

ci_tests() {
  local log="$CI_LOGS/$1.log"
  { grep -oE '(✔|✘) Test run with [0-9]+ tests?' "$log" | grep -oE '[0-9]+' || true
    grep -E '^[A-Za-z -]*: ?[0-9]+ passed, [0-9]+ failed' "$log" | sed -E 's/.*: ?([0-9]+) passed.*/\1/' || true
  } | awk '{ sum += $1; n++ } END { if (n) print sum; else print "-" }'
}

account() {
  local total_tests=0 total_cpu=0 name
  echo
  echo "== CI account: $(git rev-parse --short HEAD 2>/dev/null), $(sed -n '/^model name[[:space:]]*: /{s///p;q}' /proc/cpuinfo), $(nproc) cores"
  printf '%-22s %9s %9s %9s %9s %10s  %s\n' "step" "wall" "from" "to" "cpu" "tests" "compiled"
  for name in "${ci_steps[@]}"; do
    local status=running start=0 end
    end=$(date +%s)
    [ -f "$CI_LOGS/$name.result" ] && read -r status start end < "$CI_LOGS/$name.result"
    [ "$start" -gt 0 ] || start=$end
    local tests compiled
    tests=$(ci_tests "$name")
    # Modules and C files compiled; SwiftPM's plugins (compiled once into its cache) are not the package.
    compiled=$(grep 'Compiling ' "$CI_LOGS/$name.log" 2>/dev/null | grep -vc 'Compiling plugin' || true)
    local cpu=0
    [ -s "$CI_LOGS/$name.cpu" ] && read -r cpu < "$CI_LOGS/$name.cpu"
    total_cpu=$((total_cpu + cpu))
    [ "$tests" = "-" ] || total_tests=$((total_tests + tests))
    printf '%-22s %7d s %7d s %7d s %7d s %10s  %s%s\n' "$name" $((end - start)) $((start - ci_started)) $((end - ci_started)) \
      "$cpu" "$tests" "${compiled:-0}" "$( [ "$status" = 0 ] && echo "" || echo "  ($status)")"
  done
  local wall=$(( $(date +%s) - ci_started ))
  printf '%-22s %7d s  (%d min %d s) %17d s of CPU\n' "whole run" "$wall" $((wall / 60)) $((wall % 60)) "$total_cpu"
  # The plain closing line: tests passed over every step (a test the sanitizers run again counts again).
  [ "${1:-}" = failed ] || echo "ci: $total_tests passed, 0 failed"
}
