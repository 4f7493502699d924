package streams_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

// Suppress refuses what Kafka Streams refuses: an untilWindowCloses buffer
// that emits early (an EagerBufferConfig does not compile there), a table
// that is not windowed for untilWindowCloses, a negative time limit or
// bound; each names what it refuses.
func TestSuppressRefusals(t *testing.T) {
	b := streams.NewBuilder()
	in, err := b.Stream([]string{"in"}, streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	check(t, err)
	g, err := in.GroupByKey()
	check(t, err)
	plain, err := g.Count()
	check(t, err)
	w, err := g.WindowedBy(streams.TumblingWindows(time.Second, 0))
	check(t, err)
	windowed, err := w.Count()
	check(t, err)
	for _, c := range []struct {
		name  string
		table *streams.Table
		s     streams.Suppressed
		want  string
	}{
		{"eager buffer on untilWindowCloses", windowed, streams.UntilWindowCloses(streams.MaxRecords(5)), "StrictBufferConfig"},
		{"untilWindowCloses on a table not windowed", plain, streams.UntilWindowCloses(streams.Unbounded()), "windowed"},
		{"negative time limit", plain, streams.UntilTimeLimit(-time.Second, streams.Unbounded()), "UntilTimeLimit of -1s"},
		{"negative bound", plain, streams.UntilTimeLimit(time.Second, streams.MaxBytes(-1)), "maxBytes is -1"},
	} {
		_, err := c.table.Suppress(c.s)
		if !errors.Is(err, streams.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrInvalid naming %q", c.name, err, c.want)
		}
	}
	// The strict kinds build: unbounded, and a bound with ShutDownWhenFull.
	if _, err := windowed.Suppress(streams.UntilWindowCloses(streams.MaxRecords(5).ShutDownWhenFull())); err != nil {
		t.Errorf("untilWindowCloses(maxRecords(5).shutDownWhenFull()): %v", err)
	}
	if _, err := plain.Suppress(streams.UntilTimeLimit(0, streams.MaxBytes(1<<20)), streams.Name("throttle")); err != nil {
		t.Errorf("untilTimeLimit(0, maxBytes): %v", err)
	}
}
