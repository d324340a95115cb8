# Sourced by compare.sh, gc.sh and threads.sh: a work directory removed on exit with every process started
# here, a built dist/, the fake upstream, and Switchyard started as `npm start` starts it, with a bench
# provider.
FLOOR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH=$(dirname "$FLOOR")
ROOT=$(dirname "$BENCH")
WORK=$(mktemp -d)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; sleep 0.5; rm -rf "$WORK"; }
trap cleanup EXIT
node "$ROOT/bin/build.js" --if-stale

# The first `"port":N` printed into file $1, waiting up to 10 s for it (whether or not the caller set pipefail).
port_of() {
  local port
  for _ in $(seq 1 100); do
    port=$(grep -o '"port":[0-9]*' "$1" 2>/dev/null | head -1 | cut -d: -f2)
    [ -n "$port" ] && echo "$port" && return
    sleep 0.1
  done
  echo "no port in $1" >&2
  exit 1
}

# Sets FAKE (its pid) and UP (its port).
start_fake() {
  (cd "$BENCH" && exec node --import tsx fake-upstream.ts > "$WORK/fake.out" 2>&1) & FAKE=$!; PIDS+=($FAKE)
  UP=$(port_of "$WORK/fake.out")
}

# Starts Switchyard with the Node flags of `npm start` and any given here, and registers the fake upstream
# as provider `bench` with model `bench-model`. Sets SY (its pid), SY_PORT and TOKEN.
start_switchyard() {
  local name=${SY_NAME:-home}
  mkdir -m 700 "$WORK/$name"
  local flags
  flags=$(node -e "const s=require(process.argv[1]).scripts.start; console.log((/^node((?: --\\S+)*) /.exec(s)||[])[1]||'')" "$ROOT/package.json")
  SWITCHYARD_HOME=$WORK/$name SWITCHYARD_PORT=0 SWITCHYARD_VAULT=file SWITCHYARD_SUPERVISE=0 node $flags "$@" "$ROOT/dist/bin/switchyard.js" start > "$WORK/$name-sy.out" 2> "$WORK/$name-sy.err" & SY=$!; PIDS+=($SY)
  for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/$name-sy.err" 2>/dev/null && break; sleep 0.2; done
  SY_PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$WORK/$name-sy.err" | grep -o '[0-9]*$')
  TOKEN=$(cat "$WORK/$name/token")
  curl -sf -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"kind\":\"openai_compatible\",\"id\":\"bench\",\"baseUrl\":\"http://127.0.0.1:$UP/v1\"}" "http://127.0.0.1:$SY_PORT/v1/providers"
  curl -sf -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"providerId":"bench","upstreamModelId":"bench-model","families":["styleA.chat_completions"]}' "http://127.0.0.1:$SY_PORT/v1/catalog/models"
}

# Gives the started Switchyard two limits that every call is admitted under and settles to, never reached (a
# requests and a dollar limit on the whole service, the bench model priced): what admission costs per request.
add_bench_limits() {
  api() { curl -sf -o /dev/null -X "$1" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "$3" "http://127.0.0.1:$SY_PORT$2"; }
  api PATCH /v1/catalog/models/bench%2Fbench-model '{"pricing":{"inputPerMTok":1,"outputPerMTok":2}}'
  api POST /v1/limits '{"name":"calls","scope":{"kind":"service"},"window":"day","metric":"requests","max":1000000000000}'
  api POST /v1/limits '{"name":"dollars","scope":{"kind":"service"},"window":"day","metric":"usd","max":1000000}'
}

# Loads the started Switchyard for $1 seconds with the chat request in $WORK/body.json, wrk at $2 connections
# (50 by default); prints wrk's result line (lua/post.lua's JSON).
load_switchyard() {
  BENCH_BODY=$WORK/body.json BENCH_HEADERS="authorization: Bearer $TOKEN" wrk -t1 -c"${2:-50}" -d"$1s" -s "$BENCH/lua/post.lua" "http://127.0.0.1:$SY_PORT/v1/chat/completions" 2>&1 | sed -n 's/^BENCH_JSON //p'
}
