package clustering

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkTemplate measures the producer's decision for names whose template is known: new
// ids in "GET /api/v1/resource/<n>", and a merged position.
func BenchmarkTemplate(b *testing.B) {
	names := make([]string, 1024)
	for i := range names {
		names[i] = fmt.Sprintf("GET /api/v1/resource/%d", 100000+i*7919)
	}
	c := New(Config{MaxChildren: 50, MaxTemplatesPerService: 500, TemplateExpiration: time.Hour})
	var s Scratch
	for _, n := range names {
		c.Template(&s, "service-1", n)
		c.Learn(&s, 0)
		c.Publish()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Template(&s, "service-1", names[i%len(names)])
	}
}

// BenchmarkTemplateBytes learns 100,000 templates (400 services × 250 names) and reports the
// heap they take, per template, and the heap objects: what MaxTemplates costs, and what the
// garbage collector has to mark at each cycle (README.md, "Bounds").
func BenchmarkTemplateBytes(b *testing.B) {
	for _, shape := range []struct{ name, format string }{
		{"one_word", "op-%04d"},
		{"five_words", "GET /api/v1/res%04d/items"},
	} {
		b.Run(shape.name, func(b *testing.B) {
			var bytesPer, objects float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c := New(Config{MaxChildren: 1_000_000, MaxTemplatesPerService: 1000})
				var s Scratch
				for svc := range 400 {
					for n := range 250 {
						c.Template(&s, fmt.Sprintf("svc-%03d", svc), fmt.Sprintf(shape.format, n))
						if s.Pending() == LearnPerBatch {
							c.Learn(&s, 1)
						}
					}
					c.Learn(&s, 1)
					c.Publish()
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				if c.Templates() != 100_000 {
					b.Fatalf("%d templates learned", c.Templates())
				}
				bytesPer = float64(after.HeapAlloc-before.HeapAlloc) / 100_000
				objects = float64(after.HeapObjects - before.HeapObjects)
				runtime.KeepAlive(c)
			}
			b.ReportMetric(bytesPer, "bytes/template")
			b.ReportMetric(objects, "heap-objects")
		})
	}
}
