package larder

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
)

// Sentinel errors. Every error this package returns is an [*Error] that matches exactly one of
// them with errors.Is (I/O errors also match the operating system's error, so
// errors.Is(err, fs.ErrNotExist) works for a missing file).
var (
	// ErrTypeMismatch: the key holds a different type than the getter asked for.
	ErrTypeMismatch = errors.New("larder: type mismatch")
	// ErrCorrupt: the file is corrupt, truncated, or not a cache file.
	ErrCorrupt = errors.New("larder: corrupt cache file")
	// ErrUnsupportedVersion: the file's format version or feature flags are newer than this
	// library; rebuild the file or upgrade.
	ErrUnsupportedVersion = errors.New("larder: unsupported cache file version")
	// ErrIO: an operating-system call failed.
	ErrIO = errors.New("larder: I/O error")
	// ErrInvalidArgument: an argument was malformed (a key over 64 KiB, a string value or
	// name that is not UTF-8, a path containing NUL, a name over 256 bytes).
	ErrInvalidArgument = errors.New("larder: invalid argument")
	// ErrDuplicateKey: a key was inserted twice into a Builder with RejectDuplicates set.
	ErrDuplicateKey = errors.New("larder: duplicate key")
	// ErrClosed: the Cache or SwappingCache was closed, or the Builder finished or aborted.
	ErrClosed = errors.New("larder: use of a closed cache or finished builder")
	// ErrInternal: a bug in the library (a Rust panic caught at the C boundary).
	ErrInternal = errors.New("larder: internal error")
)

// Status codes of the C ABI (larder_status), mirrored so that Go code can switch on them
// without cgo.
const (
	statusOK                 = 0
	statusNotFound           = 1
	statusTypeMismatch       = 2
	statusNullArgument       = 3
	statusInvalidArgument    = 4
	statusIOError            = 5
	statusCorrupt            = 6
	statusUnsupportedVersion = 7
	statusOutOfRange         = 8
	statusDuplicateKey       = 9
	statusPanic              = 10
)

// Error is the error type of this package: the operation that failed, the library's message,
// and the sentinel error it matches.
type Error struct {
	// Op names the failing operation: "open", "watch", "refresh", "current", "get",
	// "contains", "info", "verify", "build", "insert", "finish".
	Op string
	// Key is the key the failing lookup or insert was about, if any.
	Key string
	// Msg is the library's description, e.g. "unsupported cache file format version 2 (this
	// reader supports version 1); rebuild the file or upgrade larder".
	Msg string
	// Kind is one of the package's sentinel errors (ErrCorrupt, ErrTypeMismatch, ...).
	Kind error
	// Errno is the operating-system error behind an ErrIO, when the message names one.
	Errno syscall.Errno
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Key != "" {
		return "larder " + e.Op + " " + quoteKey(e.Key) + ": " + e.Msg
	}
	return "larder " + e.Op + ": " + e.Msg
}

// quoteKey quotes a key for a message, shortening long ones.
func quoteKey(key string) string {
	const keyShown = 64
	if len(key) <= keyShown {
		return strconv.Quote(key)
	}
	return strconv.Quote(key[:keyShown]) + "... (" + strconv.Itoa(len(key)) + " bytes)"
}

// Unwrap returns the sentinel error, and the operating-system error if there is one, so that
// errors.Is matches either.
func (e *Error) Unwrap() []error {
	if e.Errno != 0 {
		return []error{e.Kind, e.Errno}
	}
	return []error{e.Kind}
}

// statusError turns a failed C status and its message into an *Error.
func statusError(op string, status int, msg string) error {
	e := &Error{Op: op, Msg: msg}
	switch status {
	case statusTypeMismatch:
		e.Kind = ErrTypeMismatch
	case statusCorrupt:
		e.Kind = ErrCorrupt
	case statusUnsupportedVersion:
		e.Kind = ErrUnsupportedVersion
	case statusIOError:
		e.Kind = ErrIO
		e.Errno = osErrno(msg)
	case statusInvalidArgument, statusNullArgument, statusOutOfRange:
		e.Kind = ErrInvalidArgument
	case statusDuplicateKey:
		e.Kind = ErrDuplicateKey
	default:
		e.Kind = ErrInternal
	}
	if e.Msg == "" {
		e.Msg = e.Kind.Error()
	}
	return e
}

// osErrno extracts N from the "(os error N)" that Rust's io::Error prints, or returns 0.
func osErrno(msg string) syscall.Errno {
	const marker = "(os error "
	i := strings.LastIndex(msg, marker)
	if i < 0 {
		return 0
	}
	rest := msg[i+len(marker):]
	j := strings.IndexByte(rest, ')')
	if j < 0 {
		return 0
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil || n <= 0 {
		return 0
	}
	return syscall.Errno(n)
}

func mismatchError(op string, want, found Type) error {
	return &Error{
		Op:   op,
		Msg:  "type mismatch: asked for " + want.String() + ", key holds " + found.String(),
		Kind: ErrTypeMismatch,
	}
}

func closedError(op string) error {
	return &Error{Op: op, Msg: "cache is closed", Kind: ErrClosed}
}

func corruptError(op, msg string) error {
	return &Error{Op: op, Msg: msg, Kind: ErrCorrupt}
}
