#!/bin/bash
# CPU time per request of each of Switchyard's threads under load (small JSON chat completions, wrk), from
# /proc/<pid>/task: which thread pays for a request. The edge is the main thread; the others are Node's
# workers and V8's platform (GC) threads, listed by thread ID because Node 20 gives them all the name `node`.
# Besides the edge, the relay workers are the busiest threads.
#
#   bash bench/floor/threads.sh [seconds=5] [node flags...]    (CONNS=50; MODE=sse for 20-chunk streams)
#
# Single runs move by 20% on a shared VM: compare builds or flags in alternating runs.
set -euo pipefail
SECS=${1:-5}
shift || true
source "$(dirname "$0")/lib.sh"
start_fake
start_switchyard "$@"
STREAM=false
[ "${MODE:-json}" = sse ] && STREAM=true
echo "{\"model\":\"bench/bench-model\",\"stream\":$STREAM,\"messages\":[{\"role\":\"user\",\"content\":\"Say hello in one short sentence.\"}],\"max_tokens\":32}" > "$WORK/body.json"

run() { load_switchyard "$1" "${CONNS:-50}"; }
# Per thread: ID and utime + stime in clock ticks.
snap() { for task in /proc/"$SY"/task/*; do local s; s=$(cut -d')' -f2 "$task/stat" 2>/dev/null) || continue; set -- $s; echo "${task##*/} $((${12} + ${13}))"; done; }
run 2 > /dev/null
snap > "$WORK/before"
RESULT=$(run "$SECS")
snap > "$WORK/after"
node -e '
const fs = require("fs");
const [before, after, result, pid, tick] = process.argv.slice(1);
const read = (f) => new Map(fs.readFileSync(f, "utf8").trim().split("\n").map((l) => l.split(" ")));
const a = read(before), wrk = JSON.parse(result), n = wrk.requests;
const rows = [...read(after)].map(([tid, t]) => [tid, ((Number(t) - Number(a.get(tid) ?? 0)) / Number(tick)) * 1e6 / n]);
const total = rows.reduce((s, r) => s + r[1], 0);
console.log(`${Math.round(n * 1e6 / wrk.duration_us)} req/s, p50 ${(wrk.p50_us / 1000).toFixed(3)} ms, ${total.toFixed(1)} us of CPU per request`);
console.log("| thread | us per request |\n|---|---|");
for (const [tid, us] of rows.sort((x, y) => y[1] - x[1])) if (us >= 0.1) console.log(`| ${tid === pid ? "edge (main)" : tid} | ${us.toFixed(1)} |`);
' "$WORK/before" "$WORK/after" "$RESULT" "$SY" "$(getconf CLK_TCK)"
