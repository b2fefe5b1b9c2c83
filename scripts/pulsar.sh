#!/usr/bin/env bash
# Apache Pulsar standalone broker for integration tests.
#
#   scripts/pulsar.sh start    start (or reuse) the broker; prints the service URL last
#   scripts/pulsar.sh stop     stop it (SIGTERM, then SIGKILL after 30 s)
#   scripts/pulsar.sh status   exit 0 and print "running <url>" if up, else exit 1
#
# The broker jars come from Maven Central (via mvn and scripts/pulsar/pom.xml)
# and are cached once in $PULSAR_CACHE; later starts do not touch the network.
# Metadata lives in RocksDB and one BookKeeper bookie runs in the same JVM;
# everything listens on 127.0.0.1 only. Tenant "tg" with namespaces
# "tg/request", "tg/response", "tg/notify" and "tg/flow" is created on start
# if missing (TrustGraph processors use all four).
# Data is kept across a clean stop/start; after an unclean exit (kill -9,
# crash, reboot) it is wiped, since the RocksDB metadata of a killed
# standalone can leave the bookie registration in a lock loop.
#
# Environment (defaults):
#   PULSAR_VERSION=4.2.4                 broker version (from Maven Central; 4.2.4 is the
#                                        4.2 line TrustGraph deploys; 3.0.7 the 3.0 LTS)
#   PULSAR_CACHE=~/.cache/tool-service/pulsar-$PULSAR_VERSION
#   PULSAR_DATA=/tmp/tool-service-pulsar runtime dir: config, data, log, pid
#   PULSAR_PORT=6650  PULSAR_HTTP_PORT=8080  PULSAR_BOOKIE_PORT=3181
#   PULSAR_START_TIMEOUT=180             seconds to wait for readiness
#   PULSAR_JAVA_OPTS="-Xms256m -Xmx1g -XX:MaxDirectMemorySize=512m"
#   PULSAR_TENANT=tg  PULSAR_NAMESPACES="request response notify flow"
#   PULSAR_FRESH=1                       wipe data before starting
#   PULSAR_EXTRA_CONF=FILE               appended to the broker config (e.g. token
#                                        authentication and a TLS port)
#   PULSAR_ADMIN_TOKEN=TOKEN             token for the admin API calls made here,
#                                        when the broker requires authentication
set -euo pipefail

PULSAR_VERSION="${PULSAR_VERSION:-4.2.4}"
PULSAR_CACHE="${PULSAR_CACHE:-$HOME/.cache/tool-service/pulsar-$PULSAR_VERSION}"
PULSAR_DATA="${PULSAR_DATA:-/tmp/tool-service-pulsar}"
PULSAR_PORT="${PULSAR_PORT:-6650}"
PULSAR_HTTP_PORT="${PULSAR_HTTP_PORT:-8080}"
PULSAR_BOOKIE_PORT="${PULSAR_BOOKIE_PORT:-3181}"
PULSAR_START_TIMEOUT="${PULSAR_START_TIMEOUT:-180}"
PULSAR_JAVA_OPTS="${PULSAR_JAVA_OPTS:--Xms256m -Xmx1g -XX:MaxDirectMemorySize=512m}"
PULSAR_TENANT="${PULSAR_TENANT:-tg}"
PULSAR_NAMESPACES="${PULSAR_NAMESPACES:-request response notify flow}"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POM="$SCRIPT_DIR/pulsar/pom.xml"
LIB="$PULSAR_CACHE/lib"
PID_FILE="$PULSAR_DATA/pulsar.pid"
DATA_DIR="$PULSAR_DATA/data"
CLEAN_MARK="$DATA_DIR/.clean-shutdown"
LOG_FILE="$PULSAR_DATA/pulsar.log"     # broker log (log4j, size-capped)
OUT_FILE="$PULSAR_DATA/pulsar.out"     # JVM stdout/stderr
CONF_FILE="$PULSAR_DATA/standalone.conf"
LOG4J_FILE="$PULSAR_DATA/log4j2.xml"
SERVICE_URL="pulsar://127.0.0.1:$PULSAR_PORT"
HTTP_URL="http://127.0.0.1:$PULSAR_HTTP_PORT"
MAIN_CLASS="org.apache.pulsar.PulsarStandaloneStarter"
ADMIN_AUTH=()
[ -n "${PULSAR_ADMIN_TOKEN:-}" ] && ADMIN_AUTH=(-H "Authorization: Bearer $PULSAR_ADMIN_TOKEN")

log() { echo "pulsar.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# --- prerequisites ---------------------------------------------------------

apt_install() {
  [ "$(id -u)" -eq 0 ] || die "missing $*; install it (needs root for apt-get)"
  command -v apt-get >/dev/null || die "missing $*; no apt-get to install it"
  log "installing $* with apt-get"
  if [ -z "${_APT_UPDATED:-}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
    _APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >&2
}

need_runtime() {
  command -v curl >/dev/null || apt_install curl ca-certificates
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  local major
  major="$(java -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java.specification.version = //p')"
  [ "${major:-0}" -ge 17 ] 2>/dev/null || die "Java 17+ required (found ${major:-none})"
}

# --- jars ------------------------------------------------------------------

# Resolve pulsar-broker and its runtime dependencies into $LIB, once.
fetch_jars() {
  [ -f "$LIB/.complete" ] && return 0
  command -v mvn >/dev/null || apt_install maven
  [ -f "$POM" ] || die "$POM not found"
  log "fetching Pulsar $PULSAR_VERSION jars from Maven Central into $LIB (one time)"
  local tmp="$PULSAR_CACHE/lib.tmp.$$" t0=$SECONDS
  mkdir -p "$PULSAR_CACHE"
  rm -rf "$tmp"
  if ! mvn -B -q -Dstyle.color=never -f "$POM" \
      -Dpulsar.version="$PULSAR_VERSION" \
      dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp" > "$PULSAR_CACHE/mvn.log" 2>&1; then
    tail -n 40 "$PULSAR_CACHE/mvn.log" >&2
    rm -rf "$tmp"
    die "mvn could not resolve org.apache.pulsar:pulsar-broker:$PULSAR_VERSION"
  fi
  [ -f "$tmp/pulsar-broker-$PULSAR_VERSION.jar" ] \
    || { rm -rf "$tmp"; die "pulsar-broker jar missing after mvn"; }
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  echo "$PULSAR_VERSION" > "$LIB/.complete"
  log "fetched $(find "$LIB" -name '*.jar' | wc -l) jars ($(du -sh "$LIB" | cut -f1)) in $((SECONDS - t0)) s"
}

# --- process helpers -------------------------------------------------------

# Pid from the pid file if that process is alive and is our broker.
running_pid() {
  local pid
  [ -f "$PID_FILE" ] || return 1
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "$MAIN_CLASS" || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

http_ok() { curl -sf -m 5 -o /dev/null "${ADMIN_AUTH[@]}" "$HTTP_URL$1"; }

# Broker answers on both ports and its admin API reports the cluster.
answering() { port_open "$PULSAR_PORT" && http_ok /admin/v2/clusters; }

# --- config ----------------------------------------------------------------

write_config() {
  cat > "$CONF_FILE" <<EOF
# Generated by scripts/pulsar.sh; rewritten on every start.
clusterName=standalone
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
brokerServicePort=$PULSAR_PORT
webServicePort=$PULSAR_HTTP_PORT
functionsWorkerEnabled=false
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
# single bookie
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
managedLedgerCacheSizeMB=64
# VMs often expose no NIC speed; the load manager refuses to start without it
loadBalancerOverrideBrokerNicSpeedGbps=10
# bookie (same file is read as the BookKeeper server config):
# use PULSAR_BOOKIE_PORT rather than a random port, listen on loopback only
allowEphemeralPorts=true
allowLoopback=true
listeningInterface=lo
httpServerEnabled=false
journalSyncData=false
dbStorage_writeCacheMaxSizeMb=32
dbStorage_readAheadCacheMaxSizeMb=32
diskUsageThreshold=0.999
diskUsageWarnThreshold=0.99
EOF
  if [ -n "${PULSAR_EXTRA_CONF:-}" ]; then
    [ -f "$PULSAR_EXTRA_CONF" ] || die "PULSAR_EXTRA_CONF: $PULSAR_EXTRA_CONF not found"
    { echo "# from $PULSAR_EXTRA_CONF"; cat "$PULSAR_EXTRA_CONF"; } >> "$CONF_FILE"
  fi
  cat > "$LOG4J_FILE" <<EOF
<Configuration status="warn">
  <Appenders>
    <RollingFile name="file" fileName="$LOG_FILE" filePattern="$LOG_FILE.%i">
      <PatternLayout pattern="%d{ISO8601} %-5level [%t] %c{1} - %msg%n"/>
      <Policies><SizeBasedTriggeringPolicy size="50 MB"/></Policies>
      <DefaultRolloverStrategy max="1"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
EOF
}

# --- readiness -------------------------------------------------------------

# PUT an admin resource; 2xx and 409 (already exists) both count as done.
admin_put() {
  local code
  code="$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X PUT "${ADMIN_AUTH[@]}" \
    -H 'Content-Type: application/json' ${2:+-d "$2"} "$HTTP_URL$1" || true)"
  [[ "$code" == 2* || "$code" == 409 ]]
}

# Tenant and namespaces exist and the broker serves topics in them.
ensure_namespaces() {
  local ns
  http_ok "/admin/v2/tenants/$PULSAR_TENANT" ||
    admin_put "/admin/v2/tenants/$PULSAR_TENANT" \
      '{"adminRoles":[],"allowedClusters":["standalone"]}' || return 1
  for ns in $PULSAR_NAMESPACES; do
    http_ok "/admin/v2/namespaces/$PULSAR_TENANT/$ns/permissions" ||
      admin_put "/admin/v2/namespaces/$PULSAR_TENANT/$ns" || return 1
    # topic lookup makes the broker take ownership of the namespace bundle
    http_ok "/lookup/v2/topic/persistent/$PULSAR_TENANT/$ns/__ready" || return 1
  done
}

broker_ready() {
  answering &&
    http_ok /admin/v2/brokers/health &&   # produces and consumes on a heartbeat topic
    ensure_namespaces
}

show_logs() {
  log "last 50 lines of $LOG_FILE:"
  tail -n 50 "$LOG_FILE" >&2 2>/dev/null || true
  if [ -s "$OUT_FILE" ]; then
    log "last 20 lines of $OUT_FILE:"
    tail -n 20 "$OUT_FILE" >&2
  fi
}

wait_ready() {
  local pid="$1" deadline=$((SECONDS + PULSAR_START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "broker process $pid exited during startup"
      show_logs
      rm -f "$PID_FILE"
      return 1
    fi
    broker_ready && return 0
    sleep 1
  done
  log "broker not ready after ${PULSAR_START_TIMEOUT}s"
  show_logs
  return 1
}

# --- commands --------------------------------------------------------------

cmd_start() {
  need_runtime
  mkdir -p "$PULSAR_DATA"
  # serialize concurrent starts (parallel test jobs)
  exec 9>"$PULSAR_DATA/start.lock"
  flock -w "$PULSAR_START_TIMEOUT" 9 || die "timed out waiting for another start"

  local pid t0=$SECONDS
  if pid="$(running_pid)"; then
    if answering; then
      log "already running (pid $pid)"
    else
      log "broker (pid $pid) is starting; waiting"
    fi
    wait_ready "$pid" || exit 1
    echo "$SERVICE_URL"
    return 0
  fi
  rm -f "$PID_FILE"

  local port
  for port in "$PULSAR_PORT" "$PULSAR_HTTP_PORT" "$PULSAR_BOOKIE_PORT"; do
    port_open "$port" && die "port $port on 127.0.0.1 is already in use by another process"
  done

  fetch_jars
  write_config
  if [ -d "$DATA_DIR" ]; then
    if [ "${PULSAR_FRESH:-0}" = 1 ]; then
      log "wiping $DATA_DIR (PULSAR_FRESH=1)"
      rm -rf "$DATA_DIR"
    elif [ ! -f "$CLEAN_MARK" ]; then
      log "wiping $DATA_DIR (previous broker did not stop cleanly)"
      rm -rf "$DATA_DIR"
    fi
  fi
  mkdir -p "$DATA_DIR"
  rm -f "$CLEAN_MARK" "$LOG_FILE".*
  [ -f "$LOG_FILE" ] && mv -f "$LOG_FILE" "$PULSAR_DATA/pulsar.prev.log"

  t0=$SECONDS
  log "starting Pulsar $PULSAR_VERSION standalone (data $PULSAR_DATA, log $LOG_FILE)"
  # Run from the data dir: the starter resolves some default paths relative to cwd.
  # shellcheck disable=SC2086,SC2016  # word-split JAVA_OPTS; $$ is for the inner bash
  (
    cd "$PULSAR_DATA"
    unset PULSAR_STANDALONE_USE_ZOOKEEPER   # keep RocksDB metadata, no ZooKeeper
    setsid nohup bash -c 'echo $$ > "$0"; exec "$@"' "$PID_FILE" \
      java $PULSAR_JAVA_OPTS \
      -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
      --add-opens java.base/java.io=ALL-UNNAMED \
      --add-opens java.base/java.lang=ALL-UNNAMED \
      --add-opens java.base/java.nio=ALL-UNNAMED \
      --add-opens java.base/java.util.zip=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.misc=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.platform=ALL-UNNAMED \
      --add-opens java.base/sun.net=ALL-UNNAMED \
      --add-opens java.management/sun.management=ALL-UNNAMED \
      --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
      -Dio.netty.tryReflectionSetAccessible=true \
      -Djava.net.preferIPv4Stack=true \
      -Dpulsar.allocator.exit_on_oom=true \
      -Dlog4j.configurationFile="$LOG4J_FILE" \
      -cp "$LIB/*" "$MAIN_CLASS" \
      --config "$CONF_FILE" \
      --no-functions-worker --no-stream-storage \
      --metadata-dir "$DATA_DIR/metadata" \
      --bookkeeper-dir "$DATA_DIR/bookkeeper" \
      --zookeeper-dir "$DATA_DIR/zookeeper" \
      --bookkeeper-port "$PULSAR_BOOKIE_PORT" \
      < /dev/null > "$OUT_FILE" 2>&1 9>&- &
  )

  # the launcher writes the pid file before exec'ing java
  for _ in $(seq 50); do [ -s "$PID_FILE" ] && break; sleep 0.1; done
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [ -n "$pid" ] || { show_logs; die "broker did not start"; }

  if ! wait_ready "$pid"; then
    cmd_stop   # do not leave a half-started broker behind
    exit 1
  fi
  log "ready in $((SECONDS - t0)) s (pid $pid)"
  echo "$SERVICE_URL"
}

cmd_stop() {
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping broker (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still running after 30 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  else
    [ -d "$DATA_DIR" ] && touch "$CLEAN_MARK"   # data is safe to reuse
  fi
  rm -f "$PID_FILE"
  log "stopped"
}

cmd_status() {
  if running_pid >/dev/null && answering; then
    echo "running $SERVICE_URL"
    return 0
  fi
  echo "not running"
  return 1
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
