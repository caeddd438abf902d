//! Lists of messages read with a bound: a request carries at most [`MAX_REQUEST_MESSAGES`]
//! messages (or `input` items), refused at the first one past it while the body is parsed.
//!
//! A message costs far more in memory than on the wire: `{"role":"user","content":"a"}` is 30
//! bytes of JSON but close to a kilobyte once it is a message with its parts, its place in the
//! context and its logged copy. A body within `body_limit` could hold 200,000 of them and make
//! one request cost ~170 MB; counted while parsing, the ones past the bound are never built.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

/// Most messages one request may carry: `messages` of `POST /v1/chat/completions` and of
/// Chat Shell's `input`, and the items of `input` of `POST /v1/responses`. A longer
/// conversation goes on from a stored one (`previous_response_id`, `conversation_id`).
pub const MAX_REQUEST_MESSAGES: usize = 10_000;

/// Why the list was refused, as serde's message (the path to the field is added by the caller).
fn too_many<E: de::Error>() -> E {
    E::custom(format_args!(
        "more than {MAX_REQUEST_MESSAGES} messages (`MAX_REQUEST_MESSAGES`); send the latest \
         messages, or continue a stored conversation instead of sending it whole"
    ))
}

/// A list of at most [`MAX_REQUEST_MESSAGES`] `T`s.
pub(crate) fn messages<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_seq(Bounded(PhantomData))
}

/// [`messages`], optional.
pub(crate) fn optional_messages<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<Listed<T>>::deserialize(deserializer).map(|listed| listed.map(|Listed(list)| list))
}

/// Any JSON value, but an array of at most [`MAX_REQUEST_MESSAGES`] items (Responses `input`:
/// a string or a list of items).
pub(crate) fn optional_items<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    Option::<Items>::deserialize(deserializer).map(|items| items.map(|Items(value)| value))
}

struct Listed<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Listed<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        messages(deserializer).map(Listed)
    }
}

struct Items(Value);

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ItemsVisitor).map(Items)
    }
}

/// Counts the elements of a sequence as they are read.
struct Bounded<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for Bounded<T> {
    type Value = Vec<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "a list of at most {MAX_REQUEST_MESSAGES} messages"
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // The size hint comes from the client: it may only make the first allocation smaller.
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(element) = seq.next_element()? {
            if list.len() == MAX_REQUEST_MESSAGES {
                return Err(too_many());
            }
            list.push(element);
        }
        Ok(list)
    }
}

/// A JSON value whose top-level array is read through [`Bounded`]; anything else is read
/// whole, as `Value` reads it.
struct ItemsVisitor;

impl<'de> Visitor<'de> for ItemsVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string or a list of items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        Bounded(PhantomData).visit_seq(seq).map(Value::Array)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Value, E> {
        Ok(Value::String(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Value, E> {
        Ok(Value::String(text))
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Request {
        #[serde(deserialize_with = "messages")]
        messages: Vec<u8>,
        #[serde(default, deserialize_with = "optional_items")]
        input: Option<Value>,
    }

    fn body(count: usize) -> String {
        format!("[{}]", vec!["1"; count].join(","))
    }

    #[test]
    fn lists_stop_at_the_bound() {
        let ok = format!(
            r#"{{"messages": {}, "input": {}}}"#,
            body(10_000),
            body(10_000)
        );
        let request: Request = serde_json::from_str(&ok).unwrap();
        assert_eq!(request.messages.len(), MAX_REQUEST_MESSAGES);
        assert_eq!(request.input.unwrap().as_array().unwrap().len(), 10_000);
        for over in [
            format!(r#"{{"messages": {}}}"#, body(10_001)),
            format!(r#"{{"messages": [], "input": {}}}"#, body(10_001)),
        ] {
            let error = serde_json::from_str::<Request>(&over).err().unwrap();
            assert!(
                error.to_string().contains("MAX_REQUEST_MESSAGES"),
                "{error}"
            );
        }
        // Strings and objects are read as ever.
        for input in [r#""hi""#, r#"{"a": [1]}"#, "null"] {
            let request: Request =
                serde_json::from_str(&format!(r#"{{"messages": [], "input": {input}}}"#)).unwrap();
            assert_eq!(
                request.input.unwrap_or(Value::Null),
                serde_json::from_str::<Value>(input).unwrap()
            );
        }
    }
}
