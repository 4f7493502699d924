package server

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/polystreams/polystreams/core/internal/engine"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// PauseProcessing is KafkaStreams.pause (KIP-834); before Start it makes
// Start begin paused.
func (s *Server) PauseProcessing(_ context.Context, req *connect.Request[pb.PauseProcessingRequest]) (*connect.Response[pb.PauseProcessingResponse], error) {
	if err := s.setPaused("PauseProcessing", req.Msg.SessionId, true); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.PauseProcessingResponse{}), nil
}

// ResumeProcessing is KafkaStreams.resume.
func (s *Server) ResumeProcessing(_ context.Context, req *connect.Request[pb.ResumeProcessingRequest]) (*connect.Response[pb.ResumeProcessingResponse], error) {
	if err := s.setPaused("ResumeProcessing", req.Msg.SessionId, false); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.ResumeProcessingResponse{}), nil
}

func (s *Server) setPaused(method, id string, paused bool) error {
	ss, err := s.session(method, id)
	if err != nil {
		return err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return errStopped(method)
	}
	ss.paused = paused
	if ss.app != nil {
		if paused {
			ss.app.Pause()
		} else {
			ss.app.Resume()
		}
	}
	return nil
}

// CleanUpState is KafkaStreams.cleanUp: before Start or once the
// application has stopped (Stop, or failed), it deletes the application's
// state directory; while the application runs it is refused.
func (s *Server) CleanUpState(_ context.Context, req *connect.Request[pb.CleanUpStateRequest]) (*connect.Response[pb.CleanUpStateResponse], error) {
	ss, err := s.session("CleanUpState", req.Msg.SessionId)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.app != nil {
		select {
		case <-ss.app.Done():
		default:
			return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("CleanUpState: %w (application.id %s): cleanUp() deletes the local state only before start() or after stop()", engine.ErrRunning, ss.appID))
		}
	}
	if ss.test != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("CleanUpState: a test driver session's state is its own and is deleted when it closes"))
	}
	dir, err := engine.CleanUp(ss.cfg)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("CleanUpState: %w", err))
	}
	if dir != "" {
		s.log.Info("local state deleted (cleanUp)", "session", ss.label, "application.id", ss.appID, "dir", dir)
	}
	return connect.NewResponse(&pb.CleanUpStateResponse{Deleted: dir}), nil
}
