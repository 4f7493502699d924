//! Stream-stream joins: `KStream.join` / `leftJoin` / `outerJoin(KStream,
//! ValueJoiner, JoinWindows, StreamJoined)`.

use std::sync::Arc;
use std::time::Duration;

use crate::bundle::ValueJoiner;
use crate::dsl::{JoinFn, Joiner, KStream};
use crate::errors::Result;
use crate::options::{Options, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::fn_name;

/// A stream-stream join's windows (Kafka Streams' `JoinWindows`): a record
/// at `ts` joins the other stream's records of its key at `[ts - before,
/// ts + after]` (the other stream's records see the mirrored window).
/// Records later than stream time minus `before + after + grace` are
/// dropped; a left/outer join emits a record that joined nothing once its
/// window closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinWindows {
    before_ms: i64,
    after_ms: i64,
    grace_ms: i64,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl JoinWindows {
    /// `JoinWindows.ofTimeDifferenceWithNoGrace(d)`: records at most `d`
    /// apart join; no late record does.
    pub fn of_time_difference_with_no_grace(time_difference: Duration) -> JoinWindows {
        let d = ms(time_difference);
        JoinWindows { before_ms: d, after_ms: d, grace_ms: 0 }
    }
    /// `JoinWindows.ofTimeDifferenceAndGrace(d, grace)`: records up to
    /// `grace` late (in stream time) still join.
    pub fn of_time_difference_and_grace(time_difference: Duration, grace: Duration) -> JoinWindows {
        let d = ms(time_difference);
        JoinWindows { before_ms: d, after_ms: d, grace_ms: ms(grace) }
    }
    /// `JoinWindows.before(d)`: how much earlier the other stream's records
    /// may be.
    pub fn before(mut self, time_difference: Duration) -> JoinWindows {
        self.before_ms = ms(time_difference);
        self
    }
    /// `JoinWindows.after(d)`: how much later the other stream's records
    /// may be.
    pub fn after(mut self, time_difference: Duration) -> JoinWindows {
        self.after_ms = ms(time_difference);
        self
    }
    fn to_proto(self) -> pb::JoinWindows {
        pb::JoinWindows { before_ms: self.before_ms, after_ms: self.after_ms, grace_ms: self.grace_ms }
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// Joins each record with the records of `other` with the same key
    /// within `windows` (`KStream.join(KStream, ValueJoiner, JoinWindows)`):
    /// `f(value, other value)`, stamped with the later timestamp. Both
    /// streams are kept in window stores; they must be co-partitioned (a
    /// key-changed one is repartitioned first).
    pub fn join_stream<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VO) -> VR + Send + Sync + 'static,
    {
        self.join_stream_with(other, f, windows, Options::new())
    }

    /// [`join_stream`](Self::join_stream) with `name`
    /// (`StreamJoined.withName`), `value_serde` (the joined values') and
    /// `materialized` naming the window stores (`StreamJoined.withStoreName`:
    /// `<store name>-this-join-store`, ...; only its store name is used).
    pub fn join_stream_with<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VO) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| match t {
            Some(t) => Ok(f(v, t)),
            None => Err("an inner join's record came without the other value (a malformed bundle)".to_owned()),
        });
        self.stream_join_op(
            "join",
            other.handle().id,
            windows,
            false,
            false,
            JoinFn::Host(fn_name::<F>("join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`join_stream`](Self::join_stream) that keeps this stream's records
    /// that join nothing: `f(value, None)` once the record's window closed
    /// (`KStream.leftJoin(KStream, ...)`; since Kafka 3.1 never earlier).
    pub fn left_join_stream<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VO>) -> VR + Send + Sync + 'static,
    {
        self.left_join_stream_with(other, f, windows, Options::new())
    }

    /// [`left_join_stream`](Self::left_join_stream) with `name` and `value_serde`.
    pub fn left_join_stream_with<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VO>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| Ok(f(v, t)));
        self.stream_join_op(
            "left_join",
            other.handle().id,
            windows,
            true,
            false,
            JoinFn::Host(fn_name::<F>("left_join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`left_join_stream`](Self::left_join_stream) for both sides: the
    /// other stream's unjoined records are joined as `f(None, other value)`
    /// (`KStream.outerJoin(KStream, ...)`).
    pub fn outer_join_stream<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> VR + Send + Sync + 'static,
    {
        self.outer_join_stream_with(other, f, windows, Options::new())
    }

    /// [`outer_join_stream`](Self::outer_join_stream) with `name` and `value_serde`.
    pub fn outer_join_stream_with<VO: Serde, VR: Serde, F>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<Option<V>, VO, VR>::new(move |v, t| Ok(f(v, t)));
        self.stream_join_op(
            "outer_join",
            other.handle().id,
            windows,
            false,
            true,
            JoinFn::Host(fn_name::<F>("outer_join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`join_stream_with`](Self::join_stream_with) with a built-in
    /// [`Joiner`] that runs in the engine; `VR` is its result's type.
    pub fn join_stream_builtin<VO: Serde, VR: Serde>(
        &self,
        other: &KStream<K, VO>,
        j: Joiner,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.stream_join_op("join", other.handle().id, windows, false, false, JoinFn::Builtin(j), o)
    }

    /// [`left_join_stream_with`](Self::left_join_stream_with) with a
    /// built-in [`Joiner`].
    pub fn left_join_stream_builtin<VO: Serde, VR: Serde>(
        &self,
        other: &KStream<K, VO>,
        j: Joiner,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.stream_join_op("left_join", other.handle().id, windows, true, false, JoinFn::Builtin(j), o)
    }

    /// [`outer_join_stream_with`](Self::outer_join_stream_with) with a
    /// built-in [`Joiner`].
    pub fn outer_join_stream_builtin<VO: Serde, VR: Serde>(
        &self,
        other: &KStream<K, VO>,
        j: Joiner,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.stream_join_op("outer_join", other.handle().id, windows, false, true, JoinFn::Builtin(j), o)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stream_join_op<VR: Serde>(
        &self,
        op: &str,
        other: u64,
        windows: JoinWindows,
        left: bool,
        outer: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        o.check(op, NAME | VALUE | MATERIALIZED)?;
        let store_name = o.materialized_proto().map(|m| m.store_name).unwrap_or_default();
        let (token, builtin, tokens) = joiner.register(self.app())?;
        let join = pb::JoinOp {
            input: self.handle().id,
            table: other,
            joiner_token: token,
            builtin_joiner: builtin,
            left,
            outer,
            value_serde: o.value_or(VR::NAME),
            name: o.name_or_empty(),
            windows: Some(windows.to_proto()),
            store_name,
            ..Default::default()
        };
        let h = self.app().build(Op::Join(join), &tokens)?;
        self.stream(h, op)
    }
}
