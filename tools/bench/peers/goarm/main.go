// Command goarm is the make bench-peers arm with Go functions: each topology
// built with polystreams' Go API (core/streams), the functions running inside
// the engine (no host crossing), the engine embedded in this process. It
// takes the flags every arm takes (tools/bench/peers/arms/common.py) and runs
// until SIGTERM.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

func main() {
	brokers := flag.String("brokers", "", "bootstrap.servers")
	app := flag.String("app", "", "application.id")
	input := flag.String("input", "", "input topic")
	output := flag.String("output", "", "output topic")
	topo := flag.String("topology", "", "map_values, word_count, count, sum_eos, sum_alos, tumbling_count, hopping_count, hopping_sum join or join_global")
	commitMs := flag.Int("commit-ms", 100, "commit.interval.ms")
	stateDir := flag.String("state-dir", "", "state.dir")
	table := flag.String("table", "", "the topic read as a table (join)")
	flag.String("engine", "", "unused (the engine is embedded)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the engine and the functions, not the broker) to this file, from start to SIGTERM")
	memProfile := flag.String("memprofile", "", "write a heap profile of this process to this file each time the live heap passes its peak by 10% (the profile at the largest live heap seen)")
	flag.Parse()
	if *memProfile != "" {
		go profilePeakHeap(*memProfile)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goarm: -cpuprofile:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(*brokers, *app, *input, *table, *output, *topo, *commitMs, *stateDir); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "goarm:", err)
		os.Exit(1)
	}
}

// profilePeakHeap writes a heap profile to path whenever the live heap (as
// of the last collection) is 10% above the largest seen so far: what the
// memory was holding at its peak, not at exit.
func profilePeakHeap(path string) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	for range time.Tick(50 * time.Millisecond) {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live < peak+peak/10 {
			continue
		}
		peak = live
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goarm: -memprofile:", err)
			return
		}
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}

func build(b *streams.Builder, input, table, output, topo string) error {
	switch topo {
	case "tumbling_count", "hopping_count", "hopping_sum":
		return windowed(b, input, output, topo)
	case "join", "join_global":
		return join(b, input, table, output, topo == "join_global")
	case "map_values":
		s, err := b.Stream([]string{input}, streams.ValueSerde(streams.String))
		if err != nil {
			return err
		}
		up, err := s.MapValues(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), nil })
		if err != nil {
			return err
		}
		return up.To(output)
	case "word_count":
		s, err := b.Stream([]string{input}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
		if err != nil {
			return err
		}
		words, err := s.FlatMapValues(func(line []byte) ([][]byte, error) { return bytes.Fields(line), nil })
		if err != nil {
			return err
		}
		g, err := words.GroupBy(func(_, word []byte) ([]byte, error) { return word, nil })
		if err != nil {
			return err
		}
		return countTo(g, output)
	case "count", "sum_eos", "sum_alos":
		s, err := b.Stream([]string{input}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
		if err != nil {
			return err
		}
		g, err := s.GroupByKey()
		if err != nil {
			return err
		}
		if topo == "count" {
			return countTo(g, output)
		}
		t, err := g.Aggregate(zero, addAmount, streams.StoreSerdes(streams.String, streams.Long))
		if err != nil {
			return err
		}
		return toStream(t, output)
	}
	return fmt.Errorf("unknown --topology %q", topo)
}

func zero() ([]byte, error) { return make([]byte, 8), nil }

// addAmount adds a JSON value's "amount" to an 8-byte big-endian sum.
func addAmount(_, value, agg []byte) ([]byte, error) {
	var v struct{ Amount int64 }
	if err := json.Unmarshal(value, &v); err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(agg)+uint64(v.Amount)), nil
}

// windowed counts (or sums) each key's records per window: tumbling 60 s,
// or hopping 60 s every 15 s. The records arrive in timestamp order on each
// partition, so no grace. The output keys are windowed(string, 60000), as
// Kafka Streams' TimeWindowedSerializer writes them.
func windowed(b *streams.Builder, input, output, topo string) error {
	s, err := b.Stream([]string{input}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	if err != nil {
		return err
	}
	g, err := s.GroupByKey()
	if err != nil {
		return err
	}
	w := streams.HoppingWindows(time.Minute, 15*time.Second, 0)
	if topo == "tumbling_count" {
		w = streams.TumblingWindows(time.Minute, 0)
	}
	ws, err := g.WindowedBy(w)
	if err != nil {
		return err
	}
	var t *streams.Table
	if topo == "hopping_sum" {
		t, err = ws.Aggregate(zero, addAmount, streams.StoreSerdes(streams.String, streams.Long))
	} else {
		t, err = ws.Count()
	}
	if err != nil {
		return err
	}
	return toStream(t, output)
}

// join joins each event with its key's rate, from a table or (global) a
// global table, restored whole before any event is processed: the decimal
// amount * rate.
func join(b *streams.Builder, input, table, output string, global bool) error {
	s, err := b.Stream([]string{input}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	if err != nil {
		return err
	}
	joiner := func(event, rate []byte) ([]byte, error) {
		var e struct{ Amount int64 }
		var r struct{ Rate int64 }
		if err := json.Unmarshal(event, &e); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(rate, &r); err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, e.Amount*r.Rate, 10), nil
	}
	var j *streams.Stream
	if global {
		rates, err := b.GlobalTable(table, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
		if err != nil {
			return err
		}
		if j, err = s.JoinGlobal(rates, func(key, _ []byte) ([]byte, error) { return key, nil }, joiner); err != nil {
			return err
		}
	} else {
		rates, err := b.Table(table, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
		if err != nil {
			return err
		}
		if j, err = s.Join(rates, joiner); err != nil {
			return err
		}
	}
	return j.To(output)
}

func countTo(g *streams.GroupedStream, output string) error {
	t, err := g.Count()
	if err != nil {
		return err
	}
	return toStream(t, output)
}

func toStream(t *streams.Table, output string) error {
	s, err := t.ToStream()
	if err != nil {
		return err
	}
	return s.To(output)
}

func run(brokers, app, input, table, output, topo string, commitMs int, stateDir string) error {
	b := streams.NewBuilder()
	if err := build(b, input, table, output, topo); err != nil {
		return fmt.Errorf("topology %s: %w", topo, err)
	}
	guarantee := "at_least_once"
	if topo == "sum_eos" {
		guarantee = "exactly_once_v2"
	}
	props := map[string]string{
		"processing.guarantee": guarantee,
		"commit.interval.ms":   strconv.Itoa(commitMs),
		"state.dir":            stateDir,
	}
	// GOARM_PROPERTIES (k=v,k=v) adds or overrides configuration keys, to
	// measure a setting beside the default in one sitting.
	for _, kv := range strings.Split(os.Getenv("GOARM_PROPERTIES"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	a, err := streams.New(b, streams.Config{
		ApplicationID: app,
		Brokers:       brokers,
		Properties:    props,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	start, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.Start(start); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-a.Done():
	}
	end, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	return a.Stop(end)
}
