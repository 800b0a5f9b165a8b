package larder

import (
	"fmt"
	"math"
)

// Type is the type of a stored value. The numbers match the C ABI's larder_value_type and the
// tag bytes of the file format.
type Type uint8

// The value types a cache file can hold.
const (
	TypeBytes    Type = 1 // arbitrary bytes
	TypeString   Type = 2 // UTF-8 text
	TypeInt64    Type = 3 // signed 64-bit integer
	TypeFloat64  Type = 4 // 64-bit IEEE 754 float
	TypeBool     Type = 5 // boolean
	TypeFloat32s Type = 6 // list of 32-bit floats
	TypeFloat64s Type = 7 // list of 64-bit floats
	TypeStrings  Type = 8 // list of UTF-8 strings
)

// String returns the type's name as the format documentation and the other bindings spell it:
// "bytes", "str", "i64", "f64", "bool", "list<f32>", "list<f64>", "list<str>".
func (t Type) String() string {
	switch t {
	case TypeBytes:
		return "bytes"
	case TypeString:
		return "str"
	case TypeInt64:
		return "i64"
	case TypeFloat64:
		return "f64"
	case TypeBool:
		return "bool"
	case TypeFloat32s:
		return "list<f32>"
	case TypeFloat64s:
		return "list<f64>"
	case TypeStrings:
		return "list<str>"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Value is a value of any type, as returned by [Cache.Get]. It owns its memory (everything was
// copied out of the mapping), so it stays valid after the cache is closed.
//
// Read it with the accessor for its [Value.Type], or switch on [Value.Any]. Like
// reflect.Value, an accessor called on a value of another type panics: that is a bug in the
// caller, not a property of the file. The zero Value has type 0 and every accessor panics.
type Value struct {
	typ   Type
	num   uint64 // TypeInt64: the bits; TypeFloat64: math.Float64bits; TypeBool: 0 or 1
	str   string // TypeString
	bytes []byte // TypeBytes
	f32s  []float32
	f64s  []float64
	strs  []string
}

// Type returns the stored type.
func (v Value) Type() Type { return v.typ }

func (v Value) must(t Type, method string) {
	if v.typ != t {
		panic(fmt.Sprintf("larder: Value.%s called on a %s value", method, v.typ))
	}
}

// Bytes returns a TypeBytes value, or the bytes of a TypeString value.
func (v Value) Bytes() []byte {
	if v.typ == TypeString {
		return []byte(v.str)
	}
	v.must(TypeBytes, "Bytes")
	return v.bytes
}

// String returns a TypeString value. For any other type it returns a description such as
// "<i64 Value>" instead of panicking, as reflect.Value.String does, so that a Value prints
// sensibly with %v; use [Value.Any] to format the contents of other types.
func (v Value) String() string {
	if v.typ == TypeString {
		return v.str
	}
	return "<" + v.typ.String() + " Value>"
}

// Int64 returns a TypeInt64 value.
func (v Value) Int64() int64 {
	v.must(TypeInt64, "Int64")
	return int64(v.num)
}

// Float64 returns a TypeFloat64 value.
func (v Value) Float64() float64 {
	v.must(TypeFloat64, "Float64")
	return math.Float64frombits(v.num)
}

// Bool returns a TypeBool value.
func (v Value) Bool() bool {
	v.must(TypeBool, "Bool")
	return v.num != 0
}

// Float32s returns a TypeFloat32s value.
func (v Value) Float32s() []float32 {
	v.must(TypeFloat32s, "Float32s")
	return v.f32s
}

// Float64s returns a TypeFloat64s value.
func (v Value) Float64s() []float64 {
	v.must(TypeFloat64s, "Float64s")
	return v.f64s
}

// Strings returns a TypeStrings value.
func (v Value) Strings() []string {
	v.must(TypeStrings, "Strings")
	return v.strs
}

// Any returns the value as a Go value of its natural type: []byte, string, int64, float64,
// bool, []float32, []float64 or []string; nil for the zero Value.
func (v Value) Any() any {
	switch v.typ {
	case TypeBytes:
		return v.bytes
	case TypeString:
		return v.str
	case TypeInt64:
		return int64(v.num)
	case TypeFloat64:
		return math.Float64frombits(v.num)
	case TypeBool:
		return v.num != 0
	case TypeFloat32s:
		return v.f32s
	case TypeFloat64s:
		return v.f64s
	case TypeStrings:
		return v.strs
	}
	return nil
}
