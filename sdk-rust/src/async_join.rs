//! Async joins and table operators: the `*_async` twins of the
//! stream-stream, stream-global-table, table-table and foreign-key joins
//! and of `KTable::filter` / `filter_not` / `map_values`, whose closures
//! return futures (`|v, o| async move { ... }`).
//!
//! They run as the other async operators do (see the `asynchronous`
//! module): within a bundle every record's call first, in record order,
//! then the futures together; outputs keep record order; a future that
//! panics, or is still pending when the bundle's bound
//! ([`ASYNC_TIMEOUT`](crate::ASYNC_TIMEOUT)) passes, fails its record alone
//! under the configured policy, naming the function, token and node.

use std::future::Future;
use std::sync::Arc;

use crate::asynchronous::{key_step_async, map_values_step_async, predicate_step_async};
use crate::bundle::{take, LocalFuture, Out, StepFn, ValueJoiner};
use crate::dsl::{build_step, filter_op, map_values_op, GlobalKTable, JoinFn, KStream, KTable};
use crate::errors::Result;
use crate::join_stream::JoinWindows;
use crate::options::{Options, MATERIALIZED, NAME, VALUE};
use crate::pb::{self};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name};

/// An async joiner whose other side is always present (an inner join);
/// `what` names that side in the malformed-bundle message.
fn inner_joiner<V: Serde, VO: Serde, VR: Serde, F, Fut>(name: String, what: &'static str, f: F) -> JoinFn
where
    F: Fn(V, VO) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = VR> + 'static,
{
    let joiner = ValueJoiner::<V, VO, VR>::new_async(name.clone(), move |v, o| match o {
        Some(o) => {
            let fut = f(v, o);
            Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
        }
        None => Err(format!("an inner join's record came without {what} (a malformed bundle)")),
    });
    JoinFn::Host(name, Arc::new(joiner))
}

/// An async joiner that gets `None` where the other side holds nothing.
fn optional_joiner<V: Serde, VO: Serde, VR: Serde, F, Fut>(name: String, f: F) -> JoinFn
where
    F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = VR> + 'static,
{
    let joiner = ValueJoiner::<V, VO, VR>::new_async(name.clone(), move |v, o| {
        let fut = f(v, o);
        Ok(Box::pin(async move { Ok(fut.await) }) as LocalFuture<_>)
    });
    JoinFn::Host(name, Arc::new(joiner))
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// [`join_stream`](Self::join_stream) with an async joiner:
    /// `f(value, other value)` resolves to the joined value.
    pub fn join_stream_async<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VO) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.join_stream_async_with(other, f, windows, Options::new())
    }

    /// [`join_stream_async`](Self::join_stream_async) with `name`,
    /// `value_serde` and `materialized` (as [`join_stream_with`](Self::join_stream_with)).
    pub fn join_stream_async_with<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, VO) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = inner_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("join"), "the other value", f);
        self.stream_join_op("join", other.handle().id, windows, false, false, joiner, o)
    }

    /// [`left_join_stream`](Self::left_join_stream) with an async joiner:
    /// `f(value, None)` for a record that joined nothing once its window closed.
    pub fn left_join_stream_async<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.left_join_stream_async_with(other, f, windows, Options::new())
    }

    /// [`left_join_stream_async`](Self::left_join_stream_async) with `name`,
    /// `value_serde` and `materialized`.
    pub fn left_join_stream_async_with<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = optional_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("left_join"), f);
        self.stream_join_op("left_join", other.handle().id, windows, true, false, joiner, o)
    }

    /// [`outer_join_stream`](Self::outer_join_stream) with an async joiner:
    /// `None` for the side a record did not join.
    pub fn outer_join_stream_async<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.outer_join_stream_async_with(other, f, windows, Options::new())
    }

    /// [`outer_join_stream_async`](Self::outer_join_stream_async) with
    /// `name`, `value_serde` and `materialized`.
    pub fn outer_join_stream_async_with<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KStream<K, VO>,
        f: F,
        windows: JoinWindows,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = optional_joiner::<Option<V>, VO, VR, F, Fut>(fn_name::<F>("outer_join"), f);
        self.stream_join_op("outer_join", other.handle().id, windows, false, true, joiner, o)
    }

    /// [`join_global`](Self::join_global) with an async key mapper and
    /// joiner: `mapper(key, value)` resolves to the global table's key,
    /// `f(value, global value)` to the joined value.
    pub fn join_global_async<KG: Serde, VG: Serde, VR: Serde, M, MFut, F, Fut>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = KG> + 'static,
        F: Fn(V, VG) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.join_global_async_with(global, mapper, f, Options::new())
    }

    /// [`join_global_async`](Self::join_global_async) with `name` and `value_serde`.
    pub fn join_global_async_with<KG: Serde, VG: Serde, VR: Serde, M, MFut, F, Fut>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = KG> + 'static,
        F: Fn(V, VG) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = inner_joiner::<V, VG, VR, F, Fut>(fn_name::<F>("join_global"), "a global table value", f);
        let mapper_name = fn_name::<M>("join_global");
        let mapper = key_step_async::<K, V, KG, MFut>(mapper_name.clone(), mapper);
        let unspecified = pb::Metadata::Unspecified;
        self.join_global_meta_op("join", mapper_name, global, mapper, unspecified, false, joiner, o)
    }

    /// [`left_join_global`](Self::left_join_global) with an async key
    /// mapper and joiner: `f` gets `None` for a key the global table does
    /// not hold.
    pub fn left_join_global_async<KG: Serde, VG: Serde, VR: Serde, M, MFut, F, Fut>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = KG> + 'static,
        F: Fn(V, Option<VG>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.left_join_global_async_with(global, mapper, f, Options::new())
    }

    /// [`left_join_global_async`](Self::left_join_global_async) with `name` and `value_serde`.
    pub fn left_join_global_async_with<KG: Serde, VG: Serde, VR: Serde, M, MFut, F, Fut>(
        &self,
        global: &GlobalKTable<KG, VG>,
        mapper: M,
        f: F,
        o: Options,
    ) -> Result<KStream<K, VR>>
    where
        M: Fn(&K, &V) -> MFut + Send + Sync + 'static,
        MFut: Future<Output = KG> + 'static,
        F: Fn(V, Option<VG>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = optional_joiner::<V, VG, VR, F, Fut>(fn_name::<F>("left_join_global"), f);
        let mapper_name = fn_name::<M>("left_join_global");
        let mapper = key_step_async::<K, V, KG, MFut>(mapper_name.clone(), mapper);
        let unspecified = pb::Metadata::Unspecified;
        self.join_global_meta_op("left_join", mapper_name, global, mapper, unspecified, true, joiner, o)
    }
}

impl<K: Serde, V: Serde> KTable<K, V> {
    /// [`join`](Self::join) (table-table) with an async joiner:
    /// `f(value, other value)` resolves to the joined row's value.
    pub fn join_async<VO: Serde, VR: Serde, F, Fut>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, VO) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.join_async_with(other, f, Options::new())
    }

    /// [`join_async`](Self::join_async) with `name`, `value_serde` and
    /// `materialized` (as [`join_with`](Self::join_with)).
    pub fn join_async_with<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KTable<K, VO>,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        F: Fn(V, VO) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = inner_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("join"), "the other table's value", f);
        self.table_join_op("join", other.handle.id, (false, false), joiner, o)
    }

    /// [`left_join`](Self::left_join) (table-table) with an async joiner:
    /// `f` gets `None` for a key `other` does not hold.
    pub fn left_join_async<VO: Serde, VR: Serde, F, Fut>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.left_join_async_with(other, f, Options::new())
    }

    /// [`left_join_async`](Self::left_join_async) with `name`, `value_serde` and `materialized`.
    pub fn left_join_async_with<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KTable<K, VO>,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = optional_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("left_join"), f);
        self.table_join_op("left_join", other.handle.id, (true, false), joiner, o)
    }

    /// [`outer_join`](Self::outer_join) with an async joiner: `f` gets
    /// `None` for the side that does not hold the key.
    pub fn outer_join_async<VO: Serde, VR: Serde, F, Fut>(&self, other: &KTable<K, VO>, f: F) -> Result<KTable<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.outer_join_async_with(other, f, Options::new())
    }

    /// [`outer_join_async`](Self::outer_join_async) with `name`, `value_serde` and `materialized`.
    pub fn outer_join_async_with<VO: Serde, VR: Serde, F, Fut>(
        &self,
        other: &KTable<K, VO>,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        F: Fn(Option<V>, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = optional_joiner::<Option<V>, VO, VR, F, Fut>(fn_name::<F>("outer_join"), f);
        self.table_join_op("outer_join", other.handle.id, (false, true), joiner, o)
    }

    /// [`filter`](Self::filter) with an async predicate: keeps the rows
    /// for which `f(key, value)` resolves to true; a row that does not pass
    /// is deleted (a tombstone).
    pub fn filter_async<F, Fut>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        self.filter_async_with(f, Options::new())
    }

    /// [`filter_async`](Self::filter_async) with `name` and `materialized`.
    pub fn filter_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        o.check("filter", NAME | MATERIALIZED)?;
        let name = fn_name::<F>("filter");
        let step = predicate_step_async(name.clone(), false, f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, filter_op(input, false, o.name_or_empty(), o.materialized_proto()))?;
        KTable::wrap(self.app.clone(), expect_handle(h, "filter")?)
    }

    /// [`filter_not`](Self::filter_not) with an async predicate: deletes
    /// the rows for which `f(key, value)` resolves to true.
    pub fn filter_not_async<F, Fut>(&self, f: F) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        self.filter_not_async_with(f, Options::new())
    }

    /// [`filter_not_async`](Self::filter_not_async) with `name` and `materialized`.
    pub fn filter_not_async_with<F, Fut>(&self, f: F, o: Options) -> Result<KTable<K, V>>
    where
        F: Fn(&K, &V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + 'static,
    {
        o.check("filter_not", NAME | MATERIALIZED)?;
        let name = fn_name::<F>("filter_not");
        let step = predicate_step_async(name.clone(), true, f);
        let input = self.handle.id;
        let h = build_step(&self.app, name, step, filter_op(input, true, o.name_or_empty(), o.materialized_proto()))?;
        KTable::wrap(self.app.clone(), expect_handle(h, "filter_not")?)
    }

    /// [`map_values`](Self::map_values) with an async mapper: `f(value)`
    /// resolves to the row's new value (never called for a tombstone).
    pub fn map_values_async<V2: Serde, F, Fut>(&self, f: F) -> Result<KTable<K, V2>>
    where
        F: Fn(V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V2> + 'static,
    {
        self.map_values_async_with(f, Options::new())
    }

    /// [`map_values_async`](Self::map_values_async) with `name`, `value_serde` and `materialized`.
    pub fn map_values_async_with<V2: Serde, F, Fut>(&self, f: F, o: Options) -> Result<KTable<K, V2>>
    where
        F: Fn(V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V2> + 'static,
    {
        o.check("map_values", NAME | VALUE | MATERIALIZED)?;
        let name = fn_name::<F>("map_values");
        let step = map_values_step_async::<K, V, V2, Fut>(name.clone(), f);
        let input = self.handle.id;
        let h = build_step(
            &self.app,
            name,
            step,
            map_values_op(input, o.value_or(V2::NAME), o.name_or_empty(), o.materialized_proto(), false),
        )?;
        KTable::wrap(self.app.clone(), expect_handle(h, "map_values")?)
    }

    /// [`foreign_key_join`](Self::foreign_key_join) with an async extractor
    /// and joiner: `foreign_key(value)` resolves to the other table's key
    /// (`None`: no result), `f(value, other value)` to the joined value.
    pub fn foreign_key_join_async<KO: Serde, VO: Serde, VR: Serde, FK, FkFut, F, Fut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> FkFut + Send + Sync + 'static,
        FkFut: Future<Output = Option<KO>> + 'static,
        F: Fn(V, VO) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.foreign_key_join_async_with(other, foreign_key, f, Options::new())
    }

    /// [`foreign_key_join_async`](Self::foreign_key_join_async) with
    /// `name`, `value_serde` and `materialized` (as
    /// [`foreign_key_join_with`](Self::foreign_key_join_with)).
    pub fn foreign_key_join_async_with<KO: Serde, VO: Serde, VR: Serde, FK, FkFut, F, Fut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> FkFut + Send + Sync + 'static,
        FkFut: Future<Output = Option<KO>> + 'static,
        F: Fn(V, VO) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = inner_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("foreign_key_join"), "the other table's value", f);
        let fk_name = fn_name::<FK>("foreign_key_join");
        let extractor = extractor_step_async::<K, V, KO, FkFut>(fk_name.clone(), foreign_key);
        let unspecified = pb::Metadata::Unspecified;
        let op = "foreign_key_join";
        self.foreign_key_join_step_op::<VR>(op, fk_name, extractor, unspecified, other.handle.id, false, joiner, o)
    }

    /// [`left_foreign_key_join`](Self::left_foreign_key_join) with an
    /// async extractor and joiner: `f` gets `None` when the foreign key is
    /// `None` or names no row of `other`.
    pub fn left_foreign_key_join_async<KO: Serde, VO: Serde, VR: Serde, FK, FkFut, F, Fut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> FkFut + Send + Sync + 'static,
        FkFut: Future<Output = Option<KO>> + 'static,
        F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        self.left_foreign_key_join_async_with(other, foreign_key, f, Options::new())
    }

    /// [`left_foreign_key_join_async`](Self::left_foreign_key_join_async)
    /// with `name`, `value_serde` and `materialized`.
    pub fn left_foreign_key_join_async_with<KO: Serde, VO: Serde, VR: Serde, FK, FkFut, F, Fut>(
        &self,
        other: &KTable<KO, VO>,
        foreign_key: FK,
        f: F,
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        FK: Fn(&V) -> FkFut + Send + Sync + 'static,
        FkFut: Future<Output = Option<KO>> + 'static,
        F: Fn(V, Option<VO>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = VR> + 'static,
    {
        let joiner = optional_joiner::<V, VO, VR, F, Fut>(fn_name::<F>("left_foreign_key_join"), f);
        let fk_name = fn_name::<FK>("left_foreign_key_join");
        let extractor = extractor_step_async::<K, V, KO, FkFut>(fk_name.clone(), foreign_key);
        let (op, unspecified) = ("left_foreign_key_join", pb::Metadata::Unspecified);
        self.foreign_key_join_step_op::<VR>(op, fk_name, extractor, unspecified, other.handle.id, true, joiner, o)
    }
}

/// An async foreign-key extractor: runs as OPERATION_MAP_VALUES, its
/// result in the other table's key serde (None: a null foreign key).
pub(crate) fn extractor_step_async<K: Serde, V: Serde, KO: Serde, Fut: Future<Output = Option<KO>> + 'static>(
    name: String,
    f: impl Fn(&V) -> Fut + Send + Sync + 'static,
) -> StepFn {
    StepFn::new_async::<V, K, Option<KO>>(name, move |_, v| {
        let v: V = take(v)?;
        let fut = f(&v);
        Ok(Box::pin(async move { Ok(Out::One(None, Box::new(fut.await))) }) as LocalFuture<_>)
    })
}
