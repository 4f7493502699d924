#!/usr/bin/env bash
# make dist: the release artifacts of VERSION, for linux/amd64 and linux/arm64,
# into dist/ (or $1), saying which one it is building. The engine is pure Go
# (Pebble included), so CGO_ENABLED=0 cross-compiles it to a static binary
# for either architecture. The Python artifacts are built by the standard
# frontend (python -m build) with hatchling (sdk-python/pyproject.toml,
# hatch_build.py), both from PyPI into .cache/dist-venv (tools/dist/requirements.txt).
#
#   engine/linux-<arch>/polystreams                  the engine, static, stripped
#   polystreams-<v>-linux-<arch>.tar.gz              the same, for `polystreams serve` hosts
#   polystreams-<v>-py3-none-manylinux_2_17_<m>.whl  Python SDK + engine (polystreams/_bin)
#   polystreams-<v>.tar.gz                           Python sdist (no engine)
#                                                    (both pass twine check --strict)
#   polystreams-<v>.tgz                              npm: the Node SDK, optionalDependencies below
#   polystreams-linux-<x64|arm64>-<v>.tgz            npm: @polystreams/linux-<cpu>, the engine
#   polystreams-<v>.crate                            the Rust crate (finds or builds the engine)
#   SHA256SUMS
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-dist}")
ver=$(cat VERSION)
/usr/bin/python3 tools/dist/version.py check
rm -rf "$out" && mkdir -p "$out/npm"
say() { echo "dist: $*"; }
SECONDS=0

pytools=$root/.cache/dist-venv
if ! cmp -s tools/dist/requirements.txt "$pytools/requirements.txt"; then
  say "Python build tools (build, hatchling, twine from PyPI) into .cache/dist-venv"
  rm -rf "$pytools"
  /usr/bin/python3 -m venv "$pytools"
  "$pytools/bin/pip" install --quiet --disable-pip-version-check -r tools/dist/requirements.txt
  cp tools/dist/requirements.txt "$pytools/requirements.txt"
fi
# pybuild <what> [VAR=value...]: python -m build of sdk-python into $out.
pybuild() {
  local what=$1
  shift
  env SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1577836800}" "$@" \
    "$pytools/bin/python" -m build --no-isolation "--$what" --outdir "$out" sdk-python >"$out/build.log" 2>&1 \
    || { cat "$out/build.log" >&2; exit 1; }
  rm -f "$out/build.log"
}

declare -A wheel_platform=([amd64]=manylinux_2_17_x86_64 [arm64]=manylinux_2_17_aarch64)
declare -A npm_cpu=([amd64]=x64 [arm64]=arm64)

# The Node SDK's JavaScript, staged with the platform packages as optional
# dependencies (npm installs the one whose os/cpu match, as esbuild's does).
# They are added here, not in sdk-node/package.json, so that a checkout's
# `npm ci` never looks for packages that are only published at release.
say "npm: polystreams-$ver.tgz (the Node SDK; tsc)"
(cd sdk-node && npm run --silent build)
stage=$out/npm/polystreams
mkdir -p "$stage" && cp -r sdk-node/dist sdk-node/README.md "$stage/"
node -e '
  const fs = require("fs");
  const [src, dst, ver, cpus] = process.argv.slice(1);
  const p = JSON.parse(fs.readFileSync(src, "utf8"));
  delete p.scripts; delete p.devDependencies;
  p.optionalDependencies = Object.fromEntries(cpus.split(" ").map((c) => [`@polystreams/linux-${c}`, ver]));
  fs.writeFileSync(dst, JSON.stringify(p, null, 2) + "\n");
' sdk-node/package.json "$stage/package.json" "$ver" "${npm_cpu[*]}"
(cd "$out" && npm pack --silent "$stage" >/dev/null)

for arch in amd64 arm64; do
  bin=$out/engine/linux-$arch/polystreams
  say "engine for linux/$arch (go build, static) and polystreams-$ver-linux-$arch.tar.gz"
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$ver" -o "$bin" ./core/cmd/polystreams
  tar -C "$(dirname "$bin")" --owner=0 --group=0 --mtime=2020-01-01 -czf "$out/polystreams-$ver-linux-$arch.tar.gz" polystreams
  say "Python: polystreams-$ver-py3-none-${wheel_platform[$arch]}.whl (python -m build, engine inside)"
  pybuild wheel POLYSTREAMS_WHEEL_ENGINE="$bin" POLYSTREAMS_WHEEL_PLATFORM="${wheel_platform[$arch]}"
  cpu=${npm_cpu[$arch]}
  say "npm: polystreams-linux-$cpu-$ver.tgz (@polystreams/linux-$cpu, the engine)"
  pstage=$out/npm/linux-$cpu
  mkdir -p "$pstage/bin"
  cp "sdk-node/npm/linux-$cpu/package.json" "sdk-node/npm/linux-$cpu/README.md" "$pstage/"
  cp "$bin" "$pstage/bin/polystreams"
  (cd "$out" && npm pack --silent "$pstage" >/dev/null)
done
say "Python: polystreams-$ver.tar.gz (the sdist, no engine)"
pybuild sdist
say "Python: twine check --strict"
"$pytools/bin/twine" --no-color check --strict "$out"/*.whl "$out/polystreams-$ver.tar.gz" | sed 's/^/  /'

# The crate: source only (see find_engine in sdk-rust/src/engine.rs).
# make test-dist builds it as a dependency, and runs cargo publish --dry-run.
say "Rust: polystreams-$ver.crate (cargo package)"
(cd sdk-rust && cargo package --quiet --locked -p polystreams --no-verify --allow-dirty)
cp "sdk-rust/target/package/polystreams-$ver.crate" "$out/"

(cd "$out" && sha256sum -- *.whl *.tar.gz *.tgz *.crate > SHA256SUMS)
echo "dist: version $ver in $out (${SECONDS} s)"
(cd "$out" && ls -l -- *.whl *.tar.gz *.tgz *.crate | awk '{printf "  %-58s %6.1f MB\n", $9, $5 / 1e6}')
