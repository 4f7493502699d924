#!/usr/bin/env bash
# Installs what building and testing polystreams needs on Debian bookworm,
# from the registries these machines reach: apt, npm and the Go module proxy.
# Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_pkgs=(protobuf-compiler python3-protobuf python3-pytest python3-venv python3-pip
  python3-setuptools python3-confluent-kafka kcat mypy
  # The conformance matrix's reference column runs Kafka Streams
  # (conformance/executors/java, built by Maven from Maven Central), and
  # make kafka / test-kafka run a real Apache Kafka broker (tools/kafka:
  # Java 17 runs it, Maven resolves its jars into .cache/kafka).
  openjdk-17-jdk-headless maven
  # /ui is tested end to end in headless Chromium (sdk-node/src/ui.e2e.test.ts).
  chromium
  # openssl makes the certificates of the SDKs' TLS tests.
  openssl)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: apt-get install ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x node_modules/.bin/buf ] || [ ! -d node_modules/playwright-core ]; then
  echo "install-deps: npm ci (buf, playwright-core)"
  npm ci --no-audit --no-fund --loglevel=error
fi

mkdir -p .cache/bin
[ -x .cache/bin/protoc-gen-go ] || GOBIN="$PWD/.cache/bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
[ -x .cache/bin/protoc-gen-connect-go ] || GOBIN="$PWD/.cache/bin" go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
go mod download

if [ ! -d sdk-node/node_modules ]; then
  echo "install-deps: npm ci (sdk-node)"
  (cd sdk-node && npm ci --no-audit --no-fund --loglevel=error)
fi

# Rust: cargo and rustc come with the machine (~/.cargo/bin); rustfmt and
# clippy are their components (make lint runs both).
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
  echo "install-deps: cargo is not installed (want Rust >= 1.85 with rustfmt and clippy)" >&2
  exit 1
fi

# sdk-rust's crates come from crates.io at Cargo.lock's versions; fetched
# here once so that builds (and the conformance runner's) need no network.
if [ ! -f .cache/cargo-fetched ] || [ sdk-rust/Cargo.lock -nt .cache/cargo-fetched ]; then
  echo "install-deps: cargo fetch (sdk-rust)"
  (cd sdk-rust && cargo fetch --locked --quiet) && touch .cache/cargo-fetched
fi
