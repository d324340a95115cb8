#!/bin/bash
# Measures the floor (bench/floor/README.md) beside direct, nginx and Switchyard in one run: small chat
# completions (JSON answers, or streams with FLOOR_STREAM=1), wrk at 50 connections, rounds interleaved.
# Prints req/s, p50 and CPU per request (all of each target's processes, from /proc) per round, then the
# medians; then, for the floor and Switchyard, that CPU split by thread (edge threads, relay workers, V8's GC
# helpers, the rest: bench/floor/thread-split.mjs) and the single-edge ceiling, 1e6 / edge us per request.
# Needs nginx, wrk and a built dist/.
#
#   bash bench/floor/compare.sh [rounds=3]      (FLOOR_SECONDS=4 per load; FLOOR_BODY=file for another request;
#                                                FLOOR_STREAM=1 for 20-chunk SSE answers, as in the bench's b;
#                                                FLOOR_EDGES=2 for two floor edge threads on one port;
#                                                FLOOR_LIMITS=1 adds `switchyard-limits`, a second Switchyard whose
#                                                every call is admitted under a requests and a dollar limit)
set -euo pipefail
ROUNDS=${1:-3}
SECONDS_EACH=${FLOOR_SECONDS:-4}
source "$(dirname "$0")/lib.sh"
start_fake

mkdir -p "$WORK/nginx"
NGINX_PORT=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
sed -e "s#{{PREFIX}}#$WORK/nginx#g" -e "s#{{PORT}}#$NGINX_PORT#" -e "s#{{UPSTREAM_PORT}}#$UP#" "$BENCH/nginx.conf.template" > "$WORK/nginx/nginx.conf"
nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' 2>/dev/null & NGINX=$!; PIDS+=($NGINX)

declare -A PORT PID
for worker in inline undici switchyard; do
  FLOOR_UPSTREAM=$UP FLOOR_WORKER=$worker node "$FLOOR/edge.mjs" > "$WORK/floor-$worker.out" 2>&1 & PID[floor-$worker]=$!; PIDS+=(${PID[floor-$worker]})
done

TARGETS="direct nginx floor-inline floor-undici floor-switchyard switchyard"
declare -A TOKENS
if [ "${FLOOR_LIMITS:-}" = 1 ]; then
  # The same service with two limits every call is admitted under and settles to, never reached: what admission
  # costs per request, beside the row without limits in the same run.
  SY_NAME=home-limits start_switchyard
  add_bench_limits
  PORT[switchyard-limits]=$SY_PORT; PID[switchyard-limits]=$SY; TOKENS[switchyard-limits]=$TOKEN
  TARGETS="$TARGETS switchyard-limits"
fi
start_switchyard
TOKENS[switchyard]=$TOKEN

PORT[direct]=$UP; PID[direct]=$FAKE; PORT[nginx]=$NGINX_PORT; PID[nginx]=$NGINX; PORT[switchyard]=$SY_PORT; PID[switchyard]=$SY
for worker in inline undici switchyard; do PORT[floor-$worker]=$(port_of "$WORK/floor-$worker.out"); done
# FLOOR_BODY=<file>: that JSON chat request (its `model` set per target) instead of the one-line question.
# FLOOR_STREAM=1: the same request with `"stream":true`; every target answers it with a 20-chunk event stream.
STREAM=false STREAM_MEMBER=""
[ "${FLOOR_STREAM:-}" = 1 ] && STREAM=true STREAM_MEMBER='"stream":true,'
for model in bench-model bench/bench-model; do
  if [ -n "${FLOOR_BODY:-}" ]; then
    node -e 'const fs = require("fs"); const b = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); b.model = process.argv[2]; if (process.argv[4] === "true") b.stream = true; fs.writeFileSync(process.argv[3], JSON.stringify(b))' "$FLOOR_BODY" "$model" "$WORK/${model//\//_}.json" "$STREAM"
  else
    echo "{\"model\":\"$model\",$STREAM_MEMBER\"messages\":[{\"role\":\"user\",\"content\":\"Say hello in one short sentence.\"}],\"max_tokens\":32}" > "$WORK/${model//\//_}.json"
  fi
done

TICK=$(getconf CLK_TCK)
cpu_ticks() { local total=0; for p in $1 $(pgrep -P "$1" || true); do local s; s=$(cut -d')' -f2 "/proc/$p/stat" 2>/dev/null) || continue; set -- $s; total=$((total + ${12} + ${13})); done; echo $total; }
load() {
  local name=$1 secs=$2 body=$WORK/bench-model.json headers=""
  if [[ $name == switchyard* ]]; then body=$WORK/bench_bench-model.json; headers="authorization: Bearer ${TOKENS[$name]}"; fi
  local split=false; [[ $name == floor-* || $name == switchyard* ]] && split=true
  $split && node "$FLOOR/thread-split.mjs" snap "${PID[$name]}" > "$WORK/threads-before"
  local before; before=$(cpu_ticks "${PID[$name]}")
  local out; out=$(BENCH_BODY=$body BENCH_HEADERS=$headers wrk -t1 -c50 -d"${secs}s" -s "$BENCH/lua/post.lua" "http://127.0.0.1:${PORT[$name]}/v1/chat/completions" 2>&1 | sed -n 's/^BENCH_JSON //p')
  local after; after=$(cpu_ticks "${PID[$name]}")
  local threads='{}'
  if $split; then
    node "$FLOOR/thread-split.mjs" snap "${PID[$name]}" > "$WORK/threads-after"
    threads=$(CLK_TCK=$TICK node "$FLOOR/thread-split.mjs" split "${PID[$name]}" "$WORK/threads-before" "$WORK/threads-after" "$(node -e "console.log(($out).requests)")")
  fi
  node -e "const j=$out, ticks=$after-$before; const errors=j.err_status+j.err_read+j.err_connect+j.err_write+j.err_timeout;
    console.log([process.argv[1], Math.round(j.requests*1e6/j.duration_us), j.p50_us, (ticks/$TICK*1e6/j.requests).toFixed(1), errors, process.argv[2]].join(' '))" "$name" "$threads"
}
for t in $TARGETS; do load "$t" 1 > /dev/null; done
for round in $(seq 1 "$ROUNDS"); do for t in $TARGETS; do load "$t" "$SECONDS_EACH"; done; done > "$WORK/rows"
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split(" "));
const median = (xs) => xs.map(Number).sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
console.log("| target | req/s (median) | p50 us | CPU us/request | errors | every round\x27s req/s |");
console.log("|---|---|---|---|---|---|");
for (const t of process.argv[2].split(" ")) {
  const mine = rows.filter((r) => r[0] === t);
  const errors = mine.reduce((n, r) => n + Number(r[4]), 0);
  console.log(`| ${t} | ${median(mine.map((r) => r[1]))} | ${median(mine.map((r) => r[2]))} | ${median(mine.map((r) => r[3])).toFixed(1)} | ${errors} | ${mine.map((r) => r[1]).join(", ")} |`);
}
// CPU per request by thread (medians over the rounds), for the targets whose threads were read.
console.log("\n| target | edge threads us/req | relay workers us/req | GC helpers us/req | the rest us/req | single-edge ceiling req/s |");
console.log("|---|---|---|---|---|---|");
for (const t of process.argv[2].split(" ")) {
  const split = rows.filter((r) => r[0] === t && r[5] !== "{}").map((r) => JSON.parse(r[5]));
  if (split.length === 0) continue;
  const m = (k) => median(split.map((s) => s[k]));
  console.log(`| ${t} | ${m("edge").toFixed(1)} | ${m("relay").toFixed(1)} | ${m("gc").toFixed(1)} | ${m("rest").toFixed(1)} | ${Math.round(1e6 / m("edge"))} |`);
}' "$WORK/rows" "$TARGETS"
