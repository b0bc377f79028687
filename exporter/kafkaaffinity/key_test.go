package kafkaaffinity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestKey(t *testing.T) {
	long := strings.Repeat("x", 10<<10)
	for _, tt := range []struct {
		name    string
		by      []string
		attrs   map[string]any
		want    string
		outcome keyOutcome
	}{
		{"service", []string{"service.name"}, map[string]any{"service.name": "checkout", "host.name": "a"}, "checkout", keyFromAttributes},
		{"two attributes", []string{"service.namespace", "service.name"}, map[string]any{"service.name": "checkout", "service.namespace": "shop"}, "shop|checkout", keyFromAttributes},
		{"int value", []string{"shard"}, map[string]any{"shard": int64(7)}, "7", keyFromAttributes},
		{"missing", []string{"service.name"}, map[string]any{"host.name": "a"}, "_unkeyed", keyFallback},
		{"one of two missing", []string{"service.namespace", "service.name"}, map[string]any{"service.name": "checkout"}, "_unkeyed", keyFallback},
		{"empty value is a key", []string{"service.name"}, map[string]any{"service.name": ""}, "", keyFromAttributes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.PartitionBy = tt.by
			res := pcommon.NewResource()
			assert.NoError(t, res.Attributes().FromRaw(tt.attrs))
			k, outcome := newKeyer(cfg).key(res)
			assert.Equal(t, tt.want, string(k))
			assert.Equal(t, tt.outcome, outcome)
		})
	}

	t.Run("10 KB key is cut and stays distinct", func(t *testing.T) {
		kr := newKeyer(testConfig())
		a, b := pcommon.NewResource(), pcommon.NewResource()
		a.Attributes().PutStr("service.name", long)
		b.Attributes().PutStr("service.name", long[:len(long)-1]+"y")
		ka, oa := kr.key(a)
		ka = append([]byte(nil), ka...)
		kb, ob := kr.key(b)
		assert.Equal(t, keyCut, oa)
		assert.Equal(t, keyCut, ob)
		assert.Len(t, ka, defaultMaxKeyBytes)
		assert.Len(t, kb, defaultMaxKeyBytes)
		assert.NotEqual(t, string(ka), string(kb))
		assert.True(t, strings.HasPrefix(string(ka), "xxxx"))
	})
}

func TestKeyAllocatesNothing(t *testing.T) {
	kr := newKeyer(testConfig())
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", "checkout")
	long := pcommon.NewResource()
	long.Attributes().PutStr("service.name", strings.Repeat("x", 10<<10))
	allocs := testing.AllocsPerRun(100, func() {
		kr.key(res)
		kr.key(long)
	})
	assert.Zero(t, allocs)
}
