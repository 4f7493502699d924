package server_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestChaosRebalanceStorm (make chaos, exactly_once_v2): three engine
// processes with one application.id, each with its own Python host, count
// while their membership churns: every few seconds one member is killed
// with SIGKILL (engine and host) or stopped with SIGTERM (its host stops
// the session: a commit and a clean leave), and a new one starts on its
// state directory (the same static member, fencing what its predecessor
// left open) — 12 membership changes (POLYSTREAMS_CHAOS_STORM, the number
// of kill-or-stop-then-start rounds, 6 by default), records arriving all
// along. Read read_committed, every key's count updates are exactly 1..n,
// checked by the engine's test and by confluent-kafka.
func TestChaosRebalanceStorm(t *testing.T) {
	if !chaosOn() {
		t.Skip("set POLYSTREAMS_CHAOS=1 (make chaos) to run the rebalance storm")
	}
	if chaosGuarantee() != "exactly_once_v2" {
		t.Skip("exact counts across rebalances are an exactly_once_v2 promise")
	}
	rounds, keys := 6, 1_000
	if n, err := strconv.Atoi(os.Getenv("POLYSTREAMS_CHAOS_STORM")); err == nil {
		rounds = n
	}
	began := time.Now()
	c := newScaleCluster(t, 8, "storm", []string{"events", "event-counts"},
		"--topology", "count", "--input", "events", "--output", "event-counts",
		"--config", "processing.guarantee=exactly_once_v2",
		"--config", "session.timeout.ms=6000",
		"--config", "polystreams.bundle.max.records=500",
		"--config", "statestore.cache.max.bytes=0")
	want := map[string]int64{}
	sent := 0
	c.produceCounted("events", sent, 20_000, keys, want)
	sent += 20_000
	live := []*instance{c.start("a", ""), c.start("b", ""), c.start("c", "")}
	c.waitProcessed("event-counts", 5_000, "the three instances to begin counting")
	// Records arrive all through the storm, in small batches; the feeder
	// owns its own expected counts, merged once it is done.
	fedWant := map[string]int64{}
	var fedN atomic.Int64
	stopFeed := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		from := sent
		for {
			select {
			case <-stopFeed:
				return
			default:
			}
			c.produceCounted("events", from, 1_000, keys, fedWant)
			from += 1_000
			fedN.Add(1_000)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	rng := rand.New(rand.NewPCG(7, 8))
	changes, killed, stopped, owning := 0, 0, 0, 0
	stormBegan := time.Now()
	for round := range rounds {
		i := rng.IntN(len(live))
		victim := live[i]
		if victim.ownedTasks() {
			owning++
		}
		if round%2 == 0 {
			victim.kill()
			killed++
		} else {
			victim.stop()
			stopped++
		}
		changes++
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		c.checkHosts()
		live[i] = c.start(victim.name[:1]+strconv.Itoa(round+2), victim.stateDir)
		changes++
		t.Logf("round %d: %s %s, %s started on its state", round, victim.name, map[bool]string{true: "killed", false: "stopped"}[round%2 == 0], live[i].name)
		time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
	}
	storm := time.Since(stormBegan)
	close(stopFeed)
	<-fed
	for k, n := range fedWant {
		want[k] += n
	}
	sent += int(fedN.Load())
	if owning == 0 {
		t.Fatalf("none of the %d members killed or stopped held a task: the storm moved nothing", rounds)
	}
	var last error
	deadline := time.Now().Add(600 * time.Second)
	for {
		c.checkHosts()
		if last = exactlyOnce(c.e.committedSequences("event-counts"), want); last == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exactly-once never held: %v", last)
		}
		time.Sleep(time.Second)
	}
	c.verifyIndependently("event-counts", want)
	for _, in := range live {
		in.stop()
	}
	t.Logf("chaos figures: rebalance storm: %d records, %d keys, %d membership changes in %v (%d kills, %d stops, %d restarts; %d of the members taken down held tasks), keys exact %d/%d, duplicates 0, %v",
		sent, keys, changes, storm.Round(time.Second), killed, stopped, rounds, owning, len(want), len(want), time.Since(began).Round(time.Second))
}
