// Package group is the consumer group's assignment of tasks: a
// kgo.GroupBalancer that keeps co-partitioned partitions together, sticky,
// with standby tasks and local state (Kafka Streams' StreamsPartitionAssignor
// and HighAvailabilityTaskAssignor).
package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group's assignment. A task here is a partition number: partition p of
// every source topic goes to one member, so that co-partitioned sources
// (a stream and the table it joins, the topics of a merge) are processed
// together; a topic with fewer partitions simply has no partition p for the
// higher task numbers. Kafka Streams' StreamsPartitionAssignor assigns
// (sub-topology, partition) tasks and co-locates co-partitioned ones the
// same way; its HighAvailabilityTaskAssignor keeps tasks where their state
// is (sticky) and spreads them evenly, and gives standby tasks to clients
// other than the active owner. This balancer does the same with what the
// classic group protocol carries:
//
//   - each member's JoinGroup metadata (kmsg.ConsumerMemberMetadata) names
//     the partitions it owned after the last rebalance (OwnedPartitions, as
//     the cooperative-sticky protocol does), with the generation it owned
//     them in, and in UserData the standby tasks it kept and the tasks it
//     has local state for, with their checkpointed offset sums (Kafka
//     Streams' SubscriptionInfo carries these as taskOffsetSums);
//   - the leader gives every member floor(n/m) or ceil(n/m) of the n tasks,
//     leaving each task with its owner where balance allows (a claim of an
//     older generation loses to a newer one: a member that was dropped from
//     the group must not pull back what moved on); a task nobody keeps goes
//     preferably to a member with local state for it, the most caught up
//     (highest offset sum) first, so that a restarted instance gets back
//     the tasks whose stores it still holds and restores them from its
//     checkpoints rather than from scratch;
//   - with num.standby.replicas = k, each task gets up to k standbys on
//     members other than its active owner, where standbys stay put too,
//     then preferably on members with local state for the task, carried in
//     each member's assignment's UserData.
//
// Stickiness comes first: a task owned by a live member stays with it even
// when a returning member holds local state for it, unless balance makes
// the owner give up tasks anyway (it then gives up first those that another
// member has state for). Kafka Streams' HighAvailabilityTaskAssignor goes
// further: it moves a task back to a caught-up client only once that client
// is within acceptable.recovery.lag, warming it up meanwhile with a warmup
// replica and probing rebalances; this balancer has no warmup replicas.
//
// The protocol is eager, as range was: every member gives up its tasks
// before the rebalance and is handed its new ones after it.

// balancerProtocol is the group protocol's name.
const balancerProtocol = "polystreams-sticky"

// userDataVersion heads the UserData of an assignment (standby tasks), and
// the JoinGroup UserData of members that send only their standby tasks.
const userDataVersion = 1

// memberDataVersion heads the JoinGroup UserData that also carries the
// member's local state: its standby tasks, then each task with local state
// and its offset sum.
const memberDataVersion = 2

// endpointDataVersion heads the JoinGroup UserData of a member with an
// application.server (Kafka Streams' SubscriptionInfo userEndPoint): the
// endpoint, then what version 2 carries. Such a member reads assignments
// of hostsDataVersion.
const endpointDataVersion = 3

// hostsDataVersion heads the assignment UserData that carries, beside the
// member's standby tasks, every endpoint's active partitions and standby
// tasks (Kafka Streams' AssignmentInfo partitionsByHost and
// standbyPartitionByHost), for interactive queries.
const hostsDataVersion = 2

// Balancer is a kgo.GroupBalancer assigning tasks. It remembers the
// member's own last assignment (ParseSyncAssignment) to claim it at the next
// join. Safe for concurrent use.
type Balancer struct {
	standbys int // num.standby.replicas, used when this member leads
	// LocalState, when set, returns the tasks this member has local state
	// for (checkpointed store partitions, of active or standby tasks), each
	// with its offset sum: the sum of the checkpointed changelog offsets of
	// the task's store partitions. Called at each JoinGroup.
	LocalState func() map[int32]int64
	// Endpoint is this member's application.server ("host:port"); empty
	// for none. Set before the member joins.
	Endpoint string

	mu sync.Mutex // guards owned, standby, hosts
	// owned: the partitions (by topic) of the last assignment; standby:
	// its standby tasks; hosts: every endpoint's share of it.
	owned   map[string][]int32
	standby []int32
	hosts   []Host
}

// Host is one endpoint's share of an assignment: the partitions of its
// active tasks, by topic, and its standby tasks.
type Host struct {
	Endpoint   string
	Partitions map[string][]int32
	Standby    []int32
}

var _ kgo.GroupBalancer = (*Balancer)(nil)

func NewBalancer(standbys int) *Balancer { return &Balancer{standbys: standbys} }

func (*Balancer) ProtocolName() string { return balancerProtocol }
func (*Balancer) IsCooperative() bool  { return false }

// JoinGroupMetadata claims what this member was assigned last. kgo passes
// an eager member nothing as currentAssignment (it revoked all), so the
// balancer's own memory is the claim.
func (b *Balancer) JoinGroupMetadata(topics []string, _ map[string][]int32, generation int32) []byte {
	b.mu.Lock()
	owned, standby := b.owned, b.standby
	b.mu.Unlock()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2
	meta.Topics = topics
	meta.Generation = generation
	for _, t := range slices.Sorted(maps.Keys(owned)) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic = t
		op.Partitions = slices.Sorted(slices.Values(owned[t]))
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	var local map[int32]int64
	if b.LocalState != nil {
		local = b.LocalState()
	}
	meta.UserData = encodeMemberData(standby, local)
	if b.Endpoint != "" {
		meta.UserData = encodeEndpointData(b.Endpoint, standby, local)
	}
	return meta.AppendTo(nil)
}

// ParseSyncAssignment reads this member's assignment and remembers it.
func (b *Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, fmt.Errorf("group: the group's assignment cannot be read: %w", err)
	}
	standby, hosts, err := decodeAssignmentData(a.UserData)
	if err != nil {
		return nil, fmt.Errorf("group: the group's assignment: %w", err)
	}
	m := make(map[string][]int32, len(a.Topics))
	for _, t := range a.Topics {
		m[t.Topic] = t.Partitions
	}
	b.mu.Lock()
	b.owned, b.standby, b.hosts = m, standby, hosts
	b.mu.Unlock()
	return m, nil
}

// StandbyTasks returns the standby tasks of the last assignment.
func (b *Balancer) StandbyTasks() []int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.standby)
}

// Hosts returns every endpoint's share of the last assignment (members
// without an application.server are left out), in endpoint order; nil
// before the first assignment, after Forget, or when the leader's version
// carries no endpoints.
func (b *Balancer) Hosts() []Host {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hosts
}

// Forget drops the remembered assignment (its partitions were lost: another
// member may own them now).
func (b *Balancer) Forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.owned, b.standby, b.hosts = nil, nil, nil
}

func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

// Balance implements kgo.ConsumerBalancerBalance: the leader's assignment.
func (b *Balancer) Balance(cb *kgo.ConsumerBalancer, partitions map[string]int32) kgo.IntoSyncAssignment {
	var ms []member
	var ids []string
	var endpoints []string // "" for a member without one, or of an older version
	cb.EachMember(func(jm *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		m := member{topics: slices.Clone(meta.Topics), generation: meta.Generation}
		for _, op := range meta.OwnedPartitions {
			m.owned = append(m.owned, op.Partitions...)
		}
		m.owned = uniqueSorted(m.owned)
		// Member data that cannot be read (another version's) counts as
		// no standbys and no local state.
		endpoint := ""
		if ep, sb, local, err := decodeMemberData(meta.UserData); err == nil {
			m.standby, m.local, endpoint = sb, local, ep
		}
		endpoints = append(endpoints, endpoint)
		ms = append(ms, m)
		ids = append(ids, jm.MemberID)
	})
	as := assignTasks(ms, partitions, b.standbys)
	// Every member with an endpoint hears where each endpoint's tasks are.
	var hosts []Host
	for i, a := range as {
		if endpoints[i] != "" {
			hosts = append(hosts, Host{Endpoint: endpoints[i], Partitions: a.partitions, Standby: a.standby})
		}
	}
	slices.SortFunc(hosts, func(x, y Host) int { return strings.Compare(x.Endpoint, y.Endpoint) })
	out := make(syncAssignment, len(ids))
	for i, a := range as {
		ma := kmsg.NewConsumerMemberAssignment()
		for _, t := range slices.Sorted(maps.Keys(a.partitions)) {
			mt := kmsg.NewConsumerMemberAssignmentTopic()
			mt.Topic, mt.Partitions = t, a.partitions[t]
			ma.Topics = append(ma.Topics, mt)
		}
		ma.UserData = encodeTasks(a.standby)
		if endpoints[i] != "" {
			ma.UserData = encodeHostsData(a.standby, hosts)
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID, sa.MemberAssignment = ids[i], ma.AppendTo(nil)
		out[i] = sa
	}
	return out
}

type syncAssignment []kmsg.SyncGroupRequestGroupAssignment

func (s syncAssignment) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return s }

// member is what the leader knows of a group member: the topics it
// subscribes to, the tasks it claims (owned in generation), and the
// standby tasks it kept, and the tasks it has local state for, with their
// offset sums (higher: more caught up).
type member struct {
	topics     []string
	owned      []int32
	generation int32
	standby    []int32
	local      map[int32]int64
}

// stateFor is m's offset sum for task p, 0 when it has no local state.
func (m *member) stateFor(p int32) int64 { return m.local[p] }

// assignment is one member's share: its partitions by topic (its active
// tasks', for the topics it subscribes to) and its standby tasks.
type assignment struct {
	tasks      []int32
	partitions map[string][]int32
	standby    []int32
}

// assignTasks assigns the tasks 0..max(partitions)-1 to members (in the
// order kgo gives them: by instance id, then member id), evenly and
// stickily, and up to standbys standby tasks per task to other members.
// It is deterministic: the same input gives the same output.
func assignTasks(members []member, partitions map[string]int32, standbys int) []assignment {
	out := make([]assignment, len(members))
	for i := range out {
		out[i].partitions = map[string][]int32{}
	}
	if len(members) == 0 {
		return out
	}
	subscribed, n := taskCount(members, partitions)
	claims := previousClaims(members, n)
	quota := quotas(members, claims, n)
	owner := placeTasks(members, claims, quota, n, out)
	assignPartitions(members, partitions, subscribed, owner, out)
	for i := range out {
		slices.Sort(out[i].tasks)
	}
	assignStandbys(members, owner, standbys, out)
	return out
}

// taskCount answers the topics some member subscribes to and the number of
// tasks: the most partitions of any of them.
func taskCount(members []member, partitions map[string]int32) (subscribed map[string]bool, n int32) {
	subscribed = map[string]bool{}
	for _, m := range members {
		for _, t := range m.topics {
			subscribed[t] = true
		}
	}
	for t, p := range partitions {
		if subscribed[t] {
			n = max(n, p)
		}
	}
	return subscribed, n
}

// previousClaims answers each member's claims on the n tasks: a task is
// claimed by its previous owner, the member of the newest generation
// owning it (on a tie, the first). A member over its quota gives up first
// the tasks another member has local state for (they move at the smallest
// restore), then the highest-numbered: each member's claims are in the
// order it keeps them.
func previousClaims(members []member, n int32) [][]int32 {
	prev := make([]int, n)
	for p := range prev {
		prev[p] = -1
	}
	for i, m := range members {
		for _, p := range m.owned {
			if p < 0 || p >= n {
				continue
			}
			if j := prev[p]; j < 0 || members[j].generation < m.generation {
				prev[p] = i
			}
		}
	}
	claims := make([][]int32, len(members))
	for p, i := range prev {
		if i >= 0 {
			claims[i] = append(claims[i], int32(p))
		}
	}
	for i := range claims {
		elsewhere := func(p int32) bool {
			for j := range members {
				if j != i && members[j].stateFor(p) > 0 {
					return true
				}
			}
			return false
		}
		slices.SortStableFunc(claims[i], func(a, b int32) int {
			ea, eb := elsewhere(a), elsewhere(b)
			switch {
			case ea == eb:
				return int(a - b)
			case eb:
				return -1
			default:
				return 1
			}
		})
	}
	return claims
}

// quotas answers how many of the n tasks each member gets: floor(n/m) each,
// and one more for n mod m members, chosen among those claiming the most
// (they then keep the most), then those with local state for the most
// tasks, ties in member order.
func quotas(members []member, claims [][]int32, n int32) []int {
	base, extra := int(n)/len(members), int(n)%len(members)
	order := make([]int, len(members))
	warm := make([]int, len(members))
	for i := range order {
		order[i] = i
		for p := range n {
			if members[i].stateFor(p) > 0 {
				warm[i]++
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, cb := len(claims[order[a]]), len(claims[order[b]])
		return ca > cb || (ca == cb && warm[order[a]] > warm[order[b]])
	})
	quota := make([]int, len(members))
	for k, i := range order {
		quota[i] = base
		if k < extra {
			quota[i]++
		}
	}
	return quota
}

// placeTasks gives each of the n tasks an owner within the quotas, adding
// it to the owner's tasks in out, and answers each task's owner. Each
// member keeps its claims up to its quota. Free tasks go first, in order,
// to the member below its quota with the most caught-up local state for
// them (Kafka Streams' ClientState.lagFor: the least lag; ties in member
// order); the rest, in order, to the member furthest below its quota (ties
// in member order).
func placeTasks(members []member, claims [][]int32, quota []int, n int32, out []assignment) []int {
	owner := make([]int, n)
	for p := range owner {
		owner[p] = -1
	}
	give := func(p int32, i int) {
		owner[p] = i
		out[i].tasks = append(out[i].tasks, p)
	}
	for i, cs := range claims {
		for _, p := range cs[:min(len(cs), quota[i])] {
			give(p, i)
		}
	}
	for p := range n {
		if owner[p] >= 0 {
			continue
		}
		best := -1
		for i := range members {
			s := members[i].stateFor(p)
			if s > 0 && len(out[i].tasks) < quota[i] && (best < 0 || s > members[best].stateFor(p)) {
				best = i
			}
		}
		if best >= 0 {
			give(p, best)
		}
	}
	for p := range n {
		if owner[p] >= 0 {
			continue
		}
		best := -1
		for i := range members {
			if need := quota[i] - len(out[i].tasks); need > 0 && (best < 0 || need > quota[best]-len(out[best].tasks)) {
				best = i
			}
		}
		give(p, best)
	}
	return owner
}

// assignPartitions gives task p's partition of every subscribed topic that
// has one to the task's owner. A topic its owner does not subscribe to
// (members running different topologies, as in a rolling upgrade) goes to
// the first member that does.
func assignPartitions(members []member, partitions map[string]int32, subscribed map[string]bool, owner []int, out []assignment) {
	n := int32(len(owner))
	for _, t := range slices.Sorted(maps.Keys(partitions)) {
		if !subscribed[t] {
			continue
		}
		for p := range min(partitions[t], n) {
			i := owner[p]
			if !slices.Contains(members[i].topics, t) {
				for j, m := range members {
					if slices.Contains(m.topics, t) {
						i = j
						break
					}
				}
			}
			out[i].partitions[t] = append(out[i].partitions[t], p)
		}
	}
}

// assignStandbys gives each task up to standbys standbys on members other
// than its owner, none twice on one member: first where the task's standby
// was (sticky), then on a member with local state for it (the most caught
// up) whose load is at most one above the least loaded candidate's, else on
// the members with the fewest tasks (active and standby), ties in member
// order.
func assignStandbys(members []member, owner []int, standbys int, out []assignment) {
	if standbys <= 0 || len(members) < 2 {
		return
	}
	load := make([]int, len(members))
	for i := range out {
		load[i] = len(out[i].tasks)
	}
	has := make([]map[int32]bool, len(members))
	for i := range has {
		has[i] = map[int32]bool{}
	}
	give := func(i int, p int32) {
		has[i][p] = true
		load[i]++
		out[i].standby = append(out[i].standby, p)
	}
	count := make([]int, len(owner))
	for i, m := range members {
		for _, p := range m.standby {
			if p >= 0 && int(p) < len(owner) && owner[p] != i && !has[i][p] && count[p] < standbys {
				give(i, p)
				count[p]++
			}
		}
	}
	for p := range owner {
		for count[p] < min(standbys, len(members)-1) {
			best := -1
			for i := range members {
				if i == owner[p] || has[i][int32(p)] {
					continue
				}
				if best < 0 || load[i] < load[best] {
					best = i
				}
			}
			warm := -1
			for i := range members {
				s := members[i].stateFor(int32(p))
				if i == owner[p] || has[i][int32(p)] || s <= 0 || load[i] > load[best]+1 {
					continue
				}
				if warm < 0 || s > members[warm].stateFor(int32(p)) {
					warm = i
				}
			}
			if warm >= 0 {
				best = warm
			}
			give(best, int32(p))
			count[p]++
		}
	}
	for i := range out {
		slices.Sort(out[i].standby)
	}
}

func uniqueSorted(ps []int32) []int32 {
	slices.Sort(ps)
	return slices.Compact(ps)
}

// encodeTasks is the UserData for a list of tasks: a version byte, then
// each task number as a uvarint.
func encodeTasks(tasks []int32) []byte {
	out := []byte{userDataVersion}
	for _, p := range tasks {
		out = binary.AppendUvarint(out, uint64(p))
	}
	return out
}

func decodeTasks(b []byte) ([]int32, error) {
	if len(b) == 0 {
		return nil, nil // another balancer's member, or none kept
	}
	if b[0] != userDataVersion {
		return nil, fmt.Errorf("user data version %d, want %d", b[0], userDataVersion)
	}
	var out []int32
	for b = b[1:]; len(b) > 0; {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<31-1 {
			return nil, errors.New("user data: a malformed task number")
		}
		out = append(out, int32(v))
		b = b[n:]
	}
	return out, nil
}

// encodeMemberData is a member's JoinGroup UserData: memberDataVersion,
// the number of standby tasks and each (uvarints), then each task with
// local state and its offset sum (uvarints), in task order. Without local
// state it is the version-1 encoding, which members of earlier versions
// read.
func encodeMemberData(standby []int32, local map[int32]int64) []byte {
	if len(local) == 0 {
		return encodeTasks(standby)
	}
	out := []byte{memberDataVersion}
	out = binary.AppendUvarint(out, uint64(len(standby)))
	for _, p := range standby {
		out = binary.AppendUvarint(out, uint64(p))
	}
	for _, p := range slices.Sorted(maps.Keys(local)) {
		out = binary.AppendUvarint(out, uint64(p))
		out = binary.AppendUvarint(out, uint64(max(local[p], 0)))
	}
	return out
}

// encodeEndpointData is the JoinGroup UserData of a member with an
// endpoint: endpointDataVersion, the endpoint's length (uvarint) and bytes,
// then the number of standby tasks and each, then each task with local
// state and its offset sum (uvarints), in task order.
func encodeEndpointData(endpoint string, standby []int32, local map[int32]int64) []byte {
	out := []byte{endpointDataVersion}
	out = binary.AppendUvarint(out, uint64(len(endpoint)))
	out = append(out, endpoint...)
	out = binary.AppendUvarint(out, uint64(len(standby)))
	for _, p := range standby {
		out = binary.AppendUvarint(out, uint64(p))
	}
	for _, p := range slices.Sorted(maps.Keys(local)) {
		out = binary.AppendUvarint(out, uint64(p))
		out = binary.AppendUvarint(out, uint64(max(local[p], 0)))
	}
	return out
}

// reader reads the uvarints and strings of user data, remembering the
// first problem.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > limit {
		r.err = errors.New("user data: a malformed number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) task() int32 { return int32(r.uvarint(1<<31 - 1)) }

func (r *reader) tasks() []int32 {
	var out []int32
	for range r.uvarint(uint64(len(r.b))) {
		out = append(out, r.task())
	}
	return out
}

func (r *reader) string() string {
	n := r.uvarint(uint64(len(r.b)))
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// decodeMemberData reads a member's JoinGroup UserData: version 1 (standby
// tasks only, no local state), 2, or 3 (with an endpoint).
func decodeMemberData(b []byte) (endpoint string, standby []int32, local map[int32]int64, err error) {
	if len(b) == 0 || b[0] == userDataVersion {
		standby, err = decodeTasks(b)
		return "", standby, nil, err
	}
	if b[0] != memberDataVersion && b[0] != endpointDataVersion {
		return "", nil, nil, fmt.Errorf("member data version %d, want %d to %d", b[0], userDataVersion, endpointDataVersion)
	}
	r := &reader{b: b[1:]}
	if b[0] == endpointDataVersion {
		endpoint = r.string()
	}
	standby = r.tasks()
	local = map[int32]int64{}
	for len(r.b) > 0 && r.err == nil {
		p := r.task()
		local[p] = int64(r.uvarint(1<<63 - 1))
	}
	if r.err != nil {
		return "", nil, nil, fmt.Errorf("member data: %w", r.err)
	}
	return endpoint, standby, local, nil
}

// encodeHostsData is the assignment UserData of a member with an endpoint:
// hostsDataVersion, its standby tasks (count, each), then the number of
// hosts and, for each, its endpoint, its topics (count; each: name, its
// partitions) and its standby tasks. Numbers are uvarints, strings a
// uvarint length and the bytes.
func encodeHostsData(standby []int32, hosts []Host) []byte {
	out := []byte{hostsDataVersion}
	appendTasks := func(ts []int32) {
		out = binary.AppendUvarint(out, uint64(len(ts)))
		for _, p := range ts {
			out = binary.AppendUvarint(out, uint64(p))
		}
	}
	appendString := func(s string) {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	appendTasks(standby)
	out = binary.AppendUvarint(out, uint64(len(hosts)))
	for _, h := range hosts {
		appendString(h.Endpoint)
		out = binary.AppendUvarint(out, uint64(len(h.Partitions)))
		for _, t := range slices.Sorted(maps.Keys(h.Partitions)) {
			appendString(t)
			appendTasks(h.Partitions[t])
		}
		appendTasks(h.Standby)
	}
	return out
}

// decodeAssignmentData reads an assignment's UserData: version 1 (the
// member's standby tasks) or 2 (and every endpoint's share).
func decodeAssignmentData(b []byte) (standby []int32, hosts []Host, err error) {
	if len(b) == 0 || b[0] != hostsDataVersion {
		standby, err = decodeTasks(b)
		return standby, nil, err
	}
	r := &reader{b: b[1:]}
	standby = r.tasks()
	for range r.uvarint(uint64(len(r.b))) {
		h := Host{Endpoint: r.string(), Partitions: map[string][]int32{}}
		for range r.uvarint(uint64(len(r.b))) {
			t := r.string()
			h.Partitions[t] = r.tasks()
		}
		h.Standby = r.tasks()
		hosts = append(hosts, h)
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errors.New("user data: trailing bytes")
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return standby, hosts, nil
}
