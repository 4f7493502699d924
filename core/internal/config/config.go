// Package config is an application's configuration: Kafka Streams' keys
// (application.id, processing.guarantee, commit.interval.ms, ...) and
// polystreams' own (polystreams.*), parsed and checked in one place, every
// problem reported at once.
package config

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/polystreams/polystreams/core/internal/serde/registry"
)

// Guarantees, as Kafka Streams names them (processing.guarantee).
const (
	AtLeastOnce   = "at_least_once"
	ExactlyOnceV2 = "exactly_once_v2"
)

// App configures one application. Keys that Kafka Streams users know keep
// their Kafka Streams names; see Parse for the defaults.
type App struct {
	ApplicationID string
	// bootstrap.servers
	Brokers []string
	// processing.guarantee; default at_least_once.
	Guarantee string
	// commit.interval.ms; default 30000 under at_least_once (Kafka Streams').
	CommitInterval time.Duration
	// statestore.cache.max.bytes; default 10 MiB (Kafka Streams'). The
	// record cache in front of each task's stores holds the latest update
	// per key and emits it downstream at commit, or earlier when the cache
	// is full (split evenly between the instance's tasks); 0 emits every
	// update at once. The deprecated cache.max.bytes.buffering is read too.
	CacheMaxBytes int64
	// state.dir; default <tmp>/polystreams. The application's state lives in
	// <state.dir>/<application.id>.
	StateDir string
	// replication.factor of internal topics; default -1 (the broker's).
	ReplicationFactor int16
	// polystreams.bundle.max.records (default 2000), .max.bytes (default
	// 1 MiB), .linger.ms (default 2): how records are bundled for the host.
	BundleMaxRecords int
	BundleMaxBytes   int
	BundleLinger     time.Duration
	// linger.ms (or producer.linger.ms, Kafka Streams' prefixed form);
	// default 5, the Java producer's since Kafka 4.0: how long the
	// engine's producer waits for more records to a partition before it
	// sends them. Outputs, changelog and repartition records all wait it.
	ProducerLinger time.Duration
	// polystreams.broker.wait.ms; default 60000. How long Start waits for
	// a broker of bootstrap.servers to answer before the application fails,
	// naming the brokers and the last connection error (the wait survives a
	// broker that is still starting; a wrong address fails instead of
	// retrying forever). 0 fails at once. Kafka Streams has no such key: its
	// threads retry for as long as the process lives.
	BrokerWait time.Duration
	// application.server: this instance's "host:port" for interactive
	// queries, the address of the engine it runs on as the other
	// instances' engines reach it (docs/design/interactive-queries.md);
	// default empty: the instance takes no part in queries across
	// instances (Kafka Streams' default).
	ApplicationServer string
	// num.standby.replicas; default 0 (Kafka Streams'). Each task gets
	// this many standbys on other instances, which keep warm copies of its
	// stores by tailing their changelogs, so that the task restores little
	// when it moves to one of them (group/balancer.go, standby.go).
	StandbyReplicas int
	// max.task.idle.ms; default 0 (Kafka Streams'). How long a task
	// that reads several partitions (a join, a merge, a repartition topic
	// beside a table) waits on one of them that has nothing buffered before
	// it processes the others' records (engine/idle.go, Kafka Streams'
	// PartitionGroup.readyToProcess): at 0 and above it always waits while
	// the empty partition has records on the broker not fetched yet (or its
	// lag is not known yet), and, once the partition is caught up, up to
	// this many milliseconds more for new records; -1 (MaxTaskIdleDisabled)
	// never waits.
	MaxTaskIdleMs int64
	// session.timeout.ms of the consumer group; 0 keeps the client's 45 s.
	SessionTimeout time.Duration
	// metadata.max.age.ms: how often a pattern source (stream(Pattern))
	// looks for topics created since; 0 is Kafka's default, 5 minutes.
	MetadataMaxAge time.Duration
	// group.instance.id: static membership, so a restarted instance takes
	// its tasks back without waiting for its old session to time out.
	// Default: "<application.id>-<process id>", the process id kept in the
	// state directory (so: one per instance, the same across restarts).
	InstanceID string
	// security.protocol, sasl.mechanism, sasl.username, sasl.password.
	SecurityProtocol, SASLMechanism, SASLUsername, SASLPassword string
	// ssl.ca.location: PEM CA certificates that sign the brokers' (SSL,
	// SASL_SSL); empty trusts the system's. CARoots is the file parsed.
	SSLCALocation string
	CARoots       *x509.CertPool
	// ssl.certificate.location and ssl.key.location: the PEM client
	// certificate and key the engine presents to brokers that require one
	// (mutual TLS). ClientCert is the pair loaded.
	SSLCertLocation, SSLKeyLocation string
	ClientCert                      *tls.Certificate
	// polystreams.memory.max.bytes; default DefaultMemoryMaxBytes (1 GiB),
	// at least MinMemoryMaxBytes. What the engine may hold in memory for
	// the application: record cache, windows and join rows in memory,
	// bundles in flight, fetched records, the producer's buffer and
	// Pebble's share (budget.go). Kafka Streams has no such key.
	MemoryMaxBytes int64
	// MetricsDisabled is polystreams.metrics.enabled=false (default true):
	// nodes, crossings, commits and drops are not counted.
	MetricsDisabled bool

	// default.deserialization.exception.handler (also read as
	// deserialization.exception.handler) and processing.exception.handler
	// (KIP-1033): what happens to a record whose key or value does not
	// decode, and to one whose user function raises. Default: fail.
	DeserializationPolicy, ProcessingPolicy Policy
	// errors.deadletterqueue.topic.name (KIP-1034): where dead_letter (and,
	// as in Kafka Streams, log_and_continue when it is set) writes failed
	// records. Empty: none.
	DeadLetterTopic string

	// Registry: the Schema Registry of the avro serdes
	// (docs/design/schema-registry.md): schema.registry.url,
	// auto.register.schemas (default true), key.subject.name.strategy and
	// value.subject.name.strategy (default TopicNameStrategy),
	// basic.auth.user.info ("user:password"). Confluent's serializer keys.
	Registry registry.Config
	// auto.offset.reset; default OffsetEarliest (Kafka Streams' default,
	// which overrides the consumer's latest). Where a source partition
	// with no committed offset starts: earliest, latest, or none (the
	// application fails naming the partition). A source's own policy
	// (Consumed.withOffsetResetPolicy) overrides it for its topics. It also
	// says, application-wide, where a committed offset the log no longer
	// holds (out of range) resumes: latest at the end, none fails naming the
	// partition, earliest at the log start.
	OffsetReset string
	// default.key.serde and default.value.serde; default bytes. The serde
	// of a source (stream, table, global table) that names none; the
	// operators after it inherit it as they inherit a named one.
	DefaultKeySerde, DefaultValueSerde string
	// DefaultExtractor is default.timestamp.extractor: the built-in
	// TimestampExtractor (class name) of a source that gives none; empty:
	// the records' own timestamps (Kafka Streams' FailOnInvalidTimestamp,
	// less its refusal of negative ones).
	DefaultExtractor string
	// default.production.exception.handler; default fail (Kafka Streams'
	// DefaultProductionExceptionHandler). What happens to an output or
	// changelog record the broker refuses for good (RecordTooLarge, an
	// invalid record, ...): fail stops the application naming the topic,
	// partition and error; continue logs and counts it
	// (polystreams_production_errors_total) and commits past it. Retriable
	// errors are retried by the producer and never reach it.
	ProductionContinue bool
	// num.stream.threads; default 0: no bound. How many of this instance's
	// tasks process a batch at once (each task runs on its own goroutine;
	// Go spreads them over GOMAXPROCS cores). 1 processes one task's batch
	// at a time, as a single Kafka Streams stream thread would.
	StreamThreads int

	// FoldValueRefs: the host understands Bundle.value_refs (its SDK said
	// so with the "fold_value_refs" host feature), so a windowed fold
	// sends each record once.
	FoldValueRefs bool
	// FoldPrograms: the host runs fold programs (Bundle.fold_bases; host
	// feature "fold_programs"), so host functions fold over session and
	// sliding windows.
	FoldPrograms bool
	// HostProcessors: the host runs Processor API processors (host feature
	// "processors": Bundle.stores, inits, after; BundleResult ops).
	HostProcessors bool
	// HostMetadata: the host passes record metadata to functions
	// registered with it (host feature "metadata").
	HostMetadata bool

	// CreateMissingTopics: the brokers are the engine's embedded broker
	// (polystreams dev), so Start creates the topics the topology reads or
	// writes that do not exist yet, with the broker's default partition
	// count, and says so in one log line. Against any other broker a
	// missing source topic fails Start (Kafka Streams'
	// MissingSourceTopicException). Set by the engine, not a config key.
	CreateMissingTopics bool

	// TestDriver is polystreams.test.driver=true: a test driver session
	// (docs/design/test-driver.md); the record cache is flushed only when
	// the session commits after each piped record, never on a timer.
	TestDriver bool

	Logger *slog.Logger
}

// auto.offset.reset's values (Kafka Streams' AutoOffsetReset).
const (
	OffsetEarliest = "earliest"
	OffsetLatest   = "latest"
	OffsetNone     = "none"
)

// ValidOffsetReset reports whether v is a value of auto.offset.reset.
func ValidOffsetReset(v string) bool {
	return v == OffsetEarliest || v == OffsetLatest || v == OffsetNone
}

// MaxTaskIdleDisabled is max.task.idle.ms = -1: a task never waits on an
// empty partition (Kafka Streams' StreamsConfig.MAX_TASK_IDLE_MS_DISABLED).
const MaxTaskIdleDisabled = -1

// DefaultBrokerWait is polystreams.broker.wait.ms's default.
const DefaultBrokerWait = 60 * time.Second

// DefaultProducerLinger is linger.ms's default: the Java producer's since
// Kafka 4.0 (KIP-1030). franz-go's own, 10 ms, was the median of
// map_values' end-to-end latency at 10% load (docs/performance.md).
const DefaultProducerLinger = 5 * time.Millisecond

// Bounds and defaults of polystreams.memory.max.bytes.
const (
	// DefaultMemoryMaxBytes is the budget of an application that sets
	// none, on an engine that sets no other (serve's --max-app-memory).
	DefaultMemoryMaxBytes = 1 << 30
	// MinMemoryMaxBytes is the smallest budget: Pebble's share and a few
	// bundles.
	MinMemoryMaxBytes = 32 << 20
)

// Keys whose values are credentials: never echoed, logged or described.
func sensitive(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.Contains(k, "user.info") ||
		strings.Contains(k, "jaas") || strings.HasSuffix(k, ".key") || strings.Contains(k, "token")
}

// Redact returns config with credential values replaced by "[hidden]".
func Redact(config map[string]string) map[string]string {
	out := make(map[string]string, len(config))
	for k, v := range config {
		if sensitive(k) {
			v = "[hidden]"
		}
		out[k] = v
	}
	return out
}

// Parse reads Kafka Streams style configuration. defaultBrokers is used
// when bootstrap.servers is absent. Every problem is reported at once; errors
// never contain credential values.
func Parse(applicationID string, kv map[string]string, defaultBrokers string) (App, map[string]string, error) {
	c := App{
		ApplicationID:     applicationID,
		Guarantee:         AtLeastOnce,
		StateDir:          filepath.Join(os.TempDir(), "polystreams"),
		ReplicationFactor: -1,
		BundleMaxRecords:  2000,
		BundleMaxBytes:    1 << 20,
		BundleLinger:      2 * time.Millisecond,
		ProducerLinger:    DefaultProducerLinger,
		SecurityProtocol:  "PLAINTEXT",
		CacheMaxBytes:     10 << 20,
		MemoryMaxBytes:    DefaultMemoryMaxBytes,
		BrokerWait:        DefaultBrokerWait,
		Registry:          registry.Config{AutoRegister: true},
		OffsetReset:       OffsetEarliest,
	}
	var errs []error
	if err := checkApplicationID(applicationID); err != nil {
		errs = append(errs, err)
	}
	brokers := defaultBrokers
	if b, ok := kv["bootstrap.servers"]; ok {
		brokers = b
	}
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.Brokers = append(c.Brokers, b)
		}
	}
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("bootstrap.servers is not set and the engine has no --brokers"))
	} else if strings.Contains(brokers, "@") {
		// Not echoed, not kept: it holds a credential.
		c.Brokers = nil
		errs = append(errs, errors.New("bootstrap.servers holds 'user:password@': Kafka takes credentials from sasl.username and sasl.password, never from bootstrap.servers"))
	}
	p := &parsing{c: &c, errs: errs, commitMs: -1}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if set, ok := keys[k]; ok {
			set(p, k, kv[k])
			continue
		}
		hint := ""
		if near := nearestKey(k); near != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", near)
		}
		if sensitive(k) {
			p.fail(fmt.Errorf("config key %q is not known%s (its value is hidden)", k, hint))
		} else {
			p.fail(fmt.Errorf("config key %q is not known%s", k, hint))
		}
	}
	errs, commitMs := p.errs, p.commitMs
	if commitMs < 0 {
		commitMs = 30000
		if c.Guarantee == ExactlyOnceV2 {
			commitMs = 100
		}
	}
	c.CommitInterval = time.Duration(commitMs) * time.Millisecond
	errs = append(errs, c.resolveDeadLetter(p.deadLetterOf)...)
	if strings.HasPrefix(c.SecurityProtocol, "SASL") && c.SASLMechanism == "" {
		c.SASLMechanism = "PLAIN"
	}
	if err := c.loadClientCert(); err != nil {
		errs = append(errs, err)
	}
	return c, c.effective(commitMs), errors.Join(errs...)
}

// effective is the configuration c runs with, as the session's answer
// shows it: every key with its value or default, credentials hidden.
func (c *App) effective(commitMs int64) map[string]string {
	effective := map[string]string{
		"application.id":                 c.ApplicationID,
		"bootstrap.servers":              strings.Join(c.Brokers, ","),
		"processing.guarantee":           c.Guarantee,
		"commit.interval.ms":             strconv.FormatInt(commitMs, 10),
		"state.dir":                      c.StateDir,
		"replication.factor":             strconv.Itoa(int(c.ReplicationFactor)),
		"polystreams.bundle.max.records": strconv.Itoa(c.BundleMaxRecords),
		"polystreams.bundle.max.bytes":   strconv.Itoa(c.BundleMaxBytes),
		"polystreams.bundle.linger.ms":   strconv.FormatInt(c.BundleLinger.Milliseconds(), 10),
		"linger.ms":                      strconv.FormatInt(c.ProducerLinger.Milliseconds(), 10),
		"polystreams.broker.wait.ms":     strconv.FormatInt(c.BrokerWait.Milliseconds(), 10),
		"statestore.cache.max.bytes":     strconv.FormatInt(c.CacheMaxBytes, 10),
		"polystreams.memory.max.bytes":   strconv.FormatInt(c.MemoryMaxBytes, 10),
		"num.standby.replicas":           strconv.Itoa(c.StandbyReplicas),
		"max.task.idle.ms":               strconv.FormatInt(c.MaxTaskIdleMs, 10),
		"security.protocol":              c.SecurityProtocol,
		"polystreams.metrics.enabled":    strconv.FormatBool(!c.MetricsDisabled),

		"default.deserialization.exception.handler": c.DeserializationPolicy.String(),
		"processing.exception.handler":              c.ProcessingPolicy.String(),
		"auto.offset.reset":                         c.OffsetReset,
		"default.key.serde":                         serde.Or(c.DefaultKeySerde, serde.Bytes),
		"default.value.serde":                       serde.Or(c.DefaultValueSerde, serde.Bytes),
		"default.timestamp.extractor":               cmp.Or(c.DefaultExtractor, "FailOnInvalidTimestamp"),
		"default.production.exception.handler":      map[bool]string{false: "fail", true: "continue"}[c.ProductionContinue],
	}
	if c.StreamThreads > 0 {
		effective["num.stream.threads"] = strconv.Itoa(c.StreamThreads)
	}
	if c.TestDriver {
		effective["polystreams.test.driver"] = "true"
	}
	if c.DeadLetterTopic != "" {
		effective["errors.deadletterqueue.topic.name"] = c.DeadLetterTopic
	}
	if c.ApplicationServer != "" {
		effective["application.server"] = c.ApplicationServer
	}
	if c.SSLCALocation != "" {
		effective["ssl.ca.location"] = c.SSLCALocation
	}
	if c.SSLCertLocation != "" {
		effective["ssl.certificate.location"] = c.SSLCertLocation
		effective["ssl.key.location"] = c.SSLKeyLocation
	}
	if len(c.Registry.URLs) > 0 {
		effective["schema.registry.url"] = strings.Join(c.Registry.URLs, ",")
		effective["auto.register.schemas"] = strconv.FormatBool(c.Registry.AutoRegister)
		effective["key.subject.name.strategy"] = c.Registry.KeyStrategy.String()
		effective["value.subject.name.strategy"] = c.Registry.ValueStrategy.String()
		if c.Registry.User != "" {
			effective["basic.auth.user.info"] = "[hidden]"
		}
	}
	if c.SASLMechanism != "" {
		effective["sasl.mechanism"] = c.SASLMechanism
		effective["sasl.username"] = c.SASLUsername
		effective["sasl.password"] = "[hidden]"
	}
	return effective
}

// loadClientCert loads ssl.certificate.location and ssl.key.location, the
// client certificate for the brokers; the error names the files' keys,
// never their content.
func (c *App) loadClientCert() error {
	if (c.SSLCertLocation == "") != (c.SSLKeyLocation == "") {
		return errors.New("ssl.certificate.location and ssl.key.location go together: give both or neither")
	}
	if c.SSLCertLocation == "" {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(c.SSLCertLocation, c.SSLKeyLocation)
	if err != nil {
		what := "ssl.certificate.location / ssl.key.location"
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == c.SSLKeyLocation {
			what = "ssl.key.location"
		} else if errors.As(err, &pe) && pe.Path == c.SSLCertLocation {
			what = "ssl.certificate.location"
		}
		return fmt.Errorf("%s: %w", what, withoutPath(err))
	}
	c.ClientCert = &pair
	return nil
}

// Bounds of the bundle settings: one bundle is one message each way, and
// every bundle in flight is held in memory until its answer comes.
const (
	// MaxBundleRecords bounds polystreams.bundle.max.records.
	MaxBundleRecords = 100_000
	// MaxBundleBytes bounds polystreams.bundle.max.bytes: 16 MiB, a
	// quarter of the engine's default request bound, so that an answer
	// that grows the bundle (flat_map_values) still fits in one request.
	MaxBundleBytes = 16 << 20
	// maxBundleLingerMs bounds polystreams.bundle.linger.ms.
	maxBundleLingerMs = 60_000
	// maxProducerLingerMs bounds linger.ms (the client's own bound).
	maxProducerLingerMs = 60_000
)

// MaxTopicName is Kafka's limit on a topic name, and so on application.id:
// internal topics' names begin with it.
const MaxTopicName = 249

// checkApplicationID checks application.id against Kafka's rules for topic
// names, which internal topics (<application.id>-<store>-changelog) begin
// with, and which the state directory's name is: at most 249 characters of
// ASCII letters, digits, '.', '_' and '-', and not "." or "..". The error
// does not repeat the id (it may be megabytes): it names the first
// character at fault.
func checkApplicationID(id string) error {
	switch {
	case id == "":
		return errors.New("application.id is empty")
	case len(id) > MaxTopicName:
		return fmt.Errorf("application.id is %d bytes long; at most %d (Kafka's limit on topic names, which internal topics begin with)", len(id), MaxTopicName)
	case id == "." || id == "..":
		return errors.New("application.id may not be '.' or '..'")
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return fmt.Errorf("application.id has byte 0x%02x at offset %d: use ASCII letters, digits, '.', '_' and '-' (Kafka's characters for topic names, which internal topics begin with)", b, i)
		}
	}
	return nil
}

// withoutPath is err without the file name an *fs.PathError carries: the
// name is a config value, and errors about config name keys, not values.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot %s the file: %w", pe.Op, pe.Err)
	}
	return err
}

// ClientOpts are the kgo options every client of the application shares:
// brokers, security, and hooks (the engine's broker watch).
func (c *App) ClientOpts(hooks ...kgo.Hook) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID("polystreams-" + c.ApplicationID)}
	if len(hooks) > 0 {
		opts = append(opts, kgo.WithHooks(hooks...))
	}
	if c.SecurityProtocol == "SSL" || c.SecurityProtocol == "SASL_SSL" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.CARoots}
		if c.ClientCert != nil {
			cfg.Certificates = []tls.Certificate{*c.ClientCert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch c.SASLMechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsSha512Mechanism()))
	}
	return opts
}

// validPort reports whether s is a TCP port number, 1 to 65535.
func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 1<<16
}
