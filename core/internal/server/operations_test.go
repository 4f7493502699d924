package server_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// outValues are the values topic holds, in no particular order.
func (e *env) outValues(topic string) []string {
	var out []string
	e.readTopic(topic, false, func(r *kgo.Record) { out = append(out, string(r.Value)) })
	slices.Sort(out)
	return out
}

// passThrough builds stream(in) -> to(out) with src's options.
func (h *testHost) passThrough(src *pb.StreamOp, out string) *pb.Handle {
	s := h.mustBuild(src)
	h.mustBuild(&pb.ToOp{Input: s.Id, Topic: out})
	return s
}

// auto.offset.reset: latest skips what the source topic held before the
// application's first start (no committed offset), a source's own
// offset_reset overrides it, and none fails naming each partition.
func TestAutoOffsetReset(t *testing.T) {
	e := newEnv(t, "early", "early-out", "late", "late-out", "none", "none-out")
	for _, topic := range []string{"early", "late"} {
		e.produce(topic, "before-1", "before-2")
	}
	h := e.open("reset", map[string]string{"auto.offset.reset": "latest", "commit.interval.ms": "100"})
	h.passThrough(&pb.StreamOp{Topics: []string{"late"}}, "late-out")
	h.passThrough(&pb.StreamOp{Topics: []string{"early"}, OffsetReset: "earliest"}, "early-out")
	h.start()
	waitFor(t, "running", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	// Where latest starts is fixed once the partitions' end offsets are
	// listed, which may come after Running: produce until one gets through.
	waitFor(t, "a record produced after the start to come out", 30*time.Second, func() bool {
		e.produce("late", "after")
		return slices.Contains(e.outValues("late-out"), "after")
	})
	for _, v := range e.outValues("late-out") {
		if v != "after" {
			t.Errorf("late-out holds %q: auto.offset.reset latest read what came before the start", v)
		}
	}
	waitFor(t, "early-out to hold both earlier records", 30*time.Second, func() bool {
		return slices.Equal(e.outValues("early-out"), []string{"before-1", "before-2"})
	})
	h.stop()

	n := e.open("reset-none", map[string]string{"auto.offset.reset": "none"})
	n.passThrough(&pb.StreamOp{Topics: []string{"none"}}, "none-out")
	n.start()
	waitFor(t, "the application to fail", 30*time.Second, func() bool { return n.getState().State == pb.State_STATE_ERROR })
	if msg := n.getState().Error; !strings.Contains(msg, "partition none/0, none/1, none/2, none/3 has no committed offset and its reset policy is none") {
		t.Errorf("error: %s", msg)
	}

	bad := e.open("reset-bad", nil)
	if _, err := bad.build(&pb.StreamOp{Topics: []string{"x"}, OffsetReset: "smallest"}); err == nil || !strings.Contains(err.Error(), `offset_reset "smallest": want earliest, latest or none`) {
		t.Errorf("offset_reset smallest: %v", err)
	}
	if _, err := bad.build(&pb.GlobalTableOp{Topic: "g", OffsetReset: "latest"}); err == nil || !strings.Contains(err.Error(), "a global table is always read from the earliest offset") {
		t.Errorf("global offset_reset latest: %v", err)
	}
}

// default.key.serde and default.value.serde are the serdes of a source
// that names none; a named one wins, and operators inherit them.
func TestDefaultSerdes(t *testing.T) {
	e := newEnv(t)
	h := e.open("serdes", map[string]string{"default.key.serde": "string", "default.value.serde": "long"})
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"a"}})
	if s.KeySerde != "string" || s.ValueSerde != "long" {
		t.Errorf("stream: %s/%s", s.KeySerde, s.ValueSerde)
	}
	tb := h.mustBuild(&pb.TableOp{Topic: "b", ValueSerde: "json"})
	if tb.KeySerde != "string" || tb.ValueSerde != "json" {
		t.Errorf("table: %s/%s", tb.KeySerde, tb.ValueSerde)
	}
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	if g.KeySerde != "string" || g.ValueSerde != "long" {
		t.Errorf("group_by_key: %s/%s", g.KeySerde, g.ValueSerde)
	}
	plain := e.open("serdes-none", nil).mustBuild(&pb.StreamOp{Topics: []string{"a"}})
	if plain.KeySerde != "bytes" || plain.ValueSerde != "bytes" {
		t.Errorf("without defaults: %s/%s", plain.KeySerde, plain.ValueSerde)
	}
	if _, err := e.cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "x", Config: map[string]string{"default.value.serde": "avro"}})); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "default.value.serde: want a serde's name") {
		t.Errorf("default.value.serde avro: %v", err)
	}
}

// productionErrors reads polystreams_production_errors_total of app.
func (e *env) productionErrors(app string) string {
	_, body := get(e.t, e.srv.MetricsHandler(), "/metrics")
	prefix := `polystreams_production_errors_total{application_id="` + app + `"} `
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}

// A record the broker refuses for good (larger than the output topic's
// max.message.bytes) fails the application naming topic and partition
// under default.production.exception.handler = fail (the default), and is
// logged, counted and skipped under continue.
func TestProductionExceptionHandler(t *testing.T) {
	for _, handler := range []string{"fail", "continue"} {
		t.Run(handler, func(t *testing.T) {
			e := newEnv(t, "in")
			adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			limit := "200"
			if _, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{"max.message.bytes": &limit}, "out"); err != nil {
				t.Fatal(err)
			}
			adm.Close()
			app := "produce-" + handler
			h := e.open(app, map[string]string{"default.production.exception.handler": handler, "commit.interval.ms": "100"})
			h.passThrough(&pb.StreamOp{Topics: []string{"in"}}, "out")
			h.start()
			e.produce("in", "small-1")
			waitFor(t, "small-1 out", 30*time.Second, func() bool { return slices.Contains(e.outValues("out"), "small-1") })
			big := make([]byte, 1000) // random: the producer's compression cannot shrink it
			rand.Read(big)
			e.produce("in", string(big))
			if handler == "fail" {
				waitFor(t, "the application to fail", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_ERROR })
				if msg := h.getState().Error; !strings.Contains(msg, "producing to out/0") || !strings.Contains(msg, "MESSAGE_TOO_LARGE") {
					t.Errorf("error: %s", msg)
				}
				return
			}
			waitFor(t, "the refusal to be counted", 30*time.Second, func() bool { return e.productionErrors(app) == "1" })
			e.produce("in", "small-2")
			waitFor(t, "small-2 out", 30*time.Second, func() bool { return slices.Contains(e.outValues("out"), "small-2") })
			if st := h.getState(); st.State != pb.State_STATE_RUNNING {
				t.Errorf("state %v: %s", st.State, st.Error)
			}
			if got := e.outValues("out"); !slices.Equal(got, []string{"small-1", "small-2"}) {
				t.Errorf("out: %q", got)
			}
		})
	}
}

// PauseProcessing stops processing while the application stays in the
// group; ResumeProcessing continues with what came meanwhile. Pausing
// before Start starts paused.
func TestPauseResume(t *testing.T) {
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		t.Run(guarantee, func(t *testing.T) { testPauseResume(t, guarantee) })
	}
}

func testPauseResume(t *testing.T, guarantee string) {
	e := newEnv(t, "in", "out")
	h := e.open("pause", map[string]string{"commit.interval.ms": "100", "processing.guarantee": guarantee})
	h.passThrough(&pb.StreamOp{Topics: []string{"in"}}, "out")
	pause := func(paused bool) {
		t.Helper()
		var err error
		if paused {
			_, err = h.cl.PauseProcessing(context.Background(), connect.NewRequest(&pb.PauseProcessingRequest{SessionId: h.session}))
		} else {
			_, err = h.cl.ResumeProcessing(context.Background(), connect.NewRequest(&pb.ResumeProcessingRequest{SessionId: h.session}))
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := h.getState().Paused; got != paused {
			t.Fatalf("paused %v, want %v", got, paused)
		}
	}
	pause(true) // before Start
	h.start()
	waitFor(t, "running", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	e.produce("in", "a")
	// Nothing may come out while paused: watch for a while.
	for range 20 {
		if got := e.outValues("out"); len(got) > 0 {
			t.Fatalf("out holds %q while paused", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pause(false)
	waitFor(t, "a out", 30*time.Second, func() bool { return slices.Equal(e.outValues("out"), []string{"a"}) })
	pause(true)
	e.produce("in", "b")
	for range 20 {
		if got := e.outValues("out"); len(got) > 1 {
			t.Fatalf("out holds %q while paused", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := h.getState(); st.State != pb.State_STATE_RUNNING {
		t.Fatalf("paused application is %v", st.State)
	}
	pause(false)
	waitFor(t, "b out", 30*time.Second, func() bool { return slices.Equal(e.outValues("out"), []string{"a", "b"}) })
	h.stop()
	if _, err := h.cl.PauseProcessing(context.Background(), connect.NewRequest(&pb.PauseProcessingRequest{SessionId: h.session})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("PauseProcessing after Stop: %v", err)
	}
}

// CleanUpState deletes <state.dir>/<application.id> before Start and after
// Stop, and is refused while the application runs.
func TestCleanUpState(t *testing.T) {
	e := newEnv(t, "in", "out")
	cleanUp := func(h *testHost) (string, error) {
		resp, err := h.cl.CleanUpState(context.Background(), connect.NewRequest(&pb.CleanUpStateRequest{SessionId: h.session}))
		if err != nil {
			return "", err
		}
		return resp.Msg.Deleted, nil
	}
	dir := filepath.Join(e.stateDir, "clean")
	h := e.open("clean", nil)
	if got, err := cleanUp(h); got != "" || err != nil {
		t.Errorf("before any state: %q, %v", got, err)
	}
	h.passThrough(&pb.StreamOp{Topics: []string{"in"}}, "out")
	h.start()
	if _, err := cleanUp(h); connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "the application is running (application.id clean)") {
		t.Errorf("while running: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("state directory: %v", err)
	}
	h.stop()
	if got, err := cleanUp(h); got != dir || err != nil {
		t.Errorf("after Stop: %q, %v", got, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory still there: %v", err)
	}
}

// num.stream.threads bounds how many tasks process a batch at once: with
// a host that answers nothing, each task processing waits on its bundle,
// so the bundles waiting are the tasks processing. Four partitions with
// records make four without the key, one with num.stream.threads = 1.
func TestNumStreamThreads(t *testing.T) {
	for _, threads := range []string{"", "1"} {
		t.Run("threads="+threads, func(t *testing.T) {
			e := newEnv(t, "in", "out")
			config := map[string]string{}
			if threads != "" {
				config["num.stream.threads"] = threads
			}
			h := e.open("threads", config)
			up := h.register("upper", valueFn(func(v []byte) ([]byte, error) { return v, nil }))
			s := h.mustBuild(&pb.StreamOp{Topics: []string{"in"}})
			m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: up})
			h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "out"})
			h.start()
			for p := range int32(4) {
				e.produceTo("in", p, "k", "v")
			}
			want := int32(4)
			if threads == "1" {
				want = 1
			}
			waitFor(t, "bundles waiting", 30*time.Second, func() bool { return h.getState().BundlesWaiting >= want })
			// No more than num.stream.threads may ever wait: watch a while.
			for range 20 {
				if got := h.getState().BundlesWaiting; got != want {
					t.Fatalf("%d bundles waiting, want %d", got, want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// auto.offset.reset also decides where a committed offset the log does not
// hold (out of range) resumes: none fails naming the partition, latest
// resumes at the end.
func TestAutoOffsetResetOutOfRange(t *testing.T) {
	for _, policy := range []string{"none", "latest"} {
		t.Run(policy, func(t *testing.T) {
			e := newEnv(t)
			e.createTopic("oor", 1)
			e.createTopic("oor-out", 1)
			e.produce("oor", "old")
			app := "oor-" + policy
			adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			var o kadm.Offsets
			o.AddOffset("oor", 0, 50, -1) // past the log's end (1)
			if _, err := adm.CommitOffsets(context.Background(), app, o); err != nil {
				t.Fatal(err)
			}
			h := e.open(app, map[string]string{"auto.offset.reset": policy, "commit.interval.ms": "100"})
			h.passThrough(&pb.StreamOp{Topics: []string{"oor"}}, "oor-out")
			h.start()
			if policy == "none" {
				waitFor(t, "the application to fail", 30*time.Second, func() bool { return h.getState().State == pb.State_STATE_ERROR })
				if msg := h.getState().Error; !strings.Contains(msg, "partition oor/0: its committed offset is out of range and auto.offset.reset is none") {
					t.Errorf("error: %s", msg)
				}
				return
			}
			waitFor(t, "a record produced after the start to come out", 30*time.Second, func() bool {
				e.produce("oor", "new")
				return slices.Contains(e.outValues("oor-out"), "new")
			})
			if slices.Contains(e.outValues("oor-out"), "old") {
				t.Errorf("latest re-read the log: %q", e.outValues("oor-out"))
			}
		})
	}
}
