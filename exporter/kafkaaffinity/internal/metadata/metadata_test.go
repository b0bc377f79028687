package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestType(t *testing.T) {
	assert.Equal(t, "kafkaaffinity", Type.String())
}
