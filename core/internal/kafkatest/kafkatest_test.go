package kafkatest

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// Records stamped in 1970, as the tests write them (plain, in a committed
// transaction, in a window store changelog), outlive the moment Kafka's
// retention task would first have run (30 s after the broker started: it
// then deleted them, 56 years past a topic's 7-day retention or a window
// store changelog's day, under a test reading them) and, in a topic of the
// default retention, a restart.
func TestOldRecordsAreKept(t *testing.T) {
	needKafka(t)
	began := time.Now()
	b, err := Start(Options{Partitions: 1, Topics: []string{"plain", "committed"}})
	if err != nil {
		t.Fatal(err)
	}
	// The broker's log manager started between began and now: left to its
	// defaults (log.initial.task.delay.ms 30 s), its first retention pass
	// would come within 30 s of now.
	served := time.Now()
	defer b.Close()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	// As the engine makes a window store's changelog (KAFKA-13345).
	windowed := "app-KSTREAM-JOINTHIS-0000000004-store-changelog"
	day := "86400200"
	del := "delete"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &day, "cleanup.policy": &del}, windowed); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"plain", windowed} {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("old"), Timestamp: time.UnixMilli(1000)}).FirstErr()
		if err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	cl.Close()
	// A committed transaction's record: its segment, rolled at once (the
	// record's 1970 timestamp is past segment.ms), holds it alone, and was
	// deleted while the commit marker after it stayed.
	var txLog bytes.Buffer
	tx, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("old-records"),
		kgo.WithLogger(kgo.BasicLogger(&txLog, kgo.LogLevelInfo, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "committed", Value: []byte("old"), Timestamp: time.UnixMilli(1050)}).FirstErr(); err != nil {
		t.Fatalf("produce to committed: %v", err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	tx.Close()
	// The commit's marker follows the record (the coordinator writes it
	// after answering EndTxn): until then the record is not committed.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		lso, err := adm.ListCommittedOffsets(ctx, "committed")
		if o, ok := lso.Lookup("committed", 0); err == nil && ok && o.Err == nil && o.Offset == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed/0: the committed transaction's record not stable 30 s after EndTxn (last stable offset %v, %v)\nclient:\n%s\nbroker:\n%s", lso, err, txLog.String(), b.Log(40))
		}
	}
	kept := func(when string, topics ...string) {
		t.Helper()
		starts, err := adm.ListStartOffsets(ctx, topics...)
		if err != nil {
			t.Fatal(err)
		}
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			t.Fatal(err)
		}
		for _, topic := range topics {
			s, _ := starts.Lookup(topic, 0)
			e, _ := ends.Lookup(topic, 0)
			end := int64(1)
			if topic == "committed" {
				end = 2 // the record and its commit marker
			}
			if s.Err != nil || e.Err != nil || s.Offset != 0 || e.Offset != end {
				t.Errorf("%s: %s/0 holds offsets [%d, %d) (%v, %v), want [0, %d): its record at 0 kept\n%s", when, topic, s.Offset, e.Offset, s.Err, e.Err, end, b.Log(20))
			}
		}
	}
	if written := time.Since(began); written > 30*time.Second {
		t.Logf("the records were written %v after the broker's start began: a broker left to its defaults may have run its first retention pass before them (this machine is slow)", written.Round(time.Second))
	}
	past := served.Add(35 * time.Second)
	t.Logf("waiting until %s, past the first retention pass of a broker left to its defaults", past.Format(time.TimeOnly))
	time.Sleep(time.Until(past))
	kept("35 s after the broker answered", "plain", "committed", windowed)
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	kept("after a restart", "plain")
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
