//! Table-table joins: `KTable.join(KTable)`, `KTable.leftJoin(KTable)` and
//! `KTable.outerJoin(KTable)`. Their joiners run in the same bundles as a
//! stream-table join's (`OPERATION_VALUE_JOIN`): this table's value in
//! `values`, the other table's in `other_values`, either null (-1) where
//! the join kind allows it.

use std::sync::Arc;

use crate::bundle::ValueJoiner;
use crate::dsl::{JoinFn, Joiner, KTable};
use crate::errors::Result;
use crate::options::{Options, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name};

impl<K: Serde, V: Serde> KTable<K, V> {
    /// Joins the table with `other` on the key (`KTable.join(KTable)`): the
    /// result holds `f(value, other value)` for each key both tables hold,
    /// updated whenever either side changes; deleting either side's row
    /// deletes the joined one. Both tables must be co-partitioned (one
    /// partition count) and kept in a store (a table read from a topic
    /// always is; a filtered or mapped one needs `materialized`).
    pub fn join<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, VO) -> VR + Send + Sync + 'static,
    {
        self.join_with(other, f, Options::new())
    }

    /// [`join`](Self::join) with `name` (the merge node; its processors are
    /// `<name>-join-this` and `<name>-join-other`), `value_serde` (the
    /// joined values') and `materialized` (keeps the result in a store,
    /// queryable when named).
    pub fn join_with<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F, o: Options) -> Result<KTable<K, VR>>
    where
        F: Fn(V, VO) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| match t {
            Some(t) => Ok(f(v, t)),
            None => Err("an inner join's row came without the other table's value (a malformed bundle)".to_owned()),
        });
        self.table_join_op(
            "join",
            other.handle.id,
            (false, false),
            JoinFn::Host(fn_name::<F>("join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`join`](Self::join) that keeps every row of this table: `f` gets
    /// `None` for a key `other` does not hold (`KTable.leftJoin(KTable)`).
    pub fn left_join<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, Option<VO>) -> VR + Send + Sync + 'static,
    {
        self.left_join_with(other, f, Options::new())
    }

    /// [`left_join`](Self::left_join) with `name`, `value_serde` and `materialized`.
    pub fn left_join_with<VO: Serde, VR: Serde, F>(
        &self,
        other: &KTable<K, VO>,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        F: Fn(V, Option<VO>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, t| Ok(f(v, t)));
        self.table_join_op(
            "left_join",
            other.handle.id,
            (true, false),
            JoinFn::Host(fn_name::<F>("left_join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`join`](Self::join) that keeps every row of either table: `f` gets
    /// `None` for the side that does not hold the key
    /// (`KTable.outerJoin(KTable)`).
    pub fn outer_join<VO: Serde, VR: Serde, F>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> VR + Send + Sync + 'static,
    {
        self.outer_join_with(other, f, Options::new())
    }

    /// [`outer_join`](Self::outer_join) with `name`, `value_serde` and `materialized`.
    pub fn outer_join_with<VO: Serde, VR: Serde, F>(
        &self,
        other: &KTable<K, VO>,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<Option<V>, VO, VR>::new(move |v, t| Ok(f(v, t)));
        self.table_join_op(
            "outer_join",
            other.handle.id,
            (false, true),
            JoinFn::Host(fn_name::<F>("outer_join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`join_with`](Self::join_with) with a built-in [`Joiner`] that runs
    /// in the engine; `VR` is its result's type.
    pub fn join_builtin<VO: Serde, VR: Serde>(
        &self,
        other: &KTable<K, VO>,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>> {
        self.table_join_op("join", other.handle.id, (false, false), JoinFn::Builtin(j), o)
    }

    /// [`left_join_with`](Self::left_join_with) with a built-in [`Joiner`].
    pub fn left_join_builtin<VO: Serde, VR: Serde>(
        &self,
        other: &KTable<K, VO>,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>> {
        self.table_join_op("left_join", other.handle.id, (true, false), JoinFn::Builtin(j), o)
    }

    /// [`outer_join_with`](Self::outer_join_with) with a built-in [`Joiner`].
    pub fn outer_join_builtin<VO: Serde, VR: Serde>(
        &self,
        other: &KTable<K, VO>,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>> {
        self.table_join_op("outer_join", other.handle.id, (false, true), JoinFn::Builtin(j), o)
    }

    pub(crate) fn table_join_op<VR: Serde>(
        &self,
        op: &str,
        other: u64,
        (left, outer): (bool, bool),
        joiner: JoinFn,
        o: Options,
    ) -> Result<KTable<K, VR>> {
        o.check(op, NAME | VALUE | MATERIALIZED)?;
        let (token, builtin, tokens) = joiner.register(&self.app)?;
        let join = pb::JoinOp {
            input: self.handle.id,
            table: other,
            joiner_token: token,
            builtin_joiner: builtin,
            left,
            outer,
            value_serde: o.value_or(VR::NAME),
            name: o.name_or_empty(),
            materialized: o.materialized_proto(),
            ..Default::default()
        };
        let h = self.app.build(Op::Join(join), &tokens)?;
        KTable::wrap(self.app.clone(), expect_handle(h, op)?)
    }
}
