package kafkatest

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func needKafka(t *testing.T) {
	if !Enabled() {
		t.Skip("starts a real Apache Kafka broker: set POLYSTREAMS_TEST_BROKER=kafka (make test-kafka)")
	}
}

func produceConsume(t *testing.T, addr, topic string, values ...string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	var got []string
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if strings.HasSuffix(strings.Join(got, ","), strings.Join(values, ",")) {
			break
		}
	}
	return got
}

// A broker answers, keeps its records across a restart on the same ports
// (clean and after SIGKILL), and Reset leaves it empty but for the topics
// asked for.
func TestBrokerRestartAndReset(t *testing.T) {
	needKafka(t)
	// One partition: the records read back come in the order written.
	b, err := Start(Options{Partitions: 1, Topics: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Logf("started in %v at %s", b.StartupTime(), b.Addr())
	if got := produceConsume(t, b.Addr(), "a", "x"); strings.Join(got, ",") != "x" {
		t.Fatalf("read %q, want x", got)
	}
	addr := b.Addr()
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	b.Kill()
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if b.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", b.Addr(), addr)
	}
	if got := produceConsume(t, b.Addr(), "a", "y"); strings.Join(got, ",") != "x,y" {
		t.Fatalf("after restarts read %q, want x,y", got)
	}
	if err := b.Reset(3, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if got := produceConsume(t, b.Addr(), "a", "z"); strings.Join(got, ",") != "z" {
		t.Fatalf("after Reset read %q, want z alone", got)
	}
}

// A port in use is named, at once, without starting a JVM.
func TestPortInUseIsNamed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := os.Stat(script()); err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = Start(Options{Port: port})
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), ln.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]) {
		t.Fatalf("start on a port in use: %v, want an error naming port %d in use", err, port)
	}
}

func TestMain(m *testing.M) { os.Exit(Main(m)) }
