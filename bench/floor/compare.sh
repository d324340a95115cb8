#!/bin/bash
# Measures the floor (bench/floor/README.md) beside direct, nginx and Switchyard in one run: small JSON chat
# completions, wrk at 50 connections, rounds interleaved. Prints req/s, p50 and CPU per request (all of each
# target's processes, from /proc) per round, then the medians. Needs nginx, wrk and a built dist/.
#
#   bash bench/floor/compare.sh [rounds=3]      (FLOOR_SECONDS=4 per load)
set -euo pipefail
ROUNDS=${1:-3}
SECONDS_EACH=${FLOOR_SECONDS:-4}
FLOOR=$(cd "$(dirname "$0")" && pwd)
BENCH=$(dirname "$FLOOR")
ROOT=$(dirname "$BENCH")
WORK=$(mktemp -d)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; sleep 0.5; rm -rf "$WORK"; }
trap cleanup EXIT
node "$ROOT/bin/build.js" --if-stale

port_of() { for _ in $(seq 1 100); do grep -o '"port":[0-9]*' "$1" 2>/dev/null | head -1 | cut -d: -f2 && return; sleep 0.1; done; echo "no port in $1" >&2; exit 1; }

(cd "$BENCH" && exec node --import tsx fake-upstream.ts > "$WORK/fake.out" 2>&1) & FAKE=$!; PIDS+=($FAKE)
UP=$(port_of "$WORK/fake.out")

mkdir -p "$WORK/nginx"
NGINX_PORT=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
sed -e "s#{{PREFIX}}#$WORK/nginx#g" -e "s#{{PORT}}#$NGINX_PORT#" -e "s#{{UPSTREAM_PORT}}#$UP#" "$BENCH/nginx.conf.template" > "$WORK/nginx/nginx.conf"
nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' 2>/dev/null & NGINX=$!; PIDS+=($NGINX)

declare -A PORT PID
for worker in inline undici switchyard; do
  FLOOR_UPSTREAM=$UP FLOOR_WORKER=$worker node "$FLOOR/edge.mjs" > "$WORK/floor-$worker.out" 2>&1 & PID[floor-$worker]=$!; PIDS+=(${PID[floor-$worker]})
done

mkdir -m 700 "$WORK/home"
# With the Node flags of `npm start`, as the full bench runs it.
START_FLAGS=$(node -e "const s=require(process.argv[1]).scripts.start; console.log((/^node((?: --\\S+)*) /.exec(s)||[])[1]||'')" "$ROOT/package.json")
SWITCHYARD_HOME=$WORK/home SWITCHYARD_PORT=0 SWITCHYARD_VAULT=file node $START_FLAGS "$ROOT/dist/bin/switchyard.js" start > "$WORK/sy.out" 2> "$WORK/sy.err" & SY=$!; PIDS+=($SY)
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sy.err" 2>/dev/null && break; sleep 0.2; done
SY_PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$WORK/sy.err" | grep -o '[0-9]*$')
TOKEN=$(cat "$WORK/home/token")
curl -sf -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"kind\":\"openai_compatible\",\"id\":\"bench\",\"baseUrl\":\"http://127.0.0.1:$UP/v1\"}" "http://127.0.0.1:$SY_PORT/v1/providers"
curl -sf -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"providerId":"bench","upstreamModelId":"bench-model","families":["styleA.chat_completions"]}' "http://127.0.0.1:$SY_PORT/v1/catalog/models"

PORT[direct]=$UP; PID[direct]=$FAKE; PORT[nginx]=$NGINX_PORT; PID[nginx]=$NGINX; PORT[switchyard]=$SY_PORT; PID[switchyard]=$SY
for worker in inline undici switchyard; do PORT[floor-$worker]=$(port_of "$WORK/floor-$worker.out"); done
for model in bench-model bench/bench-model; do
  echo "{\"model\":\"$model\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello in one short sentence.\"}],\"max_tokens\":32}" > "$WORK/${model//\//_}.json"
done

TICK=$(getconf CLK_TCK)
cpu_ticks() { local total=0; for p in $1 $(pgrep -P "$1" || true); do local s; s=$(cut -d')' -f2 "/proc/$p/stat" 2>/dev/null) || continue; set -- $s; total=$((total + ${12} + ${13})); done; echo $total; }
load() {
  local name=$1 secs=$2 body=$WORK/bench-model.json headers=""
  if [ "$name" = switchyard ]; then body=$WORK/bench_bench-model.json; headers="authorization: Bearer $TOKEN"; fi
  local before; before=$(cpu_ticks "${PID[$name]}")
  local out; out=$(BENCH_BODY=$body BENCH_HEADERS=$headers wrk -t1 -c50 -d"${secs}s" -s "$BENCH/lua/post.lua" "http://127.0.0.1:${PORT[$name]}/v1/chat/completions" 2>&1 | sed -n 's/^BENCH_JSON //p')
  local after; after=$(cpu_ticks "${PID[$name]}")
  node -e "const j=$out, ticks=$after-$before; const errors=j.err_status+j.err_read+j.err_connect+j.err_write+j.err_timeout;
    console.log([process.argv[1], Math.round(j.requests*1e6/j.duration_us), j.p50_us, (ticks/$TICK*1e6/j.requests).toFixed(1), errors].join(' '))" "$name"
}
TARGETS="direct nginx floor-inline floor-undici floor-switchyard switchyard"
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
}' "$WORK/rows" "$TARGETS"
