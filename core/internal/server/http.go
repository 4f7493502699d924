package server

import "net/http"

// Mount serves the engine on mux as a client reaches it: the protocol at
// its path (bodies bounded as they stream, error answers bounded),
// /metrics, /describe and /ui/api/status. The caller adds the /ui page's
// files and wraps the mux in RequireToken; polystreams serve and the
// protocol fuzz targets use the same routes.
func (s *Server) Mount(mux *http.ServeMux) {
	mux.Handle(s.Handler())
	mux.Handle("/metrics", s.MetricsHandler())
	mux.Handle("/describe", s.DescribeHandler())
	mux.Handle("/ui/api/status", s.StatusHandler())
}
