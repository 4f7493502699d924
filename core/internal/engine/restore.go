package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// The restores' bookkeeping is state's (state.Restores); the engine
// reads changelogs into stores.

// RestoreProgress says how far restoring stores from their changelogs has
// come (state.RestoreProgress).
type RestoreProgress = state.RestoreProgress

type (
	storePartition = state.StorePartition
	restoreEntry   = state.RestoreEntry
	restores       = state.Restores
)

// restoreLogEvery is how often, at most, a long restore of one store
// partition logs its progress.
const restoreLogEvery = 5 * time.Second

// Restore returns the progress of restoring the stores of this instance's
// tasks since the last rebalance. Safe for concurrent use.
func (a *App) Restore() RestoreProgress { return a.restores.Progress() }

// storePartitionsOf lists the store partitions of task id running p.
func storePartitionsOf(id taskID, p *plan) []storePartition {
	out := make([]storePartition, 0, len(p.stores))
	for _, s := range p.stores {
		out = append(out, storePartition{Store: s.Name, Partition: id.partition})
	}
	return out
}

// offsetsSettle bounds how long settledOffsets asks again.
const offsetsSettle = 30 * time.Second

// settledOffsets lists offsets with list (end offsets, or the last stable
// ones), asking again for up to offsetsSettle while a partition answers
// with a retriable error. Apache Kafka answers NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_TOPIC_OR_PARTITION for a partition of a topic created a moment
// ago whose replica the broker has not set up yet (kfake never does): a
// changelog created at start is then restored, not failed. A request
// that fails as a whole with a retriable error is asked again the same
// way: a broker back from a freeze or a restart answers
// LEADER_NOT_AVAILABLE while it elects leaders again (found by
// TestChaosBrokerFreeze on Apache Kafka: the task failed its restore), and
// so is one no broker answered (unreachable: a broker restarting refuses
// connections; found by TestFaultBrokerRestart, whose third restart came
// while a task restored: the application failed where every other broker
// error waits).
func settledOffsets(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topics ...string) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(offsetsSettle)
	for {
		ends, err := list(ctx, topics...)
		settled := err == nil || !kerr.IsRetriable(err) && !unreachable(err)
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil && kerr.IsRetriable(o.Err) {
				settled = false
			}
		})
		if settled || time.Now().After(deadline) {
			return ends, err
		}
		select {
		case <-ctx.Done():
			return ends, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restore brings a store partition up to date with its changelog: from the
// checkpoint if there is one, else wiped and from the start. The checkpoint
// is then cleared: until the next clean close, the data is ahead of it, and
// a crash means wipe and restore. Progress goes to a.restores and, for a
// long restore, to the log every restoreLogEvery.
func (a *App) restore(ctx context.Context, tx *storeTx) error {
	from, end, err := a.restoreRange(ctx, tx)
	if err != nil {
		return err
	}
	entry := a.restores.Begin(storePartition{Store: tx.store.Name, Partition: tx.Part.Number}, end-from)
	if end <= from {
		a.restores.Finish(entry)
		a.noteRestored()
		return nil
	}
	start := time.Now()
	a.log.Info("restoring store", "store", tx.store.Name, "partition", tx.Part.Number, "changelog", tx.changelog,
		"from", from, "to", end, "records", end-from)
	applied, err := a.readChangelog(ctx, tx, from, end, entry)
	if err != nil {
		return err
	}
	a.restores.Finish(entry)
	a.noteRestored()
	a.log.Info("restored store", "store", tx.store.Name, "partition", tx.Part.Number, "records", applied,
		"from", from, "to", end, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// restoreRange returns the changelog offsets [from, end) that restoring
// tx's store partition reads: from its checkpoint (wiped, from 0, when it
// has none or the checkpoint is past the changelog's end) to the
// changelog's end offset. Under at_least_once it clears the checkpoint.
func (a *App) restoreRange(ctx context.Context, tx *storeTx) (from, end int64, err error) {
	from, err = tx.Part.ReplayFrom()
	if err != nil {
		return 0, 0, err
	}
	if !a.eos {
		// Under at-least-once the data runs ahead of the checkpoint from
		// here on; a crash means wipe and restore. (Under exactly_once_v2
		// only committed transactions reach Pebble, each moving the
		// checkpoint, so it stays valid.)
		if err := tx.Part.ClearCheckpoint(); err != nil {
			return 0, 0, err
		}
	}
	// The end is the high watermark even under exactly_once_v2, read
	// read_committed up to it (as Kafka Streams since KAFKA-10167): the
	// last stable offset would stop short of a transaction the partition's
	// previous owner committed a moment ago whose markers the broker has
	// not written yet (Apache Kafka writes them after EndTxn answers),
	// while this member's committed input offsets, fetched require_stable,
	// already include it: the restored state would miss that transaction's
	// changes for good. Read read_committed, the position passes the high
	// watermark only once every transaction below it is decided.
	ends, err := settledOffsets(ctx, a.adm.ListEndOffsets, tx.changelog)
	if err != nil {
		return 0, 0, fmt.Errorf("restoring store %s partition %d: listing end offset of %s: %w", tx.store.Name, tx.Part.Number, tx.changelog, err)
	}
	eo, ok := ends.Lookup(tx.changelog, tx.Part.Number)
	if !ok || eo.Err != nil {
		return 0, 0, fmt.Errorf("restoring store %s partition %d: no end offset for %s/%d: %v", tx.store.Name, tx.Part.Number, tx.changelog, tx.Part.Number, eo.Err)
	}
	if from > eo.Offset {
		// The checkpoint is ahead of the changelog: the topic was
		// recreated or truncated (a new broker, say). The local state
		// belongs to another history; start over from the changelog.
		a.log.Warn("checkpoint ahead of changelog: wiping local state", "store", tx.store.Name,
			"partition", tx.Part.Number, "checkpoint", from, "changelog.end", eo.Offset)
		if err := tx.Part.Wipe(); err != nil {
			return 0, 0, err
		}
		from = 0
	}
	return from, eo.Offset, nil
}

// readChangelog reads tx's changelog partition from offset from up to end
// into its store partition, advancing entry, and returns how many writes
// it applied.
func (a *App) readChangelog(ctx context.Context, tx *storeTx, from, end int64, entry *restoreEntry) (int64, error) {
	opts := append(a.clientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tx.changelog: {tx.Part.Number: kgo.NewOffset().At(from)}}),
		// Transaction markers take offsets: keep them so that the position
		// reaches the end offset.
		kgo.KeepControlRecords(),
	)
	if a.eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var applied int64
	next := from
	logged := time.Now()
	replay := replayOf(tx.store, tx.Part, tx.keys)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return applied, ctx.Err()
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s/%d: %w", t, p, err) })
		if ferr != nil {
			return applied, fmt.Errorf("restoring store %s partition %d: %w", tx.store.Name, tx.Part.Number, ferr)
		}
		var records []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			records = append(records, r)
		})
		ws, err := replay.Writes(nil, records)
		if err != nil {
			return applied, fmt.Errorf("restoring store %s partition %d: %w", tx.store.Name, tx.Part.Number, err)
		}
		if err := tx.Part.Apply(ws); err != nil {
			return applied, fmt.Errorf("restoring store %s partition %d: %w", tx.store.Name, tx.Part.Number, err)
		}
		applied += int64(len(ws))
		a.restores.Advance(entry, next-from)
		if now := time.Now(); now.Sub(logged) >= restoreLogEvery && next < end {
			logged = now
			a.log.Info("restoring store: progress", "store", tx.store.Name, "partition", tx.Part.Number,
				"restored", next-from, "of", end-from, "percent", (next-from)*100/(end-from))
		}
	}
	return applied, nil
}

// replayOf is how the changelog records of store st's partition part
// become its writes: through its key codec, or its versions (versioned.go).
func replayOf(st *topology.Store, part *state.Partition, keys keyCodec) state.Replay {
	if versionedStore(st) {
		vr := &versionRestore{part: part}
		return state.Replay{Version: vr.add, Finish: vr.finish}
	}
	var rp state.Replay
	if keys != nil {
		rp.FromLog = keys.fromLog
	}
	return rp
}

// localTaskState returns the tasks this instance has local state for, with
// their offset sums (the sum of the checkpointed changelog offsets of the
// task's store partitions, as Kafka Streams' taskOffsetSums): what the
// balancer's JoinGroup metadata reports, so that the group leader gives a
// task back to the instance whose stores hold it. A store partition without
// a checkpoint (running under at-least-once, or never restored) counts as
// no state: its restore would wipe it. A task whose sum is 0 has nothing to
// restore and is not reported.
func (a *App) localTaskState() map[int32]int64 {
	// The group's client is closed before the db, but a failing begin
	// may close the db first: hold it open while reading.
	a.stats.dbMu.RLock()
	defer a.stats.dbMu.RUnlock()
	if a.db == nil || a.stats.dbClosed {
		return nil
	}
	out := map[int32]int64{}
	seen := map[string]bool{}
	for _, p := range a.plans {
		for _, s := range p.stores {
			if s.Global || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			ckpts, err := a.db.Checkpoints(s.Name)
			if err != nil {
				a.log.Warn("listing local state for the group", "store", s.Name, "error", err)
				continue
			}
			for part, off := range ckpts {
				out[part] += off
			}
		}
	}
	for p, sum := range out {
		if sum <= 0 {
			delete(out, p)
		}
	}
	return out
}
