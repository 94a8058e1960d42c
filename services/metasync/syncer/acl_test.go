package syncer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigCredentials(t *testing.T) {
	c := DefaultConfig()
	c.AccessKey = "metasync-admin"
	require.ErrorContains(t, c.Validate(), "secretKey", "an access key without its secret is refused")
	c.SecretKey = "metasync-secret"
	require.NoError(t, c.Validate())
}
