//! Stream-table joins: `KStream.join(KTable)` and `KStream.leftJoin(KTable)`.

use std::sync::Arc;

use crate::bundle::ValueJoiner;
use crate::dsl::{JoinFn, Joiner, KStream, KTable};
use crate::errors::Result;
use crate::options::{Options, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::fn_name;

impl<K: Serde, V: Serde> KStream<K, V> {
    /// Joins each record with the value `table` holds for its key now
    /// (`KStream.join(KTable)`): `f(value, table value) -> new value`;
    /// records whose key the table does not hold are dropped. The stream
    /// and the table must be co-partitioned (one partition count); a stream
    /// whose key changed upstream is repartitioned first. A result that
    /// encodes to none (`Option::None`) is a null value.
    pub fn join<VT: Serde, VR: Serde, F>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VT) -> VR + Send + Sync + 'static,
    {
        self.join_with(table, f, Options::new())
    }

    /// [`join`](Self::join) with `name` (`Joined.as`: the processor and
    /// any repartition topic) and `value_serde` (the joined values').
    pub fn join_with<VT: Serde, VR: Serde, F>(&self, table: &KTable<K, VT>, f: F, o: Options) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VT) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VT, VR>::new(move |v, t| match t {
            Some(t) => Ok(f(v, t)),
            None => Err("an inner join's record came without a table value (a malformed bundle)".to_owned()),
        });
        self.join_op("join", table.handle.id, false, JoinFn::Host(fn_name::<F>("join"), Arc::new(joiner)), o)
    }

    /// [`join`](Self::join) that keeps every record: `f` gets `None` for a
    /// key the table does not hold (`KStream.leftJoin(KTable)`).
    pub fn left_join<VT: Serde, VR: Serde, F>(&self, table: &KTable<K, VT>, f: F) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VT>) -> VR + Send + Sync + 'static,
    {
        self.left_join_with(table, f, Options::new())
    }

    /// [`left_join`](Self::left_join) with `name` and `value_serde`.
    pub fn left_join_with<VT: Serde, VR: Serde, F>(
        &self,
        table: &KTable<K, VT>,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VT>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VT, VR>::new(move |v, t| Ok(f(v, t)));
        self.join_op("left_join", table.handle.id, true, JoinFn::Host(fn_name::<F>("left_join"), Arc::new(joiner)), o)
    }

    /// [`join_with`](Self::join_with) with a built-in [`Joiner`] that runs
    /// in the engine; `VR` is its result's type (`Pair`: JSON, e.g.
    /// `serde_json::Value`; `This`: `V`; `Other`: `VT`).
    pub fn join_builtin<VT: Serde, VR: Serde>(
        &self,
        table: &KTable<K, VT>,
        j: Joiner,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.join_op("join", table.handle.id, false, JoinFn::Builtin(j), o)
    }

    /// [`left_join_with`](Self::left_join_with) with a built-in [`Joiner`]
    /// (null for a key the table does not hold).
    pub fn left_join_builtin<VT: Serde, VR: Serde>(
        &self,
        table: &KTable<K, VT>,
        j: Joiner,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.join_op("left_join", table.handle.id, true, JoinFn::Builtin(j), o)
    }

    /// A join of `table` with a joiner made elsewhere (the async joins).
    pub(crate) fn join_with_joiner<VT: Serde, VR: Serde>(
        &self,
        op: &str,
        table: &KTable<K, VT>,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.join_op(op, table.handle.id, left, joiner, o)
    }

    pub(crate) fn join_op<VR: Serde>(
        &self,
        op: &str,
        table: u64,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        o.check(op, NAME | VALUE)?;
        let (token, builtin, tokens) = joiner.register(&self.app)?;
        let join = pb::JoinOp {
            input: self.handle.id,
            table,
            joiner_token: token,
            builtin_joiner: builtin,
            left,
            value_serde: o.value_or(VR::NAME),
            name: o.name_or_empty(),
            ..Default::default()
        };
        let h = self.app.build(Op::Join(join), &tokens)?;
        self.stream(h, op)
    }
}
