package wiretraces // import "github.com/otelcol-red/otelcol-red/internal/wiretraces"

import (
	"bytes"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// pdata offers no way to put a []byte into a bytes value, or to read one out, without copying
// it: pcommon.ByteSlice.FromRaw appends the bytes to the value's own slice, and AsRaw returns a
// copy (pdata v1.51 and v1.71 alike). A request carried through a pipeline would then be
// copied once when wrapped and once more by every component that reads it, a few hundred KiB
// per request for nothing. So the value's slice is set and read directly, through the layout
// of pcommon.ByteSlice, which is pdata's generated wrapper:
//
//	type ByteSliceWrapper struct {
//		orig  *[]byte
//		state *State
//	}
//
// Three guards keep this from ever reading or writing the wrong thing:
//   - at compile time, byteSliceLayout must have pcommon.ByteSlice's size (the array index
//     below is out of range, or overflows, when the sizes differ);
//   - at init, probe reads a value made through pdata's API and must find its bytes where the
//     layout says, then writes a slice and must read it back through the API; only then is
//     zeroCopy set, and otherwise setBytes and getBytes copy through FromRaw and AsRaw, which
//     is slower but always right;
//   - TestWrapDoesNotCopy fails when zeroCopy is off, so a pdata release that moves the field
//     is noticed on the bump, not in production.
//
// Rejected: carrying the request beside the traces (a registry keyed by an ID attribute, or
// the context) instead of inside them: nothing tells the registry when the traces are dropped,
// and a context does not travel through queues, batching or fan-outs the way the data does.
type byteSliceLayout struct {
	orig  *[]byte
	state unsafe.Pointer
}

var _ = [1]struct{}{}[unsafe.Sizeof(pcommon.ByteSlice{})-unsafe.Sizeof(byteSliceLayout{})]

// zeroCopy is set at init when probe confirmed the layout.
var zeroCopy = probe()

func probe() bool {
	want := []byte("wiretraces layout probe")
	v := pcommon.NewValueBytes()
	v.Bytes().FromRaw(want)
	bs := v.Bytes()
	l := (*byteSliceLayout)(unsafe.Pointer(&bs))
	if l.orig == nil || len(*l.orig) != len(want) || !bytes.Equal(*l.orig, want) {
		return false
	}
	// The read matched, so l.orig is the value's slice: write another and read it back.
	other := []byte("x")
	*l.orig = other
	return v.Bytes().Len() == 1 && v.Bytes().At(0) == 'x'
}

// setBytes makes bs hold b itself, not a copy. bs must be a value nobody else holds yet.
func setBytes(bs pcommon.ByteSlice, b []byte) {
	if !zeroCopy {
		bs.FromRaw(b)
		return
	}
	*(*byteSliceLayout)(unsafe.Pointer(&bs)).orig = b
}

// getBytes returns the slice bs holds, not a copy: the caller must not modify it.
func getBytes(bs pcommon.ByteSlice) []byte {
	if !zeroCopy {
		return bs.AsRaw()
	}
	return *(*byteSliceLayout)(unsafe.Pointer(&bs)).orig
}
