//! Global tables (`StreamsBuilder.globalTable`) and stream-global-table
//! joins: `KStream.join(GlobalKTable, KeyValueMapper, ValueJoiner)` and
//! `KStream.leftJoin(GlobalKTable, ...)`.

use std::sync::Arc;

use crate::app::App;
use crate::bundle::{Func, ValueJoiner};
use crate::dsl::{key_step, GlobalKTable, JoinFn, Joiner, KStream};
use crate::errors::Result;
use crate::options::{Options, KEY, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name};

impl App {
    /// A table of every partition of `topic`, kept whole by every engine
    /// instance (`StreamsBuilder.globalTable`): each record upserts its key,
    /// a null value deletes it. It is restored from `topic` (its changelog)
    /// before any record is processed, then kept up to date. Streams join
    /// it with [`KStream::join_global`], with no co-partitioning.
    pub fn global_table<K: Serde, V: Serde>(&self, topic: &str) -> Result<GlobalKTable<K, V>> {
        self.global_table_with(topic, Options::new())
    }

    /// [`global_table`](Self::global_table) with `name` (`Consumed.as`: the
    /// processor, and the source `<name>-source`), `key_serde`,
    /// `value_serde` and `materialized` (the store's name; default
    /// `<topic>-STATE-STORE-<n>`; always queryable).
    pub fn global_table_with<K: Serde, V: Serde>(&self, topic: &str, o: Options) -> Result<GlobalKTable<K, V>> {
        o.check("global_table", NAME | KEY | VALUE | MATERIALIZED)?;
        let op = Op::GlobalTable(pb::GlobalTableOp {
            topic: topic.to_owned(),
            key_serde: o.key_or(K::NAME),
            value_serde: o.value_or(V::NAME),
            name: o.name_or_empty(),
            materialized: o.materialized_proto(),
            offset_reset: String::new(), // a global table is always read from the earliest offset
        });
        let h = self.inner.session.build(op, &[])?;
        GlobalKTable::wrap(self.inner.session.clone(), expect_handle(h, "global_table")?)
    }
}

impl<K: Serde, V: Serde> GlobalKTable<K, V> {
    /// The name of the global table's store, for interactive queries
    /// ([`App::store`]).
    pub fn store(&self) -> &str {
        &self.handle.store
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// Joins each record with the value `global` holds for the key
    /// `mapper(key, value)` gives (`KStream.join(GlobalKTable,
    /// KeyValueMapper, ValueJoiner)`): `f(value, global value) -> new
    /// value`; records whose mapped key the global table does not hold are
    /// dropped. The output keeps the record's key; no co-partitioning is
    /// needed.
    pub fn join_global<KG: Serde, VG: Serde, VR: Serde, M, F>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> KG + Send + Sync + 'static,
        F: Fn(V, VG) -> VR + Send + Sync + 'static,
    {
        self.join_global_with(global, mapper, f, Options::new())
    }

    /// [`join_global`](Self::join_global) with `name` (`Named.as`) and
    /// `value_serde` (the joined values').
    pub fn join_global_with<KG: Serde, VG: Serde, VR: Serde, M, F>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> KG + Send + Sync + 'static,
        F: Fn(V, VG) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VG, VR>::new(move |v, g| match g {
            Some(g) => Ok(f(v, g)),
            None => Err("an inner join's record came without a global table value (a malformed bundle)".to_owned()),
        });
        let joiner = JoinFn::Host(fn_name::<F>("join_global"), Arc::new(joiner));
        self.join_global_op("join", fn_name::<M>("join_global"), global, key_step(mapper), false, joiner, o)
    }

    /// [`join_global`](Self::join_global) that keeps every record whose
    /// mapped key is not null: `f` gets `None` for a key the global table
    /// does not hold (`KStream.leftJoin(GlobalKTable, ...)`).
    pub fn left_join_global<KG: Serde, VG: Serde, VR: Serde, M, F>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> KG + Send + Sync + 'static,
        F: Fn(V, Option<VG>) -> VR + Send + Sync + 'static,
    {
        self.left_join_global_with(global, mapper, f, Options::new())
    }

    /// [`left_join_global`](Self::left_join_global) with `name` and `value_serde`.
    pub fn left_join_global_with<KG: Serde, VG: Serde, VR: Serde, M, F>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> KG + Send + Sync + 'static,
        F: Fn(V, Option<VG>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VG, VR>::new(move |v, g| Ok(f(v, g)));
        let joiner = JoinFn::Host(fn_name::<F>("left_join_global"), Arc::new(joiner));
        self.join_global_op("left_join", fn_name::<M>("left_join_global"), global, key_step(mapper), true, joiner, o)
    }

    /// [`join_global_with`](Self::join_global_with) with a built-in
    /// [`Joiner`] that runs in the engine (the key mapper stays a host
    /// function); `VR` is its result's type.
    pub fn join_global_builtin<KG: Serde, VG: Serde, VR: Serde, M>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        j: Joiner,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> KG + Send + Sync + 'static,
    {
        self.join_global_op("join", fn_name::<M>("join_global"), global, key_step(mapper), false, JoinFn::Builtin(j), o)
    }

    /// [`left_join_global_with`](Self::left_join_global_with) with a
    /// built-in [`Joiner`].
    pub fn left_join_global_builtin<KG: Serde, VG: Serde, VR: Serde, M>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        j: Joiner,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> KG + Send + Sync + 'static,
    {
        self.join_global_op(
            "left_join",
            fn_name::<M>("left_join_global"),
            global,
            key_step(mapper),
            true,
            JoinFn::Builtin(j),
            o,
        )
    }

    /// [`join_global_builtin`](Self::join_global_builtin) with an async
    /// key mapper: `mapper(key, value)` resolves to the global table's key;
    /// a bundle's futures run together, as the other async operators'.
    pub fn join_global_builtin_async<KG: Serde, VG: Serde, VR: Serde, M, MFut>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        j: Joiner,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> MFut + Send + Sync + 'static,
        MFut: std::future::Future<Output = KG> + 'static,
    {
        let name = fn_name::<M>("join_global");
        let mapper = crate::asynchronous::key_step_async::<K, V, KG, MFut>(name.clone(), mapper);
        self.join_global_op("join", name, global, mapper, false, JoinFn::Builtin(j), o)
    }

    /// [`left_join_global_builtin`](Self::left_join_global_builtin) with an
    /// async key mapper, as [`join_global_builtin_async`](Self::join_global_builtin_async)'s.
    pub fn left_join_global_builtin_async<KG: Serde, VG: Serde, VR: Serde, M, MFut>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        j: Joiner,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> MFut + Send + Sync + 'static,
        MFut: std::future::Future<Output = KG> + 'static,
    {
        let name = fn_name::<M>("left_join_global");
        let mapper = crate::asynchronous::key_step_async::<K, V, KG, MFut>(name.clone(), mapper);
        self.join_global_op("left_join", name, global, mapper, true, JoinFn::Builtin(j), o)
    }

    #[allow(clippy::too_many_arguments)]
    fn join_global_op<KG: Serde, VG: Serde, VR: Serde>(
        &self,
        op: &str,
        mapper_type: String,
        global: &GlobalKTable<KG, VG>,
        mapper: crate::bundle::StepFn,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        self.join_global_meta_op(op, mapper_type, global, mapper, pb::Metadata::Unspecified, left, joiner, o)
    }

    /// [`join_global_op`](Self::join_global_op) whose key mapper is
    /// registered asking `mapper_metadata` (READ: it reads the record's).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn join_global_meta_op<KG: Serde, VG: Serde, VR: Serde>(
        &self,
        op: &str,
        mapper_type: String,
        global: &GlobalKTable<KG, VG>,
        mapper: crate::bundle::StepFn,
        mapper_metadata: pb::Metadata,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KStream<K, VR>> {
        o.check(op, NAME | VALUE)?;
        let mapper_token = self.app.register_with(&mapper_type, Func::Step(Arc::new(mapper)), mapper_metadata)?;
        let (token, builtin_joiner, mut tokens) = joiner.register(&self.app)?;
        tokens.insert(0, mapper_token);
        let join = pb::JoinOp {
            input: self.handle.id,
            table: global.handle.id,
            key_mapper_token: mapper_token,
            joiner_token: token,
            builtin_joiner,
            left,
            value_serde: o.value_or(VR::NAME),
            name: o.name_or_empty(),
            ..Default::default()
        };
        let h = self.app.build(Op::Join(join), &tokens)?;
        self.stream(h, op)
    }
}
