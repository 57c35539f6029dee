//go:build unix

package ingest

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps f read-only, or returns nil when f is not a regular file of
// at least mapMin bytes or the map fails: the caller reads it instead.
func mapFile(f *os.File) []byte {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < mapMin || fi.Size() != int64(int(fi.Size())) {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func unmapFile(b []byte) { _ = unix.Munmap(b) }

// dropBehind takes b's pages out of the process's resident set (Linux
// unmaps them; other systems may take it as advice only); the page cache
// keeps them, and a read of b maps them again.
func dropBehind(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
