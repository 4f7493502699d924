#!/usr/bin/env bash
# A real Apache Kafka broker for development and tests: one KRaft node
# (broker and controller) on free loopback ports, its jars resolved by Maven
# from Maven Central into .cache/kafka/<version>/libs (once: a second start
# downloads nothing). docs/design/kafka-harness.md says why it is built so.
#
#   kafka.sh fetch            resolve the jars (no-op when cached); prints the libs folder
#   kafka.sh serve [options]  format the storage, start the broker, wait until it answers
#                             metadata, print its bootstrap address, run until Ctrl-C / SIGTERM
#   kafka.sh stop DIR         stop the broker serving from DIR (SIGTERM, then SIGKILL after 30 s)
#
# serve options:
#   --data DIR            data folder (kept; formatted on first use). Default: a new folder
#                         under .cache/kafka/run, removed when the broker stops
#   --port N              PLAINTEXT client port (default: a free one)
#   --controller-port N   KRaft controller port (default: a free one)
#   --listener NAME:PORT  one more client listener; NAME is SSL, SASL_PLAINTEXT or SASL_SSL
#   --props FILE          lines appended to server.properties (TLS files, JAAS, overrides)
#   --scram SPEC          a SCRAM credential stored at format, e.g.
#                         'SCRAM-SHA-256=[name=alice,password=secret]' (repeatable)
#   --ready log|metadata  what "started" means: the broker's log line, or (default) also an
#                         answer to a metadata request from a Java admin client
#   --watch-stdin         stop the broker when standard input closes: a test harness gives it
#                         a pipe, so the broker ends with the process that started it, however
#                         that ends (core/internal/kafkatest)
#
# Environment: KAFKA_VERSION (default tools/kafka/VERSION), KAFKA_START_TIMEOUT (s, default 90), KAFKA_HEAP_OPTS (default -Xms256m -Xmx1g),
# JAVA_HOME (else java on PATH), MVN (default mvn).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="${KAFKA_VERSION:-$(tr -d "[:space:]" < "$here/VERSION")}"
cache="${KAFKA_CACHE:-$root/.cache/kafka}"
libs="$cache/$version/libs"
timeout="${KAFKA_START_TIMEOUT:-90}"

die() { echo "kafka: $*" >&2; exit 1; }

java_bin() {
	local j
	if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then j="$JAVA_HOME/bin/java"; else j="$(command -v java || true)"; fi
	[[ -n "$j" ]] || die "no java found (neither \$JAVA_HOME/bin/java nor java on PATH): Apache Kafka $version needs Java 17 or later (Debian: apt-get install openjdk-17-jre-headless)"
	local v major
	v="$("$j" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -1)"
	major="${v%%.*}"
	[[ "$major" == 1 ]] && major="$(echo "$v" | cut -d. -f2)"
	[[ "$major" =~ ^[0-9]+$ ]] || die "cannot tell the version of $j (it printed: $("$j" -version 2>&1 | head -1))"
	((major >= 17)) || die "$j is Java $v: Apache Kafka $version needs Java 17 or later (set JAVA_HOME)"
	echo "$j"
}

fetch() {
	if [[ -f "$libs/.complete" ]]; then
		echo "$libs"
		return
	fi
	# One resolver at a time: test packages start brokers in parallel.
	mkdir -p "$cache/$version"
	exec 9> "$cache/$version/.lock"
	flock 9
	if [[ -f "$libs/.complete" ]]; then
		exec 9>&-
		echo "$libs"
		return
	fi
	local mvn="${MVN:-mvn}"
	command -v "$mvn" >/dev/null || die "no Maven ($mvn) on PATH: it resolves org.apache.kafka:kafka_2.13:$version (Debian: apt-get install maven)"
	rm -rf "$libs"
	mkdir -p "$libs"
	local out
	echo "kafka: resolving org.apache.kafka:kafka_2.13:$version and its runtime dependencies into $libs" >&2
	if ! out="$("$mvn" -q -B -f "$here/pom.xml" -Dkafka.version="$version" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$libs" 2>&1)"; then
		echo "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -E 'Could not|Failed to|Unknown host|Connection' | head -5 >&2 || echo "$out" | tail -20 >&2
		rm -rf "$libs"
		exec 9>&-
		die "Maven could not resolve org.apache.kafka:kafka_2.13:$version (output above)"
	fi
	[[ -f "$libs/kafka_2.13-$version.jar" ]] || die "Maven finished but $libs has no kafka_2.13-$version.jar"
	ls "$libs" > "$libs/.complete"
	exec 9>&-
	echo "$libs"
}

free_port() {
	# Below the kernel's ephemeral range, where no outgoing connection takes
	# the port between this check and the broker's bind.
	local p low
	low="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
	((low > 12000)) || low=32768
	for _ in $(seq 1 50); do
		p=$((10000 + RANDOM % (low - 10000)))
		# A refused connection means nothing listens there.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "found no free port on 127.0.0.1 in 50 tries"
}

port_free_or_die() {
	if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
		die "port $1 on 127.0.0.1 is in use (by another broker?); $2"
	fi
}

serve() {
	local data="" port="" cport="" props="" ready=metadata watch=0
	local -a listeners=() scram=()
	while (($#)); do
		case "$1" in
		--data) data="$2"; shift 2 ;;
		--port) port="$2"; shift 2 ;;
		--controller-port) cport="$2"; shift 2 ;;
		--listener) listeners+=("$2"); shift 2 ;;
		--props) props="$2"; shift 2 ;;
		--scram) scram+=("$2"); shift 2 ;;
		--ready) ready="$2"; shift 2 ;;
		--watch-stdin) watch=1; shift ;;
		*) die "serve: unknown option $1 (see the head of $0)" ;;
		esac
	done
	[[ -z "$port" ]] || port_free_or_die "$port" "choose another with --port"
	[[ -z "$cport" ]] || port_free_or_die "$cport" "choose another with --controller-port"
	# Whoever reads our output may be gone (a test binary that died): a
	# write must then fail, not kill this script before it stops the broker.
	trap '' PIPE
	local java
	java="$(java_bin)"
	fetch > /dev/null
	local temp=""
	if [[ -z "$data" ]]; then
		mkdir -p "$cache/run"
		data="$(mktemp -d "$cache/run/broker.XXXXXX")"
		temp="$data"
	fi
	mkdir -p "$data"
	data="$(cd "$data" && pwd)"
	[[ -n "$port" ]] || port="$(free_port)"
	[[ -n "$cport" ]] || cport="$(free_port)"
	port_free_or_die "$port" "choose another with --port"
	port_free_or_die "$cport" "choose another with --controller-port"
	local ls="PLAINTEXT://127.0.0.1:$port" adv="PLAINTEXT://127.0.0.1:$port" l name lport
	for l in ${listeners[@]+"${listeners[@]}"}; do
		name="${l%%:*}" lport="${l#*:}"
		case "$name" in SSL | SASL_PLAINTEXT | SASL_SSL) ;; *) die "--listener $l: the name must be SSL, SASL_PLAINTEXT or SASL_SSL" ;; esac
		port_free_or_die "$lport" "listener $name"
		ls+=",$name://127.0.0.1:$lport" adv+=",$name://127.0.0.1:$lport"
	done
	cat > "$data/server.properties" <<-EOF
		# Written by tools/kafka/kafka.sh: a single-node KRaft broker for tests.
		process.roles=broker,controller
		node.id=1
		controller.quorum.voters=1@127.0.0.1:$cport
		listeners=$ls,CONTROLLER://127.0.0.1:$cport
		advertised.listeners=$adv
		controller.listener.names=CONTROLLER
		inter.broker.listener.name=PLAINTEXT
		listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
		log.dirs=$data/logs
		offsets.topic.replication.factor=1
		offsets.topic.num.partitions=4
		transaction.state.log.replication.factor=1
		transaction.state.log.min.isr=1
		transaction.state.log.num.partitions=4
		share.coordinator.state.topic.replication.factor=1
		share.coordinator.state.topic.min.isr=1
		min.insync.replicas=1
		group.initial.rebalance.delay.ms=0
	EOF
	if [[ -n "$props" ]]; then
		[[ -f "$props" ]] || die "--props $props: no such file"
		cat "$props" >> "$data/server.properties"
	fi
	cat > "$data/log4j2.properties" <<-EOF
		status = warn
		appender.file.type = File
		appender.file.name = file
		appender.file.fileName = $data/server.log
		appender.file.layout.type = PatternLayout
		appender.file.layout.pattern = [%d] %p %m (%c)%n
		rootLogger.level = INFO
		rootLogger.appenderRef.file.ref = file
		logger.kafka-request.name = kafka.request.logger
		logger.kafka-request.level = WARN
	EOF
	local cp="$libs/*"
	local -a jvm=(${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
		"-Dlog4j2.configurationFile=$data/log4j2.properties")
	if [[ ! -f "$data/logs/meta.properties" ]]; then
		local id
		# A cluster id is 16 random bytes in URL-safe base64. One that starts
		# with '-' would be read as an option (StorageTool then says the
		# cluster id is missing: 1 format in 64 failed so), as Kafka's own
		# Uuid.randomUuid avoids too.
		id=-
		while [[ "$id" == -* ]]; do
			id="$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
		done
		local -a fmt=(format -t "$id" -c "$data/server.properties")
		for l in ${scram[@]+"${scram[@]}"}; do fmt+=(--add-scram "$l"); done
		if ! out="$("$java" "${jvm[@]}" -cp "$cp" kafka.tools.StorageTool "${fmt[@]}" 2>&1)"; then
			echo "$out" | tail -20 >&2
			die "formatting the storage in $data/logs failed (output above)"
		fi
	fi
	: > "$data/server.log"
	"$java" "${jvm[@]}" -cp "$cp" kafka.Kafka "$data/server.properties" > "$data/stdout.log" 2>&1 &
	local pid=$!
	echo "$pid" > "$data/broker.pid"
	local watcher=""
	if ((watch)); then
		# Background commands read /dev/null unless told otherwise: hand
		# the watcher our standard input through fd 3.
		exec 3<&0
		(
			cat <&3 > /dev/null 2>&1
			echo "kafka: standard input closed (the process that started the broker ended): stopping it"
			kill -TERM "$pid" 2>/dev/null
			for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null
			kill -TERM $$ 2>/dev/null
		) >> "$data/watch.log" 2>&1 &
		watcher=$!
		exec 3<&-
	fi
	stopping=0
	stop_broker() {
		stopping=1
		# The watcher is ours to end (it would otherwise signal these pids later).
		[[ -z "$watcher" ]] || kill "$watcher" 2>/dev/null || true
		if kill -0 "$pid" 2>/dev/null; then
			echo "kafka: stopping the broker (pid $pid)" >&2
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			if kill -0 "$pid" 2>/dev/null; then
				echo "kafka: the broker did not stop within 30 s of SIGTERM: SIGKILL" >&2
				kill -KILL "$pid" 2>/dev/null || true
			fi
		fi
		wait "$pid" 2>/dev/null || true
		rm -f "$data/broker.pid"
		[[ -z "$temp" ]] || rm -rf "$temp"
	}
	trap 'stop_broker; exit 130' INT
	trap 'stop_broker; exit 143' TERM
	died() {
		echo "kafka: the broker (pid $pid) exited with status $1 while $2; the tail of $data/server.log:" >&2
		tail -n 25 "$data/server.log" "$data/stdout.log" >&2 || true
		local cause
		cause="$(grep -hoiE '(failed to bind to|bind to) [0-9.]+:[0-9]+[^.]*|Address already in use|Failed to bind[^(]*|No meta.properties[^.]*|Invalid value [^ ]* for configuration [^:]*|Missing required configuration "[^"]*"|ClassNotFoundException: [^ ]*|UnsupportedClassVersionError[^,]*' "$data/server.log" "$data/stdout.log" | head -1 || true)"
		[[ -z "$cause" ]] || echo "kafka: cause: $cause" >&2
		[[ -z "$temp" ]] || rm -rf "$temp"
		exit 1
	}
	local start=$SECONDS
	echo "kafka: starting Apache Kafka $version (pid $pid, data $data); waiting up to ${timeout} s for the log line 'Kafka Server started'" >&2
	until grep -q 'Kafka Server started' "$data/server.log" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			local rc=0
			wait "$pid" || rc=$?
			died "$rc" "starting"
		fi
		if ((SECONDS - start >= timeout)); then
			echo "kafka: the broker did not log 'Kafka Server started' within ${timeout} s (KAFKA_START_TIMEOUT); the tail of $data/server.log:" >&2
			tail -n 25 "$data/server.log" >&2 || true
			stop_broker
			exit 1
		fi
		sleep 0.1
	done
	if [[ "$ready" == metadata ]]; then
		local left=$((timeout - (SECONDS - start)))
		((left > 5)) || left=5
		if ! "$java" -cp "$cp" "$here/Ready.java" "127.0.0.1:$port" "$left" >&2; then
			stop_broker
			exit 1
		fi
	fi
	echo "kafka: ready in $((SECONDS - start)) s; bootstrap 127.0.0.1:$port (controller 127.0.0.1:$cport); data $data; Ctrl-C stops it" >&2
	echo "127.0.0.1:$port"
	local rc=0
	wait "$pid" || rc=$?
	((stopping)) && exit 0
	died "$rc" "serving"
}

stop() {
	local data="${1:?usage: kafka.sh stop DIR}"
	[[ -f "$data/broker.pid" ]] || die "no broker.pid in $data: no broker serves from there"
	local pid
	pid="$(cat "$data/broker.pid")"
	kill -TERM "$pid" 2>/dev/null || die "broker pid $pid (from $data/broker.pid) is not running"
	for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
	echo "kafka: pid $pid did not stop within 30 s of SIGTERM: SIGKILL" >&2
	kill -KILL "$pid" 2>/dev/null || true
}

case "${1:-}" in
fetch) fetch ;;
serve) shift; serve "$@" ;;
stop) shift; stop "$@" ;;
*) echo "usage: $0 fetch | serve [options] | stop DIR (see the head of this file)" >&2; exit 2 ;;
esac
