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

// BenchmarkRewrite measures what giving a body's pages back costs the next render: writing
// 130 MB (a gzip body of a million RED series) into a mapping whose pages are resident, against
// giving them back (Discard) and writing them again, which faults each page in afresh.
func BenchmarkRewrite(b *testing.B) {
	const size = 130 << 20
	page := make([]byte, os.Getpagesize())
	write := func(m []byte) {
		for i := 0; i < len(m); i += len(page) {
			copy(m[i:], page)
		}
	}
	for _, discard := range []bool{false, true} {
		name := "resident"
		if discard {
			name = "discarded"
		}
		b.Run(name, func(b *testing.B) {
			m := Map(size)
			require.NotNil(b, m)
			defer Unmap(m)
			write(m)
			b.SetBytes(size)
			for b.Loop() {
				if discard {
					Discard(m)
				}
				write(m)
			}
		})
	}
}
