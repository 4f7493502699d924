package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// dispatcher is the engine side of the data plane of one session: tasks
// hand it bundles (runtime.Host), host workers take them with Exchange and
// answer in a later Exchange. Safe for concurrent use.
type dispatcher struct {
	queue  chan *pending
	nextID atomic.Uint64
	closed chan struct{}
	once   sync.Once
	// hostTimeout: bundles held by a worker that has not called Exchange for
	// this long are handed out again.
	hostTimeout time.Duration

	mu       sync.Mutex // guards inflight and workers
	inflight map[uint64]*pending
	workers  map[string]time.Time // worker id -> last Exchange
}

type pending struct {
	b   *pb.Bundle
	res chan *pb.BundleResult // buffered 1; the first answer wins
	// worker holding the bundle; "" while queued.
	worker string
}

func newDispatcher(hostTimeout time.Duration) *dispatcher {
	return &dispatcher{
		queue:       make(chan *pending, 1024),
		closed:      make(chan struct{}),
		hostTimeout: hostTimeout,
		inflight:    map[uint64]*pending{},
		workers:     map[string]time.Time{},
	}
}

var errClosed = errors.New("session closed")

// Process implements runtime.Host.
func (d *dispatcher) Process(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	b.Id = d.nextID.Add(1)
	p := &pending{b: b, res: make(chan *pb.BundleResult, 1)}
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
	d.mu.Unlock()
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
