//! Foreign-key table-table joins (KIP-213) against the REAL engine binary:
//! `$POLYSTREAMS_ENGINE`, else `bin/polystreams` of the repository. Records
//! go in and come out through kcat (librdkafka), a client independent of
//! the engine; topics are created with confluent-kafka's admin client.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use polystreams::{App, Error, Materialized, Options};

fn app(name: &str) -> App {
    common::app_with_workers(name, 2)
}

fn create_topics(brokers: &str, topics: &[(&str, i32)]) {
    let specs: Vec<String> = topics.iter().map(|(t, n)| format!("NewTopic({t:?}, {n}, 1)")).collect();
    let script = format!(
        "from confluent_kafka.admin import AdminClient, NewTopic\n\
         admin = AdminClient({{'bootstrap.servers': {brokers:?}}})\n\
         for f in admin.create_topics([{}]).values(): f.result(30)\n",
        specs.join(", ")
    );
    let ok = Command::new("/usr/bin/python3").args(["-c", &script]).status().expect("python3 runs");
    assert!(ok.success(), "created {topics:?}");
}

/// Produces with murmur2 (as Kafka's Java clients and the engine place
/// keys); an empty value is a null (a tombstone).
fn produce(brokers: &str, topic: &str, records: &[(&str, &str)]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-K", "\t", "-Z", "-z", "none", "-X", "partitioner=murmur2_random"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let stdin = kcat.stdin.as_mut().unwrap();
    for (k, v) in records {
        writeln!(stdin, "{k}\t{v}").unwrap();
    }
    drop(kcat.stdin.take());
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
}

/// The latest value per key of `topic` (empty: a tombstone), read with kcat
/// until it holds `want` or a minute passes.
fn read_until(brokers: &str, topic: &str, want: &BTreeMap<&str, &str>) -> BTreeMap<String, String> {
    common::read_until(brokers, topic, Duration::from_secs(60), |last| {
        want.iter().all(|(k, v)| last.get(*k).map(String::as_str) == Some(*v))
    })
}

fn check(brokers: &str, topic: &str, want: &BTreeMap<&str, &str>) {
    let got = read_until(brokers, topic, want);
    for (k, v) in want {
        assert_eq!(got.get(*k).map(String::as_str), Some(*v), "{topic} key {k}: {got:?}");
    }
}

#[test]
fn orders_joined_with_their_customer_across_partition_counts() {
    let app = app("fkjoin");
    let brokers = app.brokers().unwrap().to_owned();
    create_topics(&brokers, &[("orders", 3), ("customers", 5), ("enriched", 3), ("all-orders", 3)]);
    let orders = app.table::<String, String>("orders").unwrap();
    let customers = app.table::<String, String>("customers").unwrap();
    // An order's value is "<customer>/<item>"; "-" is no customer.
    let customer_of = |o: &String| o.split_once('/').map(|(c, _)| c.to_owned()).filter(|c| c != "-");
    let inner =
        orders.foreign_key_join(&customers, customer_of, |o: String, c: String| format!("{o} for {c}")).unwrap();
    assert_eq!(inner.handle().node, "KTABLE-FK-JOIN-OUTPUT-0000000018");
    inner.to_stream().unwrap().to("enriched").unwrap();
    let left = orders
        .left_foreign_key_join_with(
            &customers,
            customer_of,
            |o: String, c: Option<String>| format!("{o} for {}", c.unwrap_or_else(|| "nobody".into())),
            Options::named("all").materialized(Materialized::named("all-orders")),
        )
        .unwrap();
    assert_eq!((left.handle().node.as_str(), left.store()), ("all-result", Some("all-orders")));
    left.to_stream().unwrap().to("all-orders").unwrap();
    let runner = {
        let app = app.clone();
        std::thread::spawn(move || app.run())
    };

    produce(&brokers, "customers", &[("c0", "Ann"), ("c1", "Bob")]);
    produce(&brokers, "orders", &[("o0", "c0/tea"), ("o1", "c1/jam"), ("o2", "c2/figs"), ("o3", "c1/oil")]);
    let mut inner_want = BTreeMap::from([("o0", "c0/tea for Ann"), ("o1", "c1/jam for Bob"), ("o3", "c1/oil for Bob")]);
    let mut left_want = inner_want.clone();
    left_want.insert("o2", "c2/figs for nobody");
    check(&brokers, "enriched", &inner_want);
    check(&brokers, "all-orders", &left_want);

    // A customer's update re-joins its orders; an order moves to another
    // customer; a deleted order and a null foreign key.
    produce(&brokers, "customers", &[("c1", "Robert")]);
    produce(&brokers, "orders", &[("o0", "c1/tea"), ("o3", ""), ("o1", "-/jam")]);
    inner_want.extend([("o0", "c1/tea for Robert"), ("o1", ""), ("o3", "")]);
    left_want.extend([("o0", "c1/tea for Robert"), ("o1", "-/jam for nobody"), ("o3", "")]);
    check(&brokers, "enriched", &inner_want);
    check(&brokers, "all-orders", &left_want);
    assert_eq!(
        app.store::<String, String>("all-orders").get(&"o2".to_owned()).unwrap().as_deref(),
        Some("c2/figs for nobody")
    );
    assert!(!runner.is_finished(), "run ended: {:?}", runner.join());
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
}

#[test]
fn foreign_key_join_refusals_carry_the_engines_message() {
    let app = app("fkjoin-refusals");
    let orders = app.table::<String, String>("orders").unwrap();
    let customers = app.table::<String, String>("customers").unwrap();
    let e = orders
        .foreign_key_join_with(
            &customers,
            |o: &String| Some(o.clone()),
            |o: String, _c: String| o,
            Options::new().key_serde("long"),
        )
        .unwrap_err();
    assert_eq!(e.message(), "foreign_key_join: takes no key_serde option");
    let e = orders
        .foreign_key_join_with(
            &customers,
            |o: &String| Some(o.clone()),
            |o: String, _c: String| o,
            Options::new().materialized(Materialized::named("bad name")),
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.message().contains("\"bad name\""), "{e:?}");
    // The session goes on.
    orders.foreign_key_join(&customers, |o: &String| Some(o.clone()), |o: String, c: String| o + &c).unwrap();
    app.close(Duration::from_secs(30));
}
