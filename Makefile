# polystreams: the entry points. `make demo` and `make test` are all a new
# user needs; both install what is missing first.
SHELL := /bin/bash
export PATH := $(CURDIR)/.cache/bin:$(CURDIR)/sdk-node/node_modules/.bin:/usr/local/go/bin:$(HOME)/.cargo/bin:$(PATH)
PY := /usr/bin/python3
ENGINE := $(CURDIR)/bin/polystreams
export POLYSTREAMS_ENGINE := $(ENGINE)
GO_TEST_FLAGS ?= -count=1 -timeout 15m
# One version for engine, protocol and SDKs (tools/dist/version.py checks the SDKs agree).
VERSION := $(shell cat $(CURDIR)/VERSION)
# The Apache Kafka (and Kafka Streams) version: one pin for everything Java.
KAFKA_VERSION := $(shell cat $(CURDIR)/tools/kafka/VERSION)
JAVA_EXECUTOR_DIR := conformance/executors/java
JAVA_EXECUTOR := $(JAVA_EXECUTOR_DIR)/target/conformance-java.jar

.PHONY: all deps build generate check-generated lint test test-go kafka test-kafka test-kafka-quick interop-jvm test-interop test-python test-node test-rust test-schema-registry java-executor conformance conformance-java conformance-driver fuzz-conformance demo bench bench-join bench-peers chaos fuzz clean dist test-dist

all: build

deps:
	@tools/install-deps.sh

build:
	go build -ldflags "-X main.version=$(VERSION)" -o $(ENGINE) ./core/cmd/polystreams

# Regenerate the protocol's Go, Python, TypeScript and Rust code (committed;
# never hand-edited). Rust's comes from prost-build (sdk-rust/codegen), the
# same prost version as the crate's. Then the host test vectors
# (conformance/vectors, docs/design/host-vectors.md), made by the engine's
# own bundle encoder and result decoder.
generate: deps
	cd proto && ../node_modules/.bin/buf generate
	cd sdk-rust && cargo run --quiet -p polystreams-codegen
	go test -count=1 -run '^(TestHostVectors|TestProcessorVectors)$$' ./core/internal/engine/ -args -write-vectors

# Fails when the committed generated code is not what `make generate` makes.
check-generated: generate
	@git diff --exit-code -- proto/gen sdk-python/src/polystreams/v1alpha1 sdk-node/src/gen sdk-rust/src/gen conformance/vectors \
	  || { echo "generated code is stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- proto/gen sdk-python/src/polystreams/v1alpha1 sdk-node/src/gen sdk-rust/src/gen conformance/vectors)" \
	  || { echo "generated code is not committed: run 'make generate' and commit"; git status --porcelain -- proto/gen sdk-python/src/polystreams/v1alpha1 sdk-node/src/gen sdk-rust/src/gen conformance/vectors; exit 1; }

lint: deps
	cd proto && ../node_modules/.bin/buf lint && ../node_modules/.bin/buf format --diff --exit-code
	go vet ./...
	@test -z "$$(gofmt -l core tools conformance)" || { gofmt -l core tools conformance; echo "gofmt: files above need formatting"; exit 1; }
	cd sdk-python && mypy --strict src/polystreams
	mypy --config-file conformance/executors/python/mypy.ini
	cd sdk-node && node_modules/.bin/tsc --noEmit -p .
	sdk-node/node_modules/.bin/tsc --noEmit -p conformance/executors/node
	cd sdk-rust && cargo fmt --all --check
	cd sdk-rust && cargo clippy --quiet --all-targets -p polystreams -p polystreams-conformance -- -D warnings

test: deps check-generated lint build test-go test-kafka-quick test-python test-schema-registry test-node test-rust conformance

test-go: build
	go test $(GO_TEST_FLAGS) ./...
	# -race instruments this process only: tests that run the engine as a
	# separate process (kill, scale-out) gain nothing from it and are skipped.
	go test -race $(GO_TEST_FLAGS) -skip 'TestScaleOut|TestKilledEngine|TestChaos' ./core/internal/engine/ ./core/internal/server/

# A real Apache Kafka broker (tools/kafka/VERSION; jars resolved by Maven
# into .cache/kafka) in the foreground, on free loopback ports: prints its
# bootstrap address once it answers metadata; Ctrl-C stops it.
# KAFKA_FLAGS adds tools/kafka/kafka.sh serve options, e.g. --port 9092.
KAFKA_FLAGS ?=
kafka:
	@tools/kafka/kafka.sh serve $(KAFKA_FLAGS)

# The suites that carry Kafka compatibility against a real Apache Kafka
# broker (POLYSTREAMS_TEST_BROKER=kafka; docs/kafka.md): the quick subset is
# part of make test; test-kafka runs every server test (those that need
# kfake's fault injection skip, saying why; scale-out with three engines
# included); make chaos runs the long fault suite on Kafka too.
KAFKA_QUICK := TestPortInUse|TestWordCountCrossesInBundles|TestCountsContinueAfterRestart|TestExactlyOnceSurvivesKills|TestStreamTableJoin$$|TestStreamStreamJoin$$|TestSuppressEmitsEachWindowOnce|TestStandbyReplicasShortenTheTakeoverRestore|TestScaleOutCountsExactlyOnceAcrossKillAndJoin|TestFaultBrokerRestart|TestSASLToTheBroker
test-kafka-quick: build
	POLYSTREAMS_TEST_BROKER=kafka go test -count=1 -timeout 15m -run '$(KAFKA_QUICK)' ./core/internal/kafkatest/ ./core/internal/server/

test-kafka: build
	POLYSTREAMS_TEST_BROKER=kafka go test -count=1 -timeout 45m ./core/internal/kafkatest/ ./core/internal/server/
	$(MAKE) test-interop

# Interoperability with JVM Kafka Streams (docs/kafka.md): a Kafka Streams
# application (tools/interop/jvm, kafka-streams at tools/kafka/VERSION, built
# by Maven into its target/) and a polystreams application read each other's
# outputs on the real broker (core/internal/interop).
interop-jvm:
	mvn -q -B -Dkafka.version=$$(tr -d '[:space:]' < tools/kafka/VERSION) -f tools/interop/jvm/pom.xml package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=target/lib

test-interop: interop-jvm
	POLYSTREAMS_TEST_BROKER=kafka go test -count=1 -timeout 15m -v -run TestInterop ./core/internal/interop/

test-python: build
	cd sdk-python && PYTHONPATH=src $(PY) -m pytest -q tests
	cd tools/bench/peers && $(PY) -m pytest -q -p no:cacheprovider test_peers.py

# Schema Registry serdes end to end (docs/design/schema-registry.md): the
# engine, a registry process (core/cmd/schema-registry, built into bin/) and
# confluent-kafka's Avro, JSON Schema and Protobuf serializers from PyPI
# (the Protobuf test generates its _pb2 module with protoc), installed
# into .cache/schema-registry/venv (beside the system's packages, which
# the SDK uses). The Go side's tests run in test-go.
SR_VENV := .cache/schema-registry/venv
$(SR_VENV)/.installed-avro-json-protobuf:
	rm -rf $(SR_VENV) && /usr/bin/python3 -m venv --system-site-packages $(SR_VENV)
	$(SR_VENV)/bin/pip install -q 'confluent-kafka[avro,json,protobuf]==2.16.1'
	touch $@

test-schema-registry: build $(SR_VENV)/.installed-avro-json-protobuf
	go build -o bin/schema-registry ./core/cmd/schema-registry
	PYTHONPATH=sdk-python/src $(SR_VENV)/bin/python -m pytest -q -p no:cacheprovider tools/schema-registry/test_schema_registry.py

# Node SDK: unit tests, the real engine end to end, and the packed tarball.
test-node: deps build
	cd sdk-node && node --import tsx --test src/*.test.ts

# Rust SDK: unit tests and the real engine end to end (kcat as the Kafka client).
test-rust: deps build
	cd sdk-rust && cargo test --quiet -p polystreams

# The conformance matrix: every case of conformance/cases through Kafka
# Streams itself (the reference: TopologyTestDriver, conformance/executors/java),
# then Go (core/streams), Python, Node and Rust against one engine and embedded
# broker; fails on any mismatch not listed in
# conformance/known-failures/<language>.json, and on any difference from Kafka
# Streams not listed in conformance/known-differences.json.
# CONFORMANCE_FLAGS narrows it, e.g. CONFORMANCE_FLAGS="-lang java,go -run count".
conformance: deps build java-executor
	go run ./conformance/runner -repo $(CURDIR) $(CONFORMANCE_FLAGS)
	go run ./conformance/runner -repo $(CURDIR) -driver -lang go,python $(CONFORMANCE_FLAGS)

# The Kafka Streams column alone: no engine, no broker; results are cached in
# .cache/conformance-java/ per case file, executor and Kafka version.
conformance-java: java-executor
	go run ./conformance/runner -repo $(CURDIR) -lang java $(CONFORMANCE_FLAGS)

# Differential testing against Kafka Streams (conformance/README.md): random
# cases through Kafka Streams (TopologyTestDriver) and Go's test driver,
# compared in order; each difference is shrunk and written as
# conformance/cases/fuzz_<hash>.json (FUZZ_SAVE=false: printed). Fails on a
# difference not saved yet. FUZZ_DURATION (e.g. 5m) instead of FUZZ_CASES
# runs for a time.
FUZZ_SEED ?= 1
FUZZ_CASES ?= 200
FUZZ_DURATION ?= 0
FUZZ_SAVE ?= true
fuzz-conformance: java-executor
	go run ./conformance/runner -repo $(CURDIR) -fuzz -fuzz-seed $(FUZZ_SEED) -fuzz-cases $(FUZZ_CASES) -fuzz-duration $(FUZZ_DURATION) -fuzz-save=$(FUZZ_SAVE)

# The Kafka Streams executor: Maven resolves kafka-streams and
# kafka-streams-test-utils $(KAFKA_VERSION) from Maven Central into ~/.m2.
java-executor: $(JAVA_EXECUTOR)

$(JAVA_EXECUTOR): $(JAVA_EXECUTOR_DIR)/pom.xml tools/kafka/VERSION conformance/catalogue.json $(shell find $(JAVA_EXECUTOR_DIR)/src -type f)
	cd $(JAVA_EXECUTOR_DIR) && mvn -q -B -Dkafka.version=$(KAFKA_VERSION) package
	@touch $@

# The same matrix through test driver sessions (docs/testing.md): each case
# run as a TopologyTestDriver test would run it, one record at a time, no
# shared broker; conformance/known-failures/driver.json lists what needs
# more than one partition.
conformance-driver: deps build
	go run ./conformance/runner -repo $(CURDIR) -driver $(CONFORMANCE_FLAGS)

# The fault suite (docs/reliability.md), long versions (POLYSTREAMS_CHAOS=1),
# once per broker of CHAOS_BROKERS: kfake (embedded), then Apache Kafka
# (POLYSTREAMS_TEST_BROKER=kafka, core/internal/kafkatest); CHAOS_BROKERS=kafka
# runs one. Under exactly_once_v2: kill -9 of the engine (counting 220,000
# records over 1,000 keys, and suppressing 1 s windows) and of the Python host,
# 10 kills each; the broker frozen (SIGSTOP) 15 s twice; a rebalance storm of 12
# membership changes among three engines; poison pills under fail, dead_letter
# and log_and_continue; the broker fault tests (kfake's request interception
# ones skip on Kafka; broker restarts run on both); scale-out. Under
# at_least_once: the engine and host kills again (no loss; duplicates
# reported). CHAOS_FLAGS adds go test flags: -v prints each test's
# "chaos figures:" line.
CHAOS_BROKERS ?= kfake kafka
CHAOS_FLAGS ?=
CHAOS_POISON := TestDeadLetterHoldsExactlyThePoisonRecords|TestLogAndContinueSkipsExactlyThePoisonRecords|TestFailNeverCommitsPastThePoisonRecord
chaos: deps build
	@set -e; for b in $(CHAOS_BROKERS); do \
	  case $$b in kfake) broker= ;; kafka) broker=kafka ;; *) echo "CHAOS_BROKERS: unknown broker '$$b' (kfake or kafka)"; exit 2 ;; esac; \
	  echo "chaos: $$b, exactly_once_v2"; \
	  POLYSTREAMS_TEST_BROKER=$$broker POLYSTREAMS_CHAOS=1 POLYSTREAMS_CHAOS_GUARANTEE=exactly_once_v2 \
	    go test -count=1 -timeout 40m $(CHAOS_FLAGS) -run 'TestChaos|TestFault|TestScaleOut|$(CHAOS_POISON)' ./core/internal/server/; \
	  echo "chaos: $$b, at_least_once"; \
	  POLYSTREAMS_TEST_BROKER=$$broker POLYSTREAMS_CHAOS=1 POLYSTREAMS_CHAOS_GUARANTEE=at_least_once \
	    go test -count=1 -timeout 20m $(CHAOS_FLAGS) -run 'TestChaos' ./core/internal/server/; \
	done

# Coverage-guided fuzzing, FUZZTIME (default 2m) per target, one target at
# a time: the serde decoders, the bundle answer decoder and the bundle
# codecs' round trip, changelog keys and changes read back from Kafka,
# scripts of protocol calls, each RPC's raw request bytes (protobuf, JSON,
# gzip; with and without a Content-Length) and the HTTP endpoints through
# the engine's whole handler stack, and the topology file parser
# (docs/security.md#fuzzing). Their seed corpora (f.Add, and
# testdata/fuzz/<Name>/) run as ordinary tests in test-go; a crasher found
# here is written to testdata/fuzz/<Name>/ by go test: fix it and commit
# the file. FUZZ_TARGETS narrows it, e.g. FUZZ_TARGETS=engine:FuzzDecodeResult;
# FUZZFLAGS adds go test flags, e.g. -parallel=1 on a shared machine.
FUZZTIME ?= 2m
FUZZFLAGS ?=
FUZZ_TARGETS ?= serde:FuzzValidate serde:FuzzWindowedKeys engine:FuzzDecodeResult engine:FuzzBundleRoundTrip engine:FuzzChangelog \
	server:FuzzProtocol server:FuzzOpenSession server:FuzzRegisterFunction server:FuzzBuild server:FuzzDescribe server:FuzzStart \
	server:FuzzExchange server:FuzzGetState server:FuzzGetMetrics server:FuzzQuery server:FuzzStop server:FuzzPipeInput \
	server:FuzzReadOutput server:FuzzAdvanceWallClock server:FuzzRead server:FuzzQueryMetadataForKey server:FuzzStreamsMetadata \
	server:FuzzPauseProcessing server:FuzzResumeProcessing server:FuzzCleanUpState server:FuzzHTTPEndpoints \
	topology:FuzzParseDescription topology:FuzzWindowsFor
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t#*:}; \
	  echo "fuzz: $$name in core/internal/$$pkg for $(FUZZTIME)"; \
	  go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./core/internal/$$pkg/; \
	done

demo: deps build
	PYTHONPATH=sdk-python/src $(PY) tools/demo/wordcount.py

# Python, Node and Rust hosts vs Go operator vs raw franz-go loop, and the crossing cost per
# bundle size; prints the tables of docs/performance.md. Asserts nothing.
bench: deps build
	cd sdk-rust && cargo build --quiet --release --example benchhost
	go run ./core/cmd/bench --repo $(CURDIR) --python $(PY) --rust $(CURDIR)/sdk-rust/target/release/examples/benchhost

# The joins table only (core/cmd/bench/join.go): stream-table and
# stream-stream joins with a Python joiner, and the stream-table join with
# a Rust one, each beside a confluent-kafka dict loop (tools/bench/joindict.py).
bench-join: deps build
	cd sdk-rust && cargo build --quiet --release --example benchhost
	go run ./core/cmd/bench --repo $(CURDIR) --python $(PY) --rust $(CURDIR)/sdk-rust/target/release/examples/benchhost \
		-crossing=false -sweep=false -agg=false -win=false -join

# polystreams (Python, Go, Node, Rust) beside Kafka Streams (JVM), Quix
# Streams, Faust and a confluent-kafka loop, on kfake then on Apache Kafka, interleaved rounds,
# every output verified (tools/bench/peers, docs/design/bench-peers.md).
# Installs the peers into .cache/bench-peers/venv from PyPI and Kafka Streams
# through Maven. BENCH_PEERS_SMOKE=1: tiny sizes, one round (checks the
# harness, measures nothing); BENCH_PEERS_FLAGS: more flags (peers.py -h).
BENCH_PEERS_VENV := .cache/bench-peers/venv
bench-peers: deps build
	test -x $(BENCH_PEERS_VENV)/bin/python || python3 -m venv $(BENCH_PEERS_VENV)
	$(BENCH_PEERS_VENV)/bin/pip install -q -r tools/bench/peers/requirements.txt -e sdk-python
	cd sdk-rust && cargo build --quiet --release --example benchpeers
	$(BENCH_PEERS_VENV)/bin/python tools/bench/peers/peers.py \
		$(if $(BENCH_PEERS_SMOKE),--records 3000 --keys 100 --rounds 1 --latency-seconds 2 --timeout 180) $(BENCH_PEERS_FLAGS)

# Release artifacts of VERSION into dist/, for linux/amd64 and linux/arm64: a
# Python wheel per platform carrying the engine (and a pure sdist), the npm
# package with the engine in per-platform optional dependencies, the Rust
# crate, the bare engine; docs/deploy.md.
dist: deps
	tools/dist/build.sh $(CURDIR)/dist

# Does what the README's Install section says, each in a fresh environment:
# pip install of the wheel into a plain venv per supported Python (protobuf
# from PyPI), npm install of the tarballs into a fresh folder (plus a strict
# tsc of the types), cargo new + cargo add polystreams --path sdk-rust; runs
# the README's program in each against the embedded broker; npm and cargo
# publish --dry-run; checks that an SDK refuses an engine of another version.
test-dist: dist build
	tools/dist/test.sh $(CURDIR)/dist

clean:
	rm -rf bin .cache dist tools/interop/jvm/target
