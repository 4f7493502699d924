#!/usr/bin/env bash
# make dist: the release artifacts of VERSION, for linux/amd64 and linux/arm64,
# into dist/ (or $1). Everything builds offline from what tools/install-deps.sh
# installs; the engine is pure Go (Pebble included), so CGO_ENABLED=0 cross-
# compiles it to a static binary for either architecture.
#
#   engine/linux-<arch>/polystreams                  the engine, static, stripped
#   polystreams-<v>-linux-<arch>.tar.gz              the same, for `polystreams serve` hosts
#   polystreams-<v>-py3-none-manylinux_2_17_<m>.whl  Python SDK + engine (polystreams/_bin)
#   polystreams-<v>.tar.gz                           Python sdist (no engine)
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

declare -A wheel_platform=([amd64]=manylinux_2_17_x86_64 [arm64]=manylinux_2_17_aarch64)
declare -A npm_cpu=([amd64]=x64 [arm64]=arm64)

# The Node SDK's JavaScript, staged with the platform packages as optional
# dependencies (npm installs the one whose os/cpu match, as esbuild's does).
# They are added here, not in sdk-node/package.json, so that a checkout's
# `npm ci` never looks for packages that are only published at release.
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
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$ver" -o "$bin" ./core/cmd/polystreams
  tar -C "$(dirname "$bin")" --owner=0 --group=0 --mtime=2020-01-01 -czf "$out/polystreams-$ver-linux-$arch.tar.gz" polystreams
  /usr/bin/python3 tools/dist/wheel.py --out "$out" --engine "$bin" --platform "${wheel_platform[$arch]}" >/dev/null
  cpu=${npm_cpu[$arch]}
  pstage=$out/npm/linux-$cpu
  mkdir -p "$pstage/bin"
  cp "sdk-node/npm/linux-$cpu/package.json" "sdk-node/npm/linux-$cpu/README.md" "$pstage/"
  cp "$bin" "$pstage/bin/polystreams"
  (cd "$out" && npm pack --silent "$pstage" >/dev/null)
done
/usr/bin/python3 tools/dist/wheel.py --out "$out" --sdist >/dev/null

# The crate: source only (see find_engine in sdk-rust/src/engine.rs).
(cd sdk-rust && cargo package --quiet -p polystreams --no-verify --allow-dirty)
cp "sdk-rust/target/package/polystreams-$ver.crate" "$out/"

(cd "$out" && sha256sum -- *.whl *.tar.gz *.tgz *.crate > SHA256SUMS)
echo "dist: version $ver in $out"
(cd "$out" && ls -l -- *.whl *.tar.gz *.tgz *.crate | awk '{printf "  %-58s %6.1f MB\n", $9, $5 / 1e6}')
