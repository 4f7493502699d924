// Package docs_test checks that docs/README.md, the documentation's index,
// links every page under docs/ and that its links resolve.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var link = regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)

func TestIndexLinksEveryDoc(t *testing.T) {
	index, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range link.FindAllStringSubmatch(string(index), -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		if _, err := os.Stat(target); err != nil {
			t.Errorf("docs/README.md links %s, which does not exist", target)
		}
		linked[filepath.Clean(target)] = true
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".md" || path == "README.md" {
			return err
		}
		if !linked[path] {
			t.Errorf("docs/README.md does not link docs/%s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
