#!/bin/bash
# Young-generation collections of each of Switchyard's threads under load: small JSON chat completions, wrk at
# 50 connections, Node's --trace-gc-nvp. Per thread (V8 isolate): scavenges, mean pause, and per request the
# bytes allocated, surviving a scavenge and promoted to the old generation. Promoted bytes per request is the
# figure to watch: a short call's objects should die young, and each promoted byte is later marked and swept
# by a full collection (bench/PROFILE.md, sixth session). Needs wrk and a built dist/.
#
#   bash bench/floor/gc.sh [seconds=4]
set -euo pipefail
SECS=${1:-4}
FLOOR=$(cd "$(dirname "$0")" && pwd)
BENCH=$(dirname "$FLOOR")
ROOT=$(dirname "$BENCH")
WORK=$(mktemp -d)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; sleep 0.5; rm -rf "$WORK"; }
trap cleanup EXIT
node "$ROOT/bin/build.js" --if-stale

(cd "$BENCH" && exec node --import tsx fake-upstream.ts > "$WORK/fake.out" 2>&1) & PIDS+=($!)
for _ in $(seq 1 100); do grep -q '"port"' "$WORK/fake.out" 2>/dev/null && break; sleep 0.1; done
UP=$(grep -o '"port":[0-9]*' "$WORK/fake.out" | head -1 | cut -d: -f2)

mkdir -m 700 "$WORK/home"
START_FLAGS=$(node -e "const s=require(process.argv[1]).scripts.start; console.log((/^node((?: --\\S+)*) /.exec(s)||[])[1]||'')" "$ROOT/package.json")
SWITCHYARD_HOME=$WORK/home SWITCHYARD_PORT=0 SWITCHYARD_VAULT=file node $START_FLAGS --trace-gc-nvp "$ROOT/dist/bin/switchyard.js" start > "$WORK/sy.out" 2> "$WORK/sy.err" & PIDS+=($!)
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sy.err" 2>/dev/null && break; sleep 0.2; done
PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$WORK/sy.err" | grep -o '[0-9]*$')
TOKEN=$(cat "$WORK/home/token")
curl -sf -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"kind\":\"openai_compatible\",\"id\":\"bench\",\"baseUrl\":\"http://127.0.0.1:$UP/v1\"}" "http://127.0.0.1:$PORT/v1/providers"
curl -sf -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"providerId":"bench","upstreamModelId":"bench-model","families":["styleA.chat_completions"]}' "http://127.0.0.1:$PORT/v1/catalog/models"
echo '{"model":"bench/bench-model","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":32}' > "$WORK/body.json"

run() { BENCH_BODY=$WORK/body.json BENCH_HEADERS="authorization: Bearer $TOKEN" wrk -t1 -c50 -d"$1s" -s "$BENCH/lua/post.lua" "http://127.0.0.1:$PORT/v1/chat/completions" 2>&1 | sed -n 's/^BENCH_JSON //p'; }
run 2 > /dev/null
FROM=$(wc -l < "$WORK/sy.out")
RESULT=$(run "$SECS")
tail -n +"$((FROM + 1))" "$WORK/sy.out" | node -e '
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
