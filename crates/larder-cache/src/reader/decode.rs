//! Value decoding: from the tag after a record's key (or the earlier value a dedup reference
//! points at) to a typed, borrowed value, with every length and offset bounds-checked against
//! the record section. Apart from `reader.rs` because it is the one place that knows the value
//! encodings; the lookup there only finds where a value starts.

use crate::error::Error;
use crate::format::{align_up, get_varint, ValueType, SHORT_STR_LEN_MASK, TAG_REF, TAG_SHORT_STR};
use crate::value::{StrList, ValueRef};
use crate::view;

use super::Cache;

impl Cache {
    /// Reads the value tag at or after `pos` (skipping alignment padding), resolving a dedup
    /// reference; returns the type and where the payload is.
    #[inline(always)]
    pub(super) fn value_at(&self, pos: usize) -> Result<(ValueType, Payload), Error> {
        let data = self.data();
        let mut p = pos;
        let mut tag = *data.get(p).ok_or(Error::corrupt("value tag", p))?;
        while tag == 0 {
            p += 1;
            if p - pos > 7 {
                return Err(Error::corrupt("value padding", pos));
            }
            tag = *data.get(p).ok_or(Error::corrupt("value tag", p))?;
        }
        if let Some(payload) = Payload::short_str(tag, p) {
            return Ok((ValueType::Str, payload));
        }
        let ty = ValueType::from_tag(tag & !TAG_REF).ok_or(Error::corrupt("value tag", p))?;
        if tag & TAG_REF == 0 {
            return Ok((ty, Payload::at(p + 1)));
        }
        // A reference points back at an earlier, plain value of the same type; chains are not
        // allowed, so resolution is one step and cannot loop.
        let (target, _) = get_varint(data, p + 1)?;
        let target = target as usize;
        let target_tag = match data.get(target) {
            Some(&t) if target < p => t,
            _ => return Err(Error::corrupt("value reference", p)),
        };
        if target_tag == ty as u8 {
            return Ok((ty, Payload::at(target + 1)));
        }
        match Payload::short_str(target_tag, target) {
            Some(payload) if ty == ValueType::Str => Ok((ty, payload)),
            _ => Err(Error::corrupt("value reference", p)),
        }
    }

    pub(super) fn decode(&self, ty: ValueType, payload: Payload) -> Result<ValueRef<'_>, Error> {
        let pos = payload.pos;
        Ok(match ty {
            ValueType::Bytes => ValueRef::Bytes(self.read_bytes(payload)?),
            ValueType::Str => ValueRef::Str(self.read_str(payload)?),
            ValueType::I64 => ValueRef::I64(i64::from_le_bytes(self.read_8(pos)?)),
            ValueType::F64 => ValueRef::F64(f64::from_le_bytes(self.read_8(pos)?)),
            ValueType::Bool => ValueRef::Bool(self.read_bool(pos)?),
            ValueType::F32List => ValueRef::F32List(self.read_f32s(pos)?),
            ValueType::F64List => ValueRef::F64List(self.read_f64s(pos)?),
            ValueType::StrList => ValueRef::StrList(self.read_str_list(pos)?),
        })
    }

    #[inline(always)]
    pub(super) fn read_bytes(&self, payload: Payload) -> Result<&[u8], Error> {
        let data = self.data();
        let pos = payload.pos;
        let (len, start) = match payload.short_len {
            Some(len) => (len as u64, pos),
            None => get_varint(data, pos)?,
        };
        let end = start
            .checked_add(len as usize)
            .ok_or(Error::corrupt("value length", pos))?;
        data.get(start..end)
            .ok_or(Error::corrupt("value length", pos))
    }

    #[inline(always)]
    pub(super) fn read_str(&self, payload: Payload) -> Result<&str, Error> {
        view::to_str(self.read_bytes(payload)?)
            .ok_or(Error::corrupt("string value (not UTF-8)", payload.pos))
    }

    #[inline]
    pub(super) fn read_8(&self, pos: usize) -> Result<[u8; 8], Error> {
        let mut out = [0u8; 8];
        match self.data().get(pos..pos + 8) {
            Some(b) => out.copy_from_slice(b),
            None => return Err(Error::corrupt("number value", pos)),
        }
        Ok(out)
    }

    #[inline]
    pub(super) fn read_bool(&self, pos: usize) -> Result<bool, Error> {
        match self.data().get(pos) {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(Error::corrupt("bool value", pos)),
        }
    }

    /// Reads a list header (count, then padding to `align`) and returns the element bytes.
    #[inline]
    fn read_array(&self, pos: usize, elem: usize) -> Result<(usize, &[u8]), Error> {
        let data = self.data();
        let (count, after) = get_varint(data, pos)?;
        let start = align_up(after, elem);
        let len = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(elem))
            .ok_or(Error::corrupt("list length", pos))?;
        let end = start
            .checked_add(len)
            .ok_or(Error::corrupt("list length", pos))?;
        let bytes = data
            .get(start..end)
            .ok_or(Error::corrupt("list length", pos))?;
        Ok((start, bytes))
    }

    pub(super) fn read_f32s(&self, pos: usize) -> Result<&[f32], Error> {
        let (start, bytes) = self.read_array(pos, 4)?;
        view::as_f32s(bytes).ok_or(Error::corrupt("list alignment", start))
    }

    pub(super) fn read_f64s(&self, pos: usize) -> Result<&[f64], Error> {
        let (start, bytes) = self.read_array(pos, 8)?;
        view::as_f64s(bytes).ok_or(Error::corrupt("list alignment", start))
    }

    pub(super) fn read_str_list(&self, pos: usize) -> Result<StrList<'_>, Error> {
        let (start, bytes) = self.read_array(pos, 4)?;
        let ends = view::as_u32s(bytes).ok_or(Error::corrupt("list alignment", start))?;
        let text_offset = start + bytes.len();
        let text_len = ends.last().copied().unwrap_or(0) as usize;
        let text = self
            .data()
            .get(text_offset..text_offset + text_len)
            .ok_or(Error::corrupt("string list length", pos))?;
        Ok(StrList {
            ends,
            text,
            text_offset,
        })
    }
}

/// Where a value's payload starts; for a short string (tag `0x40 | len`), also its length.
#[derive(Clone, Copy, Debug)]
pub(super) struct Payload {
    pub(super) pos: usize,
    short_len: Option<usize>,
}

impl Payload {
    #[inline(always)]
    pub(super) fn at(pos: usize) -> Payload {
        Payload {
            pos,
            short_len: None,
        }
    }

    /// The payload of a short-string tag at `tag_pos`, or `None` for any other tag.
    #[inline(always)]
    pub(super) fn short_str(tag: u8, tag_pos: usize) -> Option<Payload> {
        (tag & !SHORT_STR_LEN_MASK == TAG_SHORT_STR).then_some(Payload {
            pos: tag_pos + 1,
            short_len: Some(usize::from(tag & SHORT_STR_LEN_MASK)),
        })
    }
}
