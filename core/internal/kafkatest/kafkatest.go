// Package kafkatest runs a real Apache Kafka broker (the version pinned in
// tools/kafka/VERSION) for tests: a single KRaft node started through
// tools/kafka/kafka.sh as a child process group, stopped, killed or
// restarted on the same ports and data, and never left behind.
//
// The environment variable POLYSTREAMS_TEST_BROKER=kafka makes the suites
// that carry Kafka compatibility run against it instead of the embedded
// kfake broker (Enabled). A package shares one broker between its tests
// (Shared, stopped by Main); Reset gives each test an empty broker with its
// topics. docs/design/kafka-harness.md explains the choices.
package kafkatest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvVar names the switch: "kafka" selects the real broker.
const EnvVar = "POLYSTREAMS_TEST_BROKER"

// Enabled reports whether tests run against a real Apache Kafka broker
// (POLYSTREAMS_TEST_BROKER=kafka) rather than kfake.
func Enabled() bool { return os.Getenv(EnvVar) == "kafka" }

// Options configure a broker. The zero value is a broker on free loopback
// ports whose data lives in a temporary folder removed by Close.
type Options struct {
	// Port is the PLAINTEXT client port; 0 picks a free one.
	Port int
	// Partitions is num.partitions, the partition count of auto-created
	// topics and of Topics, overriding the default 4.
	Partitions int
	// Topics are created once the broker answers.
	Topics []string
	// DataDir keeps the broker's data (and its ports) across Start calls:
	// a broker started again on the same DataDir continues the same log on
	// the same ports. Close leaves it in place.
	DataDir string
	// CertFile and KeyFile (PEM; the key ECDSA or RSA, SEC1/PKCS#1/PKCS#8)
	// add an SSL and a SASL_SSL listener serving that certificate.
	CertFile, KeyFile string
	// ClientCA, when set with CertFile, makes the SSL listener require a
	// client certificate signed by it (mutual TLS).
	ClientCA string
	// Users adds SASL_PLAINTEXT (and, with CertFile, SASL_SSL) listeners
	// accepting PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for these users
	// (name to password); SCRAM credentials are stored at format.
	Users map[string]string
}

// Broker is a running (or stopped) Apache Kafka broker. Safe for concurrent
// use.
type Broker struct {
	o       Options
	dir     string // data folder
	temp    bool   // dir is ours to remove
	ports   map[string]int
	mu      sync.Mutex // guards cmd, done, stderr, stdin
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd exited
	stderr  *bytes.Buffer
	stdin   io.WriteCloser // never written: its closing stops the broker
	started time.Duration  // how long the last start took
}

// Listener names, for ListenerAddr.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// Start starts a broker and returns once it answers metadata and Topics
// exist. It fails, naming the cause, when the broker does not start within
// two minutes.
func Start(o Options) (*Broker, error) {
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	b := &Broker{o: o, dir: o.DataDir}
	if b.dir == "" {
		d, err := os.MkdirTemp("", "kafkatest-")
		if err != nil {
			return nil, fmt.Errorf("kafkatest: %w", err)
		}
		b.dir, b.temp = d, true
	}
	if err := b.loadPorts(); err != nil {
		return nil, err
	}
	if err := b.start(); err != nil {
		b.cleanup()
		return nil, err
	}
	if len(o.Topics) > 0 {
		if err := b.CreateTopics(o.Partitions, o.Topics...); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// loadPorts picks the listeners' ports, or reads those of an earlier start
// on the same data folder.
func (b *Broker) loadPorts() error {
	file := filepath.Join(b.dir, "kafkatest-ports")
	b.ports = map[string]int{}
	if data, err := os.ReadFile(file); err == nil {
		for _, line := range strings.Fields(string(data)) {
			name, p, _ := strings.Cut(line, "=")
			n, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("kafkatest: %s: bad line %q", file, line)
			}
			b.ports[name] = n
		}
		return nil
	}
	names := []string{"CONTROLLER", Plaintext}
	if b.o.CertFile != "" {
		names = append(names, SSL)
	}
	if len(b.o.Users) > 0 {
		names = append(names, SASLPlaintext)
		if b.o.CertFile != "" {
			names = append(names, SASLSSL)
		}
	}
	var out strings.Builder
	for _, name := range names {
		p := 0
		if name == Plaintext {
			p = b.o.Port
		}
		if p == 0 {
			var err error
			if p, err = freePort(); err != nil {
				return err
			}
		}
		b.ports[name] = p
		fmt.Fprintf(&out, "%s=%d\n", name, p)
	}
	return os.WriteFile(file, []byte(out.String()), 0o644)
}

// freePort picks a port that binds on 127.0.0.1, below the kernel's
// ephemeral range: a port from that range could be taken as the source
// port of some outgoing connection while the broker is down between a Stop
// and a Restart, and the broker could not bind it again.
func freePort() (int, error) {
	low := 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 100 {
		p := 10000 + rand.IntN(low-10000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("kafkatest: no free port on 127.0.0.1 below %d in 100 tries", low)
}

// script is tools/kafka/kafka.sh of this source tree.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "../../../tools/kafka/kafka.sh")
}

// start runs kafka.sh serve and waits for the bootstrap address it prints.
func (b *Broker) start() error {
	began := time.Now()
	args := []string{"serve", "--data", b.dir, "--ready", "log", "--watch-stdin",
		"--port", strconv.Itoa(b.ports[Plaintext]), "--controller-port", strconv.Itoa(b.ports["CONTROLLER"])}
	for _, name := range []string{SSL, SASLPlaintext, SASLSSL} {
		if p, ok := b.ports[name]; ok {
			args = append(args, "--listener", fmt.Sprintf("%s:%d", name, p))
		}
	}
	props, err := b.props()
	if err != nil {
		return err
	}
	args = append(args, "--props", props)
	for name, pass := range b.o.Users {
		for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			args = append(args, "--scram", fmt.Sprintf("%s=[name=%s,password=%s]", mech, name, pass))
		}
	}
	cmd := exec.Command(script(), args...)
	// Its own process group, so that Stop and Kill reach the JVM too. The
	// script's standard input is a pipe this process holds open: when the
	// test binary ends in any way (a panic, go test's timeout, SIGKILL) the
	// pipe closes and the script stops the JVM: no orphan broker.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = &lockedWriter{w: stderr, mu: &b.mu}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kafkatest: starting %s: %w", script(), err)
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.done, b.stderr, b.stdin = cmd, done, stderr, stdin
	b.mu.Unlock()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		close(done)
	}()
	const wait = 2 * time.Minute
	select {
	case <-lines:
	case <-done:
		return fmt.Errorf("kafkatest: the broker (data %s) did not start: %s", b.dir, b.stderrText())
	case <-time.After(wait):
		b.signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("kafkatest: the broker (data %s) did not start within %v: %s", b.dir, wait, b.stderrText())
	}
	if err := b.waitMetadata(30 * time.Second); err != nil {
		b.Kill()
		return err
	}
	b.mu.Lock()
	b.started = time.Since(began)
	b.mu.Unlock()
	return nil
}

// keepRecords are the broker settings that keep every record a test writes
// for the broker's life. Tests stamp their records in January 1970
// (time.UnixMilli(1000)), and Kafka's time-based retention deletes a
// segment whose newest record is older than its topic's retention.ms (7
// days by default, a window store changelog's a day): left to its defaults,
// the broker's retention task ran 30 s after the broker started and every 5
// minutes after, and a test then running lost records it had written (a
// reader waited for offsets no longer there, a committed output vanished
// between two reads). With these, the task runs once as the broker starts,
// before any test writes (log.initial.task.delay.ms, which also starts the
// checkpoints and the removal of deleted topics' files), then not for a
// year; a topic without retention.ms keeps its records forever, even
// through a restart's pass. kfake applies retention only hourly, so both
// brokers now keep what the tests write.
var keepRecords = map[string]string{
	"log.initial.task.delay.ms":       "0",
	"log.retention.check.interval.ms": strconv.FormatInt((365 * 24 * time.Hour).Milliseconds(), 10),
	"log.retention.ms":                "-1",
}

// props writes the settings that kafka.sh serve appends to
// server.properties: the partition count, keepRecords and the listeners'.
func (b *Broker) props() (string, error) {
	var p strings.Builder
	fmt.Fprintf(&p, "num.partitions=%d\n", b.o.Partitions)
	for _, k := range slices.Sorted(maps.Keys(keepRecords)) {
		fmt.Fprintf(&p, "%s=%s\n", k, keepRecords[k])
	}
	if b.o.CertFile != "" {
		store := filepath.Join(b.dir, "kafkatest-keystore.pem")
		if err := writeKeystore(store, b.o.CertFile, b.o.KeyFile); err != nil {
			return "", err
		}
		trust := b.o.ClientCA
		if trust == "" {
			trust = b.o.CertFile
		}
		for _, l := range []string{"ssl", "sasl_ssl"} {
			fmt.Fprintf(&p, "listener.name.%s.ssl.keystore.type=PEM\nlistener.name.%s.ssl.keystore.location=%s\n", l, l, store)
			fmt.Fprintf(&p, "listener.name.%s.ssl.truststore.type=PEM\nlistener.name.%s.ssl.truststore.location=%s\n", l, l, trust)
		}
		if b.o.ClientCA != "" {
			p.WriteString("listener.name.ssl.ssl.client.auth=required\n")
		}
	}
	if len(b.o.Users) > 0 {
		plain := "org.apache.kafka.common.security.plain.PlainLoginModule required"
		for name, pass := range b.o.Users {
			plain += fmt.Sprintf(" user_%s=%q", name, pass)
		}
		plain += ";"
		scram := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		for _, l := range []string{"sasl_plaintext", "sasl_ssl"} {
			fmt.Fprintf(&p, "listener.name.%s.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512\n", l)
			fmt.Fprintf(&p, "listener.name.%s.plain.sasl.jaas.config=%s\n", l, plain)
			fmt.Fprintf(&p, "listener.name.%s.scram-sha-256.sasl.jaas.config=%s\n", l, scram)
			fmt.Fprintf(&p, "listener.name.%s.scram-sha-512.sasl.jaas.config=%s\n", l, scram)
		}
	}
	file := filepath.Join(b.dir, "kafkatest.properties")
	return file, os.WriteFile(file, []byte(p.String()), 0o600)
}

// writeKeystore writes the PEM keystore Kafka reads: the private key in
// PKCS#8 (Kafka accepts no other form) followed by the certificate.
func writeKeystore(path, certFile, keyFile string) error {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("kafkatest: certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("kafkatest: key: %w", err)
	}
	blk, _ := pem.Decode(keyPEM)
	if blk == nil {
		return fmt.Errorf("kafkatest: %s holds no PEM block", keyFile)
	}
	var key any
	switch blk.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	default:
		err = fmt.Errorf("PEM block %q is not a private key", blk.Type)
	}
	if err != nil {
		return fmt.Errorf("kafkatest: %s: %w", keyFile, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("kafkatest: %s: %w", keyFile, err)
	}
	out := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), certPEM...)
	return os.WriteFile(path, out, 0o600)
}

// waitMetadata waits until the broker answers a metadata request with
// itself as a broker.
func (b *Broker) waitMetadata(within time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		m, err := adm.BrokerMetadata(ctx)
		if err == nil && len(m.Brokers) > 0 {
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("kafkatest: the broker at %s did not answer metadata within %v (last error: %v); %s", b.Addr(), within, last, b.stderrText())
}

// Addr is the PLAINTEXT bootstrap address, host:port.
func (b *Broker) Addr() string { return b.ListenerAddr(Plaintext) }

// ListenerAddr is the address of the listener named (Plaintext, SSL,
// SASLPlaintext or SASLSSL), or "" when the broker has none such.
func (b *Broker) ListenerAddr(name string) string {
	p, ok := b.ports[name]
	if !ok {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// StartupTime is how long the last start took, from launching the script
// to the broker answering metadata.
func (b *Broker) StartupTime() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}

// Log is the tail of the broker's server.log, for test failure messages.
func (b *Broker) Log(lines int) string {
	data, _ := os.ReadFile(filepath.Join(b.dir, "server.log"))
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

func (b *Broker) stderrText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.stderr.String())
}

func (b *Broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil && b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, sig)
	}
}

func (b *Broker) running() (chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		return nil, false
	}
	select {
	case <-b.done:
		return b.done, false
	default:
		return b.done, true
	}
}

// Stop shuts the broker down cleanly (SIGTERM: a controlled shutdown),
// killing it when it has not stopped within 60 s. Its data stays for
// Restart.
func (b *Broker) Stop() {
	done, ok := b.running()
	if !ok {
		return
	}
	b.signal(syscall.SIGTERM)
	b.signal(syscall.SIGCONT) // a frozen broker acts on SIGTERM once resumed
	select {
	case <-done:
		b.waitPortsFree()
	case <-time.After(60 * time.Second):
		b.Kill()
	}
}

// Kill stops the broker with SIGKILL, as a crash would, and returns once
// its ports are free again.
func (b *Broker) Kill() {
	done, ok := b.running()
	if !ok {
		return
	}
	b.signal(syscall.SIGKILL)
	<-done
	b.waitPortsFree()
}

// waitPortsFree waits (up to 30 s) until every port of the broker binds
// again: the script is reaped at once, but the JVM, its child, takes a
// moment longer to die (its threads one by one) and release its listeners.
func (b *Broker) waitPortsFree() {
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range b.ports {
		for {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err == nil {
				ln.Close()
				break
			}
			if time.Now().After(deadline) {
				return // start names the port in use
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Freeze stops every process of the broker (the script and its JVM) with
// SIGSTOP, as a stalled machine or a long stop-the-world pause would: its
// connections stay open, the kernel still accepts new ones, and nothing
// answers until Thaw. A frozen broker's harness no longer watches the test
// binary's end: call Thaw before the test ends (a t.Cleanup).
func (b *Broker) Freeze() { b.signal(syscall.SIGSTOP) }

// Thaw resumes a broker stopped by Freeze (SIGCONT); it does nothing to a
// running broker.
func (b *Broker) Thaw() { b.signal(syscall.SIGCONT) }

// Restart starts the broker again on the same ports and data, after Stop
// or Kill.
func (b *Broker) Restart() error {
	b.Stop()
	return b.start()
}

// Close stops the broker and removes its data unless Options.DataDir
// named the folder.
func (b *Broker) Close() {
	b.Stop()
	b.cleanup()
}

func (b *Broker) cleanup() {
	if b.temp {
		os.RemoveAll(b.dir)
	}
}

// CreateTopics creates topics with the given partition count (replication
// factor 1), retrying while an earlier deletion of the same names ends.
func (b *Broker) CreateTopics(partitions int, topics ...string) error {
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(b.Addr()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	left := topics
	ids := map[string]kadm.TopicID{}
	for {
		resp, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, left...)
		if err != nil {
			return fmt.Errorf("kafkatest: creating topics %v: %w", left, err)
		}
		var retry []string
		for _, r := range resp.Sorted() {
			switch {
			case r.Err == nil:
				ids[r.Topic] = r.ID
			case errors.Is(r.Err, kerr.TopicAlreadyExists) || errors.Is(r.Err, kerr.UnknownTopicOrPartition):
				retry = append(retry, r.Topic)
			default:
				return fmt.Errorf("kafkatest: creating topic %s: %w", r.Topic, r.Err)
			}
		}
		if len(retry) == 0 {
			return b.waitServed(ctx, adm, partitions, topics, ids)
		}
		left = retry
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: topics %v still exist 60 s after their deletion", left)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitServed waits until metadata shows every topic with its partitions
// led: a broker shows a created topic a moment after CreateTopics answers,
// and a test producing to it at once would fail with
// UNKNOWN_TOPIC_OR_PARTITION. Each topic must show the ID its creation
// answered (when the broker gave one): a topic just deleted (Reset) and
// created again under its name can be shown a moment longer as it was,
// and a client that took that metadata wrote to the deleted topic (a
// record lost) or read it forever.
func (b *Broker) waitServed(ctx context.Context, adm *kadm.Client, partitions int, topics []string, ids map[string]kadm.TopicID) error {
	var zero kadm.TopicID
	for {
		// The client caches metadata for 50 ms only (MetadataMinAge).
		details, err := adm.ListTopics(ctx, topics...)
		if err == nil {
			served := true
			for _, t := range topics {
				d, ok := details[t]
				if !ok || d.Err != nil || len(d.Partitions) != partitions {
					served = false
					break
				}
				if id, ok := ids[t]; ok && id != zero && d.ID != id {
					served = false
					err = fmt.Errorf("topic %s is still shown with ID %s, created as %s", t, d.ID, id)
					break
				}
				for _, p := range d.Partitions {
					if p.Err != nil || p.Leader < 0 {
						served = false
					}
				}
			}
			if served {
				// And every partition's leader has set up its replica
				// (until then Kafka answers a produce by topic ID with
				// UNKNOWN_TOPIC_ID, a ListOffsets with NOT_LEADER_OR_FOLLOWER).
				ends, lerr := adm.ListEndOffsets(ctx, topics...)
				if lerr == nil {
					ends.Each(func(o kadm.ListedOffset) {
						if o.Err != nil {
							served, err = false, o.Err
						}
					})
					if served {
						return nil
					}
				} else {
					err = lerr
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: topics %v not served within 60 s of their creation (last error: %v)", topics, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Reset empties the broker for the next test: every topic but Kafka's
// internal ones and every consumer group are deleted (waiting until the
// deletions are seen), then topics are created with partitions partitions.
func (b *Broker) Reset(partitions int, topics ...string) error {
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(b.Addr()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("kafkatest: reset: listing groups: %w", err)
	}
	if names := groups.Groups(); len(names) > 0 {
		// A group with live members (an engine that a test killed has not
		// yet timed out) cannot be deleted; it is left, and named by the
		// test's application.id it cannot meet another test's.
		adm.DeleteGroups(ctx, names...)
	}
	// One listing: a client's metadata (cached for up to 5 s) would go on
	// showing topics whose deletion the controller already committed.
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("kafkatest: reset: listing topics: %w", err)
	}
	// The topics to create are deleted too: one created a moment ago (by
	// the previous test) may not be listed yet.
	names := listed.Names()
	for _, t := range topics {
		if !slices.Contains(names, t) {
			names = append(names, t)
		}
	}
	if len(names) > 0 {
		resp, err := adm.DeleteTopics(ctx, names...)
		if err != nil {
			return fmt.Errorf("kafkatest: reset: deleting topics %v: %w", names, err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("kafkatest: reset: deleting topic %s: %w", r.Topic, r.Err)
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	return b.CreateTopics(partitions, topics...)
}

var shared struct {
	once sync.Once
	b    *Broker
	err  error
}

// Shared is the test package's broker, started on first use with
// num.partitions 4 and stopped by Main.
func Shared() (*Broker, error) {
	shared.once.Do(func() {
		shared.b, shared.err = Start(Options{})
		if shared.err == nil {
			fmt.Fprintf(os.Stderr, "kafkatest: Apache Kafka %s at %s, started in %v\n", Version(), shared.b.Addr(), shared.b.StartupTime().Round(time.Millisecond))
		}
	})
	return shared.b, shared.err
}

// Main runs a test package's tests and then stops its shared broker; call
// it from TestMain: os.Exit(kafkatest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared.b != nil {
		shared.b.Close()
	}
	return code
}

// Version is the Apache Kafka version of tools/kafka/VERSION.
func Version() string {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(script()), "VERSION"))
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(data))
}

// lockedWriter serialises writes into a buffer guarded by mu.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
