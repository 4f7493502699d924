//! Foreign-key table-table joins (KIP-213): `KTable.join(other,
//! foreignKeyExtractor, joiner)` and `KTable.leftJoin(...)`.

use std::sync::Arc;

use crate::bundle::{guarded, take, Func, Out, StepFn, ValueJoiner};
use crate::dsl::{JoinFn, Joiner, KTable};
use crate::errors::Result;
use crate::options::{Options, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name};

impl<K: Serde, V: Serde> KTable<K, V> {
    /// Joins each row with the row of `other` whose key `foreign_key(value)`
    /// names (`KTable.join(other, foreignKeyExtractor, joiner)`):
    /// `f(value, other value) -> new value`. The result is keyed as this
    /// table and updated when either side changes; a row whose foreign key
    /// is `None`, or names no row of `other`, has no result. The tables need
    /// not be co-partitioned: subscriptions travel through the internal
    /// topics `KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic` and
    /// `-RESPONSE-<n>-topic`.
    pub fn foreign_key_join<KO: Serde, VO: Serde, VR: Serde, FK, F>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
        F: Fn(V, VO) -> VR + Send + Sync + 'static,
    {
        self.foreign_key_join_with(other, foreign_key, f, Options::new())
    }

    /// [`foreign_key_join`](Self::foreign_key_join) with `name`
    /// (`TableJoined.as`: names every node, store and topic of the join),
    /// `value_serde` (the joined values') and `materialized` (the result's
    /// store).
    pub fn foreign_key_join_with<KO: Serde, VO: Serde, VR: Serde, FK, F>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
        F: Fn(V, VO) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, o| match o {
            Some(o) => Ok(f(v, o)),
            None => Err("an inner join's answer came without the other table's value (a malformed bundle)".to_owned()),
        });
        let fk_type = fn_name::<FK>("foreign_key_join");
        self.foreign_key_join_op::<KO, VR, FK>(
            "foreign_key_join",
            fk_type,
            foreign_key,
            other.handle.id,
            false,
            JoinFn::Host(fn_name::<F>("foreign_key_join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`foreign_key_join`](Self::foreign_key_join) that keeps every row:
    /// `f` gets `None` when the foreign key is `None` or names no row of
    /// `other` (`KTable.leftJoin(other, foreignKeyExtractor, joiner)`).
    pub fn left_foreign_key_join<KO: Serde, VO: Serde, VR: Serde, FK, F>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
        F: Fn(V, Option<VO>) -> VR + Send + Sync + 'static,
    {
        self.left_foreign_key_join_with(other, foreign_key, f, Options::new())
    }

    /// [`left_foreign_key_join`](Self::left_foreign_key_join) with `name`,
    /// `value_serde` and `materialized`.
    pub fn left_foreign_key_join_with<KO: Serde, VO: Serde, VR: Serde, FK, F>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
        F: Fn(V, Option<VO>) -> VR + Send + Sync + 'static,
    {
        let joiner = ValueJoiner::<V, VO, VR>::new(move |v, o| Ok(f(v, o)));
        let fk_type = fn_name::<FK>("left_foreign_key_join");
        self.foreign_key_join_op::<KO, VR, FK>(
            "left_foreign_key_join",
            fk_type,
            foreign_key,
            other.handle.id,
            true,
            JoinFn::Host(fn_name::<F>("left_foreign_key_join"), Arc::new(joiner)),
            o,
        )
    }

    /// [`foreign_key_join_with`](Self::foreign_key_join_with) with a
    /// built-in [`Joiner`] that runs in the engine (the extractor stays a
    /// host function); `VR` is its result's type.
    pub fn foreign_key_join_builtin<KO: Serde, VO: Serde, VR: Serde, FK>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
    {
        let fk_type = fn_name::<FK>("foreign_key_join");
        self.foreign_key_join_op::<KO, VR, FK>(
            "foreign_key_join",
            fk_type,
            foreign_key,
            other.handle.id,
            false,
            JoinFn::Builtin(j),
            o,
        )
    }

    /// [`left_foreign_key_join_with`](Self::left_foreign_key_join_with)
    /// with a built-in [`Joiner`].
    pub fn left_foreign_key_join_builtin<KO: Serde, VO: Serde, VR: Serde, FK>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
    {
        let fk_type = fn_name::<FK>("left_foreign_key_join");
        self.foreign_key_join_op::<KO, VR, FK>(
            "left_foreign_key_join",
            fk_type,
            foreign_key,
            other.handle.id,
            true,
            JoinFn::Builtin(j),
            o,
        )
    }

    /// [`foreign_key_join_builtin`](Self::foreign_key_join_builtin) with an
    /// async extractor: `foreign_key(value)` resolves to the other table's
    /// key (None: no join); a bundle's futures run together.
    pub fn foreign_key_join_builtin_async<KO: Serde, VO: Serde, VR: Serde, FK, FkFut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> FkFut + Send + Sync + 'static,
        FkFut: std::future::Future<Output = Option<KO>> + 'static,
    {
        let fk_name = fn_name::<FK>("foreign_key_join");
        let extractor = crate::async_join::extractor_step_async::<K, V, KO, FkFut>(fk_name.clone(), foreign_key);
        let unspecified = pb::Metadata::Unspecified;
        let op = "foreign_key_join";
        self.foreign_key_join_step_op::<VR>(
            op,
            fk_name,
            extractor,
            unspecified,
            other.handle.id,
            false,
            JoinFn::Builtin(j),
            o,
        )
    }

    /// [`left_foreign_key_join_builtin`](Self::left_foreign_key_join_builtin)
    /// with an async extractor, as [`foreign_key_join_builtin_async`](Self::foreign_key_join_builtin_async)'s.
    pub fn left_foreign_key_join_builtin_async<KO: Serde, VO: Serde, VR: Serde, FK, FkFut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        j: Joiner,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> FkFut + Send + Sync + 'static,
        FkFut: std::future::Future<Output = Option<KO>> + 'static,
    {
        let fk_name = fn_name::<FK>("left_foreign_key_join");
        let extractor = crate::async_join::extractor_step_async::<K, V, KO, FkFut>(fk_name.clone(), foreign_key);
        let unspecified = pb::Metadata::Unspecified;
        let op = "left_foreign_key_join";
        self.foreign_key_join_step_op::<VR>(
            op,
            fk_name,
            extractor,
            unspecified,
            other.handle.id,
            true,
            JoinFn::Builtin(j),
            o,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn foreign_key_join_op<KO: Serde, VR: Serde, FK>(
        &self,
        op: &str,
        fk_type: String,
        foreign_key: FK,
        other: u64,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
    {
        let read = pb::Metadata::Unspecified;
        self.foreign_key_join_meta_op::<KO, VR, FK>(op, fk_type, foreign_key, read, other, left, joiner, o)
    }

    /// [`foreign_key_join_op`](Self::foreign_key_join_op) whose extractor
    /// is registered asking `fk_metadata` (READ: it reads the update's).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn foreign_key_join_meta_op<KO: Serde, VR: Serde, FK>(
        &self,
        op: &str,
        fk_type: String,
        foreign_key: FK,
        fk_metadata: pb::Metadata,
        other: u64,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> Option<KO> + Send + Sync + 'static,
    {
        // The extractor runs as OPERATION_MAP_VALUES, its result in the
        // other table's key serde (None: a null foreign key).
        let extractor = StepFn::new::<V, K, Option<KO>>(move |_, v| {
            let v: V = take(v)?;
            Ok(Out::One(None, Box::new(guarded(|| foreign_key(&v))?)))
        });
        self.foreign_key_join_step_op::<VR>(op, fk_type, extractor, fk_metadata, other, left, joiner, o)
    }

    /// [`foreign_key_join_meta_op`](Self::foreign_key_join_meta_op) with
    /// the extractor's step built (an async one's, too).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn foreign_key_join_step_op<VR: Serde>(
        &self,
        op: &str,
        fk_type: String,
        extractor: StepFn,
        fk_metadata: pb::Metadata,
        other: u64,
        left: bool,
        joiner: JoinFn,
        o: Options,
    ) -> Result<KTable<K, VR>> {
        o.check(op, NAME | VALUE | MATERIALIZED)?;
        let fk_token = self.app.register_with(&fk_type, Func::Step(Arc::new(extractor)), fk_metadata)?;
        let (joiner_token, builtin_joiner, mut tokens) = joiner.register(&self.app)?;
        tokens.insert(0, fk_token);
        let join = pb::JoinOp {
            input: self.handle.id,
            table: other,
            foreign_key_token: fk_token,
            joiner_token,
            builtin_joiner,
            left,
            value_serde: o.value_or(VR::NAME),
            name: o.name_or_empty(),
            materialized: o.materialized_proto(),
            ..Default::default()
        };
        let h = self.app.build(Op::Join(join), &tokens)?;
        KTable::wrap(self.app.clone(), expect_handle(h, op)?)
    }
}
