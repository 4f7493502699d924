//! Stream-table joins: `KStream.join(KTable)` and `KStream.leftJoin(KTable)`.

use std::sync::Arc;

use crate::dsl::{fn_name, KStream, KTable, Options, NAME, VALUE};
use crate::error::Result;
use crate::host::{Func, JoinRun, ValueJoiner};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;

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
        self.join_op("join", fn_name::<F>("join"), table.handle.id, false, Arc::new(joiner), o)
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
        self.join_op("left_join", fn_name::<F>("left_join"), table.handle.id, true, Arc::new(joiner), o)
    }

    fn join_op<VR: Serde>(
        &self,
        op: &str,
        fn_type: String,
        table: u64,
        left: bool,
        joiner: Arc<dyn JoinRun>,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        o.check(op, NAME | VALUE)?;
        let token = self.app.register(&fn_type, Func::Join(joiner))?;
        let join = pb::JoinOp {
            input: self.handle.id,
            table,
            joiner_token: token,
            left,
            value_serde: o.value_or(VR::NAME),
            name: o.name_or_empty(),
            ..Default::default()
        };
        let h = self.app.build(Op::Join(join), &[token])?;
        self.stream(h, op)
    }
}
