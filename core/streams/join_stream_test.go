package streams_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// A stream-stream left join with a Go joiner: each view is joined with the
// clicks of its key within 100 ms; a view no click joins is emitted with
// none once stream time passes its window (here: when the view at 2000
// arrives), never before.
func ExampleStream_LeftJoinStream() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "views", "clicks", "joined"))
	must(err)
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	b := streams.NewBuilder()
	views, err := b.Stream([]string{"views"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	clicks, err := b.Stream([]string{"clicks"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	joined, err := views.LeftJoinStream(clicks, func(view, click []byte) ([]byte, error) {
		if click == nil {
			return fmt.Appendf(nil, "%s+none", view), nil
		}
		return fmt.Appendf(nil, "%s+%s", view, click), nil
	}, streams.JoinTimeDifference(100*time.Millisecond, 0))
	must(err)
	must(joined.To("joined"))

	dir, err := os.MkdirTemp("", "streams-ssjoin")
	must(err)
	defer os.RemoveAll(dir)
	app, err := streams.New(b, streams.Config{
		ApplicationID: "views",
		Brokers:       brokers,
		Properties:    map[string]string{"state.dir": dir, "commit.interval.ms": "100"},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(app.Start(ctx))
	defer app.Stop(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("joined"))
	must(err)
	defer cl.Close()
	read := func(n int) {
		for n > 0 {
			fs := cl.PollFetches(ctx)
			must(fs.Err0())
			fs.EachRecord(func(r *kgo.Record) {
				fmt.Printf("%s %s @%d\n", r.Key, r.Value, r.Timestamp.UnixMilli())
				n--
			})
		}
	}
	produce := func(topic, key, value string, ts int64) {
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: time.UnixMilli(ts)}).FirstErr())
	}
	produce("views", "a", "v1", 1000)
	produce("views", "b", "v2", 1000)
	produce("clicks", "a", "c1", 1050)
	read(1)
	produce("views", "c", "v3", 2000)
	read(1)
	// Output:
	// a v1+c1 @1050
	// b v2+none @1000
}
