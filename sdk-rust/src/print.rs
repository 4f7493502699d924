//! `KStream.print(Printed)`: a terminal operator writing each record as a
//! line, `[<label>]: <key>, <value>`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use crate::dsl::{action_step, build_step, KStream};
use crate::errors::Result;
use crate::options::{Options, NAME};
use crate::pb::{self, build_request::Operation as Op};
use crate::serdes::{Json, Serde, Value, Windowed};
use crate::session::fn_name;

/// A key or value as `print` shows it, as Java's `String.valueOf` shows the
/// deserialized object: `null` for none, text as it is, numbers in decimal
/// (a double as Java's `Double.toString` for everyday magnitudes: `3.0`),
/// bytes in hex, JSON as JSON.
pub trait PrintText {
    fn print_text(&self) -> String;
}

impl PrintText for String {
    fn print_text(&self) -> String {
        self.clone()
    }
}

impl PrintText for Vec<u8> {
    fn print_text(&self) -> String {
        self.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl PrintText for i64 {
    fn print_text(&self) -> String {
        self.to_string()
    }
}

impl PrintText for i32 {
    fn print_text(&self) -> String {
        self.to_string()
    }
}

impl PrintText for f64 {
    fn print_text(&self) -> String {
        format!("{self:?}")
    }
}

impl PrintText for () {
    fn print_text(&self) -> String {
        "null".to_owned()
    }
}

impl<T: PrintText> PrintText for Option<T> {
    fn print_text(&self) -> String {
        self.as_ref().map_or_else(|| "null".to_owned(), PrintText::print_text)
    }
}

impl PrintText for serde_json::Value {
    fn print_text(&self) -> String {
        match self {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

impl<T: serde::Serialize> PrintText for Json<T> {
    fn print_text(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|e| format!("<{e}>"))
    }
}

impl PrintText for Value {
    fn print_text(&self) -> String {
        match self {
            Value::Null => "null".to_owned(),
            Value::Bytes(b) => b.print_text(),
            Value::String(s) => s.clone(),
            Value::Long(n) => n.to_string(),
            Value::Integer(n) => n.to_string(),
            Value::Double(d) => d.print_text(),
            Value::Json(j) => j.print_text(),
        }
    }
}

/// As Kafka Streams' `Windowed.toString`: `[key@start/end]`.
impl<K: PrintText> PrintText for Windowed<K> {
    fn print_text(&self) -> String {
        format!("[{}@{}/{}]", self.key.print_text(), self.start_ms, self.end_ms)
    }
}

type Mapper<K, V> = Arc<dyn Fn(&K, &V) -> String + Send + Sync>;
type Sink = Arc<Mutex<dyn Write + Send>>;

/// Kafka Streams' `Printed`: where and how [`KStream::print_with`] writes.
pub struct Printed<K, V> {
    label: Option<String>,
    mapper: Mapper<K, V>,
    to: Option<Sink>,
}

impl<K, V> std::fmt::Debug for Printed<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printed")
            .field("label", &self.label)
            .field("to_writer", &self.to.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: PrintText, V: PrintText> Printed<K, V> {
    /// `Printed.toSysOut()`: lines `"<key>, <value>"` to standard output.
    pub fn to_sys_out() -> Printed<K, V> {
        Printed::with_mapper(|k: &K, v: &V| format!("{}, {}", k.print_text(), v.print_text()))
    }
}

impl<K, V> Printed<K, V> {
    /// `Printed.toSysOut().withKeyValueMapper(f)`: `f(key, value)` is the
    /// text after the label (for types without [`PrintText`]).
    pub fn with_mapper(f: impl Fn(&K, &V) -> String + Send + Sync + 'static) -> Printed<K, V> {
        Printed { label: None, mapper: Arc::new(f), to: None }
    }

    /// `Printed.withLabel`; by default the label is the name of the node
    /// the stream comes from, as in Kafka Streams.
    pub fn label(mut self, label: impl Into<String>) -> Printed<K, V> {
        self.label = Some(label.into());
        self
    }

    /// Lines go to `w` instead of standard output (`Printed.toFile` takes a
    /// file: pass one).
    pub fn to(mut self, w: impl Write + Send + 'static) -> Printed<K, V> {
        self.to = Some(Arc::new(Mutex::new(w)));
        self
    }
}

impl<K: Serde + PrintText, V: Serde + PrintText> KStream<K, V> {
    /// Writes `[<node>]: <key>, <value>` and a newline per record to
    /// standard output (`KStream.print(Printed.toSysOut())`); terminal, node
    /// `KSTREAM-PRINTER-<n>`.
    pub fn print(&self) -> Result<()> {
        self.print_with(Printed::to_sys_out(), Options::new())
    }
}

impl<K: Serde, V: Serde> KStream<K, V> {
    /// [`print`](Self::print) with a [`Printed`] (label, mapper, writer) and
    /// `name`.
    pub fn print_with(&self, p: Printed<K, V>, o: Options) -> Result<()> {
        o.check("print", NAME)?;
        let prefix = format!("[{}]: ", p.label.unwrap_or_else(|| self.handle.node.clone()));
        let (mapper, to) = (p.mapper, p.to);
        let printer = move |k: &K, v: &V| {
            let line = format!("{prefix}{}\n", mapper(k, v));
            let written = match &to {
                Some(w) => {
                    let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                    w.write_all(line.as_bytes()).and_then(|()| w.flush())
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(line.as_bytes()).and_then(|()| out.flush())
                }
            };
            if let Err(e) = written {
                panic!("print: {e}");
            }
        };
        let input = self.handle.id;
        build_step(&self.app, fn_name::<Printed<K, V>>("print"), action_step(false, printer), |token| {
            Op::Print(pb::PrintOp { input, token, name: o.name_or_empty() })
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_text_is_java_string_value_of() {
        assert_eq!(Some("a".to_owned()).print_text(), "a");
        assert_eq!(None::<String>.print_text(), "null");
        assert_eq!((-20i64).print_text(), "-20");
        assert_eq!(3.0f64.print_text(), "3.0");
        assert_eq!(0.5f64.print_text(), "0.5");
        assert_eq!(vec![0x0au8, 0xff].print_text(), "0aff");
        assert_eq!(Value::Null.print_text(), "null");
        assert_eq!(serde_json::json!({"a": 1}).print_text(), r#"{"a":1}"#);
        let w = Windowed { key: "k".to_owned(), start_ms: 0, end_ms: 10 };
        assert_eq!(w.print_text(), "[k@0/10]");
    }
}
