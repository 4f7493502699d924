package streams_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/streams"
)

// Two instances of a counting application, each with an
// application.server and a standby of every task: the metadata names the
// instance holding each key, that instance's Get answers its count with
// its partition, the other's refuses with ErrRebalancing, and answers from
// its standby copy (FromStandby) when stale stores are enabled.
func TestInteractiveQueriesGoAPI(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	servers := []string{"10.0.0.1:7001", "10.0.0.2:7002"}
	var apps []*streams.App
	for _, server := range servers {
		b := streams.NewBuilder()
		s, err := b.Stream([]string{"in"}, streams.KeySerde("string"))
		must(err)
		g, err := s.GroupByKey()
		must(err)
		_, err = g.Count(streams.Store("counts"))
		must(err)
		app, err := streams.New(b, streams.Config{ApplicationID: "iq-go", Brokers: brokers,
			Properties: map[string]string{"state.dir": t.TempDir(), "commit.interval.ms": "100", "statestore.cache.max.bytes": "0",
				"application.server": server, "num.standby.replicas": "1"},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(err)
		must(app.Start(ctx))
		defer app.Stop(context.Background())
		apps = append(apps, app)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	must(err)
	defer cl.Close()
	want := map[string]int64{}
	for i := range 400 {
		k := "key-" + strconv.Itoa(i%40)
		want[k]++
		must(cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte(k), Value: []byte("x")}).FirstErr())
	}
	byServer := map[string]*streams.App{servers[0]: apps[0], servers[1]: apps[1]}
	check := func() error {
		for k, n := range want {
			md, err := apps[0].QueryMetadataForKey("counts", []byte(k))
			if err != nil {
				return err
			}
			owner := byServer[md.ActiveHost.String()]
			if owner == nil || len(md.StandbyHosts) != 1 {
				return errors.New("metadata of " + k + ": " + md.ActiveHost.String())
			}
			r, err := owner.Get("counts", []byte(k), streams.StoreQueryParameters{})
			if err != nil {
				return err
			}
			if r.Value == nil || int64(binary.BigEndian.Uint64(r.Value)) != n || r.Partition != md.Partition || r.FromStandby {
				return errors.New("active answer for " + k + " not yet right")
			}
			other := byServer[md.StandbyHosts[0].String()]
			if _, err := other.Get("counts", []byte(k), streams.StoreQueryParameters{}); !errors.Is(err, streams.ErrRebalancing) {
				t.Fatalf("Get %s on the instance without its active partition: %v, want ErrRebalancing", k, err)
			}
			r, err = other.Get("counts", []byte(k), streams.StoreQueryParameters{EnableStaleStores: true})
			if err != nil {
				return err
			}
			if r.Value == nil || int64(binary.BigEndian.Uint64(r.Value)) != n || !r.FromStandby {
				return errors.New("standby answer for " + k + " not yet caught up")
			}
		}
		return nil
	}
	deadline := time.Now().Add(90 * time.Second)
	for err := check(); err != nil; err = check() {
		if time.Now().After(deadline) {
			t.Fatalf("never answered every key right: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	all, err := apps[1].MetadataForAllStreamsClients()
	must(err)
	if len(all) != 2 || all[0].HostInfo.String() != servers[0] || len(all[0].TopicPartitions)+len(all[1].TopicPartitions) != 4 {
		t.Fatalf("metadata for all clients: %+v", all)
	}
}
