package offheap

import (
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// residentPages counts b's pages in memory (mincore).
func residentPages(t *testing.T, b []byte) int {
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	require.Zero(t, errno, "mincore")
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestDiscardGivesThePagesBackAndKeepsTheMapping(t *testing.T) {
	const size = 8 << 20
	before := Bytes()
	b := Map(size)
	require.NotNil(t, b)
	defer Unmap(b)
	pages := size / os.Getpagesize()
	require.Zero(t, residentPages(t, b), "a mapping is resident only once written")

	for i := range b {
		b[i] = byte(i%251) + 1
	}
	require.Equal(t, pages, residentPages(t, b))

	Discard(b[:size/2])
	require.Equal(t, pages/2, residentPages(t, b), "only the pages of the part given")
	require.Equal(t, byte(size/2%251)+1, b[size/2], "the rest keeps its content")
	Discard(b)
	require.Zero(t, residentPages(t, b))
	require.Equal(t, before+size, Bytes(), "still mapped, so still counted")

	copy(b, "again")
	require.Equal(t, 1, residentPages(t, b), "written again, a page is resident again")
	require.Equal(t, []byte("again"), b[:5])
	// Reading maps the zero page, so this comes last.
	require.Equal(t, make([]byte, size-5), b[5:], "a discarded page reads as zeros")
	Discard(nil)
}
