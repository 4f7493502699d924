"""Short names for the bundle's operations and record failure kinds, shared by
the executors (_bundle, _metadata, _processor)."""

from __future__ import annotations

from polystreams.v1alpha1 import engine_pb2 as pb

MAP_VALUES = pb.OPERATION_MAP_VALUES
FILTER = pb.OPERATION_FILTER
FILTER_NOT = pb.OPERATION_FILTER_NOT
FLAT_MAP_VALUES = pb.OPERATION_FLAT_MAP_VALUES
MAP = pb.OPERATION_MAP
SELECT_KEY = pb.OPERATION_SELECT_KEY
PEEK = pb.OPERATION_PEEK
FOREACH = pb.OPERATION_FOREACH
REDUCE = pb.OPERATION_REDUCE
AGGREGATE = pb.OPERATION_AGGREGATE
VALUE_JOIN = pb.OPERATION_VALUE_JOIN
FLAT_MAP = pb.OPERATION_FLAT_MAP
MAP_VALUES_WITH_KEY = pb.OPERATION_MAP_VALUES_WITH_KEY
FLAT_MAP_VALUES_WITH_KEY = pb.OPERATION_FLAT_MAP_VALUES_WITH_KEY

# The stateless steps, which run record by record in a metadata chain or a
# processor bundle.
STATELESS = frozenset(
    {MAP_VALUES, FILTER, FILTER_NOT, FLAT_MAP_VALUES, MAP, SELECT_KEY, PEEK, FOREACH, FLAT_MAP,
     MAP_VALUES_WITH_KEY, FLAT_MAP_VALUES_WITH_KEY}
)
# The steps whose outputs may have another key than their input.
CHANGES_KEY = frozenset({MAP, SELECT_KEY, FLAT_MAP})

DESERIALIZATION = pb.RecordFailure.KIND_DESERIALIZATION
PROCESSING = pb.RecordFailure.KIND_PROCESSING
