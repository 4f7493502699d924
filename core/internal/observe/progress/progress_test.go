package progress

import (
	"bytes"
	"testing"
	"time"
)

func TestPlainLines(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "restoring counts", false)
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }
	b.Update(0, 50000, "")
	b.Update(100, 50000, "") // within Every: not written
	now = now.Add(5 * time.Second)
	b.Update(12000, 50000, "1/4 partitions")
	b.Done(50000, 50000, "4/4 partitions")
	b.Update(1, 1, "") // after Done: nothing
	want := "restoring counts:   0% 0/50,000\n" +
		"restoring counts:  24% 12,000/50,000 1/4 partitions\n" +
		"restoring counts: 100% 50,000/50,000 4/4 partitions\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestTerminalRedrawsInPlace(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "seeding", true)
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }
	b.Update(50, 100, "")
	b.Done(100, 100, "")
	want := "\r\x1b[Kseeding [###############...............]  50% 50/100" +
		"\r\x1b[Kseeding [##############################] 100% 100/100\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
