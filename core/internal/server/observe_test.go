package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// get serves one GET request to h and returns the body.
func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// sample returns the value of the Prometheus series whose line starts with
// prefix (name and labels), or fails.
func sample(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in\n%s", series, exposition)
	return 0
}

// The word count's metrics: /metrics in Prometheus' format, GetMetrics and
// the status /ui polls agree with what it processed.
func TestMetricsOfAWordCount(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(2000, 0)
	// Spread over the 4 partitions (keyless records would go to one):
	// every task then has a position and an end to measure lag between.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		cl.Produce(context.Background(), &kgo.Record{Topic: "lines", Value: []byte(l)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	h := e.open("wc-metrics", map[string]string{"commit.interval.ms": "100"})
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	waitCounts(t, e, "word-counts", want)

	var m *pb.GetMetricsResponse
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := e.cl.GetMetrics(context.Background(), connect.NewRequest(&pb.GetMetricsRequest{SessionId: h.session}))
		if err != nil {
			t.Fatal(err)
		}
		m = resp.Msg
		// Running (a rebalance right after the first assignment shows as
		// rebalancing for a moment) and caught up.
		caught := m.State == pb.State_STATE_RUNNING && len(m.Tasks) == 8
		for _, task := range m.Tasks {
			for _, in := range task.Inputs {
				caught = caught && in.Lag == 0
			}
		}
		if caught || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m.State != pb.State_STATE_RUNNING || !m.MetricsEnabled || len(m.Tasks) != 8 {
		t.Fatalf("GetMetrics = %v", m)
	}
	nodes := map[string]*pb.NodeMetrics{}
	for _, n := range m.Nodes {
		nodes[n.Name] = n
	}
	if n := nodes["KSTREAM-SOURCE-0000000000"]; n.GetRecords() != 2000 {
		t.Errorf("source node: %v, want 2000 records", n)
	}
	if n := nodes["KSTREAM-FLATMAPVALUES-0000000001"]; n.GetRecords() != 2000 || n.GetBundles() == 0 || n.GetMeanCrossingSeconds() <= 0 {
		t.Errorf("host chain node: %v, want 2000 records in bundles", n)
	}
	if n := nodes["KSTREAM-KEY-SELECT-0000000002"]; n.GetFusedInto() != "KSTREAM-FLATMAPVALUES-0000000001" {
		t.Errorf("fused node: %v", n)
	}
	if n := nodes["KSTREAM-AGGREGATE-0000000004"]; n.GetRecords() != 10000 {
		t.Errorf("aggregate node: %v, want 10000 records (5 words a line)", n)
	}
	entries := int64(0)
	for _, task := range m.Tasks {
		for _, in := range task.Inputs {
			if in.Lag != 0 || in.End < 0 || in.Position != in.End {
				t.Errorf("task %s input %v: want caught up", task.Id, in)
			}
		}
		for _, s := range task.Stores {
			entries += s.Entries
		}
	}
	if entries != int64(len(want)) {
		t.Errorf("store entries %d, want %d words", entries, len(want))
	}

	code, text := get(t, e.srv.MetricsHandler(), "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, text)
	}
	app := `application_id="wc-metrics"`
	for series, want := range map[string]float64{
		`polystreams_node_records_total{` + app + `,node="KSTREAM-SOURCE-0000000000",subtopology="0"}`:    2000,
		`polystreams_node_records_total{` + app + `,node="KSTREAM-AGGREGATE-0000000004",subtopology="1"}`: 10000,
		`polystreams_application_state{` + app + `,state="running"}`:                                      1,
		`polystreams_application_state{` + app + `,state="error"}`:                                        0,
		`polystreams_tasks{` + app + `}`:                                                                  8,
		`polystreams_failed_records_total{` + app + `}`:                                                   0,
		`polystreams_dropped_records_total{` + app + `}`:                                                  0,
		`polystreams_consumer_lag_records{` + app + `,partition="0",topic="lines"}`:                       0,
		`polystreams_restore_restoring_partitions{` + app + `}`:                                           0,
		`polystreams_restore_partitions{` + app + `}`:                                                     4,
	} {
		if got := sample(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	crossing := `polystreams_crossing_duration_seconds_count{` + app + `,node="KSTREAM-FLATMAPVALUES-0000000001",tokens="1,2"}`
	bundled := `polystreams_bundle_size_records_sum{` + app + `,node="KSTREAM-FLATMAPVALUES-0000000001",tokens="1,2"}`
	if sample(t, text, crossing) == 0 || sample(t, text, bundled) != 2000 {
		t.Errorf("crossings: %s = %v, %s = %v", crossing, sample(t, text, crossing), bundled, sample(t, text, bundled))
	}
	if sample(t, text, `polystreams_commit_duration_seconds_count{`+app+`}`) == 0 {
		t.Errorf("no commit observed at commit.interval.ms=100")
	}
	stores := regexp.MustCompile(`(?m)^polystreams_store_entries\{`+app+`,partition="\d",store="KSTREAM-AGGREGATE-STATE-STORE-0000000003"\} (\d+)$`).FindAllStringSubmatch(text, -1)
	total := 0
	for _, s := range stores {
		n, _ := strconv.Atoi(s[1])
		total += n
	}
	if len(stores) != 4 || total != len(want) {
		t.Errorf("store entries series %v, want 4 partitions holding %d words", stores, len(want))
	}

	code, body := get(t, e.srv.StatusHandler(), "/ui/api/status")
	var st struct {
		Applications []struct {
			ApplicationID string `json:"application_id"`
			State         string `json:"state"`
			SVG           string `json:"svg"`
			Nodes         []struct {
				Name    string `json:"name"`
				Records int64  `json:"records"`
			} `json:"nodes"`
			Tasks []struct {
				ID  string `json:"id"`
				Lag int64  `json:"lag"`
			} `json:"tasks"`
		} `json:"applications"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 {
		t.Fatalf("status %d: %v\n%s", code, err, body)
	}
	if a := st.Applications; len(a) != 1 || a[0].ApplicationID != "wc-metrics" || a[0].State != "running" ||
		!strings.Contains(a[0].SVG, `data-node="KSTREAM-AGGREGATE-0000000004"`) || len(a[0].Tasks) != 8 || a[0].Nodes[0].Records != 2000 {
		t.Errorf("status: %+v", a)
	}

	code, dot := get(t, e.srv.DescribeHandler(), "/describe?format=dot")
	if code != 200 || !strings.HasPrefix(dot, "digraph topology {") {
		t.Errorf("/describe?format=dot: %d %s", code, dot)
	}
	if code, msg := get(t, e.srv.DescribeHandler(), "/describe?application.id=nope"); code != 404 || !strings.Contains(msg, `no application "nope" (the engine runs "wc-metrics")`) {
		t.Errorf("/describe of an unknown application: %d %s", code, msg)
	}
	// An unknown id is quoted cut short: the answer stays small however
	// long the query (it once quoted 100 KiB whole).
	if code, msg := get(t, e.srv.DescribeHandler(), "/describe?application.id="+strings.Repeat("x", 100_000)); code != 404 || len(msg) > 1024 || !strings.Contains(msg, "(100000 bytes)") {
		t.Errorf("/describe of a 100,000-byte unknown application.id: %d, %d bytes: %.200s", code, len(msg), msg)
	}
	if code, msg := get(t, e.srv.DescribeHandler(), "/describe?format=png"); code != 400 || !strings.Contains(msg, `"png" is not one of`) {
		t.Errorf("/describe?format=png: %d %s", code, msg)
	}
	h.stopServing(done)
}

// With polystreams.metrics.enabled=false nothing is counted; state, lag
// and stores are still reported.
func TestMetricsDisabled(t *testing.T) {
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(500, 0)
	e.produce("lines", ls...)
	h := e.open("wc-quiet", map[string]string{"polystreams.metrics.enabled": "false"})
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	waitCounts(t, e, "word-counts", want)
	resp, err := e.cl.GetMetrics(context.Background(), connect.NewRequest(&pb.GetMetricsRequest{SessionId: h.session}))
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.Msg; m.MetricsEnabled || m.State != pb.State_STATE_RUNNING || len(m.Tasks) != 8 || m.Nodes[0].Records != 0 {
		t.Errorf("GetMetrics with metrics off = %v", m)
	}
	_, text := get(t, e.srv.MetricsHandler(), "/metrics")
	if strings.Contains(text, "polystreams_node_records_total") || !strings.Contains(text, `polystreams_application_state{application_id="wc-quiet",state="running"} 1`) {
		t.Errorf("/metrics with metrics off:\n%s", text)
	}
	if _, err := e.cl.OpenSession(context.Background(), connect.NewRequest(&pb.OpenSessionRequest{ApplicationId: "x", Config: map[string]string{"polystreams.metrics.enabled": "maybe"}})); err == nil || !strings.Contains(err.Error(), `polystreams.metrics.enabled: want true or false`) {
		t.Errorf("bad polystreams.metrics.enabled: %v", err)
	}
	h.stopServing(done)
}
