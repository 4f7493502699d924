// Package progress draws progress of long work for the CLI: a bar redrawn
// in place on a terminal, plain lines (at most one per Every, and one at
// the end) otherwise, so logs and pipes stay readable.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar reports the progress of one piece of work. Safe for concurrent use.
type Bar struct {
	w     io.Writer
	label string
	tty   bool
	// Every is how often, at most, a plain line is written (not on a
	// terminal); default 5s. On a terminal the bar is redrawn at most every
	// 100ms.
	Every time.Duration

	mu    sync.Mutex // guards last, drawn, ended
	last  time.Time
	drawn bool
	ended bool
	now   func() time.Time
}

// New returns a Bar writing to w; tty says whether w is a terminal (see
// IsTerminal).
func New(w io.Writer, label string, tty bool) *Bar {
	return &Bar{w: w, label: label, tty: tty, Every: 5 * time.Second, now: time.Now}
}

// IsTerminal reports whether f is a character device (a terminal), not a
// file or pipe.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Update reports done of total units (total <= 0: unknown) and a detail.
func (b *Bar) Update(done, total int64, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	now := b.now()
	every := b.Every
	if b.tty {
		every = 100 * time.Millisecond
	}
	if b.drawn && now.Sub(b.last) < every {
		return
	}
	b.last, b.drawn = now, true
	b.draw(done, total, detail, false)
}

// Done reports the work finished: the bar's last line.
func (b *Bar) Done(done, total int64, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.ended = true
	b.draw(done, total, detail, true)
}

func (b *Bar) draw(done, total int64, detail string, final bool) {
	pct := ""
	if total > 0 {
		pct = fmt.Sprintf("%3d%% ", min(100, done*100/total))
	}
	counts := Count(done)
	if total > 0 {
		counts += "/" + Count(total)
	}
	if detail != "" {
		detail = " " + detail
	}
	if !b.tty {
		fmt.Fprintf(b.w, "%s: %s%s%s\n", b.label, pct, counts, detail)
		return
	}
	const width = 30
	bar := ""
	if total > 0 {
		filled := int(min(width, done*width/total))
		bar = "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "] "
	}
	end := ""
	if final {
		end = "\n"
	}
	// \r and clear to end of line: redraw in place.
	fmt.Fprintf(b.w, "\r\x1b[K%s %s%s%s%s%s", b.label, bar, pct, counts, detail, end)
}

// Count writes n with thousands separators.
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
