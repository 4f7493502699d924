package streams

import "github.com/polystreams/polystreams/core/internal/topology"

// ExtractorRecord is what a TimestampExtractorFunc sees of a record: its
// key and value as on the topic (nil is null), its topic, partition,
// offset and own timestamp (epoch ms).
type ExtractorRecord = topology.ExtractorRecord

// TimestampExtractorFunc is a source's TimestampExtractor: the record's
// timestamp in ms, given its partition's time (the largest timestamp
// extracted from the partition so far, -1 before any). A negative answer
// drops the record (a warning naming topic, partition and offset, and
// dropped-records, as Kafka Streams' RecordQueue); an error stops the
// application with the record named, as a TimestampExtractor that throws
// stops Kafka Streams.
type TimestampExtractorFunc = topology.TimestampExtractorFunc

// TimestampExtractor is Consumed.withTimestampExtractor for Stream and
// Table: the timestamp each record of the source is processed with (and
// its outputs carry), in place of the record's own. It runs in the engine.
// A GlobalTable does not take one: Kafka Streams' global tables keep the
// records' own timestamps.
func TimestampExtractor(f TimestampExtractorFunc) Option {
	return Option{kind: optExtractor, fn: &topology.Function{Native: f}}
}

// BuiltinTimestampExtractor is TimestampExtractor with one of Kafka
// Streams' extractors, by class name: FailOnInvalidTimestamp,
// LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp or
// WallclockTimestampExtractor. Another name is refused (ErrInvalid).
func BuiltinTimestampExtractor(name string) Option {
	return Option{kind: optExtractor, fn: &topology.Function{Builtin: name}}
}

// Kafka Streams' built-in timestamp extractors (BuiltinTimestampExtractor).
const (
	// FailOnInvalidTimestamp takes the record's timestamp; a negative one
	// stops the application (Kafka Streams' default extractor).
	FailOnInvalidTimestamp = topology.FailOnInvalidTimestamp
	// LogAndSkipOnInvalidTimestamp takes the record's timestamp; a record
	// with a negative one is dropped with a warning.
	LogAndSkipOnInvalidTimestamp = topology.LogAndSkipOnInvalidTimestamp
	// UsePartitionTimeOnInvalidTimestamp takes the record's timestamp, or
	// for a negative one the partition's time; with none known yet it
	// stops the application.
	UsePartitionTimeOnInvalidTimestamp = topology.UsePartitionTimeOnInvalidTimestamp
	// WallclockTimestampExtractor takes the engine's clock at processing
	// time.
	WallclockTimestampExtractor = topology.WallclockTimestampExtractor
)
