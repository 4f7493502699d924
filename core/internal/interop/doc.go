// Package interop holds the tests that run a JVM Kafka Streams application
// (tools/interop/jvm) and a polystreams application on a real Apache Kafka
// broker (core/internal/kafkatest) and check that each reads the other's
// outputs: the same topology on the same input writes the same bytes, and
// each side decodes the other's count, windowed count, table changelog and
// key-changed stream with its own serdes. They run with
// POLYSTREAMS_TEST_BROKER=kafka (make test-interop, part of make test-kafka).
package interop
