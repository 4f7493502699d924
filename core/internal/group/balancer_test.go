package group

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group simulates a consumer group of Balancers through the real
// protocol bytes: each member's JoinGroupMetadata goes to the leader's
// Balance, each member's share back through ParseSyncAssignment, as kgo and
// the broker pass them.
type group struct {
	t          *testing.T
	topics     []string
	partitions map[string]int32
	standbys   int
	members    map[string]*Balancer // by instance id
	generation int32
}

func newGroup(t *testing.T, partitions map[string]int32, standbys int) *group {
	g := &group{t: t, partitions: partitions, standbys: standbys, members: map[string]*Balancer{}}
	for topic := range partitions {
		g.topics = append(g.topics, topic)
	}
	slices.Sort(g.topics)
	return g
}

func (g *group) join(ids ...string) {
	for _, id := range ids {
		g.members[id] = NewBalancer(g.standbys)
	}
}

func (g *group) leave(ids ...string) {
	for _, id := range ids {
		delete(g.members, id)
	}
}

// rebalance runs one rebalance and returns each member's partitions by
// topic and standby tasks.
func (g *group) rebalance() (map[string]map[string][]int32, map[string][]int32) {
	g.t.Helper()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range g.members {
			if !yield(id) {
				return
			}
		}
	})
	var jms []kmsg.JoinGroupResponseMember
	for _, id := range ids {
		iid := id
		jms = append(jms, kmsg.JoinGroupResponseMember{MemberID: "m-" + id, InstanceID: &iid,
			ProtocolMetadata: g.members[id].JoinGroupMetadata(g.topics, nil, g.generation)})
	}
	leader := g.members[ids[0]]
	mb, topics, err := leader.MemberBalancer(jms)
	if err != nil {
		g.t.Fatal(err)
	}
	if len(topics) != len(g.topics) {
		g.t.Fatalf("member topics %v, want %v", topics, g.topics)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(g.partitions)
	if err != nil {
		g.t.Fatal(err)
	}
	sync := into.IntoSyncAssignment()
	g.generation++
	parts := map[string]map[string][]int32{}
	standby := map[string][]int32{}
	for _, sa := range sync {
		id := sa.MemberID[2:]
		m, err := g.members[id].ParseSyncAssignment(sa.MemberAssignment)
		if err != nil {
			g.t.Fatal(err)
		}
		parts[id] = m
		standby[id] = g.members[id].StandbyTasks()
	}
	if len(parts) != len(ids) {
		g.t.Fatalf("%d members assigned, want %d", len(parts), len(ids))
	}
	g.check(parts, standby)
	return parts, standby
}

// check: every partition of every topic is assigned exactly once; a member
// holds partition p of every topic that has one (co-partitioning); task
// counts differ by at most one; no standby sits on its task's owner.
func (g *group) check(parts map[string]map[string][]int32, standby map[string][]int32) {
	g.t.Helper()
	seen := map[string]map[int32]string{}
	tasksOf := map[string]map[int32]bool{}
	ownerOf := map[int32]string{}
	for id, m := range parts {
		tasksOf[id] = map[int32]bool{}
		for topic, ps := range m {
			if seen[topic] == nil {
				seen[topic] = map[int32]string{}
			}
			for _, p := range ps {
				if other, ok := seen[topic][p]; ok {
					g.t.Fatalf("%s/%d assigned to %s and %s", topic, p, other, id)
				}
				seen[topic][p] = id
				tasksOf[id][p] = true
				if o, ok := ownerOf[p]; ok && o != id {
					g.t.Fatalf("task %d split between %s and %s: not co-partitioned (%v)", p, o, id, parts)
				}
				ownerOf[p] = id
			}
		}
	}
	for topic, n := range g.partitions {
		if int32(len(seen[topic])) != n {
			g.t.Fatalf("%s: %d of %d partitions assigned", topic, len(seen[topic]), n)
		}
	}
	lo, hi := 1<<30, 0
	for _, ts := range tasksOf {
		lo, hi = min(lo, len(ts)), max(hi, len(ts))
	}
	if hi-lo > 1 {
		g.t.Fatalf("unbalanced: members hold %d to %d tasks: %v", lo, hi, parts)
	}
	for id, sb := range standby {
		for _, p := range sb {
			if ownerOf[p] == id {
				g.t.Fatalf("%s holds task %d both active and standby", id, p)
			}
		}
	}
}

// tasks returns each member's task numbers.
func tasks(parts map[string]map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for id, m := range parts {
		var ts []int32
		for _, ps := range m {
			ts = append(ts, ps...)
		}
		out[id] = uniqueSorted(ts)
	}
	return out
}

// moved counts the tasks taken from a member that is still in the group.
func moved(before, after map[string][]int32) int {
	owner := map[int32]string{}
	for id, ts := range before {
		for _, p := range ts {
			owner[p] = id
		}
	}
	n := 0
	for id, ts := range after {
		for _, p := range ts {
			if o, ok := owner[p]; ok && o != id && has(after, o) {
				n++
			}
		}
	}
	return n
}

// Even spread, and co-partitioning across topics of different partition
// counts: partition p of every topic goes to one member; a topic with 4
// partitions has no partition for tasks 4..7. (Kafka Streams'
// StreamsPartitionAssignor co-locates the partitions of co-partitioned
// topics in one task the same way.)
func TestBalancerSpreadsTasksEvenlyAndCoPartitions(t *testing.T) {
	g := newGroup(t, map[string]int32{"orders": 8, "customers": 8, "small": 4}, 0)
	g.join("a", "b", "c")
	parts, _ := g.rebalance()
	ts := tasks(parts)
	var sizes []int
	for _, id := range []string{"a", "b", "c"} {
		sizes = append(sizes, len(ts[id]))
		for _, p := range ts[id] {
			if p < 4 && !slices.Contains(parts[id]["small"], p) {
				t.Errorf("%s holds task %d but not small/%d", id, p, p)
			}
		}
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{2, 3, 3}) {
		t.Errorf("task counts %v, want 2, 3, 3", sizes)
	}
	// More members than tasks: some hold none, none holds two.
	g = newGroup(t, map[string]int32{"t": 2}, 0)
	g.join("a", "b", "c")
	g.rebalance()
}

// Sticky: a member joining takes only the tasks it needs for balance, from
// the members holding the most; a member leaving gives up only its own; a
// rebalance with no change moves nothing. (Kafka Streams'
// HighAvailabilityTaskAssignor and the cooperative-sticky assignor keep
// tasks in place the same way.)
func TestBalancerMovesAsFewTasksAsBalanceAllows(t *testing.T) {
	g := newGroup(t, map[string]int32{"events": 12, "events-2": 12}, 0)
	g.join("a", "b", "c")
	p0, _ := g.rebalance()
	p1, _ := g.rebalance()
	if n := moved(tasks(p0), tasks(p1)); n != 0 {
		t.Errorf("a rebalance with no change moved %d tasks", n)
	}
	g.join("d") // 4, 4, 4 -> 3, 3, 3, 3: d takes one from each
	p2, _ := g.rebalance()
	if n := moved(tasks(p1), tasks(p2)); n != 3 {
		t.Errorf("a fourth member moved %d tasks, want 3: %v -> %v", n, tasks(p1), tasks(p2))
	}
	for _, id := range []string{"a", "b", "c"} {
		for _, p := range tasks(p2)[id] {
			if !slices.Contains(tasks(p1)[id], p) {
				t.Errorf("%s gained task %d when a member joined", id, p)
			}
		}
	}
	g.leave("b") // b's 3 tasks go to a, c and d; nothing else moves
	p3, _ := g.rebalance()
	if n := moved(tasks(p2), tasks(p3)); n != 0 {
		t.Errorf("tasks of members that stayed moved: %d", n)
	}
	for _, id := range []string{"a", "c", "d"} {
		if len(tasks(p3)[id]) != 4 {
			t.Errorf("%s holds %v, want 4 tasks", id, tasks(p3)[id])
		}
	}
	// b comes back under the same instance id, with no memory (a new
	// process): it takes a fair share, 3 tasks, one from each.
	g.join("b")
	p4, _ := g.rebalance()
	if n := moved(tasks(p3), tasks(p4)); n != 3 {
		t.Errorf("a returning member moved %d tasks, want 3", n)
	}
}

// A claim from an older generation loses to a newer one: a member dropped
// from the group (its partitions lost) cannot pull back a task that moved
// on while it was away.
func TestBalancerPrefersTheNewestClaim(t *testing.T) {
	ms := []member{
		{topics: []string{"t"}, owned: []int32{0, 1, 2, 3}, generation: 3}, // stale
		{topics: []string{"t"}, owned: []int32{0, 1}, generation: 7},
		{topics: []string{"t"}, owned: []int32{2, 3}, generation: 7},
	}
	as := assignTasks(ms, map[string]int32{"t": 6}, 0)
	if !slices.Equal(as[1].tasks, []int32{0, 1}) || !slices.Equal(as[2].tasks, []int32{2, 3}) {
		t.Errorf("current owners lost tasks: %v %v", as[1].tasks, as[2].tasks)
	}
	if !slices.Equal(as[0].tasks, []int32{4, 5}) {
		t.Errorf("the stale member holds %v, want the free tasks 4, 5", as[0].tasks)
	}
}

// num.standby.replicas: each task gets that many standbys, on members other
// than its owner (StandbyTaskAssignor: never the active task's client), no
// member more than one copy; standbys stay put across rebalances that do
// not need to move them; with fewer members than copies, as many as fit.
func TestBalancerAssignsStandbysAwayFromTheOwner(t *testing.T) {
	g := newGroup(t, map[string]int32{"events": 8}, 1)
	g.join("a", "b", "c")
	parts, sb := g.rebalance()
	owners := tasks(parts)
	count := map[int32]int{}
	for id, ps := range sb {
		for _, p := range ps {
			count[p]++
			if slices.Contains(owners[id], p) {
				t.Errorf("%s has task %d active and standby", id, p)
			}
		}
	}
	for p := range int32(8) {
		if count[p] != 1 {
			t.Errorf("task %d has %d standbys, want 1", p, count[p])
		}
	}
	_, sb2 := g.rebalance()
	if fmt.Sprint(sb) != fmt.Sprint(sb2) {
		t.Errorf("standbys moved without a change: %v -> %v", sb, sb2)
	}
	g = newGroup(t, map[string]int32{"events": 4}, 2)
	g.join("a", "b")
	_, sb = g.rebalance()
	if len(sb["a"])+len(sb["b"]) != 4 {
		t.Errorf("2 members, 4 tasks, 2 standbys each: want 4 standbys (one per task, the other member), got %v", sb)
	}
}

// Task lists in UserData survive the round trip; malformed ones are
// refused, naming the fault.
func TestBalancerUserData(t *testing.T) {
	for _, ts := range [][]int32{nil, {0}, {1, 200, 70000}} {
		got, err := decodeTasks(encodeTasks(ts))
		if err != nil || !slices.Equal(got, ts) {
			t.Errorf("round trip of %v: %v, %v", ts, got, err)
		}
	}
	if _, err := decodeTasks([]byte{9}); err == nil {
		t.Error("an unknown version was accepted")
	}
	if _, err := decodeTasks([]byte{userDataVersion, 0x80}); err == nil {
		t.Error("a truncated varint was accepted")
	}
}

func has(m map[string][]int32, id string) bool {
	_, ok := m[id]
	return ok
}

// Kafka Streams' StickyTaskAssignorTest pins both:
// shouldAssignMultipleReplicasOfStandbyTask (3 clients, tasks 0_0..0_2, 2
// standbys: each client stands by for the two tasks it does not run) and
// shouldNotAssignStandbyTaskReplicasWhenNoClientAvailableWithoutHavingTheTaskAssigned
// (one client: no standby at all).
func TestBalancerStandbysAsKafkaStreamsStickyTaskAssignor(t *testing.T) {
	ms := []member{{topics: []string{"t"}}, {topics: []string{"t"}}, {topics: []string{"t"}}}
	as := assignTasks(ms, map[string]int32{"t": 3}, 2)
	for i, a := range as {
		if len(a.tasks) != 1 {
			t.Fatalf("member %d runs %v, want one task", i, a.tasks)
		}
		var others []int32
		for p := range int32(3) {
			if p != a.tasks[0] {
				others = append(others, p)
			}
		}
		if !slices.Equal(a.standby, others) {
			t.Errorf("member %d runs %v and stands by for %v, want %v", i, a.tasks, a.standby, others)
		}
	}
	as = assignTasks(ms[:1], map[string]int32{"t": 1}, 1)
	if len(as[0].standby) != 0 {
		t.Errorf("a lone member stands by for %v", as[0].standby)
	}
}

// withState gives member id of g the local state local (task -> offset
// sum), as its state directory's checkpoints would.
func (g *group) withState(id string, local map[int32]int64) {
	g.members[id].LocalState = func() map[int32]int64 { return local }
}

// A restarted instance (same state directory: it owns nothing, but its
// stores still hold tasks 0-2 with their checkpoints) gets tasks 0-2 back
// when nobody owns them, rather than an arbitrary fair share: it restores
// them from its checkpoints. Kafka Streams' SubscriptionInfo carries each
// client's taskOffsetSums for this, and HighAvailabilityTaskAssignor gives
// a task to the client with the least lag (ClientState.lagFor).
func TestBalancerGivesARestartedMemberTheTasksItHasStateFor(t *testing.T) {
	g := newGroup(t, map[string]int32{"events": 6, "events-2": 6}, 0)
	g.join("a", "b") // b restarts: a sorts first, so member order alone would not favour b
	g.withState("b", map[int32]int64{0: 500, 1: 480, 2: 510})
	parts, _ := g.rebalance()
	if got := tasks(parts)["b"]; !slices.Equal(got, []int32{0, 1, 2}) {
		t.Errorf("the restarted member got %v, want its tasks 0, 1, 2", got)
	}
	// The most caught up wins: both have state for task 0 and 3, b more
	// of 3, a more of 0.
	g = newGroup(t, map[string]int32{"events": 4}, 0)
	g.join("a", "b")
	g.withState("a", map[int32]int64{0: 90, 3: 10})
	g.withState("b", map[int32]int64{0: 50, 3: 70})
	parts, _ = g.rebalance()
	if ts := tasks(parts); !slices.Contains(ts["a"], 0) || !slices.Contains(ts["b"], 3) {
		t.Errorf("tasks did not go to the most caught-up member: %v", ts)
	}
	// Balance holds even when one member has state for everything.
	g = newGroup(t, map[string]int32{"events": 7}, 0)
	g.join("a", "b", "c")
	g.withState("c", map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1})
	parts, _ = g.rebalance() // check: floor/ceil, 2 or 3 each
	if got := tasks(parts)["c"]; len(got) != 3 {
		t.Errorf("the member with all the state holds %v, want 3 tasks: the extra one of 7 goes where state is", got)
	}
}

// Stickiness first: tasks a live member owns stay with it even when a
// returning member has state for them; only the tasks that balance moves
// anyway go to the member with state. (Kafka Streams would also move them
// back once the returning client caught up through a warmup replica and a
// probing rebalance; this balancer has no warmups.)
func TestBalancerKeepsOwnedTasksOverLocalState(t *testing.T) {
	// b and c own 0-2 and 3-5; a restarts with state for 0-2. Quotas are
	// 2, 2, 2: b and c each give up one task. b keeps 0, 1 (sticky) and
	// gives up 2, c gives up 5 (no state anywhere: its highest).
	g := newGroup(t, map[string]int32{"events": 6}, 0)
	g.join("b", "c")
	g.members["b"].owned = map[string][]int32{"events": {0, 1, 2}}
	g.members["c"].owned = map[string][]int32{"events": {3, 4, 5}}
	g.join("a")
	g.withState("a", map[int32]int64{0: 100, 1: 100, 2: 100})
	parts, _ := g.rebalance()
	ts := tasks(parts)
	if !slices.Equal(ts["b"], []int32{0, 1}) || !slices.Equal(ts["c"], []int32{3, 4}) || !slices.Equal(ts["a"], []int32{2, 5}) {
		t.Errorf("got %v, want b [0 1], c [3 4], a [2 5]", ts)
	}
	// b took over all of a's and its own tasks while a was away; a comes
	// back with state for 0-2: b must give up three, and gives up those a
	// has state for.
	g = newGroup(t, map[string]int32{"events": 6}, 0)
	g.join("b")
	g.members["b"].owned = map[string][]int32{"events": {0, 1, 2, 3, 4, 5}}
	g.join("a")
	g.withState("a", map[int32]int64{0: 100, 1: 100, 2: 100})
	parts, _ = g.rebalance()
	if got := tasks(parts)["a"]; !slices.Equal(got, []int32{0, 1, 2}) {
		t.Errorf("a got %v, want 0, 1, 2: the tasks b had to give up, chosen where a has state", got)
	}
}

// Standbys go preferably where the task's state already is: a member with
// local state for a task stands by for it rather than one starting from
// scratch.
func TestBalancerPlacesStandbysWhereStateIs(t *testing.T) {
	g := newGroup(t, map[string]int32{"events": 3}, 1)
	g.join("a", "b", "c")
	g.members["a"].owned = map[string][]int32{"events": {0}}
	g.members["b"].owned = map[string][]int32{"events": {1}}
	g.members["c"].owned = map[string][]int32{"events": {2}}
	g.withState("c", map[int32]int64{0: 40})
	g.withState("a", map[int32]int64{1: 40})
	_, sb := g.rebalance()
	if !slices.Contains(sb["c"], 0) || !slices.Contains(sb["a"], 1) {
		t.Errorf("standbys %v: want task 0's on c and task 1's on a, where their state is", sb)
	}
}

// Members of an earlier version send version-1 UserData (standby tasks
// only): they count as having no local state. Version 2 round-trips;
// malformed data is refused.
func TestBalancerMemberData(t *testing.T) {
	_, sb, local, err := decodeMemberData(encodeTasks([]int32{3, 4}))
	if err != nil || !slices.Equal(sb, []int32{3, 4}) || len(local) != 0 {
		t.Errorf("version 1: %v %v %v", sb, local, err)
	}
	if _, sb, local, err = decodeMemberData(nil); err != nil || sb != nil || local != nil {
		t.Errorf("empty: %v %v %v", sb, local, err)
	}
	in := map[int32]int64{0: 1, 7: 1 << 40, 70000: 3}
	_, sb, local, err = decodeMemberData(encodeMemberData([]int32{2}, in))
	if err != nil || !slices.Equal(sb, []int32{2}) || fmt.Sprint(local) != fmt.Sprint(in) {
		t.Errorf("version 2 round trip: %v %v %v", sb, local, err)
	}
	if _, _, _, err := decodeMemberData([]byte{memberDataVersion, 1}); err == nil {
		t.Error("a truncated standby list was accepted")
	}
	if _, _, _, err := decodeMemberData([]byte{memberDataVersion, 0, 1}); err == nil {
		t.Error("a task without its offset sum was accepted")
	}
}

// Members with an application.server hear every endpoint's share of the
// assignment (Kafka Streams' partitionsByHost and standbyPartitionByHost):
// the same on every member, equal to what each was assigned; a member
// without one is left out of the hosts and gets the version-1 user data.
func TestBalancerCarriesEndpoints(t *testing.T) {
	g := newGroup(t, map[string]int32{"events": 6, "other": 3}, 1)
	g.join("a", "b", "c", "d")
	for _, id := range []string{"a", "b", "c"} {
		g.members[id].Endpoint = id + ".example:7000"
	}
	parts, sb := g.rebalance()
	want := g.members["a"].Hosts()
	if len(want) != 3 {
		t.Fatalf("hosts %v, want a, b and c's", want)
	}
	for i, h := range want {
		id := string("abc"[i])
		if h.Endpoint != id+".example:7000" {
			t.Errorf("host %d is %q, want %s's endpoint (in endpoint order)", i, h.Endpoint, id)
		}
		if fmt.Sprint(h.Partitions) != fmt.Sprint(parts[id]) || fmt.Sprint(h.Standby) != fmt.Sprint(sb[id]) {
			t.Errorf("host %s: partitions %v standby %v, want %v and %v", h.Endpoint, h.Partitions, h.Standby, parts[id], sb[id])
		}
	}
	for _, id := range []string{"b", "c"} {
		if got := g.members[id].Hosts(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s heard hosts %v, a heard %v", id, got, want)
		}
	}
	if got := g.members["d"].Hosts(); got != nil {
		t.Errorf("d has no endpoint, yet heard hosts %v", got)
	}
	if _, _, err := decodeAssignmentData(append(encodeHostsData([]int32{1}, want), 7)); err == nil {
		t.Error("assignment data with trailing bytes: no error")
	}
	ep, standby, local, err := decodeMemberData(encodeEndpointData("h:1", []int32{4}, map[int32]int64{2: 9}))
	if err != nil || ep != "h:1" || fmt.Sprint(standby) != "[4]" || local[2] != 9 {
		t.Errorf("endpoint member data round trip: %q %v %v %v", ep, standby, local, err)
	}
}
