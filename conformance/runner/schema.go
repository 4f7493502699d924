package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// schema is a JSON Schema, interpreted for the keywords case.schema.json
// uses. A keyword outside that set is refused when the schema is loaded, so
// the schema cannot come to mean more than the runner checks.
type schema struct {
	root map[string]any
	re   map[string]*regexp.Regexp
}

var knownKeywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$ref": true, "title": true, "description": true,
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "oneOf": true, "pattern": true, "minItems": true, "minLength": true,
	"minimum": true, "maximum": true,
}

func parseSchema(data []byte) (*schema, error) {
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := &schema{root: root, re: map[string]*regexp.Regexp{}}
	if err := s.check(root, "#"); err != nil {
		return nil, err
	}
	return s, nil
}

// check refuses keywords the validator does not implement and compiles
// patterns.
func (s *schema) check(node any, at string) error {
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	for k, v := range m {
		if !knownKeywords[k] {
			return fmt.Errorf("schema: %s uses keyword %q, which the runner's validator does not implement", at, k)
		}
		switch k {
		case "pattern":
			p, _ := v.(string)
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("schema: %s: pattern %q: %w", at, p, err)
			}
			s.re[p] = re
		case "properties", "$defs":
			for name, sub := range v.(map[string]any) {
				if err := s.check(sub, at+"/"+k+"/"+name); err != nil {
					return err
				}
			}
		case "items", "additionalProperties":
			if err := s.check(v, at+"/"+k); err != nil {
				return err
			}
		case "oneOf":
			for i, sub := range v.([]any) {
				if err := s.check(sub, fmt.Sprintf("%s/oneOf/%d", at, i)); err != nil {
					return err
				}
			}
		case "$ref":
			if _, err := s.resolve(v.(string)); err != nil {
				return fmt.Errorf("schema: %s: %w", at, err)
			}
		}
	}
	return nil
}

func (s *schema) resolve(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only #/$defs/<name> is supported", ref)
	}
	defs, _ := s.root["$defs"].(map[string]any)
	d, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q names no definition", ref)
	}
	return d, nil
}

// violation is one way an instance does not match: where (a JSON path such
// as $.topology[2].fn) and what is wrong.
type violation struct {
	Path, What string
}

func (v violation) String() string { return v.Path + ": " + v.What }

// validate returns every violation of instance (decoded with UseNumber).
func (s *schema) validate(instance any) []violation {
	var out []violation
	s.walk(s.root, instance, "$", &out)
	return out
}

func (s *schema) walk(sch map[string]any, v any, path string, out *[]violation) {
	add := func(format string, args ...any) {
		*out = append(*out, violation{path, fmt.Sprintf(format, args...)})
	}
	if ref, ok := sch["$ref"].(string); ok {
		d, _ := s.resolve(ref)
		s.walk(d, v, path, out)
	}
	if t, ok := sch["type"]; ok && !typeMatches(t, v) {
		add("want %s, got %s", typeText(t), jsonType(v))
		return
	}
	if c, ok := sch["const"]; ok && !sameJSON(c, v) {
		add("want %s, got %s", short(c), short(v))
	}
	if e, ok := sch["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || sameJSON(x, v)
		}
		if !found {
			add("%s is not one of %s", short(v), enumText(e))
		}
	}
	if p, ok := sch["pattern"].(string); ok {
		if str, ok := v.(string); ok && !s.re[p].MatchString(str) {
			add("%q does not match %s", str, p)
		}
	}
	if n, ok := sch["minLength"].(float64); ok {
		if str, ok := v.(string); ok && len([]rune(str)) < int(n) {
			add("shorter than %d characters", int(n))
		}
	}
	if num, ok := v.(json.Number); ok {
		f, _ := num.Float64()
		if lo, ok := sch["minimum"].(float64); ok && f < lo {
			add("%s is less than the minimum %v", num, lo)
		}
		if hi, ok := sch["maximum"].(float64); ok && f > hi {
			add("%s is more than the maximum %v", num, hi)
		}
	}
	if arr, ok := v.([]any); ok {
		if n, ok := sch["minItems"].(float64); ok && len(arr) < int(n) {
			add("has %d items, want at least %d", len(arr), int(n))
		}
		if items, ok := sch["items"].(map[string]any); ok {
			for i, x := range arr {
				s.walk(items, x, fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := sch["properties"].(map[string]any)
		if req, ok := sch["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					add("%q is required", r)
				}
			}
		}
		for _, k := range sortedKeys(obj) {
			if p, ok := props[k].(map[string]any); ok {
				s.walk(p, obj[k], path+"."+k, out)
				continue
			}
			switch ap := sch["additionalProperties"].(type) {
			case bool:
				if !ap {
					known := sortedKeys(props)
					*out = append(*out, violation{path + "." + k, fmt.Sprintf("is not allowed here (allowed: %s)", strings.Join(known, ", "))})
				}
			case map[string]any:
				s.walk(ap, obj[k], path+"."+k, out)
			}
		}
	}
	if one, ok := sch["oneOf"].([]any); ok {
		s.oneOf(one, v, path, out)
	}
}

// oneOf passes when exactly one branch matches. When the branches are told
// apart by a property with a const (as steps are by "op"), the violations
// reported are those of the branch the instance names, which say far more
// than "matches no branch".
func (s *schema) oneOf(branches []any, v any, path string, out *[]violation) {
	var matched int
	var errs [][]violation
	resolved := make([]map[string]any, len(branches))
	for i, b := range branches {
		m := b.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			m, _ = s.resolve(ref)
		}
		resolved[i] = m
		var e []violation
		s.walk(m, v, path, &e)
		if len(e) == 0 {
			matched++
		}
		errs = append(errs, e)
	}
	switch {
	case matched == 1:
		return
	case matched > 1:
		*out = append(*out, violation{path, fmt.Sprintf("matches %d alternatives, want exactly one", matched)})
		return
	}
	if prop, consts := discriminator(resolved); prop != "" {
		obj, _ := v.(map[string]any)
		got, ok := obj[prop]
		if !ok {
			*out = append(*out, violation{path, fmt.Sprintf("%q is required (one of %s)", prop, strings.Join(consts, ", "))})
			return
		}
		for i, c := range consts {
			if sameJSON(c, got) || fmt.Sprint(got) == c {
				*out = append(*out, errs[i]...)
				return
			}
		}
		*out = append(*out, violation{path + "." + prop, fmt.Sprintf("%s is not one of %s", short(got), strings.Join(consts, ", "))})
		return
	}
	// No discriminator: report the alternative that came closest, among
	// those of the instance's type when there are any.
	best := -1
	for i := range errs {
		t, typed := resolved[i]["type"]
		if typed && !typeMatches(t, v) {
			continue
		}
		if best < 0 || len(errs[i]) < len(errs[best]) {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	*out = append(*out, errs[best]...)
}

// discriminator finds a property every branch fixes with a const.
func discriminator(branches []map[string]any) (string, []string) {
	if len(branches) == 0 {
		return "", nil
	}
	props, _ := branches[0]["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		var consts []string
		for _, b := range branches {
			p, _ := b["properties"].(map[string]any)
			pm, _ := p[name].(map[string]any)
			c, ok := pm["const"].(string)
			if !ok {
				consts = nil
				break
			}
			consts = append(consts, c)
		}
		if consts != nil {
			return name, consts
		}
	}
	return "", nil
}

func typeMatches(t, v any) bool {
	if list, ok := t.([]any); ok {
		for _, x := range list {
			if typeMatches(x, v) {
				return true
			}
		}
		return false
	}
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func typeText(t any) string {
	if list, ok := t.([]any); ok {
		parts := make([]string, len(list))
		for i, x := range list {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, " or ")
	}
	return fmt.Sprintf("%s", t)
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func enumText(e []any) string {
	parts := make([]string, len(e))
	for i, x := range e {
		parts[i] = short(x)
	}
	if len(parts) > 12 {
		parts = append(parts[:12], "...")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// sameJSON compares a schema value (decoded without UseNumber) with an
// instance value (decoded with it).
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
