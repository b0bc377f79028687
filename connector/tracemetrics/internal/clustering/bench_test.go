package clustering

import (
	"fmt"
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
