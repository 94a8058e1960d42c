package attacktest

import (
	"os"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}
