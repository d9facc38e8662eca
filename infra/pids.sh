# Sourced by the scripts that start a server and keep its pid (kafka.sh, seaweedfs.sh):
# how they tell a process is alive, whether a port answers, and how they stop one.
# The sourcing script defines log().

alive() { [[ -r /proc/$1/stat ]] && [[ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]]; }
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# stop_pid PID: SIGTERM, wait up to 30 s, then SIGKILL (never by name).
stop_pid() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 60); do alive "$pid" || break; sleep 0.5; done
  if alive "$pid"; then
    log "pid $pid ignored SIGTERM for 30s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true; sleep 0.5
  fi
}
