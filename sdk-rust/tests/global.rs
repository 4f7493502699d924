//! Global tables and stream-global-table joins against the REAL engine
//! binary (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`). Records go in and
//! come out through kcat (librdkafka), a Kafka client independent of the
//! engine; the global topic is created with 3 partitions and the orders topic with
//! 1 by confluent-kafka's admin client.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use polystreams::{App, Config, Json, Kind, Options};

fn app(name: &str) -> App {
    common::app_with_workers(name, 2)
}

/// The latest value per key of `topic`, read until `done` holds or a minute passes.
fn read_until(
    brokers: &str,
    topic: &str,
    done: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    common::read_until(brokers, topic, Duration::from_secs(60), done)
}

const DESCRIBE: &str = "\
Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000000 (topics: [products])
      --> KTABLE-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000001 (stores: [products-store])
      --> none
      <-- KSTREAM-SOURCE-0000000000
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000002 (topics: [orders])
      --> KSTREAM-LEFTJOIN-0000000003, KSTREAM-LEFTJOIN-0000000005
    Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-SOURCE-0000000002
    Processor: KSTREAM-LEFTJOIN-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: enriched)
      <-- KSTREAM-LEFTJOIN-0000000003
    Sink: KSTREAM-SINK-0000000006 (topic: all-orders)
      <-- KSTREAM-LEFTJOIN-0000000005

";

fn create_topic(brokers: &str, topic: &str, partitions: u32) {
    let script = format!(
        "from confluent_kafka.admin import AdminClient, NewTopic\n\
         admin = AdminClient({{'bootstrap.servers': '{brokers}'}})\n\
         [f.result(30) for f in admin.create_topics([NewTopic('{topic}', {partitions}, 1)]).values()]"
    );
    let ok = Command::new("/usr/bin/python3").args(["-c", &script]).status().expect("python3 runs");
    assert!(ok.success(), "created {topic}");
}

fn produce(brokers: &str, topic: &str, partition: u32, records: &[(&str, &str)]) {
    let mut kcat = Command::new("kcat")
        .args(["-b", brokers, "-P", "-t", topic, "-p", &partition.to_string(), "-K", "\t", "-z", "none"])
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

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct Order {
    product: String,
    n: i64,
    #[serde(default)]
    name: Option<String>,
}

#[test]
fn orders_joined_with_a_global_table_of_other_partitions() {
    let app = app("global");
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "products", 3);
    for p in 0..3u32 {
        let (k0, v0, k1, v1) = (format!("p{p}"), format!("name{p}"), format!("p{}", p + 3), format!("name{}", p + 3));
        produce(&brokers, "products", p, &[(&k0, &v0), (&k1, &v1)]);
    }
    for t in ["orders", "enriched", "all-orders"] {
        create_topic(&brokers, t, 1);
    }
    let products =
        app.global_table_with::<String, String>("products", Options::new().materialized("products-store")).unwrap();
    assert_eq!(products.handle().kind, Kind::GlobalTable);
    assert_eq!(products.store(), "products-store");
    let orders = app.stream::<String, Json<Order>>("orders").unwrap();
    let product_of = |_: &String, o: &Json<Order>| o.0.product.clone();
    let joined = orders
        .join_global(&products, product_of, |o: Json<Order>, name: String| Json(Order { name: Some(name), ..o.0 }))
        .unwrap();
    joined.to("enriched").unwrap();
    orders
        .left_join_global(&products, product_of, |o: Json<Order>, name: Option<String>| Json(Order { name, ..o.0 }))
        .unwrap()
        .to("all-orders")
        .unwrap();
    assert_eq!(app.describe().unwrap(), DESCRIBE);
    let runner = {
        let a = app.clone();
        std::thread::spawn(move || a.run())
    };
    let store = app.store::<String, String>("products-store");
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.get(&"p5".to_owned()).ok().flatten().is_none() && Instant::now() < deadline {
        assert!(!runner.is_finished(), "run ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(store.get(&"p4".to_owned()).unwrap().as_deref(), Some("name4"));
    let texts: Vec<(String, String)> = (0..16)
        .map(|i| {
            (
                format!("o{i}"),
                serde_json::to_string(&Order { product: format!("p{}", i % 8), n: i, name: None }).unwrap(),
            )
        })
        .collect();
    produce(&brokers, "orders", 0, &texts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>());
    let all = read_until(&brokers, "all-orders", |l| l.len() >= 16);
    let enriched = read_until(&brokers, "enriched", |l| l.len() >= 12);
    app.stop();
    runner.join().unwrap().unwrap();
    app.close(Duration::from_secs(30));
    for i in 0..16i64 {
        let got: Order = serde_json::from_str(&all[&format!("o{i}")]).unwrap();
        let name = (i % 8 < 6).then(|| format!("name{}", i % 8));
        assert_eq!(got, Order { product: format!("p{}", i % 8), n: i, name }, "o{i}");
    }
    assert_eq!(enriched.len(), 12, "{enriched:?}");
    assert!(enriched.keys().all(|k| k[1..].parse::<i64>().unwrap() % 8 < 6));
}

#[test]
fn global_join_refusals_carry_the_engines_message() {
    let app = app("global-refusals");
    let global = app.global_table::<String, String>("no-such-products").unwrap();
    let stream = app.stream::<String, String>("s").unwrap();
    let e = stream
        .join_global_with(&global, |k, _| k.clone(), |v, g| format!("{v}{g}"), Options::new().key_serde("long"))
        .unwrap_err();
    assert_eq!(e.message(), "join: takes no key_serde option");
    // The session goes on: the join is built.
    stream
        .left_join_global(&global, |k, _| k.clone(), |v, g: Option<String>| format!("{v}{}", g.unwrap_or_default()))
        .unwrap()
        .to("out")
        .unwrap();
    // Against a broker given by address (`serve --brokers`, not the
    // embedded broker's development mode, which creates missing topics)
    // the missing topic is named when the app starts.
    let brokers = app.brokers().unwrap().to_owned();
    create_topic(&brokers, "s", 1);
    let served = common::builder("global-refusals-serve", Config::new())
        .brokers(brokers)
        .build()
        .expect("the app opens a session on a serve engine");
    let global = served.global_table::<String, String>("no-such-products").unwrap();
    served
        .stream::<String, String>("s")
        .unwrap()
        .left_join_global(&global, |k, _| k.clone(), |v, g: Option<String>| format!("{v}{}", g.unwrap_or_default()))
        .unwrap()
        .to("out")
        .unwrap();
    let e = served.run().unwrap_err();
    assert!(e.message().contains("topic \"no-such-products\" of global table KTABLE-SOURCE-0000000002"), "{e:?}");
    served.close(Duration::from_secs(30));
    app.close(Duration::from_secs(30));
}
