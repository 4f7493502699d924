package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// iqInstance is one instance of an application: an engine (env), its
// host, and the application.server other engines reach it on: a listener
// of its own that the test can take down (a network partition) while the
// instance keeps running.
type iqInstance struct {
	e      *env
	h      *testHost
	done   <-chan string
	server string
	down   *atomic.Bool
}

func startIQInstance(t *testing.T, e *env, config map[string]string) *iqInstance {
	t.Helper()
	down := &atomic.Bool{}
	mux := http.NewServeMux()
	mux.Handle(e.srv.Handler())
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(peer.Close)
	in := &iqInstance{e: e, server: strings.TrimPrefix(peer.URL, "http://"), down: down}
	cfg := map[string]string{"application.server": in.server}
	for k, v := range config {
		cfg[k] = v
	}
	in.h = e.open("iq", cfg)
	in.h.buildCount("events", "event-counts")
	in.h.start()
	in.done = in.h.serveAsync()
	return in
}

const iqStore = "KSTREAM-AGGREGATE-STATE-STORE-0000000001"

func (in *iqInstance) query(key string, stale bool) (*pb.QueryResponse, error) {
	resp, err := in.h.cl.Query(context.Background(), connectReq(&pb.QueryRequest{SessionId: in.h.session, Store: iqStore,
		Query: &pb.QueryRequest_Get{Get: []byte(key)}, EnableStaleStores: stale}))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

func (in *iqInstance) metadata() []*pb.StreamsMetadata {
	resp, err := in.h.cl.StreamsMetadata(context.Background(), connectReq(&pb.StreamsMetadataRequest{SessionId: in.h.session, Store: iqStore}))
	if err != nil {
		return nil
	}
	return resp.Msg.Metadata
}

// countOf reads a get's answer: the count, or -1 for none.
func countOf(t *testing.T, r *pb.QueryResponse) int64 {
	t.Helper()
	if len(r.ValueLengths) == 0 {
		return -1
	}
	if len(r.ValueLengths) != 1 || r.ValueLengths[0] != 8 || len(r.Timestamps) != 1 {
		t.Fatalf("a get answered %d values (lengths %v, %d timestamps)", len(r.ValueLengths), r.ValueLengths, len(r.Timestamps))
	}
	return int64(binary.BigEndian.Uint64(r.Values))
}

// Three instances of one counting application, each with an
// application.server and a standby of every task: every key, queried
// through each instance, answers its count from the instance holding it
// (the engine forwards); metadata agrees; a scan through any instance
// covers every partition once. While a third instance joins, queries answer
// the right count or a retriable Unavailable naming store and partition,
// never a wrong count. With one instance cut off, its keys answer
// Unavailable, or, with stale stores enabled, from a standby.
func TestInteractiveQueriesAcrossThreeInstances(t *testing.T) {
	e := newEnv(t, "events", "event-counts")
	envs := []*env{e, e.another(), e.another()}
	config := map[string]string{"processing.guarantee": "exactly_once_v2", "session.timeout.ms": "6000", "num.standby.replicas": "1"}
	want := map[string]int64{}
	const keys = 200
	e.produceKeys("events", 0, 4000, keys, want)
	var ins []*iqInstance
	for _, en := range envs[:2] {
		ins = append(ins, startIQInstance(t, en, config))
	}
	waitExactlyOnce(t, e, "event-counts", want)
	keyNames := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	// checkAll queries every key through every instance; a retriable
	// answer is allowed only when rebalancing is.
	checkAll := func(rebalancing bool) (ok, retriable int, err error) {
		for _, in := range ins {
			for _, k := range keyNames {
				r, err := in.query(k, false)
				if err != nil {
					if rebalancing && connect.CodeOf(err) == connect.CodeUnavailable &&
						strings.Contains(err.Error(), iqStore) && strings.Contains(err.Error(), "partition") && strings.Contains(err.Error(), k) {
						retriable++
						continue
					}
					return ok, retriable, fmt.Errorf("get %s through %s: %w", k, in.server, err)
				}
				if got := countOf(t, r); got != want[k] {
					return ok, retriable, fmt.Errorf("get %s through %s answered %d, want %d (served by %v)", k, in.server, got, want[k], r.ServedBy)
				}
				ok++
			}
		}
		return ok, retriable, nil
	}
	// The third instance joins while queries run.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var during [2]int
	var rounds int
	var duringErr error
	first := slices.Clone(ins)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ok, retriable, err := checkAll(true)
			during[0] += ok
			during[1] += retriable
			rounds++
			if err != nil {
				duringErr = err
				return
			}
		}
	}()
	third := startIQInstance(t, envs[2], config)
	waitFor(t, "three instances, each with active partitions", 60*time.Second, func() bool {
		for _, in := range append(first, third) {
			md := in.metadata()
			if len(md) != 3 {
				return false
			}
			for _, m := range md {
				if len(m.TopicPartitions) == 0 {
					return false
				}
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	if duringErr != nil {
		t.Fatalf("during the rebalance: %v", duringErr)
	}
	ins = append(first, third)
	t.Logf("during the rebalance: %d rounds, %d right answers, %d retriable errors, no wrong answer", rounds, during[0], during[1])
	// Settled: every answer right, metadata and answers agree.
	waitFor(t, "every key queryable through every instance", 60*time.Second, func() bool {
		for _, in := range ins {
			for _, k := range keyNames {
				if _, err := in.query(k, false); err != nil {
					return false
				}
			}
		}
		return true
	})
	if _, _, err := checkAll(false); err != nil {
		t.Fatal(err)
	}
	forwarded := 0
	for _, in := range ins {
		for _, k := range keyNames {
			md, err := in.h.cl.QueryMetadataForKey(context.Background(), connectReq(&pb.QueryMetadataForKeyRequest{SessionId: in.h.session, Store: iqStore, Key: []byte(k)}))
			if err != nil {
				t.Fatal(err)
			}
			r, err := in.query(k, false)
			if err != nil {
				t.Fatal(err)
			}
			active := md.Msg.ActiveHost.Host + ":" + itoa(md.Msg.ActiveHost.Port)
			if len(r.ServedBy) != 1 || r.ServedBy[0] != active || r.Partition == nil || *r.Partition != md.Msg.Partition || r.FromStandby {
				t.Fatalf("get %s through %s: served by %v partition %v (standby %v); metadata says %s partition %d", k, in.server, r.ServedBy, r.Partition, r.FromStandby, active, md.Msg.Partition)
			}
			if len(md.Msg.StandbyHosts) != 1 || md.Msg.StandbyHosts[0].Port == md.Msg.ActiveHost.Port {
				t.Fatalf("key %s: standby hosts %v, want one other than the active %s", k, md.Msg.StandbyHosts, active)
			}
			if active != in.server {
				forwarded++
			}
		}
	}
	if forwarded == 0 || forwarded == len(ins)*keys {
		t.Fatalf("%d of %d queries were forwarded: the keys are not spread over the instances", forwarded, len(ins)*keys)
	}
	// A scan through each instance: every key once, every partition once.
	for _, in := range ins {
		resp, err := in.h.cl.Query(context.Background(), connectReq(&pb.QueryRequest{SessionId: in.h.session, Store: iqStore, Query: &pb.QueryRequest_All{All: true}}))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		ko, vo := 0, 0
		for i := range resp.Msg.KeyLengths {
			k := string(resp.Msg.Keys[ko : ko+int(resp.Msg.KeyLengths[i])])
			got[k] = int64(binary.BigEndian.Uint64(resp.Msg.Values[vo : vo+int(resp.Msg.ValueLengths[i])]))
			ko, vo = ko+int(resp.Msg.KeyLengths[i]), vo+int(resp.Msg.ValueLengths[i])
		}
		if len(got) != keys || !sort.SliceIsSorted(resp.Msg.Partitions, func(i, j int) bool { return resp.Msg.Partitions[i] < resp.Msg.Partitions[j] }) || len(resp.Msg.Partitions) != 4 {
			t.Fatalf("all through %s: %d keys, partitions %v, served by %v", in.server, len(got), resp.Msg.Partitions, resp.Msg.ServedBy)
		}
		for k, n := range got {
			if want[k] != n {
				t.Fatalf("all through %s: %s = %d, want %d", in.server, k, n, want[k])
			}
		}
	}
	// Latency: a get answered here, and one forwarded.
	local, remote := latencies(t, ins[0], keyNames)
	t.Logf("get latency through %s: answered locally median %v, forwarded median %v (%d and %d gets)", ins[0].server, median(local), median(remote), len(local), len(remote))

	// The third instance is cut off (it keeps running: the group does not
	// rebalance within the session timeout's 6 s).
	cut := ins[2]
	cut.down.Store(true)
	var cutKeys []string
	for _, k := range keyNames {
		md, err := ins[0].h.cl.QueryMetadataForKey(context.Background(), connectReq(&pb.QueryMetadataForKeyRequest{SessionId: ins[0].h.session, Store: iqStore, Key: []byte(k)}))
		if err != nil {
			t.Fatal(err)
		}
		if md.Msg.ActiveHost.Host+":"+itoa(md.Msg.ActiveHost.Port) == cut.server {
			cutKeys = append(cutKeys, k)
		}
	}
	if len(cutKeys) == 0 {
		t.Fatal("the cut-off instance holds no key")
	}
	for _, k := range cutKeys[:min(len(cutKeys), 10)] {
		via := ins[0]
		if _, err := via.query(k, false); err == nil || connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), iqStore) {
			t.Fatalf("get %s (active on the cut-off %s) without stale stores: %v, want Unavailable naming store and key", k, cut.server, err)
		}
		r, err := via.query(k, true)
		if err != nil {
			t.Fatalf("get %s with stale stores enabled: %v", k, err)
		}
		if got := countOf(t, r); got != want[k] || !r.FromStandby {
			t.Fatalf("get %s with stale stores: %d (from standby %v, served by %v), want %d from a standby", k, got, r.FromStandby, r.ServedBy, want[k])
		}
	}
	cut.down.Store(false)
	for _, in := range ins {
		in.h.stopServing(in.done)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// latencies times a get of each key through in, split by whether in
// answered it itself or forwarded it.
func latencies(t *testing.T, in *iqInstance, keys []string) (local, remote []time.Duration) {
	t.Helper()
	for range 3 {
		for _, k := range keys {
			start := time.Now()
			r, err := in.query(k, false)
			d := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if r.ServedBy[0] == in.server {
				local = append(local, d)
			} else {
				remote = append(remote, d)
			}
		}
	}
	return local, remote
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
