package discovery

import (
	"strings"
	"testing"
	"time"

	consul "github.com/hashicorp/consul/api"
)

// A broker whose status port serves HTTPS (httpTlsEnable) is health-checked over HTTPS, and the
// flag survives the round trip through the service's metadata.
func TestStatusCheckFollowsHTTPTLS(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		b := Broker{Cluster: "c", BrokerName: "b", BrokerID: 0, Epoch: 1, Addr: "127.0.0.1:10911",
			HAAddr: "127.0.0.1:10912", HTTPAddr: "127.0.0.1:8080", HTTPTLS: tlsOn}
		reg := Registration(b, 10*time.Second, 2*time.Second, time.Minute)
		var check *consul.AgentServiceCheck
		for _, c := range reg.Checks {
			if strings.HasSuffix(c.CheckID, "/http") {
				check = c
			}
		}
		if check == nil {
			t.Fatalf("tls=%v: no status-port check in %+v", tlsOn, reg.Checks)
		}
		wantScheme := "http://"
		if tlsOn {
			wantScheme = "https://"
		}
		if !strings.HasPrefix(check.HTTP, wantScheme) || check.TLSSkipVerify != tlsOn {
			t.Fatalf("tls=%v: check %q skipVerify=%v", tlsOn, check.HTTP, check.TLSSkipVerify)
		}
		got, ok := FromService(&consul.AgentService{Service: ServiceName, Meta: reg.Meta}, "n")
		if !ok || got.HTTPTLS != tlsOn {
			t.Fatalf("tls=%v: round trip gave %+v (%v)", tlsOn, got, ok)
		}
	}
}
