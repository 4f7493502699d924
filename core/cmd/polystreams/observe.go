package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/polystreams/polystreams/core/internal/observe/progress"
	"github.com/polystreams/polystreams/core/internal/observe/ui"
	"github.com/polystreams/polystreams/core/internal/server"
)

// observe mounts the live page /ui beside what server.Mount serves (the
// protocol, /metrics, /describe and /ui's JSON, /ui/api/status).
func observe(mux *http.ServeMux) {
	mux.Handle("/ui/", ui.Handler("/ui/"))
	mux.Handle("/ui", http.RedirectHandler("/ui/", http.StatusFound))
}

// watchRestores shows each application's store restore as a progress bar
// on standard output (plain lines when it is not a terminal) until ctx ends.
func watchRestores(ctx context.Context, srv *server.Server) {
	tty := progress.IsTerminal(os.Stdout)
	bars := map[string]*progress.Bar{}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for app, p := range srv.Restores() {
			detail := fmt.Sprintf("records, %d/%d store partitions", p.TotalPartitions-p.RestoringPartitions, p.TotalPartitions)
			b := bars[app]
			switch {
			case b == nil && !p.Done():
				b = progress.New(os.Stdout, "polystreams: restoring "+app, tty)
				bars[app] = b
				b.Update(p.RestoredRecords, p.TotalRecords, detail)
			case b != nil && p.Done():
				b.Done(p.RestoredRecords, p.TotalRecords, detail)
				delete(bars, app)
			case b != nil:
				b.Update(p.RestoredRecords, p.TotalRecords, detail)
			}
		}
	}
}
