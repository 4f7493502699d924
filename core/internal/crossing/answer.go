package crossing

import pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"

// singleOutput are the operations that make at most one output per input:
// an answer claiming more for a chain of only these is refused, so a host
// cannot make the engine hold more than it asked for. Operations not listed
// (flat_map_values, and any added later) may make any number.
var singleOutput = map[pb.Operation]bool{
	pb.Operation_OPERATION_MAP_VALUES: true, pb.Operation_OPERATION_FILTER: true, pb.Operation_OPERATION_FILTER_NOT: true,
	pb.Operation_OPERATION_MAP: true, pb.Operation_OPERATION_SELECT_KEY: true, pb.Operation_OPERATION_PEEK: true,
	pb.Operation_OPERATION_FOREACH: true, pb.Operation_OPERATION_REDUCE: true, pb.Operation_OPERATION_AGGREGATE: true,
	pb.Operation_OPERATION_MAP_VALUES_WITH_KEY: true,
}

// maxOutputs is the most outputs one input record of a chain of steps can
// make: 1, or -1 for no bound (also for no steps: a chain it cannot judge).
func maxOutputs(steps []*pb.Step) int32 {
	if len(steps) == 0 {
		return -1
	}
	for _, st := range steps {
		if !singleOutput[st.GetOperation()] {
			return -1
		}
	}
	return 1
}

// Metadata is the most any step of steps asked for: READ or more sends
// the records' headers, WRITE takes back the outputs' timestamps and
// headers.
func Metadata(steps []*pb.Step) pb.Metadata {
	md := pb.Metadata_METADATA_UNSPECIFIED
	for _, st := range steps {
		md = max(md, st.Metadata)
	}
	return md
}
