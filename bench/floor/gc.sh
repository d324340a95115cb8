#!/bin/bash
# Young-generation collections of each of Switchyard's threads under load: small JSON chat completions, wrk at
# 50 connections, Node's --trace-gc-nvp. Per thread (V8 isolate): scavenges, mean pause, and per request the
# bytes allocated, surviving a scavenge and promoted to the old generation. Promoted bytes per request is the
# figure to watch: a short call's objects should die young, and each promoted byte is later marked and swept
# by a full collection (bench/PROFILE.md, sixth session). Needs wrk and a built dist/.
#
#   bash bench/floor/gc.sh [seconds=4]     (GC_LIMITS=1: under two limits every call is admitted under, as
#                                          compare.sh's switchyard-limits)
set -euo pipefail
SECS=${1:-4}
source "$(dirname "$0")/lib.sh"
start_fake
start_switchyard --trace-gc-nvp
[ "${GC_LIMITS:-}" = 1 ] && add_bench_limits
echo '{"model":"bench/bench-model","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":32}' > "$WORK/body.json"

run() { load_switchyard "$1"; }
run 2 > /dev/null
FROM=$(wc -l < "$WORK/home-sy.out")
RESULT=$(run "$SECS")
tail -n +"$((FROM + 1))" "$WORK/home-sy.out" | node -e '
const wrk = JSON.parse(process.argv[1]);
const threads = new Map();
for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
  const isolate = /^\[\d+:(0x[0-9a-f]+)\]/.exec(line)?.[1];
  if (!isolate) continue;
  const t = threads.get(isolate) ?? { scavenges: 0, pause: 0, allocated: 0, survived: 0, promoted: 0, full: 0 };
  threads.set(isolate, t);
  const f = Object.fromEntries([...line.matchAll(/(\w+)=([\d.]+)/g)].map((m) => [m[1], Number(m[2])]));
  if (/ gc=s /.test(line)) {
    t.scavenges++;
    t.pause += f.pause;
    t.allocated += f.allocated;
    t.survived += f.new_space_survived;
    t.promoted += f.promoted;
  } else if (/ gc=(mc|ms) /.test(line)) t.full++;
}
const n = wrk.requests;
console.log(`${n} requests in ${(wrk.duration_us / 1e6).toFixed(1)} s, ${Math.round(n * 1e6 / wrk.duration_us)} req/s`);
console.log("| thread (isolate) | scavenges | mean pause ms | allocated B/request | survived B/request | promoted B/request | full GCs |");
console.log("|---|---|---|---|---|---|---|");
for (const [isolate, t] of [...threads].sort((a, b) => b[1].allocated - a[1].allocated)) {
  if (t.scavenges === 0) continue;
  console.log(`| ${isolate} | ${t.scavenges} | ${(t.pause / t.scavenges).toFixed(2)} | ${Math.round(t.allocated / n)} | ${Math.round(t.survived / n)} | ${Math.round(t.promoted / n)} | ${t.full} |`);
}' "$RESULT"
