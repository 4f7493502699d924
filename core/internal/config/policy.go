package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Policy is what happens to a record that fails: Kafka Streams' exception
// handlers (default.deserialization.exception.handler,
// processing.exception.handler) and its dead letter queue (KIP-1034).
type Policy int

const (
	// PolicyFail fails the application (LogAndFailExceptionHandler): the
	// failing batch is discarded and nothing of it is committed.
	PolicyFail Policy = iota
	// PolicyContinue logs the record and skips it
	// (LogAndContinueExceptionHandler); it counts as a dropped record.
	PolicyContinue
	// PolicyDeadLetter skips the record like PolicyContinue and writes it
	// to errors.deadletterqueue.topic.name, in the same transaction as the
	// outputs of its batch.
	PolicyDeadLetter
)

func (p Policy) String() string {
	switch p {
	case PolicyContinue:
		return "log_and_continue"
	case PolicyDeadLetter:
		return "dead_letter"
	}
	return "fail"
}

// parsePolicy reads a handler config value: a short name (fail,
// log_and_fail, log_and_continue, dead_letter, dead_letter(topic)) or one of
// Kafka Streams' handler classes, with or without its package. It returns
// the topic a dead_letter(topic) names.
func parsePolicy(key, v string) (Policy, string, error) {
	name := strings.TrimSpace(v)
	name = strings.TrimPrefix(name, "org.apache.kafka.streams.errors.")
	processing := key == "processing.exception.handler"
	switch name {
	case "fail", "log_and_fail":
		return PolicyFail, "", nil
	case "log_and_continue":
		return PolicyContinue, "", nil
	case "dead_letter":
		return PolicyDeadLetter, "", nil
	}
	if strings.HasPrefix(name, "dead_letter(") && strings.HasSuffix(name, ")") {
		topic := strings.TrimSpace(name[len("dead_letter(") : len(name)-1])
		if topic == "" {
			return PolicyFail, "", fmt.Errorf("%s: dead_letter() names no topic", key)
		}
		return PolicyDeadLetter, topic, nil
	}
	fail, cont := "LogAndFailExceptionHandler", "LogAndContinueExceptionHandler"
	if processing {
		fail, cont = "LogAndFailProcessingExceptionHandler", "LogAndContinueProcessingExceptionHandler"
	}
	switch name {
	case fail:
		return PolicyFail, "", nil
	case cont:
		return PolicyContinue, "", nil
	}
	return PolicyFail, "", fmt.Errorf("%s: want fail (log_and_fail), log_and_continue, dead_letter or dead_letter(<topic>), or %s or %s", key, fail, cont)
}

// resolveDeadLetter settles the dead letter topic: dead_letter(topic) in a
// handler sets it, and must agree with errors.deadletterqueue.topic.name and
// the other handler's; dead_letter needs one. As in Kafka Streams (KIP-1034)
// log_and_continue with a dead letter topic writes there too.
func (c *App) resolveDeadLetter(named map[string]string) []error {
	var errs []error
	keys := make([]string, 0, len(named))
	for k := range named {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch t := named[k]; {
		case c.DeadLetterTopic == "":
			c.DeadLetterTopic = t
		case c.DeadLetterTopic != t:
			errs = append(errs, fmt.Errorf("%s = dead_letter(%s) names another topic than %s", k, t, c.DeadLetterTopic))
		}
	}
	if c.DeadLetterTopic == "" {
		if c.DeserializationPolicy == PolicyDeadLetter {
			errs = append(errs, errors.New("default.deserialization.exception.handler = dead_letter needs errors.deadletterqueue.topic.name (or dead_letter(<topic>))"))
		}
		if c.ProcessingPolicy == PolicyDeadLetter {
			errs = append(errs, errors.New("processing.exception.handler = dead_letter needs errors.deadletterqueue.topic.name (or dead_letter(<topic>))"))
		}
		return errs
	}
	if c.DeserializationPolicy == PolicyContinue {
		c.DeserializationPolicy = PolicyDeadLetter
	}
	if c.ProcessingPolicy == PolicyContinue {
		c.ProcessingPolicy = PolicyDeadLetter
	}
	return errs
}
