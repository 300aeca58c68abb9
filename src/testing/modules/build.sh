#!/usr/bin/env bash
# Builds the test environment's binaries from the pinned Go wrapper modules beside this
# script into a version-keyed cache folder, once. Prints the folder on stdout.
#
#   build.sh kube   -> $CACHE/kube-v1.34.4/{kube-apiserver,kube-controller-manager,kubectl}
#   build.sh etcd   -> $CACHE/etcd-v3.6.4/etcd
#   build.sh helm   -> $CACHE/helm-v3.22.0/helm
#   build.sh elasticmq -> $CACHE/elasticmq-1.7.1/lib/*.jar   (Maven Central, with its dependencies;
#                      run: java -cp "$dir/lib/*" org.elasticmq.server.Main)
#   build.sh rie  -> $CACHE/rie-<pseudo-version>/aws-lambda-rie   (AWS's Lambda Runtime Interface Emulator)
#   build.sh ric  -> $CACHE/ric-4.0.2/node_modules/aws-lambda-ric (AWS's Node.js runtime interface client,
#                      npm; its native addon is compiled at install against the pinned Node's own headers)
#   build.sh pytools -> $CACHE/pytools-cfn-lint-<v>-checkov-<v>-<hash of the pins>/bin/{cfn-lint,checkov}
#                      (the template linters, from PyPI into a Python virtual environment; needs python3 with venv)
#   build.sh moto   -> $CACHE/moto-5.2.5/venv  (PyPI: moto[server] and its pinned dependencies in a
#                      Python virtual environment; run: "$dir/venv/bin/python" -m moto.server -H 127.0.0.1 -p PORT)
#   build.sh otelcol -> $CACHE/otelcol-<collector version>-<source hash>/otelcol   (a minimal OpenTelemetry
#                      Collector from Go modules: OTLP receiver + file exporter, otelcol/main.go; the trace
#                      test's real OTLP receiver, provisioned by that test)
#   build.sh controller-runtime -> $CACHE/controller-runtime-memcached-v0.22.5-<source hash>/memcached-operator
#                      (the benchmark's controller-runtime operator, bench/controller-runtime; bench only:
#                      keyed by the pinned controller-runtime and a hash of its source, go.mod and go.sum)
#   build.sh bun  -> $CACHE/bun-1.4.5/bin/bun     (Bun from npm, locked in bun/package-lock.json; bench only:
#                      a runtime the forwarder's memory experiment runs the bundle under, RUNTIMES)
#   build.sh deno -> $CACHE/deno-2.9.6/bin/deno   (Deno from npm, locked in deno/package-lock.json; bench only, likewise)
#
# Guarantees: an entry is complete or absent. Binaries are built into a temporary folder
# and renamed into place only after every one of them built, so an interrupted or failed
# build never leaves a half-filled cache entry. Concurrent builders take a lock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${OPERLESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/operless}
what=${1:?usage: build.sh kube|etcd|helm|elasticmq|rie|ric|pytools|moto|otelcol|controller-runtime|bun|deno}

die() { echo "operless testenv: $*" >&2; exit 1; }
need_go() {
  command -v go >/dev/null || die "Go is not installed, and building $what needs it. Install Go >= 1.26 (https://go.dev/doc/install)${1:+, $1}."
}

modver() { sed -n "s|^require $1 \(v[^ ]*\)$|\1|p" "$here/$2/go.mod"; }
case "$what" in
  kube)
    need_go "or set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd"
    ver=$(modver k8s.io/kubernetes kube); dir=kube
    minor=$(echo "$ver" | cut -d. -f2)
    ld="-s -w -X k8s.io/component-base/version.gitVersion=$ver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$ver -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    pkgs="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl"
    ;;
  etcd)
    need_go "or set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd"
    ver=$(modver go.etcd.io/etcd/server/v3 etcd); dir=etcd
    ld="-s -w"
    pkgs="go.etcd.io/etcd/server/v3"
    ;;
  helm)
    need_go
    ver=$(modver helm.sh/helm/v3 helm); dir=helm
    ld="-s -w -X helm.sh/helm/v3/internal/version.version=$ver -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    pkgs="helm.sh/helm/v3/cmd/helm"
    ;;
  rie)
    need_go
    ver=$(modver github.com/aws/aws-lambda-runtime-interface-emulator rie); dir=rie
    ld="-s -w"
    pkgs="github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
    ;;
  ric)
    command -v npm >/dev/null || die "npm is not installed, and installing aws-lambda-ric needs it."
    for tool in make g++ cmake; do
      command -v $tool >/dev/null || die "$tool is not installed, and aws-lambda-ric compiles its native addon (curl + aws-lambda-cpp) at install. Install the build tools (Debian: apt-get install build-essential cmake)."
    done
    ver=$(sed -n 's|.*"aws-lambda-ric": "\(.*\)".*|\1|p' "$here/ric/package.json"); dir=ric
    ;;
  otelcol)
    need_go
    dir=otelcol
    colver=$(sed -n 's|^[[:space:]]*go.opentelemetry.io/collector/otelcol \(v[^ ]*\).*$|\1|p' "$here/$dir/go.mod")
    [ -n "$colver" ] || die "could not read the pinned collector version from $here/$dir/go.mod"
    ver="$colver-$(cd "$here/$dir" && cat go.mod go.sum *.go | sha256sum | cut -c1-12)"
    ld="-s -w"
    pkgs="."; binname=otelcol
    ;;
  controller-runtime)
    need_go
    dir=../../../bench/controller-runtime
    crver=$(sed -n 's|^[[:space:]]*sigs.k8s.io/controller-runtime \(v[^ ]*\).*$|\1|p' "$here/$dir/go.mod")
    [ -n "$crver" ] || die "could not read the pinned controller-runtime from $here/$dir/go.mod"
    ver="memcached-$crver-$(cd "$here/$dir" && cat go.mod go.sum *.go | sha256sum | cut -c1-12)"
    ld="-s -w"
    pkgs="."; binname=memcached-operator
    ;;
  elasticmq)
    command -v java >/dev/null || die "Java is not installed, and the SQS broker (ElasticMQ) needs it. Install a Java runtime >= 11 (Debian: apt-get install openjdk-17-jre-headless)."
    command -v mvn >/dev/null || die "Maven is not installed, and fetching ElasticMQ from Maven Central needs it. Install Maven (Debian: apt-get install maven)."
    ver=$(sed -n 's|.*<elasticmq.version>\(.*\)</elasticmq.version>.*|\1|p' "$here/elasticmq/pom.xml"); dir=elasticmq
    ;;
  pytools)
    command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null \
      || die "Python 3 with venv is not installed, and the template linters (cfn-lint, checkov) need it. Install it (Debian: apt-get install python3-venv)."
    pin() { sed -n "s|^$1==\(.*\)$|\1|p" "$here/pytools/requirements.txt"; }
    ver="cfn-lint-$(pin cfn-lint)-checkov-$(pin checkov)-$(cat "$here/pytools/requirements.txt" "$here/pytools/constraints.txt" | sha256sum | cut -c1-8)"; dir=pytools
    ;;
  moto)
    py=${OPERLESS_PYTHON:-python3}
    "$py" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 9) else 1)' 2>/dev/null \
      || die "Python >= 3.9 with venv is not available ($py), and the EventBridge emulator (moto) needs it. Install it (Debian: apt-get install python3 python3-venv) or set OPERLESS_PYTHON."
    ver=$(sed -n 's|^moto\[server\]==\(.*\)$|\1|p' "$here/moto/requirements.txt"); dir=moto
    ;;
  bun|deno)
    command -v npm >/dev/null || die "npm is not installed, and installing $what needs it."
    ver=$(sed -n "s|.*\"$what\": \"\(.*\)\".*|\1|p" "$here/$what/package.json"); dir=$what
    ;;
  *) die "unknown target '$what' (expected kube, etcd, helm, elasticmq, rie, ric, pytools, moto, otelcol, controller-runtime, bun or deno)";;
esac
[ -n "$ver" ] || die "could not read the pinned version from $here/$dir/go.mod"
out="$cache/$what-$ver"
if [ -f "$out/.complete" ]; then echo "$out"; exit 0; fi

mkdir -p "$cache"
exec 9>"$cache/.$what-$ver.lock"
flock 9
if [ -f "$out/.complete" ]; then echo "$out"; exit 0; fi

tmp=$(mktemp -d "$cache/.$what-$ver.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$here/$dir"
if [ "$what" = elasticmq ]; then
  echo "operless testenv: fetching ElasticMQ $ver and its dependency jars from Maven Central into $out (first run only)" >&2
  start=$(date +%s)
  mvn -q -B -f "$here/elasticmq/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1 \
    || { tail -40 "$tmp/mvn.log" >&2; die "Maven could not resolve org.elasticmq:elasticmq-server_2.13:$ver (output above). Check that Maven Central is reachable (mvn settings, proxy)."; }
  rm -f "$tmp/mvn.log"
  ls "$tmp/lib"/elasticmq-server_2.13-"$ver".jar >/dev/null || die "Maven finished but elasticmq-server_2.13-$ver.jar is missing from $tmp/lib"
  echo "operless testenv:   fetched $(ls "$tmp/lib" | wc -l) jars in $(( $(date +%s) - start ))s" >&2
  pkgs=""
elif [ "$what" = ric ]; then
  # node-gyp would download Node's headers; the pinned `node` npm package carries them (only a
  # build needs them: a cached copy is used without). `|| true`: no match is the message below.
  nodedir=${npm_config_nodedir:-$(ls -d "$here"/../../../node_modules/node/node_modules/node-*/include/.. 2>/dev/null | head -1 || true)}
  [ -f "$nodedir/include/node/node_api.h" ] || die "no Node.js headers for the native addon of aws-lambda-ric (looked in '$nodedir'); run npm ci first or set npm_config_nodedir to a Node.js 24 folder holding include/node."
  echo "operless testenv: installing aws-lambda-ric $ver into $out (first run only; compiles its native addon, a few minutes)" >&2
  start=$(date +%s)
  cp package.json package-lock.json "$tmp/"
  (cd "$tmp" && npm_config_nodedir="$nodedir" npm ci --no-audit --no-fund --loglevel=error) >"$tmp/npm.log" 2>&1 \
    || { tail -40 "$tmp/npm.log" >&2; die "npm could not install aws-lambda-ric $ver (output above)."; }
  rm -f "$tmp/npm.log"
  [ -f "$tmp/node_modules/aws-lambda-ric/rapid-client.node" ] || die "npm finished but aws-lambda-ric's native addon (rapid-client.node) was not built"
  echo "operless testenv:   installed in $(( $(date +%s) - start ))s" >&2
  pkgs=""
elif [ "$what" = bun ] || [ "$what" = deno ]; then
  echo "operless testenv: installing $what $ver from npm into $out (first run only)" >&2
  start=$(date +%s)
  cp package.json package-lock.json "$tmp/"
  (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error) >"$tmp/npm.log" 2>&1 \
    || { tail -40 "$tmp/npm.log" >&2; die "npm could not install $what $ver (output above)."; }
  rm -f "$tmp/npm.log"
  # The runtime's own executable, not npm's launcher (deno's is a Node.js script): the first ELF
  # file named after it in the package or its platform package (their install scripts move it).
  exe=$(find "$tmp/node_modules" -type f \( -name "$what" -o -name "$what.exe" \) -perm -u+x -size +1M | head -1)
  [ -n "$exe" ] || die "npm finished but no $what executable was found under $tmp/node_modules"
  mkdir "$tmp/bin"
  ln -s "../${exe#"$tmp/"}" "$tmp/bin/$what"
  "$tmp/bin/$what" --version >&2 || die "the installed $what does not start (see above)"
  echo "operless testenv:   installed in $(( $(date +%s) - start ))s" >&2
  pkgs=""
elif [ "$what" = pytools ]; then
  echo "operless testenv: installing cfn-lint and checkov from PyPI into a virtual environment in $out (first run only; a few minutes)" >&2
  start=$(date +%s)
  python3 -m venv "$tmp/venv"
  "$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$here/pytools/requirements.txt" -c "$here/pytools/constraints.txt" >"$tmp/pip.log" 2>&1 \
    || { tail -40 "$tmp/pip.log" >&2; die "pip could not install $here/pytools/requirements.txt (output above). Check that PyPI is reachable (pip config, proxy)."; }
  rm -f "$tmp/pip.log"
  # A virtual environment's own scripts carry its path; the folder is renamed below, so the
  # entry points run the venv's python (which finds its pyvenv.cfg wherever it lies) instead.
  mkdir "$tmp/bin"
  printf '#!/bin/sh\nexec "$(dirname "$0")/../venv/bin/python" -c "import sys; sys.argv[0] = \047cfn-lint\047; from cfnlint.runner import main; sys.exit(main())" "$@"\n' >"$tmp/bin/cfn-lint"
  printf '#!/bin/sh\nexec "$(dirname "$0")/../venv/bin/python" -c "import sys; from checkov.main import Checkov; sys.exit(Checkov().run())" "$@"\n' >"$tmp/bin/checkov"
  chmod +x "$tmp/bin/cfn-lint" "$tmp/bin/checkov"
  "$tmp/bin/cfn-lint" --version >&2 && "$tmp/bin/checkov" --version >&2 || die "the installed linters do not start (see above)"
  echo "operless testenv:   installed the template linters in $(( $(date +%s) - start ))s" >&2
  pkgs=""
elif [ "$what" = moto ]; then
  echo "operless testenv: installing moto $ver (the EventBridge emulator) from PyPI into $out (first run only)" >&2
  start=$(date +%s)
  "$py" -m venv "$tmp/venv" || die "python -m venv failed (Debian: apt-get install python3-venv)"
  "$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$here/moto/requirements.txt" >"$tmp/pip.log" 2>&1 \
    || { tail -40 "$tmp/pip.log" >&2; die "pip could not install moto[server]==$ver (output above). Check that PyPI is reachable (pip config, proxy)."; }
  rm -f "$tmp/pip.log"
  "$tmp/venv/bin/python" -c 'import moto.server' || die "moto $ver installed but moto.server does not import"
  echo "operless testenv:   installed in $(( $(date +%s) - start ))s" >&2
  pkgs=""
else
  echo "operless testenv: building $what $ver from Go modules into $out (first run only; several minutes on 2 cores)" >&2
fi
for p in $pkgs; do
  name=${binname:-$(basename "$p")}; [ "$name" = v3 ] && name=etcd
  echo "operless testenv:   go build $name ..." >&2
  start=$(date +%s)
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ld" -o "$tmp/$name" "$p" \
    || die "go build of $name ($p@$ver) failed; see the compiler output above"
  echo "operless testenv:   built $name in $(( $(date +%s) - start ))s" >&2
done
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
