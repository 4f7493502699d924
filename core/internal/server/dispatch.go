package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polystreams/polystreams/core/internal/engine"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// dispatcher is the engine side of the data plane of one session: tasks
// hand it bundles (engine.Host), host workers take them with Exchange and
// answer in a later Exchange. Safe for concurrent use.
type dispatcher struct {
	queue  chan *pending
	nextID atomic.Uint64
	closed chan struct{}
	once   sync.Once
	// hostTimeout: bundles held by a worker that has not called Exchange for
	// this long are handed out again.
	hostTimeout time.Duration

	mu       sync.Mutex // guards inflight, workers, exchanging, lastExchange, stallLogged
	inflight map[uint64]*pending
	workers  map[string]time.Time // worker id -> last Exchange
	// exchanging: workers in an Exchange call now. A worker waiting there
	// for bundles is serving the session, however long it waits, so the
	// host counts as idle only while none is.
	exchanging int
	// lastExchange: the last Exchange of any worker (the dispatcher's
	// creation before the first); stallLogged: when a stall was last
	// logged (see stalled).
	lastExchange, stallLogged time.Time
}

type pending struct {
	b *pb.Bundle
	// reads answers the host's Read calls for a processor bundle (nil:
	// not a processor bundle).
	reads engine.ReadFunc
	res   chan *pb.BundleResult // buffered 1; the first answer wins
	// worker holding the bundle; "" while queued.
	worker string
}

func newDispatcher(hostTimeout time.Duration) *dispatcher {
	return &dispatcher{
		queue:        make(chan *pending, 1024),
		closed:       make(chan struct{}),
		hostTimeout:  hostTimeout,
		inflight:     map[uint64]*pending{},
		workers:      map[string]time.Time{},
		lastExchange: time.Now(),
	}
}

// stallAfter: bundles waiting this long with no worker calling Exchange
// mean no host serves the session: its tasks are stalled.
const stallAfter = 5 * time.Second

// stallLogEvery: how often, at most, a stall is logged.
const stallLogEvery = 10 * time.Second

// stall describes the dispatcher's tasks waiting for a host: the bundles
// waiting (queued or held by workers), and how long no worker has called
// Exchange (0 while one is in an Exchange call).
type stall struct {
	waiting int
	idle    time.Duration
}

// stalled: bundles wait and no worker has called Exchange for stallAfter.
func (s stall) stalled() bool { return s.waiting > 0 && s.idle >= stallAfter }

// peek returns the bundles waiting and how long no worker called Exchange.
func (d *dispatcher) peek(now time.Time) stall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.peekLocked(now)
}

func (d *dispatcher) peekLocked(now time.Time) stall {
	st := stall{waiting: len(d.inflight)}
	if d.exchanging == 0 {
		st.idle = max(now.Sub(d.lastExchange), 0)
	}
	return st
}

// stalled reports the dispatcher's stall at now, if it has one: bundles
// waiting and no Exchange for stallAfter; log is set when this stall should
// be logged (at most every stallLogEvery).
func (d *dispatcher) stalled(now time.Time) (st stall, ok, log bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st = d.peekLocked(now)
	if !st.stalled() {
		return st, false, false
	}
	if now.Sub(d.stallLogged) >= stallLogEvery {
		d.stallLogged = now
		log = true
	}
	return st, true, log
}

var errClosed = errors.New("session closed")

// Process implements engine.Host.
func (d *dispatcher) Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	return d.ProcessReads(ctx, b, nil)
}

// ProcessReads implements engine.ReadsHost: while b is in flight, Read
// calls naming it go to reads.
func (d *dispatcher) ProcessReads(ctx context.Context, b *pb.Bundle, reads engine.ReadFunc) (*pb.BundleResult, error) {
	b.Id = d.nextID.Add(1)
	p := &pending{b: b, res: make(chan *pb.BundleResult, 1), reads: reads}
	d.mu.Lock()
	d.inflight[b.Id] = p
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, b.Id)
		d.mu.Unlock()
	}()
	select {
	case d.queue <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.closed:
		return nil, errClosed
	}
	select {
	case r := <-p.res:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.closed:
		return nil, errClosed
	}
}

// read routes a Read to the task waiting for its bundle.
func (d *dispatcher) read(ctx context.Context, req *pb.ReadRequest) (*pb.ReadResponse, error) {
	d.mu.Lock()
	p := d.inflight[req.BundleId]
	d.mu.Unlock()
	if p == nil || p.reads == nil {
		return nil, fmt.Errorf("%w: bundle %d is not in flight with a processor step (store %q)", engine.ErrBundleNotInFlight, req.BundleId, req.Store)
	}
	return p.reads(ctx, req)
}

// deliver hands results to the tasks waiting for them. Results of bundles
// no longer in flight (answered already by another worker, or abandoned by
// a stopped task) are dropped.
func (d *dispatcher) deliver(results []*pb.BundleResult) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range results {
		if p, ok := d.inflight[r.BundleId]; ok {
			delete(d.inflight, r.BundleId)
			p.res <- r
		}
	}
}

// take hands worker up to max bundles, waiting up to wait for the first.
func (d *dispatcher) take(ctx context.Context, worker string, max int, wait time.Duration) []*pb.Bundle {
	d.mu.Lock()
	d.workers[worker] = time.Now()
	d.lastExchange = d.workers[worker]
	d.exchanging++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.exchanging--
		d.mu.Unlock()
	}()
	if max <= 0 {
		return nil
	}
	var got []*pending
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case p := <-d.queue:
		got = append(got, p)
	case <-timer.C:
	case <-ctx.Done():
	case <-d.closed:
	}
	for len(got) > 0 && len(got) < max {
		select {
		case p := <-d.queue:
			got = append(got, p)
			continue
		default:
		}
		break
	}
	out := make([]*pb.Bundle, 0, len(got))
	d.mu.Lock()
	for _, p := range got {
		if _, ok := d.inflight[p.b.Id]; !ok {
			continue // its task gave up on it
		}
		p.worker = worker
		out = append(out, p.b)
	}
	d.workers[worker] = time.Now()
	d.lastExchange = d.workers[worker]
	d.mu.Unlock()
	return out
}

// reclaim hands out again the bundles of workers silent for hostTimeout.
func (d *dispatcher) reclaim(now time.Time) {
	d.mu.Lock()
	var again []*pending
	for w, seen := range d.workers {
		if now.Sub(seen) < d.hostTimeout {
			continue
		}
		delete(d.workers, w)
		for _, p := range d.inflight {
			if p.worker == w {
				p.worker = ""
				again = append(again, p)
			}
		}
	}
	d.mu.Unlock()
	for _, p := range again {
		select {
		case d.queue <- p:
		case <-d.closed:
			return
		}
	}
}

func (d *dispatcher) close() { d.once.Do(func() { close(d.closed) }) }
