package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
)

// procLang runs an executor program: it reads the spec from the file its
// last argument names, reports events as JSON lines on standard output, and
// stops its application when standard input says "stop" or closes.
type procLang struct {
	name    string
	command []string // the program and its arguments, before the spec file
	dir     string   // its working directory
	env     []string // added to the runner's environment
	tmp     string   // where spec files go
}

func (l *procLang) Name() string { return l.name }

func (l *procLang) Launch(s spec) (execution, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(l.tmp, s.ApplicationID+".spec.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(l.command[0], append(l.command[1:], file)...)
	cmd.Dir = l.dir
	cmd.Env = append(os.Environ(), l.env...)
	e := &procExec{cmd: cmd, events: make(chan event, 8), stderr: &tail{max: 4000}, other: &tail{max: 2000}}
	cmd.Stderr = e.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s executor: %w", l.name, err)
	}
	go e.read(stdout)
	return e, nil
}

type procExec struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan event
	stderr *tail
	other  *tail // stdout lines that are not events

	once    sync.Once
	mu      sync.Mutex // guards waitErr and printed
	waitErr error
	printed []string // stdout lines that are not events: print steps' lines
}

func (e *procExec) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Event == "" {
			fmt.Fprintln(e.other, sc.Text())
			e.mu.Lock()
			e.printed = append(e.printed, sc.Text())
			e.mu.Unlock()
			continue
		}
		e.events <- ev
	}
	err := e.cmd.Wait()
	e.mu.Lock()
	e.waitErr = err
	e.mu.Unlock()
	close(e.events)
}

func (e *procExec) Events() <-chan event { return e.events }

func (e *procExec) Printed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.printed)
}

func (e *procExec) Stop() {
	e.once.Do(func() {
		io.WriteString(e.stdin, "stop\n")
		e.stdin.Close()
	})
}

func (e *procExec) Kill() {
	e.Stop()
	if e.cmd.Process != nil {
		e.cmd.Process.Kill()
	}
}

func (e *procExec) Diagnostics() string {
	e.mu.Lock()
	werr := e.waitErr
	e.mu.Unlock()
	out := ""
	if werr != nil {
		out = fmt.Sprintf("exit: %v\n", werr)
	}
	if s := e.other.String(); s != "" {
		out += "stdout (not events):\n" + s + "\n"
	}
	if s := e.stderr.String(); s != "" {
		out += "stderr (tail):\n" + s
	}
	return out
}

// buildRust builds the Rust executor (conformance/executors/rust, a member
// of sdk-rust's cargo workspace) and answers its binary. The crates come
// from crates.io at the versions of sdk-rust/Cargo.lock (--locked), out of
// cargo's cache once make deps has fetched them; CARGO_NET_OFFLINE=true
// makes cargo say so rather than reach the registry.
func buildRust(root string) (string, error) {
	dir := filepath.Join(root, "sdk-rust")
	cmd := exec.Command("cargo", "build", "--quiet", "--locked", "-p", "polystreams-conformance")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("rust executor: cargo build in %s: %v\n%s", dir, err, out.String())
	}
	return filepath.Join(dir, "target", "debug", "polystreams-conformance"), nil
}
