package commitlog

import (
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	good := testConfig(vfs.NewMem())
	require.NoError(t, good.Validate())
	cases := map[string]func(*Config){
		"Dir":                   func(c *Config) { c.Dir = "" },
		"SegmentSize":           func(c *Config) { c.SegmentSize = 100 },
		"CQUnitsPerFile":        func(c *Config) { c.CQUnitsPerFile = 0 },
		"FlushInterval":         func(c *Config) { c.FlushInterval = 0 },
		"SyncFlushTimeout":      func(c *Config) { c.SyncFlushTimeout = -1 },
		"MaxMessageSize":        func(c *Config) { c.MaxMessageSize = 0 },
		"DiskMaxUsedSpaceRatio": func(c *Config) { c.DiskMaxUsedSpaceRatio = 99 },
		"DeleteWhen":            func(c *Config) { c.DeleteWhen = []int{24} },
		"FS":                    func(c *Config) { c.FS = nil },
		"WriteBuffer":           func(c *Config) { c.WriteBuffer = -1 },
	}
	for field, mut := range cases {
		c := good
		mut(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig, field)
		require.True(t, strings.Contains(err.Error(), field), "%s: %v", field, err)
		_, err = Open(c)
		require.Error(t, err)
	}
	d := DefaultConfig()
	require.Equal(t, int64(1<<30), d.SegmentSize)
	require.Equal(t, 300000, d.CQUnitsPerFile)
	require.Equal(t, 4<<20, d.MaxMessageSize)
	require.Equal(t, []int{4}, d.DeleteWhen)
	require.Equal(t, 75, d.DiskMaxUsedSpaceRatio)
}

func TestParseFlushDiskType(t *testing.T) {
	v, err := ParseFlushDiskType("SYNC_FLUSH")
	require.NoError(t, err)
	require.Equal(t, SyncFlush, v)
	v, err = ParseFlushDiskType("async_flush")
	require.NoError(t, err)
	require.Equal(t, AsyncFlush, v)
	require.Equal(t, "SYNC_FLUSH", SyncFlush.String())
	_, err = ParseFlushDiskType("FAST")
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestOpenRejectsMisalignedSegments(t *testing.T) {
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	s := openStore(t, cfg)
	for i := 0; i < 30; i++ {
		mustAppend(t, s, msg("T", 0, strings.Repeat("x", 500), ""))
	}
	require.NoError(t, s.Close())
	cfg.SegmentSize = 12 << 10
	_, err := Open(cfg)
	require.ErrorIs(t, err, ErrInvalidConfig)
}
