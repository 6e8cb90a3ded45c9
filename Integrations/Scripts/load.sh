#!/usr/bin/env bash
# Load figures for the README: builds the example server in release mode, starts it on a free
# loopback port, runs wrk against each cache route with the same keys, and stops the server.
#
#   Integrations/Scripts/load.sh [--duration 10s] [--connections 64] [--threads 2] [--keys 10000]
#
# Each route first warms its cache with one request per key, then wrk measures; the table gives
# requests per second and wrk's median and p99 latency. Every miss costs the backend's 5 ms.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10s connections=64 threads=2 keys=10000
while [ $# -gt 0 ]; do
    case "$1" in
    --duration) duration=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

command -v wrk > /dev/null || { echo "wrk is not installed" >&2; exit 1; }
if ! build_log=$(swift build -c release --product CacheKitExampleServer 2>&1); then
    printf '%s\n' "$build_log" >&2
    exit 1
fi
server=$(swift build -c release --show-bin-path 2> /dev/null)/CacheKitExampleServer

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$server" --port "$port" --count-limit $((keys * 2)) > /dev/null 2>&1 &
pid=$!
trap 'kill -TERM $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    sleep 0.1
done

run_wrk() { # route duration
    wrk -t "$threads" -c "$connections" -d "$2" --latency -s Scripts/keys.lua "http://127.0.0.1:$port" -- "$1" "$keys"
}

printf '| route | cache | requests/s | p50 | p99 |\n|---|---|---:|---:|---:|\n'
for route in cachekit memory tiered; do
    case $route in
    cachekit) label="CacheKitPersistDriver" ;;
    memory) label="Hummingbird MemoryPersistDriver" ;;
    tiered) label="TieredCache (memory + DiskStore)" ;;
    esac
    # Every key once, so that the measured run reads a warm cache.
    curl -s -Z --parallel-max "$connections" "http://127.0.0.1:$port/$route/[1-$keys]" > /dev/null 2>&1
    out=$(run_wrk "/$route/" "$duration")
    rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
    p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
    p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
    printf '| /%s/:id | %s | %s | %s | %s |\n' "$route" "$label" "$rps" "$p50" "$p99"
done
