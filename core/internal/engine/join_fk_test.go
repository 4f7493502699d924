package engine

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/internal/state"
)

// The registration and response records round-trip, with and without a
// hash and a right value; truncated or unknown ones are refused naming
// what is wrong.
func TestForeignKeyJoinRecords(t *testing.T) {
	h := fkHash([]byte("left value"))
	if len(h) != fkHashLen || fkHash(nil) != nil || bytes.Equal(h, fkHash([]byte("left value!"))) {
		t.Fatalf("hash %x", h)
	}
	for _, s := range []subscription{
		{instruction: fkPropagateOnlyIfSet, hash: h, partition: 4, pk: []byte("o1")},
		{instruction: fkDeleteAndPropagate, partition: 0, pk: []byte("o2")},
		{instruction: fkPropagateNull, hash: h, partition: 1 << 20, pk: []byte{}},
	} {
		got, err := decodeSubscription(encodeSubscription(s))
		if err != nil || got.instruction != s.instruction || !bytes.Equal(got.hash, s.hash) || got.partition != s.partition || !bytes.Equal(got.pk, s.pk) {
			t.Errorf("subscription %+v came back %+v, %v", s, got, err)
		}
	}
	for _, r := range []response{
		{hash: h, partition: 2, value: []byte("Ann")},
		{partition: 3},
		{hash: h, partition: 0, value: []byte{}}, // an empty value is not a null one
	} {
		got, err := decodeResponse(encodeResponse(r))
		if err != nil || !bytes.Equal(got.hash, r.hash) || got.partition != r.partition || !bytes.Equal(got.value, r.value) || (got.value == nil) != (r.value == nil) {
			t.Errorf("response %+v came back %+v, %v", r, got, err)
		}
	}
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{[]byte{0, 2}, "too short"},
		{[]byte{1, 2, 0, 0, 0, 0, 0}, "version 1"},
		{[]byte{0, 9, 0, 0, 0, 0, 0}, "instruction 9"},
		{[]byte{0, 2, 1, 1, 2}, "hash is cut short"},
		{[]byte{0, 2, 0, 0, 0}, "partition is cut short"},
	} {
		if _, err := decodeSubscription(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeSubscription(%v): %v, want %q", tc.b, err, tc.want)
		}
	}
	if _, err := decodeResponse([]byte{0, 1, 7}); err == nil || !strings.Contains(err.Error(), "hash is cut short") {
		t.Errorf("decodeResponse: %v", err)
	}
}

// The subscription store's keys put a foreign key's subscriptions
// together, and a prefix never matches a longer foreign key that starts
// with it (the length comes first, as in Kafka's CombinedKeySchema).
func TestForeignKeyJoinCombinedKey(t *testing.T) {
	keys := [][]byte{combinedKey([]byte("c1"), []byte("o2")), combinedKey([]byte("c10"), []byte("o1")), combinedKey([]byte("c1"), []byte("o1"))}
	slices.SortFunc(keys, bytes.Compare)
	prefix := combinedKey([]byte("c1"), nil)
	var of []string
	for _, k := range keys {
		if bytes.HasPrefix(k, prefix) {
			of = append(of, string(k[len(prefix):]))
		}
	}
	if !slices.Equal(of, []string{"o1", "o2"}) {
		t.Errorf("subscriptions of c1: %v", of)
	}
}

// scanPrefix sees the store as the batch does: Pebble's rows, overlaid by
// the open transaction's and then the batch's writes (a nil value deletes).
func TestForeignKeyJoinScanPrefix(t *testing.T) {
	db, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	part := db.Partition("subs", 0)
	ck := func(fk, pk string) []byte { return combinedKey([]byte(fk), []byte(pk)) }
	if err := part.Apply([]state.Write{
		{Key: ck("c1", "o1"), Value: []byte("pebble-o1")},
		{Key: ck("c1", "o2"), Value: []byte("pebble-o2")},
		{Key: ck("c10", "o9"), Value: []byte("other")},
	}); err != nil {
		t.Fatal(err)
	}
	tx := &storeTx{Tx: state.NewTx(part, false)}
	tx.Txn[string(ck("c1", "o2"))] = row{Value: nil}              // deleted in the transaction
	tx.Txn[string(ck("c1", "o3"))] = row{Value: []byte("txn-o3")} // added in it
	tx.Put(ck("c1", "o1"), []byte("batch-o1"), 5)
	tx.Put(ck("c1", "o4"), []byte("batch-o4"), 5)
	tx.Put(ck("c1", "o3"), nil, 5) // and deleted again by the batch
	var got []string
	prefix := combinedKey([]byte("c1"), nil)
	if err := tx.ScanPrefix(prefix, func(k, v []byte) error {
		got = append(got, string(k[len(prefix):])+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"o1=batch-o1", "o4=batch-o4"}; !slices.Equal(got, want) {
		t.Errorf("scan of c1: %v, want %v", got, want)
	}
}
