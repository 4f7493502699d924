// Package ui serves the engine's live page, /ui: the running topology as a
// graph with each node's records/s, each task's lag and stores, restore
// progress, state and recent errors. The page is static (embedded, no
// external resource) and polls the JSON of server.Status.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Handler serves the page's files under prefix (e.g. "/ui/").
func Handler(prefix string) http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix(prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page loads nothing from elsewhere; say so to the browser too.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
