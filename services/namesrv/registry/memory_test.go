package registry_test

import (
	"testing"

	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/rmqha/rmqha/services/namesrv/registrytest"
)

func TestMemoryConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T) registry.Registry { return registry.NewMemory() }, registrytest.Options{})
}
