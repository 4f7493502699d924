package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityFindingsNameTestsThatExist: every test or fuzz target that
// docs/security.md's table of issue 21's findings names is a function of
// a test file of the repository, so the table cannot name a test that was
// renamed or removed.
func TestSecurityFindingsNameTestsThatExist(t *testing.T) {
	doc, err := os.ReadFile("security.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## Findings and their tests")
	if start < 0 {
		t.Fatal(`docs/security.md has no section "## Findings and their tests"`)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	named := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| #") {
			continue
		}
		rows++
		for _, m := range regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(line, -1) {
			named[m[1]] = false
		}
	}
	if rows < 10 || len(named) == 0 {
		t.Fatalf("the findings table has %d rows naming %d tests; want one row per finding (10)", rows, len(named))
	}
	defined := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "target" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range defined.FindAllStringSubmatch(string(b), -1) {
			if _, ok := named[m[1]]; ok {
				named[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, ok := range named {
		if !ok {
			t.Errorf("docs/security.md names %s, which no test file defines", name)
		}
	}
}
