#!/usr/bin/env bash
# Keycloak (the Quarkus distribution from Maven Central, pinned and
# checked), installed once into ~/.cache/tool-service, for the MCP
# authorization tests: a host's sign-in against a real identity provider.
# Serves the realm interop/keycloak_realm.json in dev mode on loopback,
# with a home of the caller's (its data: the realm to import; the database
# is kept in memory), so that no two runs share any state. Ready when
# http://127.0.0.1:PORT/realms/tools/.well-known/openid-configuration answers.
#   scripts/install/keycloak.sh PORT DIR     serve (DIR: an empty directory)
#   scripts/install/keycloak.sh --install    only install
set -euo pipefail
cd "$(dirname "$0")/../.."
KEYCLOAK_VERSION=26.7.3
KEYCLOAK_SHA256=27a6535553c3cdcd083872ba40629efafb3475e3b758e0c6f691395561dd0f1f
CACHE="$HOME/.cache/tool-service"
INSTALL="$CACHE/keycloak-$KEYCLOAK_VERSION"
URL="https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/$KEYCLOAK_VERSION/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip"

log() { echo "keycloak.sh: $*" >&2; }

# A Java of 21 or newer (Keycloak 26's floor): JAVA_HOME, else the first
# under /usr/lib/jvm that is.
java_home() {
  local home major
  for home in ${JAVA_HOME:+"$JAVA_HOME"} /usr/lib/jvm/*/; do
    [ -x "$home/bin/java" ] || continue
    major="$("$home/bin/java" -XshowSettings:properties -version 2>&1 \
      | sed -n 's/^ *java.specification.version = //p')"
    if [ "${major:-0}" -ge 21 ] 2>/dev/null; then
      echo "${home%/}"
      return
    fi
  done
  log "Keycloak $KEYCLOAK_VERSION needs Java 21 or newer and none was found (JAVA_HOME, /usr/lib/jvm);" \
    "install one (Temurin 21 or 25) and set JAVA_HOME to it"
  return 1
}
JAVA_HOME="$(java_home)"
export JAVA_HOME

# Keycloak from the install at $1 in dev mode on loopback port $2, its home
# at $3: the install's code, configuration and themes, its own data.
start_dev() {
  local install="$1" port="$2" home="$3" part
  for part in conf lib providers themes; do ln -s "$install/$part" "$home/$part"; done
  mkdir -p "$home/data/import"
  cp interop/keycloak_realm.json "$home/data/import/tools-realm.json"
  exec "$install/bin/kc.sh" "-Dkc.home.dir=$home" "-Djava.io.tmpdir=$home" start-dev \
    --http-host 127.0.0.1 --http-port "$port" --db dev-mem --import-realm
}

if [ ! -x "$INSTALL/bin/kc.sh" ]; then
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.keycloak.lock"
  flock 9
  if [ ! -x "$INSTALL/bin/kc.sh" ]; then
    command -v curl >/dev/null || scripts/install/apt-install.sh keycloak.sh curl ca-certificates
    staging="$(mktemp -d "$CACHE/keycloak.XXXXXX")"
    trap 'rm -rf "$staging"' EXIT
    log "downloading Keycloak $KEYCLOAK_VERSION from Maven Central"
    started=$SECONDS
    curl -fsSL --retry 3 -o "$staging/keycloak.zip" "$URL"
    echo "$KEYCLOAK_SHA256  $staging/keycloak.zip" | sha256sum -c --quiet - >&2 \
      || { log "$URL is not the archive pinned here (sha256 $KEYCLOAK_SHA256)"; exit 1; }
    python3 -m zipfile -e "$staging/keycloak.zip" "$staging"
    built="$staging/keycloak-$KEYCLOAK_VERSION"
    chmod +x "$built"/bin/*.sh
    # Dev mode's build (Quarkus' augmentation, a minute) is made by its
    # first start, into the install: made here, once, and the start stopped
    # as the built server starts, so that no run writes to the install.
    mkdir "$staging/home"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    (start_dev "$built" "$port" "$staging/home") >"$staging/build.log" 2>&1 &
    until grep -q '^Running the server in development mode' "$staging/build.log"; do
      kill -0 $! 2>/dev/null || { cat "$staging/build.log" >&2; log "dev mode's first start failed (above)"; exit 1; }
      sleep 1
    done
    kill $!
    wait $! || true
    mv "$built" "$INSTALL"
    log "installed $(du -sh "$INSTALL" | cut -f1) in $INSTALL in $((SECONDS - started)) s"
  fi
  exec 9>&-
fi
[ "${1:-}" = "--install" ] && exit 0
start_dev "$INSTALL" "$1" "$2"
