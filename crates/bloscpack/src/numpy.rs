//! numpy array metadata (`{"dtype", "shape", "order", "container": "numpy"}`).

use serde_json::Value;

use crate::dtype::Dtype;
use crate::error::{Error, ErrorKind, Result};

/// Memory order of an array's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Row-major (`"C"`).
    C,
    /// Column-major (`"F"`).
    F,
}

impl Order {
    /// `"C"` or `"F"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::C => "C",
            Order::F => "F",
        }
    }
}

/// The array description Bloscpack stores for `pack_ndarray` files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumpyMeta {
    /// Element type.
    pub dtype: Dtype,
    /// Array shape.
    pub shape: Vec<u64>,
    /// Memory order of the payload.
    pub order: Order,
}

impl NumpyMeta {
    /// Reads numpy metadata from a decoded metadata value: `Ok(None)` when
    /// the value is not a numpy container, an error when it claims to be one
    /// but is malformed.
    pub fn from_value(v: &Value) -> Result<Option<Self>> {
        let Some(obj) = v.as_object() else {
            return Ok(None);
        };
        if obj.get("container").and_then(Value::as_str) != Some("numpy") {
            return Ok(None);
        }
        let bad = |m: String| Error::new(ErrorKind::BadMetadata, m);
        let dtype = obj
            .get("dtype")
            .ok_or_else(|| bad("numpy metadata without dtype".into()))?;
        let dtype = Dtype::from_metadata(dtype).map_err(|e| bad(format!("numpy dtype: {e}")))?;
        let shape = obj
            .get("shape")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("numpy shape is not a list".into()))?
            .iter()
            .map(|d| {
                d.as_u64()
                    .ok_or_else(|| bad("numpy shape holds a value that is not an int >= 0".into()))
            })
            .collect::<Result<Vec<u64>>>()?;
        let order = match obj.get("order").and_then(Value::as_str) {
            Some("C") => Order::C,
            Some("F") => Order::F,
            other => return Err(bad(format!("numpy order {other:?} is not \"C\" or \"F\""))),
        };
        Ok(Some(NumpyMeta {
            dtype,
            shape,
            order,
        }))
    }

    /// Number of elements (`None` on overflow).
    pub fn len(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Size of the payload in bytes (`None` on overflow).
    pub fn nbytes(&self) -> Option<u64> {
        self.len()?.checked_mul(self.dtype.itemsize() as u64)
    }

    /// The metadata value Bloscpack writes for this array (keys in its order).
    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("dtype".into(), Value::String(self.dtype.python_literal()));
        m.insert(
            "shape".into(),
            Value::Array(self.shape.iter().map(|&d| d.into()).collect()),
        );
        m.insert("order".into(), Value::String(self.order.as_str().into()));
        m.insert("container".into(), Value::String("numpy".into()));
        Value::Object(m)
    }
}
