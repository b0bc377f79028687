// Package freeport hands tests and the testbed loopback ports that a client socket cannot take
// between the moment a port is picked and the moment a collector binds it.
//
// A port the kernel hands out for 127.0.0.1:0 comes from the ephemeral range, the same range
// every outgoing connection draws its local port from. Closed again and given to a collector's
// config, it can be taken by a Kafka or gRPC client's connect before the collector listens, and
// the collector then fails with "address already in use". The ports here come from below the
// ephemeral range instead, where only listeners live, and each is bound once to check it is free.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// low is the first port handed out; the scripts' services listen below it (16379, 19090–19300).
const low = 20000

var (
	mu   sync.Mutex
	next int // the next candidate; 0 until the first call picks a random start
	high int // one past the last candidate: the ephemeral range's first port
)

// Addrs returns n distinct 127.0.0.1 addresses whose ports were free a moment ago and lie below
// the kernel's ephemeral range. A process walks its own sequence from a random start, so two
// test processes on one machine rarely meet; a port found taken is skipped.
func Addrs(n int) ([]string, error) {
	mu.Lock()
	defer mu.Unlock()
	if next == 0 {
		high = ephemeralLow()
		if high-low < 1000 {
			return kernelAddrs(n)
		}
		next = low + rand.IntN(high-low)
	}
	addrs := make([]string, 0, n)
	for tried := 0; len(addrs) < n; tried++ {
		if tried == high-low {
			return nil, errors.New("no free port below the ephemeral range")
		}
		addr := "127.0.0.1:" + strconv.Itoa(next)
		if next++; next == high {
			next = low
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		_ = l.Close()
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// Addr is Addrs(1)[0].
func Addr() (string, error) {
	addrs, err := Addrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// ephemeralLow reads the first port of Linux's ephemeral range; elsewhere, or when it cannot be
// read, it assumes the IANA range's start, 49152.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 49152
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 49152
	}
	p, err := strconv.Atoi(fields[0])
	if err != nil || p > 65535 {
		return 49152
	}
	return p
}

// kernelAddrs is the fallback on a machine whose ephemeral range starts too low to leave room
// below it: ports the kernel picks, held open until all n are picked so none repeats.
func kernelAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port: %w", err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
