#!/usr/bin/env bash
# One entry point for every npm script that needs the pinned toolchain.
#
#   scripts/run.sh test [unit|integration|e2e|faults]   install, provision, typecheck, run tests
#   scripts/run.sh dev [args]                            the whole loop locally (npm start)
#   scripts/run.sh bench [args]                          benchmarks
#   scripts/run.sh package                               serverless package (offline)
#
# It makes a fresh clone work with one command: installs node_modules when package-lock.json
# changed (npm ci, stamped), puts node_modules/.bin first on PATH so `node` is the pinned
# Node.js 24 from the `node` npm package (the machine's own Node may be older), and provisions
# the test environment (Kubernetes binaries from Go modules, ElasticMQ from Maven Central)
# into ~/.cache/operless, cached by version. Every step is idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf 'operless: %s\n' "$*" >&2; }

ensure_node_modules() {
  local stamp=node_modules/.operless-lock-hash want
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x node_modules/.bin/node ]; then
    log "installing npm dependencies (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
  fi
  export PATH="$root/node_modules/.bin:$PATH"
  local v; v=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$v" -lt 24 ]; then
    log "node_modules/.bin/node is Node $v, expected 24 (the 'node' devDependency). Remove node_modules and run again."
    exit 1
  fi
}

provision() {
  # Builds or finds kube-apiserver, kube-controller-manager, kubectl, etcd (and ElasticMQ,
  # helm when named). Progress goes to stderr; the JSON result is not needed here.
  node src/testing/provision.ts "$@" > /dev/null
}

ensure_system_packages() {
  # Debian packages the set-up needs beyond the machine's toolchains, installed once with
  # apt-get as root (idempotent; skipped where that cannot work, and the step that needs the
  # package then says what to install):
  #   cmake    aws-lambda-ric's native addon (the `ric` provision target, for the e2e under
  #            Lambda's own runtime client)
  #   buildah  the forwarder image test (test/integration/forwarder-image.test.ts)
  #   chromium the docs site test (test/e2e/docs-site.test.ts) reads the built site in it
  local missing=() pkg
  for pkg in "$@"; do command -v "$pkg" > /dev/null || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    log "installing ${missing[*]} (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null \
      || { apt-get update > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null; } \
      || log "could not install ${missing[*]}; the steps that need them will say why"
  fi
}

cmd=${1:-test}; shift || true
ensure_node_modules
case "$cmd" in
  test)
    ensure_system_packages cmake buildah chromium
    provision
    log "type-checking, formatting and linting (biome ci), checking the layers (.dependency-cruiser.cjs)"
    tsc -p tsconfig.json --noEmit
    biome ci --diagnostic-level=error .
    npm run --silent layers
    exec node scripts/test.ts "$@"
    ;;
  dev) provision etcd kube; exec node src/cli/main.ts dev "$@" ;;
  # controller-runtime: the benchmark's Go operator (bench/controller-runtime), cached like the rest.
  bench) ensure_system_packages cmake; provision; provision controller-runtime; exec node bench/run.ts "$@" ;;
  package) exec node scripts/package.ts "$@" ;;
  node) exec node "$@" ;;
  *) log "unknown command '$cmd' (expected test, dev, bench, package)"; exit 2 ;;
esac
