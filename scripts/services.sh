#!/usr/bin/env bash
# Makes sure the Redis and PostgreSQL the tests use answer, starting local servers when nothing
# listens on their ports, and fails loudly when they cannot be started.
# Targets come from REDIS_URL (default redis://127.0.0.1:6379) and DATABASE_URL
# (default postgres://127.0.0.1:5432/test); only local targets are started.
set -euo pipefail

redis_url=${REDIS_URL:-redis://127.0.0.1:6379}
database_url=${DATABASE_URL:-postgres://127.0.0.1:5432/test}

hostport() { # URL -> "host port"
  local rest=${1#*://}; rest=${rest#*@}; rest=${rest%%/*}
  local host=${rest%:*} port=${rest##*:}
  [ "$host" = "$rest" ] && port=$2
  echo "$host $port"
}

listening() { # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

wait_for() { # name host port
  for _ in $(seq 1 60); do listening "$2" "$3" && return 0; sleep 0.5; done
  echo "services: $1 on $2:$3 did not come up" >&2
  return 1
}

is_local() { case "$1" in 127.*|localhost|::1) return 0;; *) return 1;; esac; }

read -r rhost rport < <(hostport "$redis_url" 6379)
if ! listening "$rhost" "$rport"; then
  is_local "$rhost" || { echo "services: Redis at $rhost:$rport does not answer and is not local" >&2; exit 1; }
  command -v redis-server >/dev/null || { echo "services: redis-server is not installed (apt-get install -y redis-server)" >&2; exit 1; }
  echo "services: starting redis-server on port $rport" >&2
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$rport" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis "$rhost" "$rport"
fi

read -r phost pport < <(hostport "$database_url" 5432)
if ! listening "$phost" "$pport"; then
  is_local "$phost" || { echo "services: PostgreSQL at $phost:$pport does not answer and is not local" >&2; exit 1; }
  command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] || {
    echo "services: PostgreSQL is not installed (apt-get install -y postgresql)" >&2; exit 1; }
  echo "services: starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  wait_for PostgreSQL "$phost" "$pport"
fi
