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

# A 3-master Redis Cluster of the tests' own (REDIS_CLUSTER_NODES, default 127.0.0.1:7101-7103;
# cluster bus = port + 10000), for the BullMQ adapter's cluster tests. Reused when it is up and
# healthy; otherwise its nodes are (re)started from an empty state and the cluster is created.
# REDIS_CLUSTER_NODES= (empty) skips it; only local nodes are started.
cluster_nodes=${REDIS_CLUSTER_NODES-127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103}
cluster_dir=${REDIS_CLUSTER_DIR:-/tmp/ojs-unique-redis-cluster}

cluster_healthy() { # host port...: every node answers, sees the cluster ok and knows all the nodes
  local host=$1 info; shift
  for p in "$@"; do
    info=$(redis-cli -h "$host" -p "$p" cluster info 2>/dev/null | tr -d '\r') || return 1
    [[ $info == *cluster_state:ok* && $info == *cluster_known_nodes:$#* ]] || return 1
  done
}

if [ -n "$cluster_nodes" ]; then
  IFS=, read -r -a cnodes <<<"$cluster_nodes"
  chost= ; cports=()
  for node in "${cnodes[@]}"; do
    read -r h p < <(hostport "redis://${node#*://}" 6379)
    is_local "$h" || { echo "services: Redis Cluster node $h:$p is not local" >&2; exit 1; }
    chost=$h; cports+=("$p")
  done
  [ "${#cports[@]}" -ge 3 ] || { echo "services: REDIS_CLUSTER_NODES needs 3 or more nodes (a cluster has 3 masters at least)" >&2; exit 1; }
  if ! cluster_healthy "$chost" "${cports[@]}"; then
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
      echo "services: redis-server / redis-cli are not installed (apt-get install -y redis-server)" >&2; exit 1; }
    echo "services: starting a ${#cports[@]}-node Redis Cluster on ports ${cports[*]}" >&2
    for p in "${cports[@]}"; do
      if listening "$chost" "$p"; then
        # One of ours from an earlier run, in a broken or half-made cluster: back to empty.
        redis-cli -h "$chost" -p "$p" cluster info >/dev/null 2>&1 || {
          echo "services: port $p answers but is not a Redis Cluster node" >&2; exit 1; }
        redis-cli -h "$chost" -p "$p" flushall >/dev/null
        redis-cli -h "$chost" -p "$p" cluster reset hard >/dev/null
      else
        mkdir -p "$cluster_dir/$p"
        rm -f "$cluster_dir/$p/nodes.conf"
        redis-server --daemonize yes --bind "$chost" --port "$p" --save "" --appendonly no \
          --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
          --dir "$cluster_dir/$p" --logfile "$cluster_dir/$p/redis.log"
        wait_for "Redis Cluster node" "$chost" "$p"
      fi
    done
    redis-cli --cluster create $(printf "$chost:%s " "${cports[@]}") --cluster-replicas 0 --cluster-yes >/dev/null
    for _ in $(seq 1 60); do cluster_healthy "$chost" "${cports[@]}" && break; sleep 0.5; done
    cluster_healthy "$chost" "${cports[@]}" || { echo "services: the Redis Cluster on ports ${cports[*]} did not become healthy" >&2; exit 1; }
  fi
fi
