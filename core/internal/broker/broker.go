// Package broker runs the embedded Kafka broker: an in-process kfake cluster
// for `polystreams dev`, demos and tests. The engine itself speaks plain Kafka
// and does not depend on this package.
package broker

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Options configure an embedded broker. The zero value listens on a free
// loopback port with 1 broker and 8 partitions for auto-created topics.
type Options struct {
	// Addr is the listen address; only loopback hosts are used. "" or a port
	// of 0 picks a free port.
	Addr string
	// Partitions is the partition count of topics created without one
	// (auto-created, or CreateTopics with -1), overriding the default 8.
	Partitions int
	// DataDir, when set, persists the log so the broker can be restarted.
	DataDir string
	// Topics are created at start with Partitions partitions.
	Topics []string
}

// Embedded is a running in-process broker. Safe for concurrent use.
type Embedded struct {
	c    *kfake.Cluster
	addr string
}

// Start starts an embedded broker.
func Start(o Options) (*Embedded, error) {
	port := 0
	if o.Addr != "" {
		host, p, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("broker: listen address %q: %w", o.Addr, err)
		}
		if host != "" && host != "127.0.0.1" && host != "localhost" {
			return nil, fmt.Errorf("broker: listen address %q: the embedded broker binds 127.0.0.1 only", o.Addr)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("broker: listen address %q: bad port", o.Addr)
		}
	}
	parts := o.Partitions
	if parts <= 0 {
		parts = 8
	}
	opts := []kfake.Opt{
		kfake.Ports(port),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(parts),
	}
	if len(o.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(parts), o.Topics...))
	}
	if o.DataDir != "" {
		opts = append(opts, kfake.DataDir(o.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) == 0 {
		c.Close()
		return nil, fmt.Errorf("broker: kfake started with no listener")
	}
	return &Embedded{c: c, addr: addrs[0]}, nil
}

// Addr is the broker's bootstrap address, host:port.
func (e *Embedded) Addr() string { return e.addr }

// Cluster is the underlying kfake cluster, for fault injection in tests.
func (e *Embedded) Cluster() *kfake.Cluster { return e.c }

// Close stops the broker.
func (e *Embedded) Close() { e.c.Close() }
