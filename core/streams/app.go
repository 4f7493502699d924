package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Config configures an App.
type Config struct {
	// ApplicationID is application.id: the consumer group, the prefix of
	// internal topics and the state directory's name. Required.
	ApplicationID string
	// Brokers is bootstrap.servers, e.g. "127.0.0.1:9092". Required unless
	// Properties has bootstrap.servers.
	Brokers string
	// Properties are further settings under their Kafka Streams names
	// (processing.guarantee, commit.interval.ms, num.standby.replicas,
	// max.task.idle.ms, state.dir, ...), with the defaults the engine
	// documents: at_least_once, commit.interval.ms 30000 (100 under
	// exactly_once_v2), num.standby.replicas 0, max.task.idle.ms 0 (a task
	// reading several partitions waits for the records already on the
	// broker of each before it picks the next by timestamp; -1 never waits),
	// state.dir <tmp>/polystreams, auto.offset.reset earliest (per source:
	// the OffsetReset option), default.production.exception.handler fail
	// (continue skips a record the broker refuses for good, counted),
	// num.stream.threads unbounded (how many tasks process a batch at once).
	// default.key.serde and default.value.serde are given to NewBuilder.
	Properties map[string]string
	// Logger receives the runtime's log; nil logs to standard error.
	Logger *slog.Logger
}

// App runs a topology built by a Builder (KafkaStreams). Safe for
// concurrent use.
type App struct {
	rt   *engine.App
	topo *topology.Topology
	cfg  config.App

	mu        sync.Mutex // guards listeners
	listeners []func(newState, oldState State)
}

// New prepares an application for the topology b has built so far; later
// calls on b do not change it. Every configuration problem is reported at
// once.
func New(b *Builder, c Config) (*App, error) {
	cfg, _, err := config.Parse(c.ApplicationID, c.Properties, c.Brokers)
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	cfg.Logger = c.Logger
	for _, d := range []struct{ key, config, builder string }{
		{"default.key.serde", cfg.DefaultKeySerde, b.b.DefaultKeySerde},
		{"default.value.serde", cfg.DefaultValueSerde, b.b.DefaultValueSerde},
		{"default.timestamp.extractor", cfg.DefaultExtractor, b.b.DefaultExtractor},
	} {
		if d.config != "" && d.config != d.builder {
			return nil, fmt.Errorf("streams: %s in Properties is not the Builder's: give it to NewBuilder as an option (streams.NewBuilder(streams.KeySerde(...), streams.ValueSerde(...), streams.BuiltinTimestampExtractor(...))), which gives it to sources as they are added", d.key)
		}
	}
	topo, err := b.b.Topology()
	if err != nil {
		return nil, err
	}
	rt, err := engine.New(cfg, topo, noHost{})
	if err != nil {
		return nil, err
	}
	return &App{rt: rt, topo: topo, cfg: cfg}, nil
}

// Start creates the internal topics, opens the state, joins the consumer
// group and begins processing; it returns once processing has begun (or
// failed to begin). The source topics must exist.
func (a *App) Start(ctx context.Context) error {
	a.mu.Lock()
	listeners := slices.Clone(a.listeners)
	a.mu.Unlock()
	if len(listeners) > 0 {
		go a.notify(listeners)
	}
	return a.rt.Start(ctx)
}

// OnStateChange makes f be called with each change of the application's
// state, new and old (Kafka Streams' setStateListener): typically Created
// -> Rebalancing -> Restoring -> Running (back through Rebalancing and
// Restoring when the group rebalances, and through Degraded while no broker
// answers) -> Stopped or Failed. Every change is told once, in order,
// however short, from one goroutine of the App's own: f must not block for
// long. Listeners are set before Start; one set later is not called.
func (a *App) OnStateChange(f func(newState, oldState State)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listeners = append(a.listeners, f)
}

// notify tells listeners of every change of state until the application
// has stopped.
func (a *App) notify(listeners []func(newState, oldState State)) {
	old, next := Created, 1
	for {
		states, first, changed := a.rt.Changes(next)
		if first == next {
			for _, s := range states {
				for _, f := range listeners {
					f(s, old)
				}
				old = s
			}
			next = first + len(states)
			continue
		}
		select {
		case <-changed:
		case <-a.rt.Done():
			// The last change (to Stopped or Failed) comes before Done.
			if states, first, _ := a.rt.Changes(next); first == next {
				for _, s := range states {
					for _, f := range listeners {
						f(s, old)
					}
					old = s
				}
			}
			return
		}
	}
}

// Stop commits what is processed, leaves the group and closes, waiting
// until ctx is done at most.
func (a *App) Stop(ctx context.Context) error { return a.rt.Stop(ctx) }

// Pause stops processing (KafkaStreams.pause, KIP-834): no source
// partition is fetched and each task, once through the batch it is in,
// takes no more records, while the application stays in the group with
// its tasks and commits what it processed (under exactly_once_v2 a task
// first processes the records already fetched, so that their transaction
// can end). It may come before Start.
func (a *App) Pause() { a.rt.Pause() }

// Resume undoes Pause: the tasks continue where they left off.
func (a *App) Resume() { a.rt.Resume() }

// IsPaused reports whether Pause was called and Resume not since.
func (a *App) IsPaused() bool { return a.rt.Paused() }

// CleanUp deletes the application's local state directory,
// <state.dir>/<application.id> (KafkaStreams.cleanUp), so that the next
// start restores every store from its changelog; it answers the directory
// deleted ("" when there was none). It is refused while the application
// runs: call it before Start or after Stop.
func (a *App) CleanUp() (string, error) {
	if st, _ := a.rt.State(); st != Created {
		select {
		case <-a.rt.Done():
		default:
			return "", fmt.Errorf("streams: cleanUp: %w (it is %s); call it before Start or after Stop", engine.ErrRunning, st)
		}
	}
	return engine.CleanUp(a.cfg)
}

// State returns the application's state and, once it failed, why (a
// *RecordError when a record failed).
func (a *App) State() (State, error) { return a.rt.State() }

// BrokerOutage: no broker has answered the application for 10 s or more,
// and it is Degraded.
type BrokerOutage struct {
	// Brokers are the application's bootstrap.servers.
	Brokers []string
	// Since is when a broker last answered: the outage began then.
	Since time.Time
	// LastError is the last error a request to a broker ended with (""
	// when the requests hang, as with a frozen broker).
	LastError string
	// Outages counts the outages since Start, this one included.
	Outages int64
}

// BrokerOutage returns the outage that makes the application Degraded
// now, and false in any other state.
func (a *App) BrokerOutage() (BrokerOutage, bool) {
	if st, _ := a.rt.State(); st != Degraded {
		return BrokerOutage{}, false
	}
	b := a.rt.Brokers()
	if !b.Unreachable {
		return BrokerOutage{}, false
	}
	return BrokerOutage{Brokers: b.Brokers, Since: b.Since, LastError: b.LastError, Outages: b.Outages}, true
}

// Done is closed when the application has stopped, by Stop or a failure.
func (a *App) Done() <-chan struct{} { return a.rt.Done() }

// Describe returns the topology as Kafka Streams' Topology.describe()
// prints it.
func (a *App) Describe() string { return a.topo.Describe() }

// noHost is the host of an application whose functions are all Go: the
// engine never sends it a bundle.
type noHost struct{}

func (noHost) Process(context.Context, *pb.Bundle) (*pb.BundleResult, error) {
	return nil, errors.New("streams: a Go application has no host to run bundles")
}
