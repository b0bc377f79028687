package intake

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIntake compares three ways to hand items from P producers to one consumer, in the
// spirit of DoorDash's study of batch span processors:
//
//   - ring:    this package (Workiva ring + batched signalling, wake per capacity/8 items)
//   - channel: a buffered Go channel of the same capacity
//   - mutex:   a mutex-guarded slice the consumer swaps out, with a sync.Cond to sleep on
//
// It reports items/s and the consumer's CPU time per item (the consumer goroutine is locked to
// its OS thread and its thread CPU time is read with getrusage(RUSAGE_THREAD)).
func BenchmarkIntake(b *testing.B) {
	const capacity = 1024
	for _, producers := range []int{1, 2, 4, 8, 16} {
		for _, v := range []struct {
			name string
			run  func(items []*item, producers int) (consumerCPU time.Duration)
		}{
			{"ring", func(items []*item, p int) time.Duration { return runRing(items, p, capacity) }},
			{"channel", func(items []*item, p int) time.Duration { return runChannel(items, p, capacity) }},
			{"mutex", func(items []*item, p int) time.Duration { return runMutex(items, p) }},
		} {
			b.Run(fmt.Sprintf("producers=%d/%s", producers, v.name), func(b *testing.B) {
				items := make([]*item, b.N)
				for i := range items {
					items[i] = &item{i}
				}
				b.ResetTimer()
				start := time.Now()
				cpu := v.run(items, producers)
				elapsed := time.Since(start)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "consumer-cpu-ns/item")
			})
		}
	}
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// produce splits items between p producers and returns when all are sent.
func produce(items []*item, p int, put func(*item)) {
	var wg sync.WaitGroup
	for w := 0; w < p; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(items); i += p {
				put(items[i])
			}
		}()
	}
	wg.Wait()
}

// consume runs fn on a goroutine locked to its thread and returns that thread's CPU time.
func consume(fn func()) chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start := threadCPU()
		fn()
		out <- threadCPU() - start
	}()
	return out
}

var sink int

func runRing(items []*item, p, capacity int) time.Duration {
	q := New[item](capacity)
	done := make(chan struct{})
	cpu := consume(func() {
		var buf []*item
		n := 0
		finishing := false
		for n < len(items) {
			if !finishing && !q.Arm(q.Cap()/8) {
				select {
				case <-q.Wake():
				case <-done:
					finishing = true
				}
			}
			q.Disarm()
			buf = q.Drain(buf[:0])
			for _, it := range buf {
				sink += it.n
			}
			n += len(buf)
		}
	})
	produce(items, p, func(it *item) { _ = q.Put(context.Background(), it) })
	close(done)
	return <-cpu
}

func runChannel(items []*item, p, capacity int) time.Duration {
	ch := make(chan *item, capacity)
	cpu := consume(func() {
		for it := range ch {
			sink += it.n
		}
	})
	produce(items, p, func(it *item) { ch <- it })
	close(ch)
	return <-cpu
}

func runMutex(items []*item, p int) time.Duration {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var pending []*item
	closed := false
	cpu := consume(func() {
		var local []*item
		for {
			mu.Lock()
			for len(pending) == 0 && !closed {
				cond.Wait()
			}
			if len(pending) == 0 && closed {
				mu.Unlock()
				return
			}
			local, pending = pending, local[:0]
			mu.Unlock()
			for _, it := range local {
				sink += it.n
			}
		}
	})
	produce(items, p, func(it *item) {
		mu.Lock()
		pending = append(pending, it)
		mu.Unlock()
		cond.Signal()
	})
	mu.Lock()
	closed = true
	mu.Unlock()
	cond.Signal()
	return <-cpu
}
