//! `KTable::transform_values` (Kafka Streams' `KTable.transformValues`
//! with a `ValueTransformerWithKey`): the transformer runs on the host as a
//! fixed-key processor that forwards its one result per value.

use std::any::{Any, TypeId};
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use crate::bundle::Func;
use crate::dsl::KTable;
use crate::errors::{Error, Result};
use crate::options::{Options, MATERIALIZED, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::{
    self, AsyncFixedKeyProcessor, Cancellable, FixedKeyProcessor, FixedKeyProcessorContext, FixedKeyRecord,
    ProcessorResult, PunctuationType, RecordMetadata, StateStore,
};
use crate::serdes::Serde;
use crate::session::{expect_handle, fn_name};

/// What [`ValueTransformerWithKey::transform`] answers: the new value
/// (None: null), or an error that fails the record under
/// `processing.exception.handler`.
pub type TransformResult<VR> = std::result::Result<Option<VR>, Box<dyn std::error::Error + Send + Sync>>;

/// A table's value transformer (`ValueTransformerWithKey`): one per task,
/// made by the supplier given to [`KTable::transform_values`]. `init` gets
/// the context once (open the stores it names there, schedule punctuators:
/// [`TransformerContext::schedule`]); `transform` gets the
/// read-only key and the value, None for a tombstone, and answers the new
/// value; `close` runs when the task closes.
pub trait ValueTransformerWithKey<K, V, VR>: Send + 'static {
    fn init(&mut self, ctx: &mut TransformerContext<K, VR>) -> ProcessorResult {
        let _ = ctx;
        Ok(())
    }
    fn transform(&mut self, key: &K, value: Option<V>) -> TransformResult<VR>;
    fn close(&mut self) -> ProcessorResult {
        Ok(())
    }
}

/// A table's value transformer whose `transform` is async, for
/// [`KTable::transform_values_async`]: write it `async fn transform(&mut
/// self, key: &K, value: Option<V>) -> TransformResult<VR>`. Values are
/// awaited one at a time, in order (each sees the store writes of the one
/// before), as an [`AsyncProcessor`](crate::AsyncProcessor)'s records;
/// `init`, `close` and punctuators are synchronous.
pub trait AsyncValueTransformerWithKey<K, V, VR>: Send + 'static {
    fn init(&mut self, ctx: &mut TransformerContext<K, VR>) -> ProcessorResult {
        let _ = ctx;
        Ok(())
    }
    fn transform(&mut self, key: &K, value: Option<V>) -> impl Future<Output = TransformResult<VR>>;
    fn close(&mut self) -> ProcessorResult {
        Ok(())
    }
}

/// A transformer's context (Kafka Streams' `ForwardingDisabledProcessorContext`):
/// stores, metadata and punctuators, no forward (the result is what
/// `transform` answers).
pub struct TransformerContext<K, VR> {
    inner: FixedKeyProcessorContext<K, Option<VR>>,
    /// The node's transformer as the punctuators get it: the processor the
    /// host runs is the adapter around it.
    transformer: Unwrap,
    transformer_type: TypeId,
}

/// The user's transformer inside the processor the host runs (None: another
/// processor).
type Unwrap = fn(&mut dyn Any) -> Option<&mut dyn Any>;

impl<K, VR> std::fmt::Debug for TransformerContext<K, VR> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TransformerContext({:?})", self.inner)
    }
}

impl<K: Serde, VR: Serde> TransformerContext<K, VR> {
    /// The application's id.
    pub fn application_id(&self) -> &str {
        self.inner.application_id()
    }
    /// The task's id, e.g. `0_1`.
    pub fn task_id(&self) -> &str {
        self.inner.task_id()
    }
    /// The transform_values node's name.
    pub fn node(&self) -> &str {
        self.inner.node()
    }
    /// A store named in `stores`, typed by what it is; another is an error
    /// naming node and store.
    pub fn get_state_store<S: StateStore>(&self, name: &str) -> Result<S> {
        self.inner.get_state_store(name)
    }
    /// Where the record in hand came from; None in `init` or a punctuator.
    pub fn record_metadata(&self) -> Option<RecordMetadata> {
        self.inner.record_metadata()
    }

    /// Schedules `punctuator` every `interval` (at least 1 ms) of stream
    /// time or wall-clock time (`ProcessorContext.schedule`), as a
    /// processor's: it is called with the transformer (of type T, this
    /// node's), this context and the time. It forwards nothing (Kafka
    /// Streams' transformers cannot); it may read and write the stores.
    ///
    /// ```ignore
    /// fn init(&mut self, ctx: &mut TransformerContext<String, String>) -> ProcessorResult {
    ///     ctx.schedule(Duration::from_secs(60), PunctuationType::WallClockTime, |me: &mut Versioner, _, _| {
    ///         me.purge_old_versions()
    ///     })?;
    ///     Ok(())
    /// }
    /// ```
    pub fn schedule<T: 'static>(
        &mut self,
        interval: Duration,
        kind: PunctuationType,
        mut punctuator: impl FnMut(&mut T, &mut Self, i64) -> ProcessorResult + Send + 'static,
    ) -> Result<Cancellable> {
        if self.transformer_type != TypeId::of::<T>() {
            return Err(Error::invalid(format!(
                "schedule: node {}: the punctuator takes a {}, which is not this node's transformer type",
                self.inner.node(),
                std::any::type_name::<T>()
            )));
        }
        let core = self.inner.core();
        let (unwrap, transformer_type) = (self.transformer, self.transformer_type);
        let id = self.inner.core().schedule(
            interval,
            kind,
            Box::new(move |p: &mut dyn Any, time| {
                let t = unwrap(p)
                    .and_then(|t| t.downcast_mut::<T>())
                    .ok_or("the transformer is not the punctuator's type")?;
                let mut ctx = TransformerContext {
                    inner: FixedKeyProcessorContext::new(core.clone()),
                    transformer: unwrap,
                    transformer_type,
                };
                punctuator(t, &mut ctx, time)
            }),
        )?;
        Ok(Cancellable::new(self.inner.core(), id))
    }
}

/// The key, value and result types a [`Transformer`] is over.
type Types<K, V, VR> = PhantomData<fn() -> (K, V, VR)>;

/// Runs a transformer as the fixed-key processor the engine calls.
struct Transformer<T, K, V, VR> {
    t: T,
    _types: Types<K, V, VR>,
}

impl<T, K, V, VR> FixedKeyProcessor<K, Option<V>, Option<VR>> for Transformer<T, K, V, VR>
where
    T: ValueTransformerWithKey<K, V, VR>,
    K: Serde,
    V: Serde,
    VR: Serde,
{
    fn init(&mut self, ctx: &mut FixedKeyProcessorContext<K, Option<VR>>) -> ProcessorResult {
        let mut tc = TransformerContext {
            inner: FixedKeyProcessorContext::new(ctx.core()),
            transformer: |p| p.downcast_mut::<Self>().map(|me| &mut me.t as &mut dyn Any),
            transformer_type: TypeId::of::<T>(),
        };
        self.t.init(&mut tc)
    }
    fn process(
        &mut self,
        ctx: &mut FixedKeyProcessorContext<K, Option<VR>>,
        mut record: FixedKeyRecord<K, Option<V>>,
    ) -> ProcessorResult {
        let value = record.value.take();
        let out = self.t.transform(record.key(), value)?;
        ctx.forward(record.with_value(out))?;
        Ok(())
    }
    fn close(&mut self) -> ProcessorResult {
        self.t.close()
    }
}

/// Runs an async transformer as the async fixed-key processor the engine calls.
struct AsyncTransformer<T, K, V, VR> {
    t: T,
    _types: Types<K, V, VR>,
}

impl<T, K, V, VR> AsyncFixedKeyProcessor<K, Option<V>, Option<VR>> for AsyncTransformer<T, K, V, VR>
where
    T: AsyncValueTransformerWithKey<K, V, VR>,
    K: Serde,
    V: Serde,
    VR: Serde,
{
    fn init(&mut self, ctx: &mut FixedKeyProcessorContext<K, Option<VR>>) -> ProcessorResult {
        let mut tc = TransformerContext {
            inner: FixedKeyProcessorContext::new(ctx.core()),
            transformer: |p| p.downcast_mut::<Self>().map(|me| &mut me.t as &mut dyn Any),
            transformer_type: TypeId::of::<T>(),
        };
        self.t.init(&mut tc)
    }
    async fn process(
        &mut self,
        ctx: &mut FixedKeyProcessorContext<K, Option<VR>>,
        mut record: FixedKeyRecord<K, Option<V>>,
    ) -> ProcessorResult {
        let value = record.value.take();
        let out = self.t.transform(record.key(), value).await?;
        ctx.forward(record.with_value(out))?;
        Ok(())
    }
    fn close(&mut self) -> ProcessorResult {
        self.t.close()
    }
}

impl<K: Serde, V: Serde> KTable<K, V> {
    /// Transforms each row's value with a [`ValueTransformerWithKey`]
    /// (`KTable.transformValues`): `supplier` makes one per task, and
    /// `transform(key, value)` answers the new value, a tombstone's None
    /// included. `stores` names the stores (added by `add_state_store`) it
    /// may open in `init`. When an operator downstream needs old values
    /// (`group_by`), the old value is transformed too, unless the result is
    /// materialized with a store name: it is then kept there (queryable)
    /// and the old values are read from it. The node is
    /// `KTABLE-TRANSFORMVALUES-<n>` unless named. A join of a result that is
    /// not materialized is refused (Kafka Streams would run the transformer
    /// on each lookup).
    pub fn transform_values<VR: Serde, T, F>(&self, supplier: F, stores: &[&str]) -> Result<KTable<K, VR>>
    where
        T: ValueTransformerWithKey<K, V, VR>,
        F: Fn() -> T + Send + Sync + 'static,
    {
        self.transform_values_with(supplier, stores, Options::new())
    }

    /// [`transform_values`](Self::transform_values) with `name`,
    /// `value_serde` and `materialized`.
    pub fn transform_values_with<VR: Serde, T, F>(
        &self,
        supplier: F,
        stores: &[&str],
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        T: ValueTransformerWithKey<K, V, VR>,
        F: Fn() -> T + Send + Sync + 'static,
    {
        let make = move || Transformer::<T, K, V, VR> { t: supplier(), _types: PhantomData };
        let f = Func::Processor(processor::fixed_supplier::<Transformer<T, K, V, VR>, K, Option<V>, Option<VR>>(make));
        self.add_transformer(f, &fn_name::<T>("transform_values"), stores, o)
    }

    /// [`transform_values`](Self::transform_values) with an
    /// [`AsyncValueTransformerWithKey`]: its `transform` is async, awaited
    /// one value at a time, in order; one that panics, answers an error or
    /// is still pending at [`ASYNC_TIMEOUT`](crate::ASYNC_TIMEOUT) fails its
    /// record, naming the node.
    pub fn transform_values_async<VR: Serde, T, F>(&self, supplier: F, stores: &[&str]) -> Result<KTable<K, VR>>
    where
        T: AsyncValueTransformerWithKey<K, V, VR>,
        F: Fn() -> T + Send + Sync + 'static,
    {
        self.transform_values_async_with(supplier, stores, Options::new())
    }

    /// [`transform_values_async`](Self::transform_values_async) with `name`,
    /// `value_serde` and `materialized`.
    pub fn transform_values_async_with<VR: Serde, T, F>(
        &self,
        supplier: F,
        stores: &[&str],
        o: Options,
    ) -> Result<KTable<K, VR>>
    where
        T: AsyncValueTransformerWithKey<K, V, VR>,
        F: Fn() -> T + Send + Sync + 'static,
    {
        let make = move || AsyncTransformer::<T, K, V, VR> { t: supplier(), _types: PhantomData };
        let f =
            Func::Processor(
                processor::async_fixed_supplier::<AsyncTransformer<T, K, V, VR>, K, Option<V>, Option<VR>>(make),
            );
        self.add_transformer(f, &fn_name::<T>("transform_values"), stores, o)
    }

    /// A transform_values node running the registered processor `f`.
    fn add_transformer<VR: Serde>(&self, f: Func, fn_name: &str, stores: &[&str], o: Options) -> Result<KTable<K, VR>> {
        o.check("transform_values", NAME | VALUE | MATERIALIZED)?;
        let token = self.app.register(fn_name, f)?;
        let op = Op::TransformValues(pb::TransformValuesOp {
            input: self.handle.id,
            token,
            name: o.name_or_empty(),
            stores: stores.iter().map(|s| (*s).to_owned()).collect(),
            materialized: o.materialized_proto(),
            value_serde: o.value_or(VR::NAME),
        });
        let h = self.app.build(op, &[token])?;
        KTable::wrap(self.app.clone(), expect_handle(h, "transform_values")?)
    }
}
