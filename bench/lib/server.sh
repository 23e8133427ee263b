# Shared by the benchmark scripts that run a fresh `drover server` (source it; bash). Expects
# DROVER (the binary) and URL (http://127.0.0.1:PORT) to be set by the caller.
#
#   require_drover                  exits 1 with how to build it when $DROVER is not there
#   start_server DIR PORT ARGS...   starts `drover server --data DIR/data` on PORT with ARGS
#                                   (its log DIR/server.log), waits up to 60 s for it to be
#                                   ready, sets SERVER_PID and exports DROVER_TOKEN (the admin
#                                   token it wrote, docs/security.md) for the CLI and curl
#   stop_server                     stops the server start_server started, if any

SERVER_PID=

require_drover() {
  [ -x "$DROVER" ] || {
    echo "no $DROVER: cmake --preset release && cmake --build --preset release --target drover drover-full drover-supervise" >&2
    exit 1
  }
}

start_server() {
  local dir=$1 port=$2
  shift 2
  "$DROVER" server --data "$dir/data" --listen "127.0.0.1:$port" --ready-file "$dir/ready" "$@" \
    >"$dir/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 600); do [ -s "$dir/ready" ] && break; sleep 0.1; done
  [ -s "$dir/ready" ] || { echo "drover server did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
  DROVER_TOKEN=$(cat "$dir/data/admin.token")
  export DROVER_TOKEN
}

stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}
