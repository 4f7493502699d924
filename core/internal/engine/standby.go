package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
)

// Standby tasks (num.standby.replicas; Kafka Streams' StandbyTask). The
// balancer gives each task up to num.standby.replicas standbys on members
// other than its owner; a standby keeps warm copies of the task's stores by
// tailing their changelogs into Pebble, moving each store partition's
// checkpoint as it goes. When the task later moves to this instance, its
// restore starts from that checkpoint and reads only what the standby had
// not yet seen. A standby processes nothing and writes nothing to Kafka.
//
// A standby's store partitions and an active task's are never the same:
// the balancer gives a task's standby to members other than its owner, and
// the standbys of one assignment are stopped before the next assignment's
// tasks start (onAssigned).

// standby tails the changelogs of one assignment's standby tasks. Started
// and stopped by the group's callbacks; its fields are set before it is
// published in App.standby (under App.mu) and only read after, except the
// atomic counters, which Standbys reads concurrently.
type standby struct {
	cancel context.CancelFunc
	done   chan struct{}
	// parts: the store partitions tailed, and each one's position: the
	// next changelog offset to read (its checkpoint).
	parts     []storePartition
	positions []atomic.Int64
	// applied counts the changelog records applied so far.
	applied atomic.Int64
}

// StandbyPartition is a store partition kept warm as a standby, and its
// position: the changelog offset it has read up to.
type StandbyPartition struct {
	Store     string `json:"store"`
	Partition int32  `json:"partition"`
	Position  int64  `json:"position"`
}

// standbyPart is one store partition a standby keeps warm.
type standbyPart struct {
	sp        storePartition
	changelog string
	part      *state.Partition
	// replay turns its changelog records into writes (replayOf).
	replay   state.Replay
	position *atomic.Int64
}

// startStandbys begins tailing the changelogs of the standby tasks of the
// last assignment. Called in onAssigned, with a.mu held, after
// stopStandbys.
func (a *App) startStandbys(tasks []int32) {
	if len(tasks) == 0 {
		return
	}
	var parts []standbyPart
	for _, p := range a.plans {
		for _, st := range p.stores {
			for _, n := range tasks {
				if _, active := a.tasks[taskID{p.id, n}]; active {
					continue // never both: the balancer does not do it
				}
				sbp := standbyPart{
					sp:        storePartition{Store: st.Name, Partition: n},
					changelog: a.fullTopic(st.ChangelogTopic, true),
					part:      a.db.Partition(st.Name, n),
				}
				sbp.replay = replayOf(st, sbp.part, codecFor(st))
				parts = append(parts, sbp)
			}
		}
	}
	if len(parts) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(a.ctx)
	s := &standby{cancel: cancel, done: make(chan struct{}), positions: make([]atomic.Int64, len(parts))}
	for i := range parts {
		s.parts = append(s.parts, parts[i].sp)
		parts[i].position = &s.positions[i]
	}
	a.standby = s
	go func() {
		defer close(s.done)
		defer a.recovered("standby tasks")
		if err := a.tailStandbys(ctx, s, parts); err != nil && ctx.Err() == nil {
			// A standby is an optimisation: its failure costs a longer
			// restore later, never correctness. Its partitions' checkpoints
			// stay where the last applied batch left them.
			a.log.Warn("standby tasks stopped", "error", err, "tasks", tasks)
		}
	}()
	a.log.Info("standby tasks assigned", "tasks", tasks, "store.partitions", len(parts))
}

// stopStandbys stops the standby of the last assignment and waits for it.
func (a *App) stopStandbys() {
	a.mu.Lock()
	s := a.standby
	a.standby = nil
	a.mu.Unlock()
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
}

// Standbys returns the store partitions this instance keeps warm as
// standbys, with their positions, and the changelog records they applied
// since the last rebalance. Safe for concurrent use.
func (a *App) Standbys() (parts []StandbyPartition, applied int64) {
	a.mu.Lock()
	s := a.standby
	a.mu.Unlock()
	if s == nil {
		return nil, 0
	}
	for i, sp := range s.parts {
		parts = append(parts, StandbyPartition{Store: sp.Store, Partition: sp.Partition, Position: s.positions[i].Load()})
	}
	slices.SortFunc(parts, func(x, y StandbyPartition) int {
		if x.Store != y.Store {
			return strings.Compare(x.Store, y.Store)
		}
		return int(x.Partition - y.Partition)
	})
	return parts, s.applied.Load()
}

// tailStandbys reads the standby partitions' changelogs from their
// checkpoints (from the start, wiped, where none is trusted) until ctx is
// done, applying each poll's records and then moving the checkpoints.
func (a *App) tailStandbys(ctx context.Context, s *standby, parts []standbyPart) error {
	offsets, byTP, err := a.standbyOffsets(ctx, parts)
	if err != nil || len(offsets) == 0 {
		return err
	}
	opts := append(a.clientOpts(),
		kgo.ConsumePartitions(offsets),
		kgo.KeepControlRecords(), // markers take offsets: the checkpoint passes them
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if a.eos {
		// Only committed changes: the active task's aborted transactions
		// never reach a standby, as they never reach the active's Pebble.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s/%d: %w", t, p, err) })
		if ferr != nil {
			return ferr
		}
		var perr error
		fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
			sp := byTP[ftp.Topic][ftp.Partition]
			if sp == nil || len(ftp.Records) == 0 || perr != nil {
				return
			}
			perr = s.apply(sp, ftp.Records)
		})
		if perr != nil {
			return perr
		}
	}
}

// apply writes a poll's records of sp's changelog partition to its store
// partition and moves its checkpoint and position past them.
func (s *standby) apply(sp *standbyPart, records []*kgo.Record) error {
	ws, err := sp.replay.Writes(make([]state.Write, 0, len(records)), records)
	if err != nil {
		return fmt.Errorf("standby of store %s partition %d: %w", sp.sp.Store, sp.sp.Partition, err)
	}
	if err := sp.part.Apply(ws); err != nil {
		return err
	}
	last := records[len(records)-1].Offset
	if err := sp.part.SetCheckpoint(last + 1); err != nil {
		return err
	}
	sp.position.Store(last + 1)
	s.applied.Add(int64(len(ws)))
	return nil
}

// standbyOffsets returns the changelog partitions of parts to tail, each
// from its store partition's checkpoint (from 0, wiped, where none is
// trusted), and the standbyPart of each. A task number past a
// sub-topology's partition count has no store partition there (its topics
// have fewer partitions): those are left out.
func (a *App) standbyOffsets(ctx context.Context, parts []standbyPart) (map[string]map[int32]kgo.Offset, map[string]map[int32]*standbyPart, error) {
	var topics []string
	for _, sp := range parts {
		if !slices.Contains(topics, sp.changelog) {
			topics = append(topics, sp.changelog)
		}
	}
	ends, err := a.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing changelog partitions: %w", err)
	}
	offsets := map[string]map[int32]kgo.Offset{}
	byTP := map[string]map[int32]*standbyPart{}
	for i := range parts {
		sp := &parts[i]
		if end, ok := ends.Lookup(sp.changelog, sp.sp.Partition); !ok || end.Err != nil {
			continue
		}
		from, err := sp.part.ReplayFrom()
		if err != nil {
			return nil, nil, err
		}
		if offsets[sp.changelog] == nil {
			offsets[sp.changelog] = map[int32]kgo.Offset{}
			byTP[sp.changelog] = map[int32]*standbyPart{}
		}
		offsets[sp.changelog][sp.sp.Partition] = kgo.NewOffset().At(from)
		sp.position.Store(from)
		byTP[sp.changelog][sp.sp.Partition] = sp
	}
	return offsets, byTP, nil
}
