#!/usr/bin/env bash
# Prints a TCP port on 127.0.0.1 that nothing listens on (searched from $1, default 18400).
set -euo pipefail
port=${1:-18400}
for _ in $(seq 1 200); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; exit 0; fi
    port=$((port + 1))
done
echo "no free port found" >&2
exit 1
