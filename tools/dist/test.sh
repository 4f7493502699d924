#!/usr/bin/env bash
# make test-dist: does what the README's Install section says, with the
# artifacts of dist/ (or $1), each in a fresh, empty environment, and runs the
# README's word count there (tools/dist/wordcount/) against the embedded
# broker, checking its output; then checks that an SDK refuses an engine of
# another version, naming both.
#   Registries: npm publish --dry-run of both npm packages and cargo publish
#           --dry-run of the crate, with no warning (make dist ran twine check).
#   Python: for each Python version pyproject.toml declares (its classifiers)
#           that this machine has (python3.X on PATH or pyenv's; at least two),
#           a plain venv (no system site packages) and `pip install <wheel>`,
#           which takes protobuf from PyPI; the oldest version gets the oldest
#           protobuf the wheel allows. The sdist into another plain venv
#           (hatchling from PyPI).
#   Node:   a fresh folder, `npm install` of the two tarballs (dependencies from
#           the npm registry); then tsc --strict without skipLibCheck on a
#           TypeScript consumer (wordcount/consumer.ts), without and with @types/node.
#   Rust:   `cargo new`, then `cargo add polystreams --path sdk-rust` (the rest
#           from crates.io; CARGO_TARGET_DIR under .cache/ so reruns are quick).
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

# The registries' own checks of the packages: no warning, no error.
for tgz in "polystreams-$ver.tgz" "polystreams-linux-$cpu-$ver.tgz"; do
  # (Not logged in to the registry, npm warns so even in a dry run; that warning is not the package's.)
  if out=$(cd "$work" && npm publish --dry-run --loglevel=warn "$dist/$tgz" 2>&1) \
    && ! grep -i "warn\|error" <<<"$out" | grep -vq "requires you to be logged in"; then
    echo "test-dist: npm publish --dry-run $tgz: clean"
  else
    echo "test-dist: npm publish --dry-run $tgz:"; sed 's/^/  /' <<<"$out"; fail=1
  fi
done
export CARGO_TARGET_DIR=$root/.cache/test-dist-cargo
# (cargo always ends a dry run with "warning: aborting upload due to dry run".)
if out=$(cd sdk-rust && cargo publish --dry-run --locked --allow-dirty -p polystreams 2>&1) \
  && ! grep "^warning\|^error" <<<"$out" | grep -vqx "warning: aborting upload due to dry run"; then
  echo "test-dist: cargo publish --dry-run polystreams: clean (packaged crate verified: it builds from crates.io)"
else
  echo "test-dist: cargo publish --dry-run polystreams:"; sed 's/^/  /' <<<"$out"; fail=1
fi

# Python: `pip install <wheel>` into a plain venv of each supported Python.
wheel=$dist/polystreams-$ver-py3-none-$plat.whl
cp tools/dist/wordcount/wordcount.py "$work/"
mapfile -t pyversions < <(/usr/bin/python3 -c '
import re, tomllib
p = tomllib.load(open("sdk-python/pyproject.toml", "rb"))["project"]
print("\n".join(m[1] for c in p["classifiers"] if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))))')
pb_min=$(/usr/bin/python3 -c '
import re, tomllib
deps = tomllib.load(open("sdk-python/pyproject.toml", "rb"))["project"]["dependencies"]
print(next(re.search(r">=([\d.]+)", d)[1] for d in deps if d.startswith("protobuf")))')
interpreter() { # python3.X: the newest pyenv has, else on PATH (one that runs: not a pyenv shim for another version)
  local d c
  d=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")/versions/$1".* 2>/dev/null | sort -V | tail -1)
  for c in ${d:+"$d/bin/python$1"} "$(command -v "python$1" 2>/dev/null)"; do
    [ -n "$c" ] && "$c" -c pass 2>/dev/null && { echo "$c"; return; }
  done
  return 1
}
tested=()
for pv in "${pyversions[@]}"; do
  py=$(interpreter "$pv") || true
  if [ -z "$py" ]; then echo "test-dist: python $pv: declared, but no python$pv here (not tested)"; continue; fi
  venv=$work/venv-$pv
  "$py" -m venv "$venv"
  pins=()
  [ ${#tested[@]} = 0 ] && pins=("protobuf==$pb_min") # the oldest Python gets the oldest protobuf allowed
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" "${pins[@]}" >"$work/pip-$pv.log" 2>&1; then
    echo "test-dist: python $pv: pip install $(basename "$wheel") failed:"; tail -5 "$work/pip-$pv.log"; fail=1; continue
  fi
  pb=$("$venv/bin/python" -c 'import google.protobuf as p; print(p.__version__)')
  engine=$(cd "$work" && "$venv/bin/python" -c 'from polystreams._engine import find_engine; print(find_engine())')
  case $engine in
    "$venv/"*/polystreams/_bin/polystreams) ;;
    *) echo "test-dist: python $pv: find_engine() is $engine, not the wheel's"; fail=1 ;;
  esac
  echo "test-dist: python $pv: pip install of the wheel into a plain venv: protobuf $pb from PyPI, engine from the wheel ($("$engine" version))"
  run "python$pv" "$work" "$venv/bin/python" wordcount.py
  tested+=("$pv")
done
if [ ${#tested[@]} -lt 2 ]; then
  echo "test-dist: python: tested ${#tested[@]} of the declared versions (${pyversions[*]}); want at least two"; fail=1
fi
pyref=$work/venv-${tested[0]:-none}
py_size=$(size "$pyref"/lib/python3*/site-packages/polystreams "$pyref"/lib/python3*/site-packages/polystreams-*.dist-info)

# Python: the sdist builds (hatchling from PyPI) and installs into a plain venv (no engine inside).
/usr/bin/python3 -m venv "$work/venv-sdist"
"$work/venv-sdist/bin/pip" install --quiet --disable-pip-version-check "$dist/polystreams-$ver.tar.gz"
got=$(cd "$work" && venv-sdist/bin/python -c 'import polystreams; print(polystreams.__version__)')
[ "$got" = "$ver" ] && echo "test-dist: python sdist: builds and installs, version $got" || { echo "test-dist: python sdist: version $got"; fail=1; }

# Node: the SDK and this platform's engine package; their dependencies from the registry.
mkdir -p "$work/node"
cp tools/dist/wordcount/wordcount.mjs "$work/node/"
echo '{ "name": "wordcount", "private": true, "type": "module" }' >"$work/node/package.json"
(cd "$work/node" && npm install --no-audit --no-fund --loglevel=error \
  "$dist/polystreams-$ver.tgz" "$dist/polystreams-linux-$cpu-$ver.tgz" >/dev/null)
if [ -x "$work/node/node_modules/@polystreams/linux-$cpu/bin/polystreams" ]; then
  run node "$work/node" node wordcount.mjs
else
  echo "test-dist: node: @polystreams/linux-$cpu was not installed"; fail=1
fi
node_size=$(size "$work/node/node_modules/polystreams" "$work/node/node_modules/@polystreams")

# Node: the package's types under a strict tsc, skipLibCheck off, in a fresh
# TypeScript project (the TypeScript sdk-node builds with), first without
# @types/node (TypeScript's default libraries), then with it and Node's ES2023 lib only.
ts=$(node -p 'require("./sdk-node/package.json").devDependencies.typescript')
typesnode=$(node -p 'require("./sdk-node/package.json").devDependencies["@types/node"]')
mkdir -p "$work/ts"
cp tools/dist/wordcount/consumer.ts "$work/ts/"
echo '{ "name": "consumer", "private": true, "type": "module" }' >"$work/ts/package.json"
tsc_check() { # <label> <compilerOptions JSON>
  echo "{ \"compilerOptions\": $2, \"files\": [\"consumer.ts\"] }" >"$work/ts/tsconfig.json"
  if out=$(cd "$work/ts" && node_modules/.bin/tsc -p . 2>&1); then
    echo "test-dist: node: tsc $ts --strict, no skipLibCheck, $1: clean"
  else
    echo "test-dist: node: tsc $ts --strict, $1:"; sed 's/^/  /' <<<"$out"; fail=1
  fi
}
(cd "$work/ts" && npm install --no-audit --no-fund --loglevel=error "typescript@$ts" \
  "$dist/polystreams-$ver.tgz" "$dist/polystreams-linux-$cpu-$ver.tgz" >/dev/null)
tsc_check "without @types/node" '{ "target": "es2022", "module": "nodenext", "strict": true, "skipLibCheck": false, "noEmit": true }'
(cd "$work/ts" && npm install --no-audit --no-fund --loglevel=error "@types/node@$typesnode" >/dev/null)
tsc_check "with @types/node $typesnode, lib es2023" '{ "target": "es2022", "lib": ["es2023"], "module": "nodenext", "types": ["node"], "strict": true, "skipLibCheck": false, "noEmit": true }'

# Rust: a new crate, `cargo add polystreams --path sdk-rust`, the rest from
# crates.io; the engine from the repository (the crate finds bin/polystreams above itself).
(cd "$work" && cargo new --quiet --bin --vcs none wordcount-rs)
(cd "$work/wordcount-rs" && cargo add --quiet polystreams --path "$root/sdk-rust")
cp tools/dist/wordcount/main.rs "$work/wordcount-rs/src/"
(cd "$work/wordcount-rs" && cargo build --quiet)
echo "test-dist: rust: cargo new; cargo add polystreams --path sdk-rust; cargo build: $(grep -A2 '^name = "polystreams"' "$work/wordcount-rs/Cargo.lock" | grep -o 'version = .*' | head -1); reqwest $(grep -A1 '^name = "reqwest"' "$work/wordcount-rs/Cargo.lock" | grep -o '"[0-9.]*"')"
run rust "$work/wordcount-rs" "$CARGO_TARGET_DIR/debug/wordcount-rs"

# An engine of another version: every SDK refuses it, naming both versions.
go build -ldflags "-X main.version=99.0.0" -o "$work/engine-99" ./core/cmd/polystreams
refuses python "$pyref/bin/python" -c 'import polystreams; polystreams.App("x")'
refuses node node --input-type=module -e "import { App } from '$work/node/node_modules/polystreams/dist/index.js'; await App.create('x');"
refuses rust "$CARGO_TARGET_DIR/debug/wordcount-rs"

echo "test-dist: installed sizes: python (wheel, engine included) $py_size; node (SDK + @polystreams/linux-$cpu) $node_size"
echo "test-dist: artifacts:"
(cd "$dist" && ls -l -- *.whl *.tar.gz *.tgz *.crate | awk '{printf "  %-58s %6.1f MB\n", $9, $5 / 1e6}')
exit $fail
