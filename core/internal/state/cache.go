package state

// The read cache of a store partition: the rows Pebble holds for the keys
// read or written lately, so that an aggregation updating the same keys
// batch after batch (a count of words, a sum per customer) reads them from
// a map instead of Pebble's memtable and sstables. Kafka Streams' caching
// stores serve reads from their ThreadCache in the same way.
//
// The cache mirrors Pebble: every write through the Partition (Apply,
// DeleteRange, Wipe) updates or drops what it holds, so it never answers
// with a row Pebble does not hold. Writes that do not go through this
// Partition (another Partition of the same store and number) are not
// seen: only the partition's owner (a task) enables its cache.

// cacheRowOverhead approximates a cached row's bookkeeping (the map's
// entry, the key's string header, the row), so that a cache of many small
// rows is still bounded.
const cacheRowOverhead = 64

type cachedRow struct {
	value []byte // nil: Pebble holds no row for the key
	ts    int64
}

type rowCache struct {
	rows  map[string]cachedRow
	bytes int
	limit int
}

func rowBytes(key string, value []byte) int { return len(key) + len(value) + cacheRowOverhead }

// SetCacheLimit enables the partition's read cache, holding at most about
// limit bytes of rows, or disables it and drops what it holds when limit
// is 0 or less. Rows beyond a lowered limit are evicted at once.
func (p *Partition) SetCacheLimit(limit int) {
	if limit <= 0 {
		p.cache = nil
		return
	}
	if p.cache == nil {
		p.cache = &rowCache{rows: map[string]cachedRow{}}
	}
	p.cache.limit = limit
	p.cache.evict()
}

// CacheBytes is the size of what the read cache holds.
func (p *Partition) CacheBytes() int {
	if p.cache == nil {
		return 0
	}
	return p.cache.bytes
}

// DropCache empties the read cache (it stays enabled).
func (p *Partition) DropCache() {
	if p.cache != nil {
		p.cache.drop()
	}
}

func (c *rowCache) drop() {
	clear(c.rows)
	c.bytes = 0
}

// lookup returns a copy of key's cached value (nil: absent), its
// timestamp, and whether the cache knows key.
func (c *rowCache) lookup(key []byte) ([]byte, int64, bool) {
	r, ok := c.rows[string(key)]
	if !ok {
		return nil, 0, false
	}
	if r.value == nil {
		return nil, 0, true
	}
	return append(make([]byte, 0, len(r.value)), r.value...), r.ts, true
}

// store caches key's row as Pebble now holds it (value nil: absent),
// keeping its own copy of value.
func (c *rowCache) store(key []byte, value []byte, ts int64) {
	if value != nil {
		value = append(make([]byte, 0, len(value)), value...)
	}
	if old, ok := c.rows[string(key)]; ok {
		c.bytes += len(value) - len(old.value)
		c.rows[string(key)] = cachedRow{value, ts}
	} else {
		k := string(key)
		c.rows[k] = cachedRow{value, ts}
		c.bytes += rowBytes(k, value)
	}
	if c.bytes > c.limit {
		c.evict()
	}
}

// evict drops rows until the cache holds at most three quarters of its
// limit, so that a full cache does not evict on every store. The rows
// dropped are the map's iteration order: random, not least recently used,
// which costs no bookkeeping per read.
func (c *rowCache) evict() {
	if c.bytes <= c.limit {
		return
	}
	target := c.limit / 4 * 3
	for k, r := range c.rows {
		if c.bytes <= target {
			return
		}
		delete(c.rows, k)
		c.bytes -= rowBytes(k, r.value)
	}
}
