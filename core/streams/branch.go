package streams

import "github.com/polystreams/polystreams/core/internal/topology"

// Merge is one stream of s's and other's records (KStream.merge); both
// must carry the same key and value serdes. Options: Name.
func (s *Stream) Merge(other *Stream, opts ...Option) (*Stream, error) {
	o, err := parse("Merge", opts, optName)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.Merge(s.h.ID, other.h.ID, o.name))
}

// Repartition sends the stream through the topic
// "<application.id>-<name>-repartition" and on from a new sub-topology
// (KStream.repartition); partitions is Repartitioned.withNumberOfPartitions
// (0: the partition count of the sub-topology writing it). Records with a
// null key are dropped. Options: Name (Repartitioned.as: names the topic),
// Partitioner (Repartitioned.withStreamPartitioner).
func (s *Stream) Repartition(partitions int, opts ...Option) (*Stream, error) {
	o, err := parse("Repartition", opts, optName, optPartitioner)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.RepartitionWith(s.h.ID, o.name, int32(partitions), o.partitioner))
}

// Branch is one branch of a Split: the records its predicate passes (of
// those no earlier branch took), named Name (Branched.as; empty: its
// number, from 1).
type Branch struct {
	Name      string
	Predicate PredicateFunc
}

// Split routes each record to the first branch whose predicate passes it
// (KStream.split().branch(...)...), and, when defaultBranch is true, the
// records none passes to a default branch named defaultName (empty: "0");
// without it they are dropped (noDefaultBranch). The streams are keyed by
// branch name as Kafka Streams keys them: the split's name (Name option;
// else KSTREAM-BRANCH-<n>) followed by the branch's name or number.
func (s *Stream) Split(branches []Branch, defaultBranch bool, defaultName string, opts ...Option) (map[string]*Stream, error) {
	o, err := parse("Split", opts, optName)
	if err != nil {
		return nil, err
	}
	bs := make([]topology.Branch, len(branches))
	for i, br := range branches {
		bs[i] = topology.Branch{Name: br.Name}
		if br.Predicate != nil {
			bs[i].Predicate = native("split", br.Predicate)
		}
	}
	hs, err := s.b.b.Split(s.h.ID, o.name, bs, defaultBranch, defaultName)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Stream, len(hs))
	for _, h := range hs {
		out[h.Node.Name] = &Stream{b: s.b, h: h}
	}
	return out, nil
}
