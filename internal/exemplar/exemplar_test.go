package exemplar

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A failure displaces any success, however slow; among equals the slower displaces the faster,
// and neither of two equal ones displaces the other (a set keeps the first it was offered).
func TestStronger(t *testing.T) {
	fastErr := Exemplar{IsError: true, Value: 1}
	slowOK := Exemplar{Value: 100}
	fastOK := Exemplar{Value: 1}
	assert.True(t, fastErr.Stronger(&slowOK))
	assert.False(t, slowOK.Stronger(&fastErr))
	assert.True(t, slowOK.Stronger(&fastOK))
	assert.False(t, fastOK.Stronger(&slowOK))
	same := fastOK
	assert.False(t, same.Stronger(&fastOK))
}
