//! A sink's routing functions: a StreamPartitioner
//! ([`KStream::to_with_partitioner`], Kafka Streams'
//! `Produced.streamPartitioner`; [`KStream::repartition_with_partitioner`],
//! `Repartitioned.withStreamPartitioner`) and a TopicNameExtractor
//! ([`KStream::to_dynamic`], `KStream.to(TopicNameExtractor)`), run on the
//! host over `OPERATION_STREAM_PARTITION` and `OPERATION_TOPIC_NAME` bundles.
//! One call per record; a record whose key or value does not decode, or
//! whose call panics or answers no topic, fails alone.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::await_all;
use crate::branch::Repartitioned;
use crate::bundle::{column, fail_all, guarded, ExtractFn, Func, LocalFuture};
use crate::dsl::KStream;
use crate::errors::Result;
use crate::options::{Options, KEY, NAME, VALUE};
use crate::pb::{self, build_request::Operation as Op};
use crate::processor::host::read_headers;
use crate::processor::RecordMetadata;
use crate::serdes::Serde;

impl<K: Serde, V: Serde> KStream<K, V> {
    /// Writes the records to `topic`; terminal (`KStream.to`).
    pub fn to(&self, topic: &str) -> Result<()> {
        self.to_with(topic, Options::new())
    }

    /// [`to`](Self::to) with `name`, `key_serde` and `value_serde` (`Produced.with`).
    pub fn to_with(&self, topic: &str, o: Options) -> Result<()> {
        o.check("to", NAME | KEY | VALUE)?;
        self.build_to(topic.to_owned(), &o, 0, 0)
    }

    /// [`to_with`](KStream::to_with) with a stream partitioner
    /// (`Produced.streamPartitioner`): `f(topic, &key, &value,
    /// num_partitions)` answers the record's partitions. `None` leaves the
    /// record to Kafka's default partitioner (murmur2 of the serialized key);
    /// `Some([p])` writes it to partition `p`; `Some` of several writes it to
    /// each (a multicast; duplicates count once); `Some` of none drops it, as
    /// Kafka Streams drops a record its partitioner answers an empty set for.
    /// A partition outside `0..num_partitions` fails the record, naming node,
    /// topic and partition.
    ///
    /// ```ignore
    /// // Orders of big customers go to partition 0, the others by key.
    /// orders.to_with_partitioner("orders-by-size", Options::new(), |_topic, _key, o: &Json<Order>, _n| {
    ///     (o.0.total > 1000).then_some([0])
    /// })?;
    /// ```
    pub fn to_with_partitioner<P, F>(&self, topic: &str, o: Options, f: F) -> Result<()>
    where
        P: IntoIterator<Item = u32>,
        F: Fn(&str, &K, &V, u32) -> Option<P> + Send + Sync + 'static,
    {
        o.check("to", NAME | KEY | VALUE)?;
        let token = self.register_route(std::any::type_name::<F>(), partition_fn::<K, V, P, F>(f))?;
        self.build_to(topic.to_owned(), &o, token, 0)
    }

    /// Writes each record to the topic `f(&key, &value, &metadata)` names
    /// (`KStream.to(TopicNameExtractor)`; `metadata` is the record's topic,
    /// partition, offset, timestamp and headers); terminal. The topics must
    /// exist (or be auto-created by the brokers): the engine does not create
    /// them, as Kafka Streams does not. An empty name fails the record.
    /// `describe()` prints the function's name as the extractor class (a
    /// closure's: its type name, which says where it is defined).
    pub fn to_dynamic<F>(&self, f: F) -> Result<()>
    where
        F: Fn(&K, &V, &RecordMetadata) -> String + Send + Sync + 'static,
    {
        self.to_dynamic_with(Options::new(), f)
    }

    /// [`to_dynamic`](Self::to_dynamic) with `name`, `key_serde` and
    /// `value_serde` (`Produced.with`).
    pub fn to_dynamic_with<F>(&self, o: Options, f: F) -> Result<()>
    where
        F: Fn(&K, &V, &RecordMetadata) -> String + Send + Sync + 'static,
    {
        o.check("to", NAME | KEY | VALUE)?;
        let token = self.register_route(&class_name::<F>(), topic_fn::<K, V, F>(f))?;
        self.build_to(String::new(), &o, 0, token)
    }

    /// [`to_dynamic_with`](Self::to_dynamic_with) with a stream partitioner
    /// (`KStream.to(TopicNameExtractor, Produced.streamPartitioner)`):
    /// `partitioner` answers as [`to_with_partitioner`](Self::to_with_partitioner)'s
    /// does, called with the topic `extractor` named and its partition count.
    pub fn to_dynamic_with_partitioner<F, P, G>(&self, o: Options, extractor: F, partitioner: G) -> Result<()>
    where
        F: Fn(&K, &V, &RecordMetadata) -> String + Send + Sync + 'static,
        P: IntoIterator<Item = u32>,
        G: Fn(&str, &K, &V, u32) -> Option<P> + Send + Sync + 'static,
    {
        o.check("to", NAME | KEY | VALUE)?;
        let topic = self.register_route(&class_name::<F>(), topic_fn::<K, V, F>(extractor))?;
        let partition = self.register_route(std::any::type_name::<G>(), partition_fn::<K, V, P, G>(partitioner))?;
        self.build_to(String::new(), &o, partition, topic)
    }

    /// [`repartition_with`](Self::repartition_with) with a stream
    /// partitioner (`Repartitioned.withStreamPartitioner`), which answers as
    /// [`to_with_partitioner`](Self::to_with_partitioner)'s does; `topic` is
    /// the repartition topic.
    pub fn repartition_with_partitioner<P, F>(&self, r: Repartitioned, f: F) -> Result<KStream<K, V>>
    where
        P: IntoIterator<Item = u32>,
        F: Fn(&str, &K, &V, u32) -> Option<P> + Send + Sync + 'static,
    {
        let token = self.register_route(std::any::type_name::<F>(), partition_fn::<K, V, P, F>(f))?;
        self.build_repartition(r, token)
    }

    /// [`to_with_partitioner`](Self::to_with_partitioner) with an async
    /// stream partitioner: `f(topic, &key, &value, num_partitions)`
    /// resolves to the record's partitions. A bundle's futures run
    /// together; each record is written as its own future answered, and a
    /// panicking or timed-out future fails its record, naming the
    /// partitioner and the node.
    pub fn to_with_partitioner_async<P, F, Fut>(&self, topic: &str, o: Options, f: F) -> Result<()>
    where
        P: IntoIterator<Item = u32>,
        F: Fn(&str, &K, &V, u32) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<P>> + 'static,
    {
        o.check("to", NAME | KEY | VALUE)?;
        let name = std::any::type_name::<F>();
        let token = self.register_route(name, partition_fn_async::<K, V, P, F, Fut>(name.to_owned(), f))?;
        self.build_to(topic.to_owned(), &o, token, 0)
    }

    /// [`repartition_with_partitioner`](Self::repartition_with_partitioner)
    /// with an async stream partitioner, as
    /// [`to_with_partitioner_async`](Self::to_with_partitioner_async)'s.
    pub fn repartition_with_partitioner_async<P, F, Fut>(&self, r: Repartitioned, f: F) -> Result<KStream<K, V>>
    where
        P: IntoIterator<Item = u32>,
        F: Fn(&str, &K, &V, u32) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<P>> + 'static,
    {
        let name = std::any::type_name::<F>();
        let token = self.register_route(name, partition_fn_async::<K, V, P, F, Fut>(name.to_owned(), f))?;
        self.build_repartition(r, token)
    }

    /// [`to_dynamic`](Self::to_dynamic) with an async topic name extractor:
    /// `f(&key, &value, metadata)` resolves to the record's topic (the
    /// metadata by value, for the future to move in). A bundle's futures
    /// run together; a panicking or timed-out future, or an empty name,
    /// fails its record.
    pub fn to_dynamic_async<F, Fut>(&self, f: F) -> Result<()>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = String> + 'static,
    {
        self.to_dynamic_async_with(Options::new(), f)
    }

    /// [`to_dynamic_async`](Self::to_dynamic_async) with `name`, `key_serde`
    /// and `value_serde` (`Produced.with`).
    pub fn to_dynamic_async_with<F, Fut>(&self, o: Options, f: F) -> Result<()>
    where
        F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = String> + 'static,
    {
        o.check("to", NAME | KEY | VALUE)?;
        let token = self.register_route(&class_name::<F>(), topic_fn_async::<K, V, F, Fut>(f))?;
        self.build_to(String::new(), &o, 0, token)
    }

    /// [`to_dynamic_with_partitioner`](Self::to_dynamic_with_partitioner)
    /// with an async extractor and partitioner, as
    /// [`to_dynamic_async`](Self::to_dynamic_async)'s and
    /// [`to_with_partitioner_async`](Self::to_with_partitioner_async)'s.
    pub fn to_dynamic_with_partitioner_async<F, FFut, P, G, GFut>(
        &self,
        o: Options,
        extractor: F,
        partitioner: G,
    ) -> Result<()>
    where
        F: Fn(&K, &V, RecordMetadata) -> FFut + Send + Sync + 'static,
        FFut: Future<Output = String> + 'static,
        P: IntoIterator<Item = u32>,
        G: Fn(&str, &K, &V, u32) -> GFut + Send + Sync + 'static,
        GFut: Future<Output = Option<P>> + 'static,
    {
        o.check("to", NAME | KEY | VALUE)?;
        let topic = self.register_route(&class_name::<F>(), topic_fn_async::<K, V, F, FFut>(extractor))?;
        let name = std::any::type_name::<G>();
        let partition =
            self.register_route(name, partition_fn_async::<K, V, P, G, GFut>(name.to_owned(), partitioner))?;
        self.build_to(String::new(), &o, partition, topic)
    }

    fn register_route(&self, name: &str, f: Arc<ExtractFn>) -> Result<u32> {
        self.app.register(name, Func::Route(f))
    }

    fn build_to(&self, topic: String, o: &Options, partitioner_token: u32, topic_extractor_token: u32) -> Result<()> {
        let op = Op::To(pb::ToOp {
            input: self.handle.id,
            topic,
            key_serde: o.key_or(""),
            value_serde: o.value_or(""),
            name: o.name_or_empty(),
            partitioner_token,
            topic_extractor_token,
        });
        self.app.build(op, &[])?;
        Ok(())
    }
}

/// F's name as describe() prints it: a function's own name, a closure's
/// whole type name (`crate::module::{{closure}}`).
fn class_name<F>() -> String {
    let full = std::any::type_name::<F>();
    let path = full.split('<').next().unwrap_or(full);
    match path.rsplit("::").next() {
        Some(last) if !last.starts_with('{') && !last.is_empty() => last.to_owned(),
        _ => full.to_owned(),
    }
}

/// A record's key and value, decoded (an error: the failure's message).
fn decode<K: Serde, V: Serde>(
    b: &pb::Bundle,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> std::result::Result<(K, V), String> {
    let k = K::decode(&b.key_serde, key).map_err(|e| format!("key: {e}"))?;
    let v = V::decode(&b.value_serde, value).map_err(|e| format!("value: {e}"))?;
    Ok((k, v))
}

fn failure(r: &mut pb::BundleResult, i: usize, message: String, kind: pb::record_failure::Kind) {
    r.output_counts.push(0);
    r.failures.push(pb::RecordFailure { index: i as i32, step: 0, message, kind: kind as i32 });
}

/// Runs `f` once per record of an extractor or partitioner bundle with its
/// decoded key and value: `answer` writes the record's outputs or fails it
/// with a message.
fn per_record<K: Serde, V: Serde>(
    b: &pb::Bundle,
    mut answer: impl FnMut(&mut pb::BundleResult, usize, &K, &V) -> std::result::Result<(), String>,
) -> pb::BundleResult {
    let mut r = pb::BundleResult { bundle_id: b.id, ..Default::default() };
    let cols = column(&b.keys, &b.key_lengths).and_then(|k| column(&b.values, &b.value_lengths).map(|v| (k, v)));
    let (keys, values) = match cols {
        Ok(c) => c,
        Err(e) => return fail_all(b, 0, e),
    };
    for i in 0..b.value_lengths.len() {
        match decode::<K, V>(b, keys[i], values[i]) {
            Err(e) => failure(&mut r, i, e, pb::record_failure::Kind::Deserialization),
            Ok((k, v)) => {
                if let Err(e) = answer(&mut r, i, &k, &v) {
                    failure(&mut r, i, e, pb::record_failure::Kind::Processing);
                }
            }
        }
    }
    r
}

/// The bundle runner of `f`, a typed stream partitioner: each record's
/// outputs are its partitions as 4-byte big-endian values, one null output
/// for `None` (the default partitioner), none for an empty set (dropped).
pub(crate) fn partition_fn<K: Serde, V: Serde, P, F>(f: F) -> Arc<ExtractFn>
where
    P: IntoIterator<Item = u32>,
    F: Fn(&str, &K, &V, u32) -> Option<P> + Send + Sync + 'static,
{
    Arc::new(move |b: &pb::Bundle, _: Duration| {
        let topic = b.sink_topic.as_str();
        let n = u32::try_from(b.sink_partitions).unwrap_or(0);
        per_record::<K, V>(b, |r, _, k, v| {
            let chosen = guarded(|| f(topic, k, v, n).map(|ps| ps.into_iter().collect::<Vec<u32>>()))?;
            write_partitions(r, chosen);
            Ok(())
        })
    })
}

/// A record's outputs for the partitions its partitioner chose.
fn write_partitions(r: &mut pb::BundleResult, chosen: Option<Vec<u32>>) {
    match chosen {
        None => {
            r.output_counts.push(1);
            r.value_lengths.push(-1);
        }
        Some(ps) => {
            let mut seen: Vec<u32> = Vec::with_capacity(ps.len());
            for p in ps {
                if !seen.contains(&p) {
                    seen.push(p);
                    r.value_lengths.push(4);
                    r.values.extend_from_slice(&p.to_be_bytes());
                }
            }
            r.output_counts.push(seen.len() as i32);
        }
    }
}

/// Runs `call` once per record of a partitioner or topic name extractor
/// bundle with its index and decoded key and value, the futures together
/// until the bundle has waited `timeout` ([`ASYNC_TIMEOUT`](crate::ASYNC_TIMEOUT));
/// then `answer` writes each record's outputs, in record order, or fails
/// it. A record whose call or future panics, or whose future is still
/// pending, fails alone, naming the function (`name`) and the node.
fn per_record_async<K: Serde, V: Serde, T: 'static>(
    b: &pb::Bundle,
    (name, timeout): (&str, Duration),
    call: impl Fn(usize, &K, &V) -> LocalFuture<T>,
    mut answer: impl FnMut(&mut pb::BundleResult, usize, T) -> std::result::Result<(), String>,
) -> pb::BundleResult {
    use pb::record_failure::Kind;
    let mut r = pb::BundleResult { bundle_id: b.id, ..Default::default() };
    let cols = column(&b.keys, &b.key_lengths).and_then(|k| column(&b.values, &b.value_lengths).map(|v| (k, v)));
    let (keys, values) = match cols {
        Ok(c) => c,
        Err(e) => return fail_all(b, 0, e),
    };
    // Each record's future (its index in futures), or why it has none.
    let mut started: Vec<std::result::Result<usize, (String, Kind)>> = Vec::with_capacity(b.value_lengths.len());
    let mut futures: Vec<LocalFuture<std::result::Result<T, String>>> = Vec::new();
    for i in 0..b.value_lengths.len() {
        match decode::<K, V>(b, keys[i], values[i]) {
            Err(e) => started.push(Err((e, Kind::Deserialization))),
            Ok((k, v)) => match guarded(|| call(i, &k, &v)) {
                Err(panic) => started.push(Err((panic, Kind::Processing))),
                Ok(fut) => {
                    started.push(Ok(futures.len()));
                    futures.push(Box::pin(async move { Ok(fut.await) }));
                }
            },
        }
    }
    let mut done: Vec<Option<std::result::Result<T, String>>> = await_all::run(futures, Instant::now() + timeout);
    let st = b.steps.first();
    for (i, s) in started.into_iter().enumerate() {
        let outcome = match s {
            Err(e) => Err(e),
            Ok(j) => match done[j].take() {
                None => Err((
                    format!(
                        "TimeoutError: {name} (token {}, step 0, node {}) did not finish within {} s (cancelled)",
                        st.map_or(0, |s| s.token),
                        st.map_or("", |s| s.node.as_str()),
                        timeout.as_secs_f64()
                    ),
                    Kind::Processing,
                )),
                Some(Err(panic)) => Err((panic, Kind::Processing)),
                Some(Ok(t)) => answer(&mut r, i, t).map_err(|m| (m, Kind::Processing)),
            },
        };
        if let Err((message, kind)) = outcome {
            failure(&mut r, i, message, kind);
        }
    }
    r
}

/// The bundle runner of `f`, a typed async stream partitioner: as
/// [`partition_fn`]'s, the records' futures together.
pub(crate) fn partition_fn_async<K: Serde, V: Serde, P, F, Fut>(name: String, f: F) -> Arc<ExtractFn>
where
    P: IntoIterator<Item = u32>,
    F: Fn(&str, &K, &V, u32) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<P>> + 'static,
{
    Arc::new(move |b: &pb::Bundle, timeout: Duration| {
        let topic = b.sink_topic.as_str();
        let n = u32::try_from(b.sink_partitions).unwrap_or(0);
        per_record_async::<K, V, Option<Vec<u32>>>(
            b,
            (&name, timeout),
            |_, k, v| {
                let fut = f(topic, k, v, n);
                Box::pin(async move { fut.await.map(|ps| ps.into_iter().collect()) })
            },
            |r, _, chosen| {
                write_partitions(r, chosen);
                Ok(())
            },
        )
    })
}

/// The bundle runner of `f`, a typed topic name extractor: each record's
/// one output is its topic, UTF-8.
pub(crate) fn topic_fn<K: Serde, V: Serde, F>(f: F) -> Arc<ExtractFn>
where
    F: Fn(&K, &V, &RecordMetadata) -> String + Send + Sync + 'static,
{
    Arc::new(move |b: &pb::Bundle, _: Duration| {
        let headers = match read_headers(b, b.value_lengths.len()) {
            Ok(h) => h,
            Err(e) => return fail_all(b, 0, e),
        };
        per_record::<K, V>(b, |r, i, k, v| {
            let meta = record_meta(b, &headers, i);
            let topic = guarded(|| f(k, v, &meta))?;
            write_topic::<F>(r, topic, meta.offset)
        })
    })
}

/// Record i's metadata, for a topic name extractor.
fn record_meta(b: &pb::Bundle, headers: &[crate::processor::Headers], i: usize) -> RecordMetadata {
    RecordMetadata {
        topic: b.topic.clone(),
        partition: b.partition,
        offset: b.offsets.get(i).copied().unwrap_or(-1),
        timestamp: b.timestamps.get(i).copied().unwrap_or(0),
        headers: headers[i].clone(),
    }
}

/// A record's one output, the topic its extractor F named (an empty name fails it).
fn write_topic<F>(r: &mut pb::BundleResult, topic: String, offset: i64) -> std::result::Result<(), String> {
    if topic.is_empty() {
        return Err(format!(
            "the topic name extractor {} named no topic (an empty name) for the record at offset {offset}",
            std::any::type_name::<F>(),
        ));
    }
    r.output_counts.push(1);
    r.value_lengths.push(topic.len() as i32);
    r.values.extend_from_slice(topic.as_bytes());
    Ok(())
}

/// The bundle runner of `f`, a typed async topic name extractor: as
/// [`topic_fn`]'s, the records' futures together.
pub(crate) fn topic_fn_async<K: Serde, V: Serde, F, Fut>(f: F) -> Arc<ExtractFn>
where
    F: Fn(&K, &V, RecordMetadata) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = String> + 'static,
{
    let name = std::any::type_name::<F>().to_owned();
    Arc::new(move |b: &pb::Bundle, timeout: Duration| {
        let headers = match read_headers(b, b.value_lengths.len()) {
            Ok(h) => h,
            Err(e) => return fail_all(b, 0, e),
        };
        per_record_async::<K, V, String>(
            b,
            (&name, timeout),
            |i, k, v| Box::pin(f(k, v, record_meta(b, &headers, i))),
            |r, i, topic| write_topic::<F>(r, topic, b.offsets.get(i).copied().unwrap_or(-1)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::Executor;

    fn bundle(op: pb::Operation, token: u32, values: &[Option<&str>]) -> pb::Bundle {
        let mut b = pb::Bundle {
            id: 3,
            steps: vec![pb::Step { token, operation: op as i32, node: "SINK".into(), ..Default::default() }],
            key_serde: "string".into(),
            value_serde: "string".into(),
            topic: "in".into(),
            partition: 2,
            offsets: (10..10 + values.len() as i64).collect(),
            sink_topic: "out".into(),
            sink_partitions: 4,
            ..Default::default()
        };
        for v in values {
            b.key_lengths.push(1);
            b.keys.push(b'k');
            match v {
                Some(v) => {
                    b.value_lengths.push(v.len() as i32);
                    b.values.extend_from_slice(v.as_bytes());
                }
                None => b.value_lengths.push(-1),
            }
        }
        b
    }

    fn run(f: Arc<ExtractFn>, b: &pb::Bundle) -> pb::BundleResult {
        Executor::new([(5, Func::Route(f))].into_iter().collect()).process(b)
    }

    fn failures(r: &pb::BundleResult) -> Vec<(i32, i32)> {
        r.failures.iter().map(|f| (f.index, f.kind)).collect()
    }

    #[test]
    fn a_partitioner_answers_partitions_default_multicast_or_none_and_a_record_fails_alone() {
        let f = partition_fn::<String, String, Vec<u32>, _>(|topic, _, v, n| {
            assert_eq!((topic, n), ("out", 4));
            match v.as_str() {
                "default" => None,
                "all" => Some(vec![3, 1, 3]),
                "drop" => Some(vec![]),
                "boom" => panic!("cannot route boom"),
                p => Some(vec![p.parse().unwrap()]),
            }
        });
        let b = bundle(
            pb::Operation::StreamPartition,
            5,
            &[Some("2"), Some("default"), Some("all"), Some("drop"), Some("boom"), None],
        );
        let r = run(f, &b);
        assert_eq!(r.output_counts, [1, 1, 2, 0, 0, 0]);
        assert_eq!(r.value_lengths, [4, -1, 4, 4]);
        assert_eq!(r.values, [0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1]);
        use pb::record_failure::Kind;
        assert_eq!(failures(&r), [(4, Kind::Processing as i32), (5, Kind::Deserialization as i32)]);
        assert!(r.failures[0].message.contains("cannot route boom"), "{}", r.failures[0].message);
    }

    #[test]
    fn an_extractor_names_each_records_topic_from_its_metadata_and_an_empty_name_fails_it() {
        let f = topic_fn::<String, String, _>(|k, v, meta| {
            if v == "none" {
                return String::new();
            }
            format!("{k}-{v}-{}-{}@{}", meta.topic, meta.partition, meta.offset)
        });
        let r = run(f, &bundle(pb::Operation::TopicName, 5, &[Some("x"), Some("none")]));
        assert_eq!(r.output_counts, [1, 0]);
        assert_eq!(String::from_utf8(r.values).unwrap(), "k-x-in-2@10");
        assert_eq!(r.failures.len(), 1);
        assert!(r.failures[0].index == 1 && r.failures[0].message.contains("named no topic"), "{:?}", r.failures);
    }

    /// Pending `n` polls (waking itself each time), then ready.
    struct Yield(usize);

    impl Future for Yield {
        type Output = ();
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
            if self.0 == 0 {
                return std::task::Poll::Ready(());
            }
            self.0 -= 1;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }

    #[test]
    fn an_async_partitioner_answers_in_record_order_and_a_pending_or_panicking_future_fails_its_record() {
        let f = partition_fn_async::<String, String, Vec<u32>, _, _>("part".to_owned(), |_, _, v, _| {
            let v = v.clone();
            async move {
                match v.as_str() {
                    "never" => std::future::pending().await,
                    "boom" => panic!("cannot route boom"),
                    "default" => None,
                    p => {
                        let p: u32 = p.parse().unwrap();
                        Yield(4 - p as usize).await; // later records finish first
                        Some(vec![p])
                    }
                }
            }
        });
        let b = bundle(
            pb::Operation::StreamPartition,
            5,
            &[Some("1"), Some("never"), Some("2"), Some("boom"), Some("default"), Some("3"), None],
        );
        let mut ex = Executor::new([(5, Func::Route(f))].into_iter().collect());
        ex.async_timeout = std::time::Duration::from_millis(100);
        let r = ex.process(&b);
        assert_eq!(r.output_counts, [1, 0, 1, 0, 1, 1, 0]);
        assert_eq!(r.value_lengths, [4, 4, -1, 4]);
        assert_eq!(r.values, [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]);
        use pb::record_failure::Kind;
        let p = Kind::Processing as i32;
        assert_eq!(failures(&r), [(1, p), (3, p), (6, Kind::Deserialization as i32)]);
        let timeout = &r.failures[0].message;
        assert!(timeout.starts_with("TimeoutError: part (token 5, step 0, node SINK) did not finish"), "{timeout}");
        assert!(r.failures[1].message.contains("cannot route boom"), "{}", r.failures[1].message);
    }

    #[test]
    fn an_async_extractor_names_each_records_topic_from_its_metadata() {
        let f = topic_fn_async::<String, String, _, _>(|k, v, meta| {
            let name = format!("{k}-{v}-{}@{}", meta.topic, meta.offset);
            async move {
                Yield(1).await;
                if name.starts_with("k-none") {
                    String::new()
                } else {
                    name
                }
            }
        });
        let r = run(f, &bundle(pb::Operation::TopicName, 5, &[Some("x"), Some("none"), Some("y")]));
        assert_eq!(r.output_counts, [1, 0, 1]);
        assert_eq!(String::from_utf8(r.values).unwrap(), "k-x-in@10k-y-in@12");
        assert!(r.failures[0].index == 1 && r.failures[0].message.contains("named no topic"), "{:?}", r.failures);
    }

    #[test]
    fn an_unregistered_route_fails_every_record_naming_the_sink() {
        let f = topic_fn::<String, String, _>(|_, _, _| "t".to_owned());
        let r = run(f, &bundle(pb::Operation::StreamPartition, 6, &[Some("x")]));
        assert_eq!(r.output_counts, [0]);
        assert!(r.failures[0].message.contains("stream partitioner (SINK) names token 6"), "{:?}", r.failures);
    }
}
