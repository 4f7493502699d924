package topology

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// ExtractorRecord is what a TimestampExtractor sees of a record: its key
// and value as they are on the topic (nil is null), and where it is.
type ExtractorRecord struct {
	Key, Value []byte
	Topic      string
	Partition  int32
	Offset     int64
	// Timestamp is the record's own timestamp (epoch ms).
	Timestamp int64
}

// TimestampExtractorFunc is a Go TimestampExtractor
// (Consumed.withTimestampExtractor): the record's timestamp in ms, given
// its partition's time (the largest timestamp extracted so far, -1 before
// any). A negative answer drops the record; an error fails the
// application, as a TimestampExtractor that throws does in Kafka Streams.
type TimestampExtractorFunc func(r ExtractorRecord, partitionTime int64) (int64, error)

var extractorNative = reflect.TypeFor[TimestampExtractorFunc]()

// The built-in extractors of Kafka Streams, by class name.
const (
	FailOnInvalidTimestamp             = "FailOnInvalidTimestamp"
	LogAndSkipOnInvalidTimestamp       = "LogAndSkipOnInvalidTimestamp"
	UsePartitionTimeOnInvalidTimestamp = "UsePartitionTimeOnInvalidTimestamp"
	WallclockTimestampExtractor        = "WallclockTimestampExtractor"
)

// ErrInvalidTimestamp is the error of FailOnInvalidTimestamp and
// UsePartitionTimeOnInvalidTimestamp for a record they cannot stamp.
var ErrInvalidTimestamp = errors.New("invalid (negative) timestamp")

// builtinExtractor is Kafka Streams' extractor class name as a Go
// function; nil when name is none of them.
func builtinExtractor(name string) TimestampExtractorFunc {
	switch name {
	case FailOnInvalidTimestamp:
		return func(r ExtractorRecord, _ int64) (int64, error) {
			if r.Timestamp < 0 {
				return 0, fmt.Errorf("input record has %w %d (FailOnInvalidTimestamp); use a different TimestampExtractor to process this data", ErrInvalidTimestamp, r.Timestamp)
			}
			return r.Timestamp, nil
		}
	case LogAndSkipOnInvalidTimestamp:
		// A negative timestamp is returned as it is: the record is dropped.
		return func(r ExtractorRecord, _ int64) (int64, error) { return r.Timestamp, nil }
	case UsePartitionTimeOnInvalidTimestamp:
		return func(r ExtractorRecord, partitionTime int64) (int64, error) {
			if r.Timestamp >= 0 {
				return r.Timestamp, nil
			}
			if partitionTime < 0 {
				return 0, fmt.Errorf("input record has %w %d and its partition time is unknown (UsePartitionTimeOnInvalidTimestamp): could not infer a new timestamp", ErrInvalidTimestamp, r.Timestamp)
			}
			return partitionTime, nil
		}
	case WallclockTimestampExtractor:
		return func(ExtractorRecord, int64) (int64, error) { return time.Now().UnixMilli(), nil }
	}
	return nil
}

// extractor checks a source's TimestampExtractor and resolves a built-in
// one to its Go function; nil when the source gives none.
func (c *call) extractor(fn *Function) *Function {
	if fn == nil && c.b.DefaultExtractor != "" {
		fn = &Function{Builtin: c.b.DefaultExtractor}
	}
	if fn == nil {
		return nil
	}
	f := *fn
	if f.Builtin != "" {
		if f.Token != 0 || f.Native != nil {
			c.invalid("%s: timestamp extractor names built-in %q and a function; give one", c.op, f.Builtin)
			return nil
		}
		native := builtinExtractor(f.Builtin)
		if native == nil {
			c.invalid("%s: timestamp extractor %.60q is not a built-in one: want %s, %s, %s or %s, or a function", c.op, f.Builtin,
				FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp, WallclockTimestampExtractor)
			return nil
		}
		f.Native = native
		return &f
	}
	before := len(c.problems)
	c.function(f, extractorNative)
	if len(c.problems) > before {
		return nil
	}
	return &f
}
