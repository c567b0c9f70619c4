//! Runtime values: cheap to clone (shared, immutable contents) and compared with CEL's
//! heterogeneous numeric semantics.

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use indexmap::IndexMap;

use crate::error::{EvalError, EvalErrorKind};
use crate::time::{Duration, Timestamp};

/// A CEL value.
#[derive(Clone)]
pub enum Value {
    /// `null`
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed 64-bit integer.
    Int(i64),
    /// An unsigned 64-bit integer.
    Uint(u64),
    /// A 64-bit float.
    Double(f64),
    /// A string.
    String(Arc<str>),
    /// A byte string.
    Bytes(Arc<[u8]>),
    /// A list.
    List(Arc<Vec<Value>>),
    /// A map, iterated in insertion order.
    Map(Map),
    /// A timestamp.
    Timestamp(Timestamp),
    /// A duration.
    Duration(Duration),
    /// A type, as returned by `type(x)`; compared by name.
    Type(Arc<str>),
    /// An optional: `optional.of(v)` or `optional.none()`.
    Optional(Option<Arc<Value>>),
    /// A value of a library-defined opaque type (an IP address, a quantity ...).
    Opaque(Arc<dyn OpaqueValue>),
}

/// A value of a type defined by a library rather than by CEL itself.
pub trait OpaqueValue: fmt::Debug + Send + Sync + 'static {
    /// The type's name, as `type(x)` reports it.
    fn type_name(&self) -> &str;
    /// Equality with another opaque value (of any type).
    fn equals(&self, other: &dyn OpaqueValue) -> bool;
    /// The value as `Any`, so libraries can downcast to their own types.
    fn as_any(&self) -> &dyn Any;
    /// The value as JSON, when it has a JSON form (a quantity's canonical string, say).
    fn to_json(&self) -> Option<serde_json::Value> {
        None
    }
}

/// A map key: CEL allows int, uint, bool and string keys. Int and uint keys with the same
/// numeric value are the same key, as CEL's heterogeneous equality requires.
#[derive(Debug, Clone)]
pub enum Key {
    /// A signed integer key.
    Int(i64),
    /// An unsigned integer key.
    Uint(u64),
    /// A boolean key.
    Bool(bool),
    /// A string key.
    String(Arc<str>),
}

impl Key {
    /// The key as a value.
    pub fn to_value(&self) -> Value {
        match self {
            Key::Int(value) => Value::Int(*value),
            Key::Uint(value) => Value::Uint(*value),
            Key::Bool(value) => Value::Bool(*value),
            Key::String(value) => Value::String(value.clone()),
        }
    }

    /// The key for a value, when the value can be a map key.
    ///
    /// # Errors
    /// `InvalidMapKey` for doubles, lists, maps and the other non-key types.
    pub fn from_value(value: &Value) -> Result<Key, EvalError> {
        match value {
            Value::Int(v) => Ok(Key::Int(*v)),
            Value::Uint(v) => Ok(Key::Uint(*v)),
            Value::Bool(v) => Ok(Key::Bool(*v)),
            Value::String(v) => Ok(Key::String(v.clone())),
            other => Err(EvalError::new(EvalErrorKind::InvalidMapKey(
                other.type_name().to_string(),
            ))),
        }
    }

    /// The integer this key stands for, when it is numeric and fits in an `i128`.
    fn numeric(&self) -> Option<i128> {
        match self {
            Key::Int(v) => Some(i128::from(*v)),
            Key::Uint(v) => Some(i128::from(*v)),
            _ => None,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Key::Bool(a), Key::Bool(b)) => a == b,
            (Key::String(a), Key::String(b)) => a == b,
            _ => match (self.numeric(), other.numeric()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        }
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Key::Bool(v) => {
                state.write_u8(0);
                v.hash(state);
            }
            Key::String(v) => {
                state.write_u8(1);
                v.hash(state);
            }
            Key::Int(_) | Key::Uint(_) => {
                state.write_u8(2);
                self.numeric().hash(state);
            }
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_value().fmt(f)
    }
}

type Entries = IndexMap<Key, Value, foldhash::fast::FixedState>;

/// Maps up to this size are searched by comparing keys rather than by hashing.
const SMALL_MAP: usize = 8;

/// A CEL map: shared, immutable once built, iterated in insertion order.
#[derive(Clone, Default)]
pub struct Map(Arc<Entries>);

impl Map {
    /// An empty map.
    pub fn new() -> Self {
        Map::default()
    }

    /// A map with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        Map(Arc::new(Entries::with_capacity_and_hasher(
            capacity,
            foldhash::fast::FixedState::default(),
        )))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value for a key.
    #[inline]
    pub fn get(&self, key: &Key) -> Option<&Value> {
        // Kubernetes objects are mostly small maps: comparing a few keys is cheaper than
        // hashing one.
        if self.0.len() <= SMALL_MAP
            && let Key::String(wanted) = key
        {
            return self.find_small(wanted);
        }
        self.0.get(key)
    }

    fn find_small(&self, wanted: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(candidate, _)| {
                matches!(candidate, Key::String(name) if name.len() == wanted.len() && name.as_ref() == wanted)
            })
            .map(|(_, value)| value)
    }

    /// The value for a string key.
    pub fn get_str(&self, key: &str) -> Option<&Value> {
        if self.0.len() <= SMALL_MAP {
            return self.find_small(key);
        }
        self.0.get(&Key::String(Arc::from(key)))
    }

    /// The value for a key given as a value: doubles with an integral value find int and uint
    /// keys, as heterogeneous equality requires. `Ok(None)` when absent.
    ///
    /// # Errors
    /// `InvalidMapKey` when the value cannot be a key at all.
    pub fn get_value(&self, key: &Value) -> Result<Option<&Value>, EvalError> {
        if let Value::Double(d) = key {
            return Ok(double_as_key(*d).and_then(|key| self.0.get(&key)));
        }
        Ok(self.0.get(&Key::from_value(key)?))
    }

    /// Whether the map has a key.
    pub fn contains_key(&self, key: &Key) -> bool {
        self.0.contains_key(key)
    }

    /// Inserts or replaces an entry, copying the map first if it is shared.
    pub fn insert(&mut self, key: Key, value: Value) -> Option<Value> {
        Arc::make_mut(&mut self.0).insert(key, value)
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Key, &Value)> {
        self.0.iter()
    }

    /// The keys in insertion order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &Key> {
        self.0.keys()
    }
}

fn double_as_key(d: f64) -> Option<Key> {
    if d.fract() != 0.0 || !d.is_finite() {
        return None;
    }
    if (0.0..18_446_744_073_709_551_616.0).contains(&d) {
        Some(Key::Uint(d as u64))
    } else if (-9_223_372_036_854_775_808.0..0.0).contains(&d) {
        Some(Key::Int(d as i64))
    } else {
        None
    }
}

impl FromIterator<(Key, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (Key, Value)>>(iter: I) -> Self {
        Map(Arc::new(iter.into_iter().collect()))
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(key, value)| other.get(key).is_some_and(|o| value.equals(o)))
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Value {
    /// Whether values of this kind can be ordered at all (cel-go's `Comparer` types): what
    /// `sort`, `min`, `max` and `isSorted` accept.
    pub fn is_orderable(&self) -> bool {
        matches!(
            self,
            Value::Int(_)
                | Value::Uint(_)
                | Value::Double(_)
                | Value::Bool(_)
                | Value::String(_)
                | Value::Bytes(_)
                | Value::Timestamp(_)
                | Value::Duration(_)
        )
    }

    /// A string value.
    pub fn string(text: &str) -> Value {
        Value::String(Arc::from(text))
    }

    /// A list value.
    pub fn list(elements: Vec<Value>) -> Value {
        Value::List(Arc::new(elements))
    }

    /// The name of the value's runtime type, as `type(x)` reports it.
    pub fn type_name(&self) -> &str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::Type(_) => "type",
            Value::Optional(_) => "optional_type",
            Value::Opaque(value) => value.type_name(),
        }
    }

    /// CEL equality: numbers compare across int, uint and double by value; values of
    /// different types are unequal (never an error); NaN equals nothing.
    pub fn equals(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y))
            }
            (Value::Map(a), Value::Map(b)) => a == b,
            (Value::Timestamp(a), Value::Timestamp(b)) => a == b,
            (Value::Duration(a), Value::Duration(b)) => a == b,
            (Value::Type(a), Value::Type(b)) => a == b,
            (Value::Optional(a), Value::Optional(b)) => match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => a.equals(b),
                _ => false,
            },
            (Value::Opaque(a), Value::Opaque(b)) => a.equals(b.as_ref()),
            _ => compare_numbers(self, other) == Some(Ordering::Equal),
        }
    }

    /// CEL ordering for `<`, `<=`, `>`, `>=`: numbers across types, strings, bytes, booleans,
    /// timestamps and durations. `None` when the two cannot be ordered (including NaN).
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
            (Value::Bytes(a), Value::Bytes(b)) => Some(a.cmp(b)),
            (Value::Timestamp(a), Value::Timestamp(b)) => Some(a.cmp(b)),
            (Value::Duration(a), Value::Duration(b)) => Some(a.cmp(b)),
            _ => compare_numbers(self, other),
        }
    }

    /// True when the value is its type's zero (`0`, `""`, `[]`, `false`, `null` ...), as
    /// `optional.ofNonZeroValue` needs.
    pub fn is_zero(&self) -> bool {
        match self {
            Value::Null => true,
            Value::Bool(v) => !v,
            Value::Int(v) => *v == 0,
            Value::Uint(v) => *v == 0,
            Value::Double(v) => *v == 0.0,
            Value::String(v) => v.is_empty(),
            Value::Bytes(v) => v.is_empty(),
            Value::List(v) => v.is_empty(),
            Value::Map(v) => v.is_empty(),
            Value::Timestamp(v) => v.seconds() == 0 && v.nanos() == 0,
            Value::Duration(v) => v.total_nanos() == 0,
            Value::Optional(v) => v.is_none(),
            Value::Type(_) | Value::Opaque(_) => false,
        }
    }
}

// Lives with `Value` rather than in `error`, so that errors do not depend on values.
impl EvalError {
    /// A "no such overload" error for the given runtime arguments.
    pub fn no_such_overload(function: &str, arguments: &[&Value]) -> Self {
        EvalError::new(EvalErrorKind::NoSuchOverload {
            function: function.to_string(),
            arguments: arguments
                .iter()
                .map(|value| value.type_name().to_string())
                .collect(),
        })
    }
}

/// Orders two numbers of any numeric types: integers exactly, integers against doubles as
/// doubles.
fn compare_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Uint(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Uint(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Double(y)) => compare_integer_double(i128::from(*x), *y),
        (Value::Uint(x), Value::Double(y)) => compare_integer_double(i128::from(*x), *y),
        (Value::Double(x), Value::Int(y)) => {
            compare_integer_double(i128::from(*y), *x).map(Ordering::reverse)
        }
        (Value::Double(x), Value::Uint(y)) => {
            compare_integer_double(i128::from(*y), *x).map(Ordering::reverse)
        }
        _ => None,
    }
}

/// Integers are compared with doubles by converting the integer to a double, as cel-go does
/// (so `9223372036854775807 < 9223372036854775808.0` is false: both are 2^63 as doubles).
fn compare_integer_double(integer: i128, double: f64) -> Option<Ordering> {
    (integer as f64).partial_cmp(&double)
}

impl PartialEq for Value {
    /// Structural equality for tests and callers: like [`Value::equals`] except that values
    /// of different numeric types are different, and NaN equals NaN.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Uint(a), Value::Uint(b)) => a == b,
            (Value::Double(a), Value::Double(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(key, value)| {
                        b.iter().any(|(other_key, other_value)| {
                            key_identical(key, other_key) && value == other_value
                        })
                    })
            }
            (Value::Optional(a), Value::Optional(b)) => a == b,
            (Value::Int(_) | Value::Uint(_) | Value::Double(_), _) => false,
            _ => self.equals(other),
        }
    }
}

fn key_identical(a: &Key, b: &Key) -> bool {
    match (a, b) {
        (Key::Int(x), Key::Int(y)) => x == y,
        (Key::Uint(x), Key::Uint(y)) => x == y,
        _ => {
            !matches!(
                (a, b),
                (Key::Int(_), Key::Uint(_)) | (Key::Uint(_), Key::Int(_))
            ) && a == b
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Value {
    /// CEL-like text: `1`, `1u`, `1.5`, `"s"`, `b"\x00"`, `[1, 2]`, `{"k": v}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Uint(v) => write!(f, "{v}u"),
            Value::Double(v) => write!(f, "{}", format_double(*v)),
            Value::String(v) => write!(f, "{v:?}"),
            Value::Bytes(v) => {
                f.write_str("b\"")?;
                for byte in v.iter() {
                    if byte.is_ascii_graphic() || *byte == b' ' {
                        if *byte == b'"' || *byte == b'\\' {
                            f.write_str("\\")?;
                        }
                        write!(f, "{}", *byte as char)?;
                    } else {
                        write!(f, "\\x{byte:02x}")?;
                    }
                }
                f.write_str("\"")
            }
            Value::List(items) => {
                f.write_str("[")?;
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Value::Map(map) => {
                f.write_str("{")?;
                for (index, (key, value)) in map.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{key}: {value}")?;
                }
                f.write_str("}")
            }
            Value::Timestamp(v) => write!(f, "timestamp(\"{v}\")"),
            Value::Duration(v) => write!(f, "duration(\"{v}\")"),
            Value::Type(name) => f.write_str(name),
            Value::Optional(None) => f.write_str("optional.none()"),
            Value::Optional(Some(v)) => write!(f, "optional.of({v})"),
            Value::Opaque(v) => write!(f, "{v:?}"),
        }
    }
}

/// Formats a double the way CEL's `string()` does: the shortest text that reads back as the
/// same number, with an exponent for very large or small magnitudes.
pub(crate) fn format_double(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-4..1e21).contains(&magnitude) {
        // Go's 'g' format: mantissa and a two-digit (at least) signed exponent.
        let text = format!("{value:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    format!("{value}")
}

macro_rules! from_primitive {
    ($($source:ty => $variant:ident),* $(,)?) => {
        $(impl From<$source> for Value {
            fn from(value: $source) -> Self {
                Value::$variant(value.into())
            }
        })*
    };
}

from_primitive!(bool => Bool, i64 => Int, i32 => Int, u64 => Uint, u32 => Uint, f64 => Double);

impl From<&str> for Value {
    fn from(value: &str) -> Self {
        Value::String(Arc::from(value))
    }
}

impl From<String> for Value {
    fn from(value: String) -> Self {
        Value::String(Arc::from(value))
    }
}

impl From<Vec<Value>> for Value {
    fn from(value: Vec<Value>) -> Self {
        Value::List(Arc::new(value))
    }
}

impl From<Map> for Value {
    fn from(value: Map) -> Self {
        Value::Map(value)
    }
}

impl From<Timestamp> for Value {
    fn from(value: Timestamp) -> Self {
        Value::Timestamp(value)
    }
}

impl From<Duration> for Value {
    fn from(value: Duration) -> Self {
        Value::Duration(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_equal_across_types() {
        assert!(Value::Int(1).equals(&Value::Uint(1)));
        assert!(Value::Uint(1).equals(&Value::Double(1.0)));
        assert!(!Value::Int(-1).equals(&Value::Uint(u64::MAX)));
        assert!(!Value::Double(f64::NAN).equals(&Value::Double(f64::NAN)));
        assert!(!Value::Int(1).equals(&Value::string("1")));
    }

    #[test]
    fn integers_compare_with_doubles_as_doubles() {
        // i64::MAX rounds to 2^63 as a double, so it equals 2^63.0 (cel-go's semantics).
        let big = Value::Double(9_223_372_036_854_775_808.0);
        assert_eq!(Value::Int(i64::MAX).compare(&big), Some(Ordering::Equal));
        assert_eq!(Value::Uint(1 << 63).compare(&big), Some(Ordering::Equal));
        assert_eq!(
            Value::Int(i64::MAX).compare(&Value::Int(i64::MAX - 1)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::Int(2).compare(&Value::Double(1.5)),
            Some(Ordering::Greater)
        );
        assert_eq!(Value::Int(1).compare(&Value::Double(f64::NAN)), None);
    }

    #[test]
    fn int_and_uint_keys_are_one_key() {
        let map: Map = [(Key::Int(1), Value::string("a"))].into_iter().collect();
        assert_eq!(map.get(&Key::Uint(1)), Some(&Value::string("a")));
        assert_eq!(
            map.get_value(&Value::Double(1.0)).expect("valid key"),
            Some(&Value::string("a"))
        );
        assert_eq!(map.get_value(&Value::Double(1.5)).expect("valid key"), None);
        assert!(map.get_value(&Value::list(vec![])).is_err());
    }

    #[test]
    fn doubles_format_like_cel_go() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-07"),
            (123456789.0, "123456789"),
        ];
        for (value, text) in cases {
            assert_eq!(format_double(value), text);
        }
    }
}
