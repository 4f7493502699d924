package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// conformance/catalogue.json is the catalogue as data, which executors
// build functions from: it must say what catalogue.go (the reference)
// says, and each expr must compute what the Go function computes.

type catalogueData struct {
	Functions map[string]struct {
		Roles []string `json:"roles"`
		Arg   string   `json:"arg"`
		Expr  any      `json:"expr"`
	} `json:"functions"`
}

// dataRoles are the executors' role names, in role bit order.
var dataRoles = []string{"mapper", "flat", "predicate", "key", "map", "action", "reducer", "init", "aggregator", "merger", "joiner", "mapper_with_key", "flat_with_key", "flat_map", "extractor"}

func loadCatalogueData(t *testing.T) catalogueData {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "catalogue.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c catalogueData
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// evalExpr evaluates a catalogue expr (conformance/README.md): var, const,
// list, not_null. JSON integers are int64, as the catalogue's natural values.
func evalExpr(e any, env map[string]any) (any, error) {
	m, ok := e.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("expr %v: want one of var, const, list, not_null", e)
	}
	for op, x := range m {
		switch op {
		case "var":
			v, ok := env[fmt.Sprint(x)]
			if !ok {
				return nil, fmt.Errorf("expr: no variable %v here", x)
			}
			return v, nil
		case "const":
			return naturalJSON(x), nil
		case "list":
			items, ok := x.([]any)
			if !ok {
				return nil, fmt.Errorf("expr list: %v is not a list", x)
			}
			out := []any{}
			for _, it := range items {
				v, err := evalExpr(it, env)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			return out, nil
		case "not_null":
			v, err := evalExpr(x, env)
			return v != nil, err
		}
		return nil, fmt.Errorf("expr: unknown operation %q", op)
	}
	return nil, nil
}

func naturalJSON(x any) any {
	switch v := x.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = naturalJSON(v[i])
		}
		return out
	}
	return x
}

func TestCatalogueDataIsTheCatalogue(t *testing.T) {
	c := loadCatalogueData(t)
	var names []string
	for n := range catalogue {
		names = append(names, n)
		if _, ok := c.Functions[n]; !ok {
			t.Errorf("catalogue.json has no %s", n)
		}
	}
	for n, f := range c.Functions {
		impl, ok := catalogue[n]
		if !ok {
			t.Errorf("catalogue.json has %s, which catalogue.go does not", n)
			continue
		}
		var want []string
		for i, r := range dataRoles {
			if impl.roles&(1<<i) != 0 {
				want = append(want, r)
			}
		}
		if got := slices.Sorted(slices.Values(f.Roles)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: roles %v in catalogue.json, %v in catalogue.go", n, f.Roles, want)
		}
		if arg := []string{"none", "optional", "required"}[impl.arg]; f.Arg != arg {
			t.Errorf("%s: arg %q in catalogue.json, %q in catalogue.go", n, f.Arg, arg)
		}
	}
	if len(names) < 40 {
		t.Errorf("only %d functions", len(names))
	}
}

// Each expr gives what the Go function gives, for every role it has, on
// keys and values of each kind.
func TestCatalogueExprsComputeTheReference(t *testing.T) {
	c := loadCatalogueData(t)
	samples := []any{nil, "a b", "", int64(3), map[string]any{"region": "eu"}}
	exprs := 0
	for n, f := range c.Functions {
		if f.Expr == nil {
			continue
		}
		exprs++
		impl := catalogue[n]
		for _, role := range f.Roles {
			for _, k := range samples {
				for _, v := range samples {
					got, err := evalExpr(f.Expr, map[string]any{"key": k, "value": v})
					if err != nil {
						t.Fatalf("%s: %v", n, err)
					}
					var want any
					switch role {
					case "mapper":
						want, err = impl.mapper(nil, v)
					case "flat":
						var w []any
						w, err = impl.flat(nil, v)
						want = append([]any{}, w...)
					case "predicate":
						want, err = impl.pred(nil, k, v)
					case "key":
						want, err = impl.key(nil, k, v)
					case "map":
						var nk, nv any
						nk, nv, err = impl.kv(nil, k, v)
						want = []any{nk, nv}
					case "mapper_with_key":
						want, err = impl.mapperK(nil, k, v)
					case "flat_with_key":
						var w []any
						w, err = impl.flatK(nil, k, v)
						want = append([]any{}, w...)
					case "flat_map":
						var w [][2]any
						w, err = impl.flatKV(nil, k, v)
						pairs := []any{}
						for _, p := range w {
							pairs = append(pairs, []any{p[0], p[1]})
						}
						want = pairs
					case "init":
						want, err = impl.init(nil)
					case "action":
						want = nil // an action gives nothing
					default:
						t.Fatalf("%s: no expr check for role %s", n, role)
					}
					if err != nil {
						t.Fatalf("%s as %s: %v", n, role, err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s as %s on (%v, %v): expr gives %#v, catalogue.go %#v", n, role, k, v, got, want)
					}
				}
			}
		}
	}
	if exprs < 10 {
		t.Errorf("only %d functions defined by expr", exprs)
	}
}
