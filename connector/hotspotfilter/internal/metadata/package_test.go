package metadata

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestType(t *testing.T) {
	if Type.String() != "hotspotfilter" {
		t.Fatalf("Type = %q, want hotspotfilter", Type.String())
	}
}
