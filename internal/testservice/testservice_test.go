package testservice

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRootHoldsScripts(t *testing.T) {
	_, err := os.Stat(filepath.Join(Root(), "scripts", "lib.sh"))
	require.NoError(t, err)
}

func TestRunReportsScriptFailure(t *testing.T) {
	// A missing script must fail loudly with the script's path, never pass silently.
	_, err := Run("no-such-service", "start")
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "no-such-service.sh"), err.Error())
}
