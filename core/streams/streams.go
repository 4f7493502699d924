// Package streams is the public Go API of the polystreams engine: Kafka
// Streams' DSL for Go programs that embed the engine. Functions are plain Go
// functions over serialized bytes and run in the engine's tasks, with no
// crossing to a host process.
//
//	b := streams.NewBuilder()
//	lines, err := b.Stream([]string{"lines"}, streams.KeySerde("string"), streams.ValueSerde("string"))
//	words, err := lines.FlatMapValues(split)
//	counts, err := words.GroupBy(wordKey)...Count()
//	...
//	app, err := streams.New(b, streams.Config{ApplicationID: "wordcount", Brokers: "127.0.0.1:9092"})
//	err = app.Start(ctx)
//	defer app.Stop(ctx)
//
// Tables read a topic as the latest value per key and aggregate its changes:
//
//	users, err := b.Table("users", streams.KeySerde("string"), streams.ValueSerde("string"))
//	byRegion, err := users.GroupBy(regionOfUser) // each change: old pair out, new pair in
//	counts, err := byRegion.Count()              // or Reduce/Aggregate with a subtractor
//
// Node names, store names, internal topics, serdes and Describe() text are
// those of Kafka Streams, as for every polystreams SDK. A builder method that
// is refused returns an error naming the operator and what is wrong (it
// wraps ErrInvalid or ErrNotFound) and changes nothing.
package streams

import (
	"github.com/polystreams/polystreams/core/internal/serde"

	"errors"
	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Functions an operator runs, over serialized bytes (nil is a Kafka null).
// A function that returns an error fails its record: the application stops
// with a *RecordError naming the topic, partition, offset and node.
type (
	// MapValuesFunc returns the new value (MapValues).
	MapValuesFunc = topology.MapValuesFunc
	// PredicateFunc decides whether a record passes (Filter, FilterNot).
	PredicateFunc = topology.PredicateFunc
	// ValueJoinerFunc joins a stream's or this table's value with the other
	// table's value (nil: none, in a LeftJoin; either, in an OuterJoin)
	// into the output value (Join, LeftJoin, OuterJoin).
	ValueJoinerFunc = topology.ValueJoinerFunc
	// FlatMapValuesFunc returns zero or more new values (FlatMapValues).
	FlatMapValuesFunc = topology.FlatMapValuesFunc
	// MapFunc returns a new key and value (Map).
	MapFunc = topology.MapFunc
	// FlatMapFunc returns zero or more new records, keys and values
	// (FlatMap).
	FlatMapFunc = topology.FlatMapFunc
	// KeyValue is one record a FlatMapFunc returns.
	KeyValue = topology.KeyValue
	// MapValuesWithKeyFunc returns the new value; it reads the key but
	// cannot change it (MapValuesWithKey: Kafka's ValueMapperWithKey).
	MapValuesWithKeyFunc = topology.MapValuesWithKeyFunc
	// FlatMapValuesWithKeyFunc returns zero or more new values, reading the
	// key (FlatMapValuesWithKey).
	FlatMapValuesWithKeyFunc = topology.FlatMapValuesWithKeyFunc
	// KeyValueMapper returns a new key (SelectKey, GroupBy).
	KeyValueMapper = topology.SelectKeyFunc
	// ForeachFunc sees each record (Peek, Foreach).
	ForeachFunc = topology.ForeachFunc
	// ReducerFunc folds a value into a key's aggregate (Reduce).
	ReducerFunc = topology.ReduceFunc
	// AggregatorFunc folds a key's value into its aggregate (Aggregate).
	AggregatorFunc = topology.AggregateFunc
	// InitializerFunc gives a key's first aggregate (Aggregate).
	InitializerFunc = topology.InitializerFunc
)

// Serde names, as every polystreams SDK and the protocol spell them, with
// Kafka's encodings.
const (
	Bytes   = "bytes"   // passed through (Serdes.ByteArray)
	String  = "string"  // UTF-8 (Serdes.String)
	JSON    = "json"    // UTF-8 JSON
	Long    = "long"    // 8-byte big-endian two's complement (Serdes.Long)
	Integer = "integer" // 4-byte big-endian two's complement (Serdes.Integer)
	Double  = "double"  // 8-byte big-endian IEEE 754 (Serdes.Double)
	// Avro is the Schema Registry Avro serde (the Confluent wire format),
	// a topic's format: named on Stream, Table, GlobalTable or To, it
	// decodes to JSON records where they enter and encodes JSON back where
	// they leave; the registry is the config's schema.registry.url. As a
	// sink's serde, Avro alone writes with the subject's latest schema;
	// AvroWith names the schema. See docs/design/schema-registry.md.
	Avro = serde.Avro
)

// JSONSchema is the Schema Registry JSON Schema serde (the Confluent wire
// format with a JSON payload, validated against its schema), a topic's
// format as Avro is; JSONSchemaWith names the sink's schema.
const JSONSchema = serde.JSONSchema

// JSONSchemaWith is the JSON Schema serde with schema: a sink registers it
// under the topic's subject and validates each record against it.
func JSONSchemaWith(schema string) string { return serde.JSONSchemaWith(schema) }

// Protobuf is the Schema Registry Protobuf serde (the Confluent wire format
// with message indexes), a topic's format as Avro is: a source decodes the
// record's message to JSON (proto field names, every field present; 64-bit
// integers are strings, as protojson writes them), a sink encodes JSON
// back; ProtobufWith names the schema.
const Protobuf = serde.Protobuf

// ProtobufWith is the Protobuf serde with schema (.proto text): a sink
// registers it under the topic's subject and writes its first message; a
// source reads each record into its message of the same full name (else
// its first).
func ProtobufWith(schema string) string { return serde.ProtobufWith(schema) }

// ProtobufWithMessage is the Protobuf serde with schema (.proto text;
// empty: the subject's latest) whose sink writes message (its full name,
// or its name in the schema's package: "Refund", nested "Order.Line")
// with that message's indexes, instead of the schema's first.
func ProtobufWithMessage(schema, message string) string {
	return serde.ProtobufWithMessage(schema, message)
}

// AvroWith is the Avro serde with schema (Avro's JSON form): a sink
// registers it under the topic's subject (auto.register.schemas, default
// true) and writes with it; a source reads each record's schema into it.
func AvroWith(schema string) string { return serde.AvroWith(schema) }

// Builtin names a reducer that runs in the engine (ReduceBuiltin).
type Builtin string

// The built-in reducers: Sum, Min and Max need long or double values;
// Latest keeps the last value of any serde.
const (
	Sum    Builtin = topology.BuiltinSum
	Min    Builtin = topology.BuiltinMin
	Max    Builtin = topology.BuiltinMax
	Latest Builtin = topology.BuiltinLatest
)

// The built-in joiners, passed where a join takes a joiner (every kind of
// join): they run in the engine, never calling Go code per record.
// PairJoiner makes the JSON array [this value, other value], each side
// decoded by its serde (String, JSON, Long, Integer, Double; null for a
// missing side; a side of Bytes is refused when the join is built), in JSON.
// ThisJoiner keeps this side's value and OtherJoiner the other side's (nil
// when missing), in that side's value serde. With a built-in, a ValueSerde
// option other than the built-in's result serde is refused: the engine
// does not convert. Called directly, they return an error.
var (
	PairJoiner  ValueJoinerFunc = pairJoiner
	ThisJoiner  ValueJoinerFunc = thisJoiner
	OtherJoiner ValueJoinerFunc = otherJoiner
)

func pairJoiner(_, _ []byte) ([]byte, error) {
	return nil, errors.New("streams: PairJoiner runs in the engine; pass it to a join")
}

func thisJoiner(_, _ []byte) ([]byte, error) {
	return nil, errors.New("streams: ThisJoiner runs in the engine; pass it to a join")
}

func otherJoiner(_, _ []byte) ([]byte, error) {
	return nil, errors.New("streams: OtherJoiner runs in the engine; pass it to a join")
}

// builtinJoiners maps the builder's names of the built-in joiners to their
// values here (compared by function pointer).
var builtinJoiners = map[string]ValueJoinerFunc{
	topology.JoinerPair:  pairJoiner,
	topology.JoinerThis:  thisJoiner,
	topology.JoinerOther: otherJoiner,
}

// Errors builder calls wrap: ErrNotFound for a stream that belongs to
// another Builder, ErrInvalid for everything else (a wrong kind, an unknown
// serde, an illegal or duplicate name, an option the operator does not
// take).
var (
	ErrInvalid  = topology.ErrInvalid
	ErrNotFound = topology.ErrNotFound
)

// RecordError is the error of an application stopped by a failed record:
// the record's topic, partition and offset, and the node it failed in.
type RecordError = engine.RecordError

// State is an application's state.
type State = engine.State

// The states of an App, in the order it passes through them. Restoring
// comes between Rebalancing and Running while tasks restore their stores
// from the changelogs. Degraded stands for Running (or Rebalancing, or
// Restoring) while no broker has answered the application for 10 s; it
// is entered at most 11 s after the last answer, and left by itself within
// 1 s of a broker answering again. The application does not fail because of
// it (docs/observability.md).
const (
	Created     = engine.Created
	Rebalancing = engine.Rebalancing
	Restoring   = engine.Restoring
	Running     = engine.Running
	Degraded    = engine.Degraded
	Stopped     = engine.Stopped
	Failed      = engine.Failed
)
