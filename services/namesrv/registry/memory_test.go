package registry_test

import (
	"testing"

	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/rmqha/rmqha/services/namesrv/registrytest"
)

func TestMemoryConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T, l registry.Limits) registry.Registry { return registry.NewMemoryWithLimits(l) }, registrytest.Options{})
}
