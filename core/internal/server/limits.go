package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"connectrpc.com/connect"
)

// Bounds on what one caller can make the engine hold or say.

// limitBody refuses a request body larger than max before it is buffered:
// at once when its Content-Length says so (nothing of it is read), else as
// it streams (http.MaxBytesReader ends the read at max+1 bytes, and the
// Connect handler answers resource_exhausted). Connect's own
// WithReadMaxBytes still bounds a compressed body's decompressed size.
//
// All requests together may hold at most max bytes of bodies being read (a
// budget; a body's bytes return to it once it is read to its end, or
// refused): a request that would read past it is refused with
// resource_exhausted rather than wait (two large requests waiting for each
// other's bytes would wait forever). So concurrent bodies without a
// Content-Length, which are read until they pass max, cost max in all, not
// max each; an Exchange waiting for bundles holds none of it.
func limitBody(max int, next http.Handler) http.Handler {
	budget := &readBudget{left: int64(max)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := path.Base(r.URL.Path) // the method, on the protocol's paths
		if r.ContentLength > int64(max) {
			// Not read: the connection is closed after the answer rather
			// than drained.
			w.Header().Set("Connection", "close")
			writeTooLarge(w, r, fmt.Sprintf("%s: request body of %d bytes is larger than configured max %d (--max-request-bytes)", call, r.ContentLength, max))
			return
		}
		body := &budgetedBody{ReadCloser: http.MaxBytesReader(w, r.Body, int64(max)), budget: budget, call: call}
		defer body.release()
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// readBudget is the bytes of request bodies the engine may hold at once.
// Safe for concurrent use.
type readBudget struct {
	mu   sync.Mutex // guards left
	left int64
}

func (b *readBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

func (b *readBudget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// budgetedBody takes what it reads from the budget, and gives it back
// when the body ends (or fails), at the latest when the request is
// answered. Read by one goroutine, the handler's.
type budgetedBody struct {
	io.ReadCloser
	budget *readBudget
	call   string // the method, for errors
	taken  int64
	ended  error // the error that ended the body: later reads take nothing
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	if b.ended != nil {
		return 0, b.ended
	}
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		// Connect would say "exceeded N byte http.MaxBytesReader limit":
		// name the call and the engine's setting instead.
		err = connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s: request body is larger than configured max %d (--max-request-bytes)", b.call, tooLarge.Limit))
	}
	if n > 0 && !b.budget.take(int64(n)) {
		n, err = 0, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s: the engine is reading as many request bytes as it may at once (--max-request-bytes); retry", b.call))
	} else {
		b.taken += int64(n)
	}
	if err != nil {
		// Read to its end, or refused: decoded or dropped next.
		b.ended = err
		b.release()
	}
	return n, err
}

func (b *budgetedBody) release() {
	b.budget.give(b.taken)
	b.taken = 0
}

// writeTooLarge answers resource_exhausted in the request's protocol:
// Connect reads the JSON body of an HTTP 429, gRPC and gRPC-Web the
// trailers-only status 8.
func writeTooLarge(w http.ResponseWriter, r *http.Request, msg string) {
	h := w.Header()
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/grpc") {
		h.Set("Content-Type", ct)
		h.Set("Grpc-Status", strconv.Itoa(int(connect.CodeResourceExhausted)))
		h.Set("Grpc-Message", msg)
		w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprintf(w, `{"code":"resource_exhausted","message":%s}`, strconv.Quote(msg))
}

// Error answers are bounded: at most maxProblems problems (lines: a
// validator joins its problems with errors.Join, one per line) and
// maxErrorBytes bytes, then a count of what was left out. A request that
// names a million unknown config keys gets the first ones and the count,
// not an answer larger than itself.
const (
	maxProblems   = 20
	maxErrorBytes = 8 << 10
)

// boundErrors is the Connect interceptor that bounds every error answer.
type boundErrors struct{}

func (boundErrors) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		if err != nil {
			err = boundError(err)
		}
		return resp, err
	}
}

func (boundErrors) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (boundErrors) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if err := next(ctx, conn); err != nil {
			return boundError(err)
		}
		return nil
	}
}

// boundError returns err, or when its message passes the bounds, a
// Connect error of the same code with the message cut to them.
func boundError(err error) error {
	var ce *connect.Error
	code, msg := connect.CodeUnknown, err.Error()
	if errors.As(err, &ce) {
		code, msg = ce.Code(), ce.Message()
	}
	cut, ok := boundMessage(msg)
	if ok {
		return err
	}
	return connect.NewError(code, errors.New(cut))
}

// boundMessage cuts msg to maxProblems lines and maxErrorBytes bytes,
// saying how much it left out; ok when msg is within both already.
func boundMessage(msg string) (string, bool) {
	lines := strings.Count(msg, "\n") + 1
	if lines <= maxProblems && len(msg) <= maxErrorBytes {
		return msg, true
	}
	var b strings.Builder
	kept := 0
	for line := range strings.SplitSeq(msg, "\n") {
		if kept == maxProblems || b.Len()+len(line) > maxErrorBytes {
			break
		}
		if kept > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		kept++
	}
	if kept == 0 {
		// One line longer than the bound: keep its start (a rune cut in
		// two is dropped).
		first := strings.ToValidUTF8(msg[:maxErrorBytes], "")
		return fmt.Sprintf("%s... (%d more bytes)", first, len(msg)-len(first)), false
	}
	if left := lines - kept; left > 0 {
		fmt.Fprintf(&b, "\n... and %d more problems", left)
	}
	return b.String(), false
}

// quoteBounded quotes s, cut to max bytes with the count of the rest.
func quoteBounded(s string, max int) string {
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:max]), len(s))
}

// sessionLabel names a session where its id must not show (logs, /ui,
// /metrics): the first 12 hex digits of the id's SHA-256. The opener,
// who knows the id, can find its session by it; no one can go back from
// the label to the id.
func sessionLabel(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}
