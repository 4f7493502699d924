package server_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/polystreams/polystreams/core/internal/broker"
)

// A frozen broker: every process of it stopped with SIGSTOP, as a stalled
// machine or a long stop-the-world pause would leave it. Its sockets stay
// open and the kernel still accepts connections, but nothing answers; a
// restart, in contrast, refuses connections. Against kfake the broker runs
// in a process of its own (`polystreams dev`, whose engine stays idle) so
// that SIGSTOP freezes the broker and nothing else; against Apache Kafka
// it is the JVM (kafkatest.Broker.Freeze).

// freezableBroker is a broker a test can freeze and thaw.
type freezableBroker interface {
	testBroker
	Freeze()
	Thaw()
}

// startFreezableBroker starts the broker of a freeze test with topics (4
// partitions each); it is thawed and closed when the test ends.
func startFreezableBroker(t *testing.T, topics ...string) freezableBroker {
	t.Helper()
	var fb freezableBroker
	if b, err := startBroker(broker.Options{Addr: "127.0.0.1:0", Partitions: 4, Topics: topics}); err != nil {
		t.Fatal(err)
	} else if k, ok := b.(freezableBroker); ok {
		fb = k
	} else {
		b.Close() // an in-process kfake: freezing it would freeze the test
		fb = startDevBroker(t, topics)
	}
	t.Cleanup(func() {
		fb.Thaw()
		fb.Close()
	})
	return fb
}

// devBroker is kfake in a process of its own: `polystreams dev`.
type devBroker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // its closing (this process's end) stops the broker
	addr  string
	done  chan struct{}
}

func startDevBroker(t *testing.T, topics []string) *devBroker {
	t.Helper()
	cmd := exec.Command(engineBinary(t), "dev", "--broker", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--partitions", "4",
		"--topics", strings.Join(topics, ","), "--state-dir", t.TempDir(), "--exit-on-stdin-close", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &devBroker{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "polystreams: broker "); ok {
			d.addr = a
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
		cmd.Wait()
		close(d.done)
	}()
	if d.addr == "" {
		cmd.Process.Kill()
		t.Fatal("polystreams dev exited without printing its broker's address")
	}
	return d
}

func (d *devBroker) Addr() string { return d.addr }
func (d *devBroker) Freeze()      { d.cmd.Process.Signal(syscall.SIGSTOP) }
func (d *devBroker) Thaw()        { d.cmd.Process.Signal(syscall.SIGCONT) }

func (d *devBroker) Close() {
	d.stdin.Close()
	d.cmd.Process.Signal(syscall.SIGCONT)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// brokerAnswers reports whether the broker at addr answers a metadata
// request within d.
func brokerAnswers(addr string, d time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(d), kgo.RetryTimeout(d))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// TestChaosBrokerFreeze (make chaos, exactly_once_v2): while a word count
// runs, the broker is frozen with SIGSTOP for 15 s (longer than the
// session timeout, 6 s, and than the engine's 10 s transaction timeout), then
// resumed with SIGCONT; twice (POLYSTREAMS_CHAOS_FREEZES). Each freeze
// begins while records are being processed; the test asserts that the
// broker then answered nothing (a metadata request times out) and answers
// again after. On waking, the broker times out the group's members and
// aborts the open transaction, so the engine meets expired sessions and a
// fenced producer at once. The session never ends, and read_committed every
// word's count updates are exactly 1..n.
func TestChaosBrokerFreeze(t *testing.T) {
	if !chaosOn() {
		t.Skip("set POLYSTREAMS_CHAOS=1 (make chaos) to run the broker freeze")
	}
	if g := os.Getenv("POLYSTREAMS_CHAOS_GUARANTEE"); g != "" && g != "exactly_once_v2" {
		t.Skip("exact counts across a freeze are an exactly_once_v2 promise")
	}
	freezes, pause, perFreeze := 2, 15*time.Second, 10_000
	if n, err := strconv.Atoi(os.Getenv("POLYSTREAMS_CHAOS_FREEZES")); err == nil {
		freezes = n
	}
	began := time.Now()
	b := startFreezableBroker(t, "lines", "word-counts")
	e := &env{t: t, broker: b, stateDir: t.TempDir()}
	e.startEngine()
	t.Cleanup(e.stopEngine)
	r := startFaultRun(t, e, "freeze")
	for i := range freezes {
		before := r.processed()
		// A batch at once, and the freeze as soon as its processing
		// begins: the engine is mid-transaction, records in flight.
		r.feed(perFreeze)
		waitFor(t, "processing before the freeze", 60*time.Second, func() bool { return r.processed() > before })
		at := r.processed()
		b.Freeze()
		frozen := time.Now()
		// The fault fired: the broker answers nothing. (A signal is
		// delivered asynchronously: a request may be answered as it
		// lands, so the probe is given three chances to time out.)
		var probe error
		for try := 0; try < 3 && probe == nil; try++ {
			probe = brokerAnswers(b.Addr(), 3*time.Second)
		}
		if probe == nil {
			b.Thaw()
			t.Fatalf("freeze %d: the broker answered metadata three times while frozen", i+1)
		}
		time.Sleep(pause - time.Since(frozen))
		b.Thaw()
		away := time.Since(frozen)
		waitFor(t, "the broker to answer after the freeze", 60*time.Second, func() bool { return brokerAnswers(b.Addr(), 5*time.Second) == nil })
		select {
		case st := <-r.done:
			t.Fatalf("freeze %d: the session ended: %s", i+1, st)
		default:
		}
		t.Logf("freeze %d: the broker answered nothing for %v (a metadata request: %v); when it froze the host had processed %d records, %d lines fed in all", i+1, away.Round(100*time.Millisecond), probe, at, r.sent)
	}
	r.feedOver(perFreeze, 3*time.Second)
	r.check()
	t.Logf("chaos figures: broker freeze: %d lines (%d words, %d keys), %d freezes of %v, keys exact %d/%d, duplicates 0, %v",
		r.sent, r.sent*5, len(r.want), freezes, pause, len(r.want), len(r.want), time.Since(began).Round(time.Second))
}

// TestFaultProduceFenced: a transactional produce answered
// INVALID_PRODUCER_EPOCH or PRODUCER_FENCED on every partition, what a
// broker answers once it aborted the transaction itself (after a freeze
// longer than the transaction timeout, TestChaosBrokerFreeze) or another
// producer took the transactional id. As Kafka Streams
// (RecordCollectorImpl: a fenced send is a TaskMigratedException), the
// engine closes its tasks dirty, replaces its producer and processes the
// transaction's records again; the application does not fail, and every
// count is exact.
func TestFaultProduceFenced(t *testing.T) {
	needKfake(t)
	for _, code := range []*kerr.Error{kerr.InvalidProducerEpoch, kerr.ProducerFenced} {
		t.Run(code.Message, func(t *testing.T) {
			e := newEnv(t, "lines", "word-counts")
			r := startFaultRun(t, e, "produce-fenced")
			transactional := func(req kmsg.Request) bool { return req.(*kmsg.ProduceRequest).TransactionID != nil }
			f := answerEvery(kfakeCluster(t, e.broker), kmsg.Produce, 10, scale(2, 5), transactional, func(r kmsg.Request) (kmsg.Response, error) {
				req := r.(*kmsg.ProduceRequest)
				resp := req.ResponseKind().(*kmsg.ProduceResponse)
				for _, rt := range req.Topics {
					st := kmsg.NewProduceResponseTopic()
					st.Topic, st.TopicID = rt.Topic, rt.TopicID // v13 names topics by ID
					for _, rp := range rt.Partitions {
						sp := kmsg.NewProduceResponseTopicPartition()
						sp.Partition = rp.Partition
						sp.ErrorCode = code.Code
						st.Partitions = append(st.Partitions, sp)
					}
					resp.Topics = append(resp.Topics, st)
				}
				return resp, nil
			})
			r.feedOver(scale(1500, 10000), time.Duration(scale(2, 10))*time.Second)
			r.feedUntil(f, int64(scale(2, 5)), "Produce "+code.Message)
			f.assertFired(t, "Produce "+code.Message)
			r.check()
		})
	}
}
