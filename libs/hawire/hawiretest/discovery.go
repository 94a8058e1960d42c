package hawiretest

import "github.com/rmqha/rmqha/libs/hawire"

// SwitchDiscovery is hawire.SwitchDiscovery, kept here for the tests that
// name it through this package.
type SwitchDiscovery = hawire.SwitchDiscovery

// NewSwitchDiscovery starts with addr ("" = no master yet).
func NewSwitchDiscovery(addr string) *SwitchDiscovery { return hawire.NewSwitchDiscovery(addr) }
