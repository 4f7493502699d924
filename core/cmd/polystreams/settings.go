package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// settings gives each flag not set on the command line its value from the
// environment, POLYSTREAMS_<NAME> (upper case, dashes as underscores: e.g.
// POLYSTREAMS_STATE_DIR), or else from the config file: lines of
// "name = value" (the flag's name; blank lines and # comments skipped;
// quotes around a value dropped). An unknown name or a bad value is an
// error naming where it came from.
func settings(fs *flag.FlagSet, file string, lookup func(string) (string, bool)) error {
	given := map[string]bool{"config": true}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fromFile := map[string]string{}
	lineOf := map[string]int{}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, value, ok := strings.Cut(line, "=")
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			if len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'') {
				value = value[1 : len(value)-1]
			}
			switch {
			case !ok:
				return fmt.Errorf("%s:%d: want name = value", file, n)
			case fs.Lookup(name) == nil || name == "config":
				return fmt.Errorf("%s:%d: %q is no setting of 'polystreams %s' (see --help)", file, n, name, fs.Name())
			}
			fromFile[name], lineOf[name] = value, n
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--config %s: %w", file, err)
		}
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		env := "POLYSTREAMS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
			return
		}
		if v, ok := fromFile[f.Name]; ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %w", file, lineOf[f.Name], f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}
