//! Serdes: how keys and values become bytes and back.
//!
//! A type that implements [`Serde`] can be a key or value type of a stream
//! or table. The implementations match Kafka's serdes byte for byte:
//! `String` is UTF-8 (`Serdes.String`), `i64` an 8-byte big-endian two's
//! complement integer (`Serdes.Long`), `i32` 4 bytes (`Serdes.Integer`),
//! `f64` an 8-byte big-endian IEEE 754 float (`Serdes.Double`), `Vec<u8>`
//! the bytes as they are, and [`Json<T>`] (any serde type) or
//! `serde_json::Value` compact UTF-8 JSON. A Kafka null (a tombstone) is
//! `None` of an `Option<T>`; a null given to a type that is not an `Option`
//! fails its record. `()` ignores what it is given (a key a program never
//! reads). [`Value`] decodes whatever serde the engine says the records have.

use std::fmt;

/// The Schema Registry Avro serde (Confluent's wire format: magic byte 0,
/// the 4-byte schema id, the Avro binary), with the registry of the
/// config's `schema.registry.url`, as a serde name for `Options::key_serde`
/// / `value_serde` of a source (`stream_with`, `table_with`,
/// `global_table_with`) or a sink (`to_with`). The engine decodes it to
/// JSON where records enter and encodes JSON where they leave, so the Rust
/// type is [`Json<T>`] or `serde_json::Value`. At a source, `avro(None)`
/// reads any registered schema and `avro(Some(schema))` reads each record's
/// schema into `schema`; at a sink, `avro(Some(schema))` registers `schema`
/// (Avro's JSON form) under the topic's subject and writes with it,
/// `avro(None)` writes with the subject's latest schema.
pub fn avro(schema: Option<&str>) -> String {
    topic_serde("avro", schema)
}

/// The Schema Registry JSON Schema serde, as [`avro`] is for Avro: the
/// payload is the JSON itself, validated against the record's schema (by
/// its id) at a source and against `schema` (registered) at a sink.
pub fn json_schema(schema: Option<&str>) -> String {
    topic_serde("json-schema", schema)
}

/// The Schema Registry Protobuf serde, as [`avro`] is for Avro: Confluent's
/// wire format with the message indexes before the protobuf binary; the
/// engine hands over the record's message as protojson (proto field names,
/// every field present, 64-bit integers as strings). At a sink,
/// `protobuf(Some(schema))` registers `schema` (.proto text) and writes its
/// first message; `protobuf(None)` writes with the subject's latest schema.
pub fn protobuf(schema: Option<&str>) -> String {
    topic_serde("protobuf", schema)
}

/// [`protobuf`] writing the message `message` names at a sink (its full
/// name, or its name in the schema's package: `"Refund"`, nested
/// `"Order.Line"`), with that message's indexes, instead of the schema's
/// first; `schema` `None` picks it from the subject's latest schema.
pub fn protobuf_message(schema: Option<&str>, message: &str) -> String {
    match schema {
        None => format!("protobuf(message={message})"),
        Some(s) => format!("protobuf({s}, message={message})"),
    }
}

fn topic_serde(name: &str, schema: Option<&str>) -> String {
    match schema {
        None => name.to_owned(),
        Some(s) => format!("{name}({s})"),
    }
}

/// A key or value type, and how it is written on Kafka.
///
/// `NAME` is the serde's name as the engine and every SDK spell it
/// (`bytes`, `string`, `json`, `long`, `integer`, `double`); the builder
/// tells the engine the serde of every stream from its Rust types. An empty
/// `NAME` (as [`Value`]'s) says nothing and takes what the records have.
pub trait Serde: Sized + Send + Sync + 'static {
    /// The serde's name, or "" to inherit the records' serde.
    const NAME: &'static str;

    /// Decodes one key or value; `data` is None for a Kafka null. `serde`
    /// is the name the engine gives the records' serde (the typed
    /// implementations ignore it; [`Value`] decodes by it).
    fn decode(serde: &str, data: Option<&[u8]>) -> Result<Self, SerdeError>;

    /// Appends the encoding to `out` and answers true, or answers false for
    /// a Kafka null (appending nothing).
    fn encode(&self, serde: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError>;
}

/// Why a key or value did not decode or encode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerdeError(pub String);

impl fmt::Display for SerdeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SerdeError {}

fn err<T>(msg: impl Into<String>) -> Result<T, SerdeError> {
    Err(SerdeError(msg.into()))
}

fn not_null<'a>(name: &str, data: Option<&'a [u8]>) -> Result<&'a [u8], SerdeError> {
    match data {
        Some(d) => Ok(d),
        None => err(format!("{name} serde: the record is null (use an Option to accept nulls)")),
    }
}

fn fixed<const N: usize>(name: &str, data: Option<&[u8]>) -> Result<[u8; N], SerdeError> {
    let d = not_null(name, data)?;
    d.try_into().or_else(|_| err(format!("{name} serde: want {N} bytes, got {}", d.len())))
}

impl Serde for String {
    const NAME: &'static str = "string";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        let d = not_null("string", data)?;
        String::from_utf8(d.to_vec()).or_else(|e| err(format!("string serde: {e}")))
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        out.extend_from_slice(self.as_bytes());
        Ok(true)
    }
}

impl Serde for Vec<u8> {
    const NAME: &'static str = "bytes";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        Ok(not_null("bytes", data)?.to_vec())
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        out.extend_from_slice(self);
        Ok(true)
    }
}

impl Serde for i64 {
    const NAME: &'static str = "long";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        Ok(i64::from_be_bytes(fixed("long", data)?))
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        out.extend_from_slice(&self.to_be_bytes());
        Ok(true)
    }
}

impl Serde for i32 {
    const NAME: &'static str = "integer";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        Ok(i32::from_be_bytes(fixed("integer", data)?))
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        out.extend_from_slice(&self.to_be_bytes());
        Ok(true)
    }
}

impl Serde for f64 {
    const NAME: &'static str = "double";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        Ok(f64::from_be_bytes(fixed("double", data)?))
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        out.extend_from_slice(&self.to_be_bytes());
        Ok(true)
    }
}

/// A key or value that is never read: decodes from anything, encodes as null.
impl Serde for () {
    const NAME: &'static str = "bytes";
    fn decode(_: &str, _: Option<&[u8]>) -> Result<Self, SerdeError> {
        Ok(())
    }
    fn encode(&self, _: &str, _: &mut Vec<u8>) -> Result<bool, SerdeError> {
        Ok(false)
    }
}

/// A nullable key or value: `None` is a Kafka null (a tombstone).
impl<T: Serde> Serde for Option<T> {
    const NAME: &'static str = T::NAME;
    fn decode(serde: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        match data {
            None => Ok(None),
            Some(_) => T::decode(serde, data).map(Some),
        }
    }
    fn encode(&self, serde: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        match self {
            None => Ok(false),
            Some(v) => v.encode(serde, out),
        }
    }
}

/// JSON, the `json` serde: a null JSON document and a Kafka null are both
/// `serde_json::Value::Null`.
impl Serde for serde_json::Value {
    const NAME: &'static str = "json";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        match data {
            None => Ok(serde_json::Value::Null),
            Some(d) => serde_json::from_slice(d).or_else(|e| err(format!("json serde: {e}"))),
        }
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        if self.is_null() {
            return Ok(false);
        }
        serde_json::to_writer(out, self).or_else(|e| err(format!("json serde: {e}")))?;
        Ok(true)
    }
}

/// Any type serde can (de)serialize, as compact JSON (the `json` serde):
/// `Json<HashMap<String, i64>>`, `Json<MyStruct>` with `#[derive(Serialize,
/// Deserialize)]`, ...
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Json<T>(pub T);

impl<T> Serde for Json<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    const NAME: &'static str = "json";
    fn decode(_: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        let d = not_null("json", data)?;
        serde_json::from_slice(d).map(Json).or_else(|e| err(format!("json serde: {e}")))
    }
    fn encode(&self, _: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        serde_json::to_writer(out, &self.0).or_else(|e| err(format!("json serde: {e}")))?;
        Ok(true)
    }
}

/// A key or value of any serde, decoded by the serde the engine names for
/// the records: for programs whose types are known only at run time (the
/// conformance executor is one). Its `NAME` is empty, so the builder
/// inherits serdes unless an operator's options name one.
///
/// Encoding converts where the value fits: a `Long` or `Integer` encodes as
/// `long`, `integer` or `double`, any value but `Bytes` as `json`; JSON
/// `null` and a Kafka null are both [`Value::Null`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A Kafka null.
    Null,
    Bytes(Vec<u8>),
    String(String),
    Long(i64),
    Integer(i32),
    Double(f64),
    /// A JSON document other than `null`.
    Json(serde_json::Value),
}

impl Value {
    /// The value as JSON (`Bytes` have none).
    pub fn to_json(&self) -> Option<serde_json::Value> {
        use serde_json::Value as J;
        Some(match self {
            Value::Null => J::Null,
            Value::Bytes(_) => return None,
            Value::String(s) => J::String(s.clone()),
            Value::Long(i) => J::from(*i),
            Value::Integer(i) => J::from(*i),
            Value::Double(d) => serde_json::Number::from_f64(*d).map(J::Number)?,
            Value::Json(j) => j.clone(),
        })
    }

    /// A JSON document as a Value (`null` becomes [`Value::Null`]).
    pub fn from_json(j: serde_json::Value) -> Value {
        if j.is_null() {
            Value::Null
        } else {
            Value::Json(j)
        }
    }

    /// The string, if this is one (a JSON string too).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            Value::Json(serde_json::Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one (a JSON integer too).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Long(i) => Some(*i),
            Value::Integer(i) => Some(i64::from(*i)),
            Value::Json(j) => j.as_i64(),
            _ => None,
        }
    }

    /// The number, if this is one (a JSON number too).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Double(d) => Some(*d),
            Value::Json(j) => j.as_f64(),
            _ => self.as_i64().map(|i| i as f64),
        }
    }

    /// Whether this is [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The name of what this holds, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bytes(_) => "bytes",
            Value::String(_) => "string",
            Value::Long(_) => "long",
            Value::Integer(_) => "integer",
            Value::Double(_) => "double",
            Value::Json(j) => match j {
                serde_json::Value::Bool(_) => "JSON boolean",
                serde_json::Value::Number(_) => "JSON number",
                serde_json::Value::String(_) => "JSON string",
                serde_json::Value::Array(_) => "JSON array",
                serde_json::Value::Object(_) => "JSON object",
                serde_json::Value::Null => "null",
            },
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Long(i)
    }
}

impl Serde for Value {
    const NAME: &'static str = "";
    fn decode(serde: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        if data.is_none() {
            return Ok(Value::Null);
        }
        Ok(match serde {
            "bytes" | "" => Value::Bytes(Vec::decode(serde, data)?),
            "string" => Value::String(String::decode(serde, data)?),
            "long" => Value::Long(i64::decode(serde, data)?),
            "integer" => Value::Integer(i32::decode(serde, data)?),
            "double" => Value::Double(f64::decode(serde, data)?),
            "json" => Value::from_json(serde_json::Value::decode(serde, data)?),
            // A windowed key stays its bytes (decode it as a Windowed<K> to see its parts).
            w if is_windowed(w) => Value::Bytes(Vec::decode(serde, data)?),
            other => return err(format!("unknown serde {other:?}")),
        })
    }

    fn encode(&self, serde: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        if let Value::Null = self {
            return Ok(false);
        }
        let wrong = || err(format!("{serde} serde: cannot encode a {} value", self.kind()));
        match serde {
            w if w == "bytes" || w.is_empty() || is_windowed(w) => match self {
                Value::Bytes(b) => b.encode(serde, out),
                _ => wrong(),
            },
            "string" => match self.as_str() {
                Some(s) => {
                    out.extend_from_slice(s.as_bytes());
                    Ok(true)
                }
                None => wrong(),
            },
            "long" => match self {
                Value::Long(_) | Value::Integer(_) | Value::Json(serde_json::Value::Number(_)) => {
                    self.as_i64().map_or_else(wrong, |i| i.encode(serde, out))
                }
                _ => wrong(),
            },
            "integer" => match self.as_i64() {
                Some(i) if !matches!(self, Value::Double(_)) => match i32::try_from(i) {
                    Ok(i) => i.encode(serde, out),
                    Err(_) => err(format!("integer serde: {i} does not fit in 32 bits")),
                },
                _ => wrong(),
            },
            "double" => match self {
                Value::Double(_) | Value::Long(_) | Value::Integer(_) | Value::Json(serde_json::Value::Number(_)) => {
                    self.as_f64().map_or_else(wrong, |d| d.encode(serde, out))
                }
                _ => wrong(),
            },
            "json" => match self.to_json() {
                Some(j) => j.encode(serde, out),
                None => wrong(),
            },
            other => err(format!("unknown serde {other:?}")),
        }
    }
}

fn is_windowed(serde: &str) -> bool {
    serde.starts_with("windowed(") || serde.starts_with("session-windowed(")
}

/// Encodes a value to its bytes (None for a null).
pub fn to_bytes<T: Serde>(serde: &str, v: &T) -> Result<Option<Vec<u8>>, SerdeError> {
    let mut out = Vec::new();
    Ok(if v.encode(serde, &mut out)? { Some(out) } else { None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_registry_serde_names() {
        assert_eq!(avro(None), "avro");
        assert_eq!(avro(Some(r#"{"type":"string"}"#)), r#"avro({"type":"string"})"#);
        assert_eq!(json_schema(None), "json-schema");
        assert_eq!(json_schema(Some(r#"{"type":"object"}"#)), r#"json-schema({"type":"object"})"#);
        assert_eq!(protobuf(None), "protobuf");
        assert_eq!(protobuf(Some("message M { int64 id = 1; }")), "protobuf(message M { int64 id = 1; })");
        assert_eq!(protobuf_message(Some("message M {}"), "M"), "protobuf(message M {}, message=M)");
        assert_eq!(protobuf_message(None, "shop.Refund"), "protobuf(message=shop.Refund)");
    }

    #[test]
    fn fixed_width_serdes_are_kafkas() {
        assert_eq!(to_bytes("long", &1i64).unwrap(), Some(vec![0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(to_bytes("long", &-2i64).unwrap(), Some(vec![255, 255, 255, 255, 255, 255, 255, 254]));
        assert_eq!(to_bytes("integer", &258i32).unwrap(), Some(vec![0, 0, 1, 2]));
        assert_eq!(to_bytes("double", &1.5f64).unwrap(), Some(1.5f64.to_be_bytes().to_vec()));
        assert_eq!(i64::decode("long", Some(&[0, 0, 0, 0, 0, 0, 1, 0])).unwrap(), 256);
        let e = i64::decode("long", Some(&[1, 2])).unwrap_err();
        assert_eq!(e.0, "long serde: want 8 bytes, got 2");
    }

    #[test]
    fn nulls_need_an_option() {
        assert!(String::decode("string", None).unwrap_err().0.contains("use an Option"));
        assert_eq!(Option::<String>::decode("string", None).unwrap(), None);
        assert_eq!(to_bytes("string", &None::<String>).unwrap(), None);
        assert_eq!(<Option<i64>>::NAME, "long");
    }

    #[test]
    fn strings_are_strict_utf8() {
        assert_eq!(String::decode("string", Some("héllo".as_bytes())).unwrap(), "héllo");
        assert!(String::decode("string", Some(&[0xff])).is_err());
    }

    #[test]
    fn json_types() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Order {
            amount: i64,
        }
        let o = Json::<Order>::decode("json", Some(br#"{"amount":3}"#)).unwrap();
        assert_eq!(o.0, Order { amount: 3 });
        assert_eq!(to_bytes("json", &o).unwrap().unwrap(), br#"{"amount":3}"#);
        assert!(Json::<Order>::decode("json", Some(b"{}")).is_err());
    }

    #[test]
    fn value_decodes_by_the_records_serde() {
        assert_eq!(Value::decode("long", Some(&7i64.to_be_bytes())).unwrap(), Value::Long(7));
        assert_eq!(Value::decode("string", Some(b"x")).unwrap(), Value::from("x"));
        assert_eq!(Value::decode("json", Some(b"null")).unwrap(), Value::Null);
        assert_eq!(Value::decode("bytes", None).unwrap(), Value::Null);
        assert!(Value::decode("nope", Some(b"")).is_err());
    }

    #[test]
    fn value_encodes_where_it_fits() {
        assert_eq!(to_bytes("double", &Value::Long(2)).unwrap(), Some(2f64.to_be_bytes().to_vec()));
        assert_eq!(to_bytes("json", &Value::Long(2)).unwrap(), Some(b"2".to_vec()));
        assert_eq!(
            to_bytes("integer", &Value::Long(1 << 40)).unwrap_err().0,
            "integer serde: 1099511627776 does not fit in 32 bits"
        );
        assert_eq!(to_bytes("string", &Value::Long(1)).unwrap_err().0, "string serde: cannot encode a long value");
        assert_eq!(to_bytes("long", &Value::Null).unwrap(), None);
    }
}

/// A key and the window it is aggregated in: the key type of a windowed
/// aggregation's table. Encoded as Kafka Streams' `TimeWindowedSerializer`
/// writes it (the inner key, then the window start as 8-byte big-endian
/// epoch millis; the end is start + size), or `SessionWindowedSerializer`
/// (inner key, end, start).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Windowed<K> {
    pub key: K,
    /// Epoch millis, inclusive.
    pub start_ms: i64,
    /// Epoch millis, exclusive for time windows.
    pub end_ms: i64,
}

/// The parts of a windowed serde name: "windowed(<inner>,<size ms>)" or
/// "session-windowed(<inner>)".
enum WindowedSerde<'a> {
    Time(&'a str, i64),
    Session(&'a str),
}

fn parse(serde: &str) -> Result<WindowedSerde<'_>, SerdeError> {
    let bad = || {
        SerdeError(format!(
            "windowed key: serde {serde:?} is not windowed(<serde>,<size>) or session-windowed(<serde>)"
        ))
    };
    if let Some(inner) = serde.strip_prefix("session-windowed(").and_then(|s| s.strip_suffix(')')) {
        return Ok(WindowedSerde::Session(inner));
    }
    let inner = serde.strip_prefix("windowed(").and_then(|s| s.strip_suffix(')')).ok_or_else(bad)?;
    let (inner, size) = inner.rsplit_once(',').ok_or_else(bad)?;
    Ok(WindowedSerde::Time(inner, size.trim().parse().map_err(|_| bad())?))
}

/// The inner key serde of a windowed serde name.
pub(crate) fn inner_serde(serde: &str) -> Option<&str> {
    match parse(serde).ok()? {
        WindowedSerde::Time(inner, _) | WindowedSerde::Session(inner) => Some(inner),
    }
}

fn be(b: &[u8]) -> i64 {
    i64::from_be_bytes(b.try_into().expect("8 bytes"))
}

impl<K: Serde> Serde for Windowed<K> {
    /// Named by the engine: the table's key serde.
    const NAME: &'static str = "";

    fn decode(serde: &str, data: Option<&[u8]>) -> Result<Self, SerdeError> {
        let d = data.ok_or_else(|| SerdeError("windowed key: the key is null".into()))?;
        let short = |n: usize| SerdeError(format!("windowed key: want at least {n} bytes, got {}", d.len()));
        match parse(serde)? {
            WindowedSerde::Time(inner, size) => {
                let cut = d.len().checked_sub(8).ok_or_else(|| short(8))?;
                let start_ms = be(&d[cut..]);
                Ok(Windowed {
                    key: K::decode(inner, Some(&d[..cut]))?,
                    start_ms,
                    end_ms: start_ms.saturating_add(size),
                })
            }
            WindowedSerde::Session(inner) => {
                let cut = d.len().checked_sub(16).ok_or_else(|| short(16))?;
                Ok(Windowed {
                    key: K::decode(inner, Some(&d[..cut]))?,
                    end_ms: be(&d[cut..cut + 8]),
                    start_ms: be(&d[cut + 8..]),
                })
            }
        }
    }

    fn encode(&self, serde: &str, out: &mut Vec<u8>) -> Result<bool, SerdeError> {
        match parse(serde)? {
            WindowedSerde::Time(inner, _) => {
                if !self.key.encode(inner, out)? {
                    return Err(SerdeError("windowed key: the inner key is null".into()));
                }
                out.extend_from_slice(&self.start_ms.to_be_bytes());
            }
            WindowedSerde::Session(inner) => {
                if !self.key.encode(inner, out)? {
                    return Err(SerdeError("windowed key: the inner key is null".into()));
                }
                out.extend_from_slice(&self.end_ms.to_be_bytes());
                out.extend_from_slice(&self.start_ms.to_be_bytes());
            }
        }
        Ok(true)
    }
}
