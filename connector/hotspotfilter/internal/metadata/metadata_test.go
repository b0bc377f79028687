package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestType(t *testing.T) {
	// The type is the YAML key users write; renaming it breaks every configuration.
	assert.Equal(t, "hotspotfilter", Type.String())
}
