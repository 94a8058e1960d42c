package metasync

import (
	"github.com/nats-io/nats.go"
)

// NATSBus adapts a NATS connection to Bus. Connect with reconnects enabled
// (nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true)) so that a NATS
// outage heals by itself; subscriptions are restored by the client.
type NATSBus struct {
	Conn *nats.Conn
}

// NewNATSBus wraps c.
func NewNATSBus(c *nats.Conn) *NATSBus { return &NATSBus{Conn: c} }

// DialNATS connects to url (comma-separated servers) with endless reconnects,
// and succeeds even when no server answers yet.
func DialNATS(url, name string) (*NATSBus, error) {
	c, err := nats.Connect(url,
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(250e6), // 250ms: the bus is a latency aid, reconnect eagerly
	)
	if err != nil {
		return nil, err
	}
	return &NATSBus{Conn: c}, nil
}

// Publish implements Bus.
func (b *NATSBus) Publish(subject string, data []byte) error {
	return b.Conn.Publish(subject, data)
}

// Subscribe implements Bus.
func (b *NATSBus) Subscribe(subject string, fn func(string, []byte)) (func() error, error) {
	sub, err := b.Conn.Subscribe(subject, func(m *nats.Msg) { fn(m.Subject, m.Data) })
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

// Connected implements Bus.
func (b *NATSBus) Connected() bool { return b.Conn.IsConnected() }

// Close drains nothing and closes the connection.
func (b *NATSBus) Close() { b.Conn.Close() }
