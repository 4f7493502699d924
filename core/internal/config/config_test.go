package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// max.task.idle.ms takes -1, 0 and positive milliseconds; anything else
// is refused naming the key, and a typo gets a hint.
func TestMaxTaskIdleConfig(t *testing.T) {
	for v, want := range map[string]int64{"": 0, "-1": -1, "0": 0, "250": 250} {
		kv := map[string]string{}
		if v != "" {
			kv["max.task.idle.ms"] = v
		}
		c, eff, err := Parse("x", kv, "127.0.0.1:1")
		if err != nil || c.MaxTaskIdleMs != want || eff["max.task.idle.ms"] != fmt.Sprint(want) {
			t.Errorf("max.task.idle.ms %q: %d (effective %q), %v; want %d", v, c.MaxTaskIdleMs, eff["max.task.idle.ms"], err, want)
		}
	}
	for _, v := range []string{"-2", "soon", "1.5"} {
		if _, _, err := Parse("x", map[string]string{"max.task.idle.ms": v}, "127.0.0.1:1"); err == nil || err.Error() != "max.task.idle.ms: want -1 (never wait), 0 (wait only for records already on the broker; the default) or a positive number of milliseconds" {
			t.Errorf("max.task.idle.ms %q: %v", v, err)
		}
	}
	if _, _, err := Parse("x", map[string]string{"max.task.idle": "0"}, "127.0.0.1:1"); err == nil || err.Error() != `config key "max.task.idle" is not known (did you mean max.task.idle.ms?)` {
		t.Errorf("typo: %v", err)
	}
}

// application.server takes host:port (any host, a port 1..65535) and shows
// in the effective configuration; anything else is refused naming the key
// and the value.
func TestApplicationServerConfig(t *testing.T) {
	for _, v := range []string{"10.0.0.5:8086", "engine-2.internal:443", "[::1]:9000"} {
		c, eff, err := Parse("x", map[string]string{"application.server": v}, "127.0.0.1:1")
		if err != nil || c.ApplicationServer != v || eff["application.server"] != v {
			t.Errorf("application.server %q: %q (effective %q), %v", v, c.ApplicationServer, eff["application.server"], err)
		}
	}
	if c, eff, err := Parse("x", nil, "127.0.0.1:1"); err != nil || c.ApplicationServer != "" || eff["application.server"] != "" {
		t.Errorf("no application.server: %q %q %v", c.ApplicationServer, eff["application.server"], err)
	}
	for _, v := range []string{"10.0.0.5", ":8086", "h:0", "h:70000", "h:port", "http://h:1"} {
		_, _, err := Parse("x", map[string]string{"application.server": v}, "127.0.0.1:1")
		if want := fmt.Sprintf("application.server %q: want host:port, as the other instances reach this one's engine", v); err == nil || err.Error() != want {
			t.Errorf("application.server %q: %v", v, err)
		}
	}
}

// The operations keys of issue 24: each value known is taken and shown in
// the effective configuration; anything else is refused naming the key.
func TestOperationsKeys(t *testing.T) {
	c, eff, err := Parse("x", map[string]string{
		"auto.offset.reset": "latest", "default.key.serde": "string", "default.value.serde": "long",
		"default.production.exception.handler": "continue", "num.stream.threads": "2",
	}, "127.0.0.1:1")
	if err != nil || c.OffsetReset != OffsetLatest || c.DefaultKeySerde != "string" || c.DefaultValueSerde != "long" || !c.ProductionContinue || c.StreamThreads != 2 {
		t.Fatalf("%+v, %v", c, err)
	}
	if eff["auto.offset.reset"] != "latest" || eff["default.key.serde"] != "string" || eff["default.production.exception.handler"] != "continue" || eff["num.stream.threads"] != "2" {
		t.Errorf("effective: %v", eff)
	}
	c, eff, err = Parse("x", nil, "127.0.0.1:1")
	if err != nil || c.OffsetReset != OffsetEarliest || c.ProductionContinue || c.StreamThreads != 0 || eff["default.key.serde"] != "bytes" || eff["default.production.exception.handler"] != "fail" {
		t.Errorf("defaults: %+v %v, %v", c, eff, err)
	}
	_, _, err = Parse("x", map[string]string{
		"auto.offset.reset": "smallest", "default.key.serde": "avro", "default.value.serde": "",
		"default.production.exception.handler": "retry", "num.stream.threads": "0",
	}, "127.0.0.1:1")
	for _, want := range []string{
		"auto.offset.reset: want earliest (the default), latest or none",
		"default.key.serde: want a serde's name: bytes, string, json, long, integer or double",
		"default.value.serde: want a serde's name",
		"default.production.exception.handler: want fail (the default) or continue",
		"num.stream.threads: want an integer from 1 to 65536",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// linger.ms and producer.linger.ms set the producer's linger, 5 ms unless
// set (the Java producer's default since Kafka 4.0).
func TestProducerLinger(t *testing.T) {
	c, eff, err := Parse("app", nil, "127.0.0.1:9092")
	if err != nil || c.ProducerLinger != 5*time.Millisecond || eff["linger.ms"] != "5" {
		t.Errorf("default: %v, %v, effective %q", err, c.ProducerLinger, eff["linger.ms"])
	}
	for _, key := range []string{"linger.ms", "producer.linger.ms"} {
		c, eff, err = Parse("app", map[string]string{key: "0"}, "127.0.0.1:9092")
		if err != nil || c.ProducerLinger != 0 || eff["linger.ms"] != "0" {
			t.Errorf("%s=0: %v, %v, effective %q", key, err, c.ProducerLinger, eff["linger.ms"])
		}
		for _, bad := range []string{"-1", "60001", "soon"} {
			if _, _, err := Parse("app", map[string]string{key: bad}, "127.0.0.1:9092"); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s=%s: %v, want an error naming %s", key, bad, err, key)
			}
		}
	}
}
