//! Borrowed views of stored values: [`ValueRef`] and [`StrList`].

use crate::error::Error;
use crate::format::ValueType;
use crate::view;

/// A borrowed view of a stored value.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ValueRef<'a> {
    /// Arbitrary bytes.
    Bytes(&'a [u8]),
    /// UTF-8 text.
    Str(&'a str),
    /// A signed 64-bit integer.
    I64(i64),
    /// A 64-bit float.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A list of 32-bit floats, borrowed in place.
    F32List(&'a [f32]),
    /// A list of 64-bit floats, borrowed in place.
    F64List(&'a [f64]),
    /// A list of strings.
    StrList(StrList<'a>),
}

impl ValueRef<'_> {
    /// The stored type.
    pub fn value_type(&self) -> ValueType {
        match self {
            ValueRef::Bytes(_) => ValueType::Bytes,
            ValueRef::Str(_) => ValueType::Str,
            ValueRef::I64(_) => ValueType::I64,
            ValueRef::F64(_) => ValueType::F64,
            ValueRef::Bool(_) => ValueType::Bool,
            ValueRef::F32List(_) => ValueType::F32List,
            ValueRef::F64List(_) => ValueType::F64List,
            ValueRef::StrList(_) => ValueType::StrList,
        }
    }
}

/// A borrowed list of strings. Elements are checked (bounds and UTF-8) when accessed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StrList<'a> {
    /// End offset of each string within `text`.
    pub(crate) ends: &'a [u32],
    pub(crate) text: &'a [u8],
    /// File offset of `text`, for error messages.
    pub(crate) text_offset: usize,
}

impl<'a> StrList<'a> {
    /// A list over raw parts: string `i` is `text[ends[i-1]..ends[i]]` (from 0 for the first).
    /// Every access is checked, so any parts are safe; bad ones give [`Error::Corrupt`].
    pub fn from_raw_parts(ends: &'a [u32], text: &'a [u8]) -> StrList<'a> {
        StrList {
            ends,
            text,
            text_offset: 0,
        }
    }

    /// The end offsets and the concatenated text, for bindings that hand them on.
    pub fn raw_parts(&self) -> (&'a [u32], &'a [u8]) {
        (self.ends, self.text)
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The raw bytes of string `i`, or `None` past the end.
    pub fn get_bytes(&self, i: usize) -> Result<Option<&'a [u8]>, Error> {
        let Some(&end) = self.ends.get(i) else {
            return Ok(None);
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        match self.text.get(start as usize..end as usize) {
            Some(s) => Ok(Some(s)),
            None => Err(Error::corrupt("string list offsets", self.text_offset)),
        }
    }

    /// String `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Result<Option<&'a str>, Error> {
        match self.get_bytes(i)? {
            Some(b) => match view::to_str(b) {
                Some(s) => Ok(Some(s)),
                None => Err(Error::corrupt(
                    "string list element (not UTF-8)",
                    self.text_offset,
                )),
            },
            None => Ok(None),
        }
    }

    /// Iterates over the strings.
    pub fn iter(&self) -> impl Iterator<Item = Result<&'a str, Error>> + 'a {
        let list = *self;
        (0..list.len()).filter_map(move |i| list.get(i).transpose())
    }

    /// Copies the strings out.
    pub fn to_vec(&self) -> Result<Vec<&'a str>, Error> {
        self.iter().collect()
    }
}
