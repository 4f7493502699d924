package state

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Replay turns a store partition's changelog records into its writes, as a
// restore and a standby apply them (the engine reads the changelogs:
// engine/restore.go, engine/standby.go).
type Replay struct {
	// FromLog maps a changelog key to the store's key; nil: they are the
	// same.
	FromLog func(logKey []byte) ([]byte, error)
	// Version, when set (a versioned store), makes a record's writes in
	// place of FromLog, and Finish adds what the records together write
	// (the stream time they moved to).
	Version func(ws []Write, r *kgo.Record) ([]Write, error)
	Finish  func(ws []Write) []Write
}

// Writes appends the writes of records to ws, transaction markers left
// out. An error names the record (topic/partition@offset).
func (rp Replay) Writes(ws []Write, records []*kgo.Record) ([]Write, error) {
	var err error
	for _, r := range records {
		if r.Attrs.IsControl() {
			continue
		}
		if rp.Version != nil {
			if ws, err = rp.Version(ws, r); err != nil {
				return ws, fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			continue
		}
		key := r.Key
		if rp.FromLog != nil {
			if key, err = rp.FromLog(r.Key); err != nil {
				return ws, fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
		}
		ws = append(ws, Write{Key: key, Value: r.Value, TS: r.Timestamp.UnixMilli()})
	}
	if rp.Finish != nil {
		ws = rp.Finish(ws)
	}
	return ws, nil
}

// ReplayFrom returns the changelog offset to read the partition from: its
// checkpoint, or 0 once wiped when it has none (its rows are then not to
// be trusted).
func (p *Partition) ReplayFrom() (int64, error) {
	from, ok, err := p.Checkpoint()
	if err != nil {
		return 0, err
	}
	if !ok {
		if err := p.Wipe(); err != nil {
			return 0, err
		}
		from = 0
	}
	return from, nil
}
