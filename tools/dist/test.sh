#!/usr/bin/env bash
# make test-dist: installs each artifact of dist/ (or $1) into a fresh, empty
# environment and runs the README's word count there (tools/dist/wordcount/)
# against the embedded broker, checking its output; then checks that an SDK
# refuses an engine of another version, naming both.
#   Python: a new venv (--system-site-packages: protobuf comes from apt's
#           python3-protobuf, PyPI being out of reach), pip --no-index from the
#           wheel; the sdist into another, --no-build-isolation (apt setuptools).
#   Node:   a new npm project, npm install --offline from the two tarballs.
#   Rust:   a new cargo project with a path dependency on sdk-rust (offline,
#           Debian's crates; CARGO_TARGET_DIR under .cache/ so reruns are quick).
# POLYSTREAMS_ENGINE and POLYSTREAMS_URL are unset and nothing named
# polystreams is on PATH: Python and Node must run the engine they installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
dist=$(realpath "${1:-dist}")
ver=$(cat VERSION)
unset POLYSTREAMS_ENGINE POLYSTREAMS_URL
/usr/bin/python3 tools/dist/version.py check
case $(uname -m) in
  x86_64) goarch=amd64 cpu=x64 plat=manylinux_2_17_x86_64 ;;
  aarch64) goarch=arm64 cpu=arm64 plat=manylinux_2_17_aarch64 ;;
  *) echo "test-dist: no artifacts for $(uname -m)" >&2; exit 1 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/polystreams-test-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
want="counts: brown=1 dog=1 end=1 fox=1 lazy=1 quick=1 the=3"
fail=0
size() { du -sk "$@" | awk '{s += $1} END {printf "%.1f MB", s / 1024}'; }

# run <name> <dir> <command...>: runs a word count with its own TMPDIR (so
# its own state.dir), checks describe() and the counts.
run() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$work/tmp-$name"
  if ! (cd "$dir" && TMPDIR="$work/tmp-$name" timeout 240 "$@") >"$work/$name.out" 2>"$work/$name.err"; then
    echo "test-dist: $name: the word count failed"; tail -20 "$work/$name.out" "$work/$name.err"; fail=1; return
  fi
  if ! grep -qx "$want" "$work/$name.out" || ! grep -q "KSTREAM-AGGREGATE-STATE-STORE-0000000003" "$work/$name.out"; then
    echo "test-dist: $name: want '$want' and describe() text, got:"; cat "$work/$name.out"; tail -5 "$work/$name.err"; fail=1; return
  fi
  echo "test-dist: $name: ok ($want)"
}

# refuses <name> <command...>: with an engine stamped 99.0.0, the SDK must
# fail naming both versions.
refuses() {
  local name=$1
  shift
  local out
  out=$(cd "$work" && POLYSTREAMS_ENGINE="$work/engine-99" TMPDIR="$work" timeout 120 "$@" 2>&1) && true
  if grep -q "engine version 99.0.0 is incompatible with this SDK's version $ver" <<<"$out"; then
    echo "test-dist: $name: refuses engine 99.0.0, naming both versions"
  else
    echo "test-dist: $name: want an error naming engine 99.0.0 and SDK $ver, got:"; tail -5 <<<"$out"; fail=1
  fi
}

# Every artifact that carries an engine carries its architecture's (ELF
# e_machine: 0x3e x86-64, 0xb7 aarch64); the other architecture's cannot run
# here, so this is all that is checked of it.
machine() { od -An -tx1 -j18 -N1 "$1" | tr -d ' '; }
declare -A want_machine=([amd64]=3e [arm64]=b7) wheel_plat=([amd64]=manylinux_2_17_x86_64 [arm64]=manylinux_2_17_aarch64) npm_cpu=([amd64]=x64 [arm64]=arm64)
mkdir -p "$work/unpack"
for a in amd64 arm64; do
  u=$work/unpack/$a && mkdir -p "$u/whl" "$u/npm" "$u/tar"
  (cd "$u/whl" && /usr/bin/python3 -m zipfile -e "$dist/polystreams-$ver-py3-none-${wheel_plat[$a]}.whl" .)
  tar -C "$u/npm" -xzf "$dist/polystreams-linux-${npm_cpu[$a]}-$ver.tgz"
  tar -C "$u/tar" -xzf "$dist/polystreams-$ver-linux-$a.tar.gz"
  for bin in "$u/whl/polystreams/_bin/polystreams" "$u/npm/package/bin/polystreams" "$u/tar/polystreams"; do
    if [ "$(machine "$bin")" != "${want_machine[$a]}" ]; then
      echo "test-dist: ${bin#"$u/"} in the $a artifacts: ELF machine $(machine "$bin"), want ${want_machine[$a]}"; fail=1
    fi
  done
done
[ $fail = 0 ] && echo "test-dist: the amd64 and arm64 wheels, npm packages and tarballs carry an engine of their architecture"

# Python: the platform wheel.
wheel=$dist/polystreams-$ver-py3-none-$plat.whl
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel"
cp tools/dist/wordcount/wordcount.py "$work/"
engine=$(cd "$work" && venv/bin/python -c 'from polystreams._engine import find_engine; print(find_engine())')
case $engine in
  "$work/venv/"*/polystreams/_bin/polystreams) echo "test-dist: python: engine from the wheel, $("$engine" version)" ;;
  *) echo "test-dist: python: find_engine() is $engine, not the wheel's"; fail=1 ;;
esac
run python "$work" "$work/venv/bin/python" wordcount.py
py_size=$(size "$work"/venv/lib/python3*/site-packages/polystreams "$work"/venv/lib/python3*/site-packages/polystreams-*.dist-info)

# Python: the sdist builds and installs offline (no engine inside).
/usr/bin/python3 -m venv --system-site-packages "$work/venv-sdist"
"$work/venv-sdist/bin/pip" install --quiet --no-index --no-build-isolation --disable-pip-version-check "$dist/polystreams-$ver.tar.gz"
got=$(cd "$work" && venv-sdist/bin/python -c 'import polystreams; print(polystreams.__version__)')
[ "$got" = "$ver" ] && echo "test-dist: python sdist: installs, version $got" || { echo "test-dist: python sdist: version $got"; fail=1; }

# Node: the SDK and this platform's engine package, offline.
mkdir -p "$work/node"
cp tools/dist/wordcount/wordcount.mjs "$work/node/"
echo '{ "name": "wordcount", "private": true, "type": "module" }' >"$work/node/package.json"
(cd "$work/node" && npm install --offline --no-audit --no-fund --loglevel=error \
  "$dist/polystreams-$ver.tgz" "$dist/polystreams-linux-$cpu-$ver.tgz" >/dev/null)
if [ -x "$work/node/node_modules/@polystreams/linux-$cpu/bin/polystreams" ]; then
  run node "$work/node" node wordcount.mjs
else
  echo "test-dist: node: @polystreams/linux-$cpu was not installed"; fail=1
fi
node_size=$(size "$work/node/node_modules/polystreams" "$work/node/node_modules/@polystreams")

# Rust: a path dependency on the crate; the engine from the repository.
mkdir -p "$work/rust/src" "$work/rust/.cargo"
cp tools/dist/wordcount/main.rs "$work/rust/src/"
cp sdk-rust/.cargo/config.toml "$work/rust/.cargo/"
cat >"$work/rust/Cargo.toml" <<TOML
[package]
name = "wordcount"
version = "0.0.0"
edition = "2021"

[dependencies]
polystreams = { path = "$root/sdk-rust" }

[workspace]
TOML
export CARGO_TARGET_DIR=$root/.cache/test-dist-cargo
(cd "$work/rust" && cargo build --quiet)
run rust "$work/rust" "$CARGO_TARGET_DIR/debug/wordcount"

# An engine of another version: every SDK refuses it, naming both versions.
go build -ldflags "-X main.version=99.0.0" -o "$work/engine-99" ./core/cmd/polystreams
refuses python "$work/venv/bin/python" -c 'import polystreams; polystreams.App("x")'
refuses node node --input-type=module -e "import { App } from '$work/node/node_modules/polystreams/dist/index.js'; await App.create('x');"
refuses rust "$CARGO_TARGET_DIR/debug/wordcount"

echo "test-dist: installed sizes: python (wheel, engine included) $py_size; node (SDK + @polystreams/linux-$cpu) $node_size"
echo "test-dist: artifacts:"
(cd "$dist" && ls -l -- *.whl *.tar.gz *.tgz *.crate | awk '{printf "  %-58s %6.1f MB\n", $9, $5 / 1e6}')
exit $fail
