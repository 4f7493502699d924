package streams_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// Go functions and built-ins fail their records under the policies too: a
// MapValues that returns an error is a processing failure, a value the
// built-in sum cannot decode as a long a deserialization failure. Both are
// skipped, the sum goes on from the aggregate before them, and as in Kafka
// Streams (KIP-1034) log_and_continue writes to the dead letter topic
// when there is one.
func TestGoFunctionsAndBuiltinsFollowTheErrorPolicies(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "sums"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.KeySerde(streams.String))
	must(err)
	checked, err := in.MapValues(func(v []byte) ([]byte, error) {
		if string(v) == "raise" {
			return nil, errors.New("cannot take raise")
		}
		return v, nil // "bad" goes on, 3 bytes that claim to be a long
	}, streams.ValueSerde(streams.Long))
	must(err)
	g, err := checked.GroupByKey()
	must(err)
	sums, err := g.ReduceBuiltin(streams.Sum)
	must(err)
	changes, err := sums.ToStream()
	must(err)
	must(changes.To("sums"))

	app, err := streams.New(b, streams.Config{
		ApplicationID: "errors",
		Brokers:       brokers,
		Properties: map[string]string{
			"state.dir":                                 t.TempDir(),
			"statestore.cache.max.bytes":                "0",
			"processing.exception.handler":              "LogAndContinueProcessingExceptionHandler",
			"default.deserialization.exception.handler": "dead_letter(bad-longs)",
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("sums", "bad-longs"))
	must(err)
	defer cl.Close()
	long := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	values := [][]byte{long(1), []byte("raise"), long(2), []byte("bad"), long(3)}
	for _, v := range values {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte("k"), Value: v}).FirstErr())
	}
	var last int64
	var dead []*kgo.Record
	for last != 6 || len(dead) < 2 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("sum %d, dead letters %d: %v", last, len(dead), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic == "sums" {
				last = int64(binary.BigEndian.Uint64(r.Value))
			} else {
				dead = append(dead, r)
			}
		})
	}
	if len(dead) != 2 || string(dead[0].Value) != "raise" || string(dead[1].Value) != "bad" {
		t.Fatalf("%d dead letters, want the records raise and bad", len(dead))
	}
	for i, want := range []map[string]string{
		{"node": "KSTREAM-MAPVALUES-0000000001", "kind": "processing", "offset": "1", "message": "cannot take raise"},
		{"node": "KSTREAM-REDUCE-0000000003", "kind": "deserialization", "offset": "3", "message": "value: long needs 8 bytes, got 3"},
	} {
		h := map[string]string{}
		for _, x := range dead[i].Headers {
			h[x.Key] = string(x.Value)
		}
		for k, v := range want {
			if h["__streams.errors."+k] != v {
				t.Errorf("dead letter %d: header %s = %q, want %q", i, k, h["__streams.errors."+k], v)
			}
		}
	}
	if st, err := app.State(); err != nil {
		t.Errorf("state %v: %v", st, err)
	}
}
