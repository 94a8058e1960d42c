package remoting

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A server connection sent more than its small buffer holds at once reads the rest in bursts
// (a burst buffer of burstReadBuffer bytes), hands on every frame whole and in order, and holds
// neither a burst buffer nor its budget charge while it waits for the next bytes; under a budget
// that cannot cover a burst buffer it reads as before.
func TestFrameReaderBurstReads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		burst  bool
	}{{"burst", 0, true}, {"budget below a burst buffer", burstReadBuffer / 2, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cn, sn := tcpPair(t)
			budget := &byteBudget{max: tc.budget}
			fr := newFrameReader(sn, nil, 1<<20, budget, &spareBuffers{}, 0, 0)
			fr.enableBurst(sn)
			require.NotNil(t, fr.raw)

			const frames = 400
			var stream []byte
			for i := 0; i < frames; i++ {
				c := &Command{Code: testCode, Opaque: int32(i), Body: bytes.Repeat([]byte{byte(i)}, 1000+i%50)}
				stream = AppendFrame(stream, c)
			}
			go func() { _, _ = cn.Write(stream) }()
			sawBurst := false
			for i := 0; i < frames; i++ {
				f, err := fr.read()
				require.NoError(t, err, "frame %d", i)
				sawBurst = sawBurst || fr.burstBuf != nil
				c, err := DecodeFrame(f.data)
				require.NoError(t, err)
				require.EqualValues(t, i, c.Opaque)
				require.Equal(t, bytes.Repeat([]byte{byte(i)}, 1000+i%50), c.Body, "frame %d", i)
			}
			require.Equal(t, tc.burst, sawBurst, "burst reads used")

			// Waiting for the next frame: nothing held beyond the small buffer.
			next := make(chan error, 1)
			go func() {
				f, err := fr.read()
				if err == nil && len(f.data) == 0 {
					err = ErrMalformed
				}
				next <- err
			}()
			deadline := time.Now().Add(5 * time.Second)
			for budget.used.Load() != 0 { // (a burst buffer is charged while held)
				require.True(t, time.Now().Before(deadline), "budget %d held while waiting", budget.used.Load())
				time.Sleep(time.Millisecond)
			}
			_, err := cn.Write(AppendFrame(nil, &Command{Code: testCode, Opaque: frames}))
			require.NoError(t, err)
			require.NoError(t, <-next)
			fr.close()
			require.Zero(t, budget.used.Load())
		})
	}
}
