package main

// Read calls: a unary Connect RPC over loopback, routed to the task
// goroutine that waits for the bundle.

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"connectrpc.com/connect"
	"github.com/cockroachdb/pebble/v2"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
	"github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1/polystreamsv1alpha1connect"
)

// readReq is a Read call routed to the task's goroutine, which owns the
// store transaction (it is waiting for the bundle's answer, so it is free).
type readReq struct {
	q   *pb.QueryRequest
	out chan *pb.QueryResponse
	err chan error
}

// serveReads answers reads on the calling (task) goroutine until done.
func (e *engine) serveReads(reads <-chan readReq, done <-chan struct{}) {
	for {
		select {
		case r := <-reads:
			res, err := e.read(r.q)
			if err != nil {
				r.err <- err
				continue
			}
			r.out <- res
		case <-done:
			return
		}
	}
}

func (e *engine) read(q *pb.QueryRequest) (*pb.QueryResponse, error) {
	res := &pb.QueryResponse{}
	add := func(k, v []byte) {
		res.KeyLengths = append(res.KeyLengths, int32(len(k)))
		res.Keys = append(res.Keys, k...)
		res.ValueLengths = append(res.ValueLengths, int32(len(v)))
		res.Values = append(res.Values, v...)
	}
	switch x := q.Query.(type) {
	case *pb.QueryRequest_Get:
		v, _, err := e.get(x.Get)
		if err != nil {
			return nil, err
		}
		if v != nil {
			add(x.Get, v)
		}
	case *pb.QueryRequest_Range:
		it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: x.Range.From})
		if err != nil {
			return nil, err
		}
		n := 0
		for it.First(); it.Valid() && n < int(q.Limit); it.Next() {
			add(it.Key(), it.Value()[8:])
			n++
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("read %T not measured", x)
	}
	return res, nil
}

// server serves Read calls (as EngineService.Query's messages) on loopback,
// over HTTP/1.1 and h2c, routing each to the task goroutine.
type server struct {
	url   string
	reads chan readReq
	srv   *http.Server
}

func startServer() (*server, error) {
	s := &server{reads: make(chan readReq)}
	mux := http.NewServeMux()
	mux.Handle(polystreamsv1alpha1connect.EngineServiceQueryProcedure, connect.NewUnaryHandler(
		polystreamsv1alpha1connect.EngineServiceQueryProcedure,
		func(ctx context.Context, req *connect.Request[pb.QueryRequest]) (*connect.Response[pb.QueryResponse], error) {
			r := readReq{q: req.Msg, out: make(chan *pb.QueryResponse, 1), err: make(chan error, 1)}
			select {
			case s.reads <- r:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			select {
			case res := <-r.out:
				return connect.NewResponse(res), nil
			case err := <-r.err:
				return nil, connect.NewError(connect.CodeInternal, err)
			}
		}))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv = &http.Server{Handler: mux, Protocols: &p}
	go s.srv.Serve(ln)
	s.url = "http://" + ln.Addr().String()
	return s, nil
}

func client(url string, h2c bool) *connect.Client[pb.QueryRequest, pb.QueryResponse] {
	var p http.Protocols
	if h2c {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	hc := &http.Client{Transport: &http.Transport{Protocols: &p, MaxIdleConnsPerHost: 4}}
	return connect.NewClient[pb.QueryRequest, pb.QueryResponse](hc, url+polystreamsv1alpha1connect.EngineServiceQueryProcedure)
}

// withReads runs fn (the host) while the calling goroutine, as the task
// waiting for the bundle's answer, serves its reads.
func (e *engine) withReads(s *server, fn func() error) error {
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- fn()
		close(done)
	}()
	e.serveReads(s.reads, done)
	return <-errc
}
