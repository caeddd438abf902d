//! Token counts read off the wire, leniently: a usage report is bookkeeping, so a number out of
//! range (negative, fractional, beyond [`MAX_TOKEN_COUNT`], not a number at all) is ignored with
//! a warning instead of failing an answer that has already streamed.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Largest token count a provider may report for one field (2^40, about 1.1e12, a thousand
/// times any context window). Larger values are ignored, so sums of counts over many rounds
/// never come near `u64::MAX`.
pub(crate) const MAX_TOKEN_COUNT: u64 = 1 << 40;

/// `deserialize_with` for an `Option<u64>` token count: `None` for a missing, null or
/// out-of-range value.
pub(crate) fn token_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_any(CountVisitor)
}

struct CountVisitor;

fn ignored(value: impl fmt::Display) -> Option<u64> {
    tracing::warn!(
        "a provider reported the token count {value}, outside 0..={MAX_TOKEN_COUNT}; it is ignored"
    );
    None
}

impl<'de> Visitor<'de> for CountVisitor {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a token count")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(if v <= MAX_TOKEN_COUNT {
            Some(v)
        } else {
            ignored(v)
        })
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Ok(ignored(v)),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // Some servers write counts as `12.0`; anything else is not a count.
        if v.fract() == 0.0 && (0.0..=MAX_TOKEN_COUNT as f64).contains(&v) {
            Ok(Some(v as u64))
        } else {
            Ok(ignored(v))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        match v.trim().parse::<u64>() {
            Ok(v) => self.visit_u64(v),
            Err(_) => Ok(ignored(format_args!("{:?}", crate::error::excerpt(v)))),
        }
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(ignored(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ignored("(a list)"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ignored("(an object)"))
    }
}

/// A usage object read on its own: `None` (with a warning) when it cannot be read at all, e.g.
/// a number beyond what JSON parsers accept (`1e400`), which would otherwise fail the whole
/// event it rides in. The event's own JSON is still checked: the value is captured as raw JSON
/// and parsed separately.
#[derive(Debug)]
pub(crate) struct Lenient<T>(pub(crate) Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        if raw.get() == "null" {
            return Ok(Lenient(None));
        }
        match serde_json::from_str(raw.get()) {
            Ok(value) => Ok(Lenient(Some(value))),
            Err(err) => {
                tracing::warn!("a provider's usage report cannot be read ({err}); it is ignored");
                Ok(Lenient(None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Usage {
        #[serde(default, deserialize_with = "token_count")]
        n: Option<u64>,
    }

    #[derive(Debug, Deserialize)]
    struct Event {
        #[serde(default)]
        usage: Lenient<Usage>,
        text: String,
    }

    fn count(json: &str) -> Option<u64> {
        serde_json::from_str::<Usage>(&format!(r#"{{"n": {json}}}"#))
            .unwrap()
            .n
    }

    #[test]
    fn counts_in_range_are_kept_and_others_ignored() {
        assert_eq!(count("12"), Some(12));
        assert_eq!(count("12.0"), Some(12));
        assert_eq!(count("\"7\""), Some(7));
        assert_eq!(count(&MAX_TOKEN_COUNT.to_string()), Some(MAX_TOKEN_COUNT));
        for bad in [
            "-1",
            "1.5",
            "18446744073709551615",
            "18446744073709551616",
            "1e30",
            "-1e30",
            "null",
            "true",
            "\"lots\"",
            "[1]",
            "{\"a\": 1}",
        ] {
            assert_eq!(count(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_unreadable_usage_does_not_fail_its_event() {
        let event: Event =
            serde_json::from_str(r#"{"usage": {"n": 1e400}, "text": "kept"}"#).unwrap();
        assert!(event.usage.0.is_none());
        assert_eq!(event.text, "kept");
        let event: Event = serde_json::from_str(r#"{"usage": {"n": 3}, "text": ""}"#).unwrap();
        assert_eq!(event.usage.0.unwrap().n, Some(3));
        // The event itself must still be JSON.
        assert!(serde_json::from_str::<Event>(r#"{"usage": {"n": 1}, "text": }"#).is_err());
    }
}
