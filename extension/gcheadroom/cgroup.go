package gcheadroom // import "github.com/otelcol-red/otelcol-red/extension/gcheadroom"

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file reads the memory limit of the cgroup the process runs in: a container's limit, which
// the Go runtime does not know of.

// unlimitedV1 is where cgroup v1 reports "no limit": the largest page-aligned int64 (or more).
const unlimitedV1 = 1 << 62

// cgroupMemoryLimit returns the memory limit in bytes of the cgroup that /proc/self/cgroup (its
// content is self) names under the cgroup file systems mounted at root (/sys/fs/cgroup), the
// lowest on the way up to the hierarchy's root, as the kernel applies every ancestor's limit.
// cgroup v1's memory controller is read first (a hybrid host mounts it beside an empty v2
// hierarchy), then v2's memory.max. A path the process cannot see (a container with its own
// cgroup namespace, or an unnamespaced path of the host) falls back to the hierarchy's root.
// false: no limit anywhere, or no cgroup at all.
func cgroupMemoryLimit(root string, self []byte) (int64, bool) {
	var v1, v2 string
	haveV1, haveV2 := false, false
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, haveV2 = parts[2], true
		case hasController(parts[1], "memory"):
			v1, haveV1 = parts[2], true
		}
	}
	if haveV1 {
		if l, ok := lowestLimit(filepath.Join(root, "memory"), v1, "memory.limit_in_bytes"); ok {
			return l, true
		}
	}
	if haveV2 {
		return lowestLimit(root, v2, "memory.max")
	}
	return 0, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// lowestLimit reads file in the cgroup directory base+path and in each of its parents up to base,
// and returns the lowest limit found. When base+path does not exist, base's own file is read.
func lowestLimit(base, path, file string) (int64, bool) {
	dir := filepath.Join(base, filepath.Clean("/"+path))
	if _, err := os.Stat(dir); err != nil {
		dir = base
	}
	lowest, found := int64(0), false
	for {
		if l, ok := readLimit(filepath.Join(dir, file)); ok && (!found || l < lowest) {
			lowest, found = l, true
		}
		if dir == base || len(dir) <= len(base) {
			return lowest, found
		}
		dir = filepath.Dir(dir)
	}
}

// readLimit reads one limit file: bytes, or "max" (v2) or a value near 2^63 (v1) for none.
func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= unlimitedV1 {
		return 0, false
	}
	return v, true
}
