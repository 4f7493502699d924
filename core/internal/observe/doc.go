// Package observe gathers what the engine tells about itself, one package
// per way of telling: metrics (lock-free instruments, served in
// Prometheus' format), logging (slog loggers and the recent warnings and
// errors the /ui page shows), progress (the CLI's progress of long work)
// and ui (the live page, /ui). What is
// observed is counted where it happens (the engine's stats.go: App.Stats)
// and served by the server (server/observe.go: /metrics, /describe,
// /status).
package observe
