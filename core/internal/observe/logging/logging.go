// Package logging makes the engine's slog loggers (text or JSON) and keeps
// the most recent warnings and errors for the /ui page.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// New returns a logger writing to w in format ("text" or "json") from
// level up, and the ring of its recent warnings and errors.
func New(w io.Writer, format string, level slog.Level) (*slog.Logger, *Recent, error) {
	o := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, o)
	case "json":
		h = slog.NewJSONHandler(w, o)
	default:
		return nil, nil, fmt.Errorf("log format %q: want text or json", format)
	}
	r := &Recent{max: 50}
	return slog.New(&tee{next: h, recent: r}), r, nil
}

// Entry is one warning or error logged.
type Entry struct {
	Time    time.Time         `json:"time"`
	Level   string            `json:"level"`
	Message string            `json:"message"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// Recent holds the last warnings and errors logged, oldest first. Safe for
// concurrent use.
type Recent struct {
	mu      sync.Mutex // guards entries
	entries []Entry
	max     int
}

func (r *Recent) add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	if len(r.entries) > r.max {
		r.entries = append(r.entries[:0], r.entries[len(r.entries)-r.max:]...)
	}
}

// Entries returns the entries whose attribute key equals value (all of
// them when key is ""), newest last.
func (r *Recent) Entries(key, value string) []Entry {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	for _, e := range r.entries {
		if key == "" || e.Attrs[key] == value {
			out = append(out, e)
		}
	}
	return out
}

// tee passes records on and keeps warnings and errors in recent.
type tee struct {
	next   slog.Handler
	recent *Recent
	attrs  []slog.Attr // from WithAttrs
	group  string      // from WithGroup, dotted
}

func (t *tee) Enabled(ctx context.Context, l slog.Level) bool { return t.next.Enabled(ctx, l) }

func (t *tee) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		e := Entry{Time: r.Time, Level: r.Level.String(), Message: r.Message, Attrs: map[string]string{}}
		for _, a := range t.attrs {
			e.Attrs[a.Key] = a.Value.String()
		}
		r.Attrs(func(a slog.Attr) bool {
			e.Attrs[t.group+a.Key] = a.Value.String()
			return true
		})
		t.recent.add(e)
	}
	return t.next.Handle(ctx, r)
}

func (t *tee) WithAttrs(as []slog.Attr) slog.Handler {
	c := *t
	c.next = t.next.WithAttrs(as)
	c.attrs = append(append([]slog.Attr(nil), t.attrs...), as...)
	if t.group != "" {
		for i := len(t.attrs); i < len(c.attrs); i++ {
			c.attrs[i].Key = t.group + c.attrs[i].Key
		}
	}
	return &c
}

func (t *tee) WithGroup(name string) slog.Handler {
	c := *t
	c.next = t.next.WithGroup(name)
	c.group = t.group + name + "."
	return &c
}
