package metadatatest

import (
	"testing"

	"go.uber.org/goleak"
)

// mdatagen writes no TestMain for the packages it generates under internal/.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
