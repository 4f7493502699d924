package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/serde/registry"
)

// parsing is what Parse carries while it reads the keys: the App it fills,
// the problems found so far and what is settled only after every key.
type parsing struct {
	c            *App
	errs         []error
	commitMs     int64             // -1: the guarantee's default
	deadLetterOf map[string]string // handler key -> topic named in dead_letter(topic)
}

func (p *parsing) fail(err error) { p.errs = append(p.errs, err) }

// num reads v as a non-negative integer (0 and a problem when it is not).
func (p *parsing) num(k, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		p.fail(fmt.Errorf("%s: want a non-negative integer", k))
		return 0
	}
	return n
}

// bounded reads v as an integer from lo to hi.
func (p *parsing) bounded(k, v string, lo, hi int64) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		p.fail(fmt.Errorf("%s: want an integer from %d to %d", k, lo, hi))
		return 0, false
	}
	return n, true
}

// boolean reads v as true or false.
func (p *parsing) boolean(k, v string) bool {
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(fmt.Errorf("%s: want true or false", k))
	}
	return b
}

// oneOf sets *field to v upper-cased, which must be one of want.
func (p *parsing) oneOf(k, v string, field *string, want ...string) {
	*field = strings.ToUpper(v)
	if !slices.Contains(want, *field) {
		p.fail(fmt.Errorf("%s: want %s or %s", k, strings.Join(want[:len(want)-1], ", "), want[len(want)-1]))
	}
}

// keys are the config keys Parse knows, each with what it sets. A key
// missing here is refused with the nearest known one as a hint.
var keys = map[string]func(p *parsing, k, v string){
	"bootstrap.servers": func(*parsing, string, string) {}, // read before the others (Parse)
	"application.id":    func(*parsing, string, string) {}, // the session's
	"processing.guarantee": func(p *parsing, k, v string) {
		p.c.Guarantee = v
		if v != AtLeastOnce && v != ExactlyOnceV2 {
			p.fail(errors.New("processing.guarantee: want at_least_once or exactly_once_v2"))
		}
	},
	"commit.interval.ms":         func(p *parsing, k, v string) { p.commitMs = p.num(k, v) },
	"statestore.cache.max.bytes": func(p *parsing, k, v string) { p.c.CacheMaxBytes = p.num(k, v) },
	"cache.max.bytes.buffering":  func(p *parsing, k, v string) { p.c.CacheMaxBytes = p.num(k, v) },
	"application.server": func(p *parsing, k, v string) {
		p.c.ApplicationServer = v
		if host, port, err := net.SplitHostPort(v); v != "" && (err != nil || host == "" || !validPort(port)) {
			p.fail(fmt.Errorf("application.server %q: want host:port, as the other instances reach this one's engine", v))
		}
	},
	"num.standby.replicas": func(p *parsing, k, v string) { p.c.StandbyReplicas = int(min(p.num(k, v), 1<<10)) },
	"max.task.idle.ms": func(p *parsing, k, v string) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < MaxTaskIdleDisabled {
			p.fail(fmt.Errorf("%s: want -1 (never wait), 0 (wait only for records already on the broker; the default) or a positive number of milliseconds", k))
		}
		p.c.MaxTaskIdleMs = n
	},
	"auto.offset.reset": func(p *parsing, k, v string) {
		if !ValidOffsetReset(v) {
			p.fail(fmt.Errorf("%s: want earliest (the default), latest or none", k))
		}
		p.c.OffsetReset = v
	},
	"default.key.serde":   func(p *parsing, k, v string) { p.defaultSerde(k, v, &p.c.DefaultKeySerde) },
	"default.value.serde": func(p *parsing, k, v string) { p.defaultSerde(k, v, &p.c.DefaultValueSerde) },
	"default.timestamp.extractor": func(p *parsing, k, v string) {
		name := strings.TrimPrefix(strings.TrimSpace(v), "org.apache.kafka.streams.processor.")
		switch name {
		case "FailOnInvalidTimestamp", "LogAndSkipOnInvalidTimestamp", "UsePartitionTimeOnInvalidTimestamp", "WallclockTimestampExtractor":
			p.c.DefaultExtractor = name
		default:
			p.fail(fmt.Errorf("%s: want one of Kafka Streams' built-in extractors: FailOnInvalidTimestamp (the default), LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp or WallclockTimestampExtractor (a function is given to a source: timestamp_extractor)", k))
		}
	},
	"default.production.exception.handler": func(p *parsing, k, v string) {
		switch strings.TrimPrefix(strings.TrimSpace(v), "org.apache.kafka.streams.errors.") {
		case "fail", "DefaultProductionExceptionHandler":
			p.c.ProductionContinue = false
		case "continue":
			p.c.ProductionContinue = true
		default:
			p.fail(fmt.Errorf("%s: want fail (the default) or continue", k))
		}
	},
	"num.stream.threads": func(p *parsing, k, v string) {
		if n, ok := p.bounded(k, v, 1, 1<<16); ok {
			p.c.StreamThreads = int(n)
		}
	},
	"session.timeout.ms": func(p *parsing, k, v string) { p.c.SessionTimeout = time.Duration(p.num(k, v)) * time.Millisecond },
	"metadata.max.age.ms": func(p *parsing, k, v string) {
		if n, ok := p.bounded(k, v, 1, 1<<31-1); ok {
			p.c.MetadataMaxAge = time.Duration(n) * time.Millisecond
		}
	},
	"group.instance.id": func(p *parsing, k, v string) { p.c.InstanceID = v },
	"state.dir":         func(p *parsing, k, v string) { p.c.StateDir = v },
	"replication.factor": func(p *parsing, k, v string) {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n == 0 || n < -1 {
			p.fail(errors.New("replication.factor: want -1 or a positive integer"))
		}
		p.c.ReplicationFactor = int16(n)
	},
	"polystreams.bundle.max.records": func(p *parsing, k, v string) {
		if n, ok := p.bounded(k, v, 1, MaxBundleRecords); ok {
			p.c.BundleMaxRecords = int(n)
		}
	},
	"polystreams.bundle.max.bytes": func(p *parsing, k, v string) {
		if n, ok := p.bounded(k, v, 1, MaxBundleBytes); ok {
			p.c.BundleMaxBytes = int(n)
		}
	},
	"polystreams.memory.max.bytes": func(p *parsing, k, v string) {
		if n, ok := p.bounded(k, v, MinMemoryMaxBytes, math.MaxInt64); ok {
			p.c.MemoryMaxBytes = n
		}
	},
	"polystreams.broker.wait.ms": func(p *parsing, k, v string) { p.c.BrokerWait = time.Duration(p.num(k, v)) * time.Millisecond },
	"polystreams.bundle.linger.ms": func(p *parsing, k, v string) {
		if n, ok := p.bounded(k, v, 0, maxBundleLingerMs); ok {
			p.c.BundleLinger = time.Duration(n) * time.Millisecond
		}
	},
	"linger.ms":          producerLinger,
	"producer.linger.ms": producerLinger,
	"security.protocol": func(p *parsing, k, v string) {
		p.oneOf(k, v, &p.c.SecurityProtocol, "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
	},
	"sasl.mechanism": func(p *parsing, k, v string) {
		p.oneOf(k, v, &p.c.SASLMechanism, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
	},
	"sasl.username":               func(p *parsing, k, v string) { p.c.SASLUsername = v },
	"sasl.password":               func(p *parsing, k, v string) { p.c.SASLPassword = v },
	"polystreams.test.driver":     func(p *parsing, k, v string) { p.c.TestDriver = p.boolean(k, v) },
	"polystreams.metrics.enabled": func(p *parsing, k, v string) { p.c.MetricsDisabled = !p.boolean(k, v) },
	"ssl.certificate.location":    func(p *parsing, k, v string) { p.c.SSLCertLocation = v },
	"ssl.key.location":            func(p *parsing, k, v string) { p.c.SSLKeyLocation = v },
	"ssl.ca.location": func(p *parsing, k, v string) {
		p.c.SSLCALocation = v
		if pem, err := os.ReadFile(v); err != nil {
			p.fail(fmt.Errorf("ssl.ca.location: %w", withoutPath(err)))
		} else if p.c.CARoots = x509.NewCertPool(); !p.c.CARoots.AppendCertsFromPEM(pem) {
			p.fail(errors.New("ssl.ca.location: the file holds no PEM certificate"))
		}
	},
	"default.deserialization.exception.handler": func(p *parsing, k, v string) { p.policy(k, v, &p.c.DeserializationPolicy) },
	"deserialization.exception.handler":         func(p *parsing, k, v string) { p.policy(k, v, &p.c.DeserializationPolicy) },
	"processing.exception.handler":              func(p *parsing, k, v string) { p.policy(k, v, &p.c.ProcessingPolicy) },
	"errors.deadletterqueue.topic.name":         func(p *parsing, k, v string) { p.c.DeadLetterTopic = strings.TrimSpace(v) },
	"schema.registry.url": func(p *parsing, k, v string) {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				p.c.Registry.URLs = append(p.c.Registry.URLs, u)
			}
		}
	},
	"auto.register.schemas":       func(p *parsing, k, v string) { p.c.Registry.AutoRegister = p.boolean(k, v) },
	"key.subject.name.strategy":   func(p *parsing, k, v string) { p.strategy(k, v, &p.c.Registry.KeyStrategy) },
	"value.subject.name.strategy": func(p *parsing, k, v string) { p.strategy(k, v, &p.c.Registry.ValueStrategy) },
	"basic.auth.user.info": func(p *parsing, k, v string) {
		user, pass, ok := strings.Cut(v, ":")
		if !ok {
			p.fail(fmt.Errorf("%s: want user:password (the value is hidden)", k))
		}
		p.c.Registry.User, p.c.Registry.Password = user, pass
	},
}

// configKeys are the keys Parse knows, sorted, for "did you mean" hints.
var configKeys = func() []string {
	ks := make([]string, 0, len(keys))
	for k := range keys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}()

// defaultSerde sets a default.key.serde / default.value.serde.
func (p *parsing) defaultSerde(k, v string, field *string) {
	name := strings.TrimSpace(v)
	switch err := serde.Check(name); {
	case err != nil || name == "":
		p.fail(fmt.Errorf("%s: want a serde's name: bytes, string, json, long, integer or double", k))
	case serde.IsRegistry(name):
		// A registry serde is a topic's format with a schema and a
		// subject: named on the source or sink that reads or writes it,
		// never by default.
		p.fail(fmt.Errorf("%s: want a serde's name: bytes, string, json, long, integer or double (a Schema Registry serde is named on its stream, table or to)", k))
	default:
		*field = name
	}
}

// policy sets an exception handler's policy, noting a dead_letter(topic)
// for resolveDeadLetter.
func (p *parsing) policy(k, v string, field *Policy) {
	pol, topic, err := parsePolicy(k, v)
	if err != nil {
		p.fail(err)
	}
	*field = pol
	if topic != "" {
		if p.deadLetterOf == nil {
			p.deadLetterOf = map[string]string{}
		}
		p.deadLetterOf[k] = topic
	}
}

// strategy sets a subject name strategy.
func (p *parsing) strategy(k, v string, field *registry.Strategy) {
	st, err := registry.ParseStrategy(v)
	if err != nil {
		p.fail(fmt.Errorf("%s: %w", k, err))
	}
	*field = st
}

// producerLinger reads linger.ms and producer.linger.ms (Kafka Streams
// takes a producer setting either way).
func producerLinger(p *parsing, k, v string) {
	if n, ok := p.bounded(k, v, 0, maxProducerLingerMs); ok {
		p.c.ProducerLinger = time.Duration(n) * time.Millisecond
	}
}
