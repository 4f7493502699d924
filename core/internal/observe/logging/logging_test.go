package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestJSONAndRecent(t *testing.T) {
	var buf bytes.Buffer
	log, recent, err := New(&buf, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	app := log.With("application.id", "a1")
	app.Info("started")
	app.Warn("commit", "error", "broker gone")
	log.With("application.id", "a2").Error("failed", "error", "boom")
	log.Debug("hidden")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), buf.String())
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first["msg"] != "started" || first["application.id"] != "a1" {
		t.Errorf("first line %s (%v)", lines[0], err)
	}
	got := recent.Entries("application.id", "a1")
	if len(got) != 1 || got[0].Message != "commit" || got[0].Level != "WARN" || got[0].Attrs["error"] != "broker gone" {
		t.Errorf("recent for a1 = %+v", got)
	}
	if all := recent.Entries("", ""); len(all) != 2 {
		t.Errorf("recent = %+v, want 2 entries", all)
	}
	if _, _, err := New(&buf, "xml", slog.LevelInfo); err == nil || !strings.Contains(err.Error(), `"xml": want text or json`) {
		t.Errorf("New(xml) = %v", err)
	}
}

func TestRecentKeepsTheLast(t *testing.T) {
	var buf bytes.Buffer
	log, recent, _ := New(&buf, "text", slog.LevelInfo)
	for i := range 60 {
		log.Warn("w", "i", i)
	}
	es := recent.Entries("", "")
	if len(es) != 50 || es[0].Attrs["i"] != "10" || es[49].Attrs["i"] != "59" {
		t.Errorf("kept %d, first %v last %v", len(es), es[0].Attrs, es[len(es)-1].Attrs)
	}
}
