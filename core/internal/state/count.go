package state

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Count returns how many keys the partition holds, counting no further than
// limit. Safe for concurrent use with writes to the partition (it reads
// what Pebble holds when each key is reached).
func (p *Partition) Count(limit int64) (int64, error) {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: p.prefix, UpperBound: p.end()})
	if err != nil {
		return 0, fmt.Errorf("state: count store %s partition %d: %w", p.Store, p.Number, err)
	}
	defer it.Close()
	var n int64
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
	}
	return n, it.Error()
}
