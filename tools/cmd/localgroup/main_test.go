package main

import (
	"strings"
	"testing"
)

// TestBrokerConfReadsTheSecretFile: every broker of the local group reads the per-install
// secret file; no secret is written into a configuration.
func TestBrokerConfReadsTheSecretFile(t *testing.T) {
	for _, role := range []string{"SYNC_MASTER", "SLAVE"} {
		conf := brokerConf("/data", "/data/ha.secret", "x", 1, role, 10911, "127.0.0.1:9876", 18081, "")
		if !strings.Contains(conf, "haSecretFile=/data/ha.secret\n") || strings.Contains(conf, "haSecret=") {
			t.Fatalf("%s:\n%s", role, conf)
		}
	}
}
