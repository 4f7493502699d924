package server_test

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/polystreams/polystreams/core/internal/broker"
	"github.com/polystreams/polystreams/core/internal/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// testBroker is the broker a test runs against: the embedded kfake broker,
// or with POLYSTREAMS_TEST_BROKER=kafka a real Apache Kafka broker
// (core/internal/kafkatest).
type testBroker interface {
	Addr() string
	Close()
}

// startBroker starts the broker a test needs. Against real Kafka, a test
// that asks for no particular address or data folder gets the package's
// shared broker emptied of every earlier test's topics and groups (its
// Close does nothing); one that does (a broker restarted on its address)
// gets a broker of its own.
func startBroker(o broker.Options) (testBroker, error) {
	if !kafkatest.Enabled() {
		b, err := broker.Start(o)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	parts := o.Partitions
	if parts <= 0 {
		parts = 4
	}
	port := 0
	if o.Addr != "" {
		_, p, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, err
		}
		if port, err = strconv.Atoi(p); err != nil {
			return nil, err
		}
	}
	if port == 0 && o.DataDir == "" {
		b, err := kafkatest.Shared()
		if err != nil {
			return nil, err
		}
		if err := b.Reset(parts, o.Topics...); err != nil {
			return nil, err
		}
		return sharedKafka{b}, nil
	}
	b, err := kafkatest.Start(kafkatest.Options{Port: port, Partitions: parts, Topics: o.Topics, DataDir: o.DataDir})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// sharedKafka is the package's real broker lent to one test: Close leaves
// it running for the next (kafkatest.Main stops it).
type sharedKafka struct{ *kafkatest.Broker }

func (sharedKafka) Close() {}

// needKfake skips a test that injects broker faults through kfake's
// request interception when the tests run against real Kafka.
func needKfake(t testing.TB) {
	t.Helper()
	if kafkatest.Enabled() {
		t.Skip(kfakeOnly)
	}
}

const kfakeOnly = "needs kfake's request interception to inject broker faults; a real Apache Kafka broker cannot be made to answer so"

// kfakeCluster is the kfake cluster behind b, for tests that inject faults
// through its request interception; against real Kafka such a test is
// skipped, since a real broker cannot be made to answer that way.
func kfakeCluster(t testing.TB, b testBroker) *kfake.Cluster {
	t.Helper()
	e, ok := b.(*broker.Embedded)
	if !ok {
		t.Skip(kfakeOnly)
	}
	return e.Cluster()
}
