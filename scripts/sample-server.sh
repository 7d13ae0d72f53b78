# Sourced by demo.sh and bench.sh: serves a folder with nginx on a free loopback
# port for the rest of the script, and removes everything when the script exits.
#   start_sample_server DOCROOT   sets $server_base (http://127.0.0.1:PORT) and $server_work
start_sample_server() {
    local scripts
    scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    server_work=$(mktemp -d /tmp/imgcache-server.XXXXXX)
    local port
    port=$("$scripts/free-port.sh" "${SAMPLE_SERVER_PORT:-18400}")
    "$scripts/nginx-serve.sh" "$1" "$server_work/nginx" "$port" &
    server_pid=$!
    trap stop_sample_server EXIT
    wait_for_port "$port"
    server_base="http://127.0.0.1:$port"
}

# wait_for_port PORT: until something accepts on 127.0.0.1:PORT (at most 5 s).
wait_for_port() {
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
        sleep 0.05
    done
}

stop_sample_server() {
    [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$server_work"
}
