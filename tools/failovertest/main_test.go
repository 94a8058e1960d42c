package failovertest

import (
	"fmt"
	"os"
	"testing"
)

// TestMain skips these process tests with RMQHA_SKIP_FAILOVER=1 (a quick local run); the
// test command runs them.
func TestMain(m *testing.M) {
	if os.Getenv("RMQHA_SKIP_FAILOVER") == "1" {
		fmt.Println("failovertest: skipped (RMQHA_SKIP_FAILOVER=1)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
