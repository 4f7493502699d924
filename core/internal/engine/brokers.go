package engine

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Broker outages (issue 21, finding 8): while no broker answers the
// application's clients, the application cannot make progress, and until
// now said nothing. brokerHealth hears every request's end from every
// client of the application (a kgo hook); the application's broker watch
// turns a silence of brokerSilence into the Degraded state, a WARN naming
// the brokers, a counted outage and Stats.Brokers.Unreachable, and its end
// (within a second of a broker answering) into the state the application
// would be in otherwise and an INFO. The application does not fail because
// of an outage: its clients retry, and under exactly_once_v2 a transaction
// that cannot end is aborted and retried as for any other failure.

// brokerSilence is how long no broker may answer any request of the
// application before it counts as unreachable. A healthy application hears
// from a broker far more often: every fetch returns within its long poll
// (5 s) and group members heartbeat every few seconds.
const brokerSilence = 10 * time.Second

// retryBackoff is how soon the application's group and admin clients may
// update metadata again (kgo.MetadataMinAge), which a produce the broker
// answered with a retriable error waits for: Kafka's retry.backoff.ms.
const retryBackoff = 100 * time.Millisecond

// clientOpts are the kgo options of every client of the application: the
// configuration's brokers and security, the broker watch's hook and, when
// the engine logs at DEBUG, the client's own log (kgoLog).
func (a *App) clientOpts() []kgo.Opt {
	opts := a.cfg.ClientOpts(a.health)
	if a.log.Enabled(context.Background(), slog.LevelDebug) {
		opts = append(opts, kgo.WithLogger(kgoLog{a.log}))
	}
	return opts
}

// kgoLog passes franz-go's log to the application's logger, its DEBUG
// lines included: what a client waits for (a metadata update, a retried
// produce, a coordinator) shows only there.
type kgoLog struct{ l *slog.Logger }

func (k kgoLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (k kgoLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	}
	k.l.Log(context.Background(), l, "kafka client: "+msg, keyvals...)
}

// brokerHealth is a kgo hook shared by an application's clients. Safe for
// concurrent use.
type brokerHealth struct {
	lastOK      atomic.Int64 // unix nanos of the last request a broker answered
	lastErr     atomic.Pointer[string]
	unreachable atomic.Bool
	since       atomic.Int64 // unix nanos: when the current outage began
	outages     atomic.Int64
}

var (
	_ kgo.HookBrokerE2E     = (*brokerHealth)(nil)
	_ kgo.HookBrokerConnect = (*brokerHealth)(nil)
)

func (h *brokerHealth) OnBrokerE2E(_ kgo.BrokerMetadata, _ int16, e kgo.BrokerE2E) {
	if err := e.Err(); err != nil {
		s := err.Error()
		h.lastErr.Store(&s)
		return
	}
	h.lastOK.Store(time.Now().UnixNano())
}

func (h *brokerHealth) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		s := err.Error()
		h.lastErr.Store(&s)
	}
}

// BrokerHealth is what Stats and App.Brokers say of the brokers.
type BrokerHealth struct {
	// Unreachable: no broker has answered any of the application's
	// requests for 10 s or more (the application is Degraded);
	// UnreachableFor says how long, Since since when (the last answer).
	Unreachable    bool
	UnreachableFor time.Duration
	Since          time.Time
	// LastError is the last error a request to a broker ended with during
	// the outage ("" when the requests hang rather than fail).
	LastError string
	// Outages counts the times the brokers became unreachable since Start.
	Outages int64
	// Brokers are the application's bootstrap.servers (App.Brokers only).
	Brokers []string
}

func (h *brokerHealth) snapshot(now time.Time) BrokerHealth {
	b := BrokerHealth{Unreachable: h.unreachable.Load(), Outages: h.outages.Load()}
	if b.Unreachable {
		b.Since = time.Unix(0, h.since.Load())
		b.UnreachableFor = now.Sub(b.Since)
		if p := h.lastErr.Load(); p != nil {
			b.LastError = *p
		}
	}
	return b
}

// Brokers says whether the brokers answer the application. Safe for
// concurrent use.
func (a *App) Brokers() BrokerHealth {
	b := a.health.snapshot(time.Now())
	b.Brokers = slices.Clone(a.cfg.Brokers)
	return b
}

// watchBrokers checks the brokers' health every second until the
// application ends.
func (a *App) watchBrokers() {
	defer a.recovered("broker watch")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case now := <-t.C:
			a.checkBrokers(now)
		}
	}
}

// checkBrokers notes the start and the end of an outage: the state, the
// log, the count.
func (a *App) checkBrokers(now time.Time) {
	h := a.health
	last := time.Unix(0, h.lastOK.Load())
	silent := now.Sub(last)
	brokers := strings.Join(a.cfg.Brokers, ",")
	switch {
	case silent >= brokerSilence && !h.unreachable.Load():
		h.since.Store(last.UnixNano())
		h.outages.Add(1)
		h.unreachable.Store(true)
		a.setDegraded(true)
		var lastErr string
		if p := h.lastErr.Load(); p != nil {
			lastErr = *p
		}
		a.log.Warn("brokers unreachable: no broker has answered; the application is degraded, processing waits and goes on by itself once one answers",
			"brokers", brokers, "silent.for", silent.Round(time.Second), "last.error", lastErr)
	case silent < brokerSilence && h.unreachable.Load():
		h.unreachable.Store(false)
		h.lastErr.Store(nil) // the next outage reports its own
		a.setDegraded(false)
		a.log.Info("brokers reachable again", "brokers", brokers, "unreachable.for", now.Sub(time.Unix(0, h.since.Load())).Round(time.Second))
	}
}

// setDegraded enters or leaves the Degraded state.
func (a *App) setDegraded(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.degraded = on
	a.noteLocked()
}
