package acl

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func TestSignRoundTrip(t *testing.T) {
	cmd := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T", "b": "2", "a": "1"}, []byte("body"))
	SignCommand(cmd, "ak", "sk")
	require.Equal(t, "ak", cmd.Ext(ExtAccessKey))
	// Content: values sorted by key (AccessKey, a, b, topic), then the body.
	require.Equal(t, "ak12Tbody", string(AppendContent(nil, cmd.ExtFields, cmd.Body, true)))
	require.Equal(t, Sign("sk", []byte("ak12Tbody")), cmd.Ext(ExtSignature))
	require.True(t, VerifySignature(cmd, "sk"))
	require.False(t, VerifySignature(cmd, "other"))

	// Anything signed changes the signature: a value, a new field, the body.
	for name, mut := range map[string]func(c *remoting.Command){
		"value": func(c *remoting.Command) { c.ExtFields["topic"] = "U" },
		"field": func(c *remoting.Command) { c.ExtFields["queueId"] = "3" },
		"body":  func(c *remoting.Command) { c.Body = []byte("bodx") },
		"key":   func(c *remoting.Command) { c.ExtFields[ExtAccessKey] = "ak2" },
	} {
		c := *cmd
		c.ExtFields = clone(cmd.ExtFields)
		mut(&c)
		require.False(t, VerifySignature(&c, "sk"), name)
	}
	// Fields that are not signed: the unique-key query flag.
	c := *cmd
	c.ExtFields = clone(cmd.ExtFields)
	c.ExtFields[extUniqueKeyQuery] = "true"
	require.True(t, VerifySignature(&c, "sk"))
	// A broken signature value is refused, not a panic.
	c.ExtFields[ExtSignature] = "%%%"
	require.False(t, VerifySignature(&c, "sk"))
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The real rocketmq-client-go signs what VerifySignature accepts, with and without a
// security token (which that client leaves out of the signed content).
func TestVerifiesRocketMQClientGo(t *testing.T) {
	rlog.SetLogLevel("error")
	for _, token := range []string{"", "tok"} {
		got := make(chan *remoting.Command, 16)
		cfg := remoting.DefaultServerConfig()
		cfg.Addr = "127.0.0.1:0"
		cfg.Guard = remoting.GuardFunc(func(_ *remoting.ServerConn, r *remoting.Command) *remoting.Command {
			select {
			case got <- r:
			default:
			}
			return nil
		})
		srv, err := remoting.NewServer(cfg)
		require.NoError(t, err)
		srv.HandleFunc(remoting.GetRouteInfoByTopic, func(w remoting.ResponseWriter, r *remoting.Command) {
			_ = w.Write(remoting.NewResponse(r, remoting.TopicNotExist, "no route"))
		})
		require.NoError(t, srv.Start())
		p, err := producer.NewDefaultProducer(
			producer.WithNameServer([]string{srv.Addr().String()}),
			producer.WithCredentials(primitive.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678", SecurityToken: token}),
			producer.WithRetry(0),
		)
		require.NoError(t, err)
		require.NoError(t, p.Start())
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, _ = p.SendSync(ctx, primitive.NewMessage("SignedTopic", []byte("x")))
		cancel()
		_ = p.Shutdown()
		_ = srv.Close()
		var req *remoting.Command
		select {
		case req = <-got:
		default:
			t.Fatal("no request reached the server")
		}
		require.Equal(t, "RocketMQ", req.Ext(ExtAccessKey))
		require.Equal(t, "SignedTopic", req.Ext("topic"))
		require.True(t, VerifySignature(req, "12345678"), "token %q: %v", token, req.ExtFields)
		require.False(t, VerifySignature(req, "1234567"))
	}
}

func FuzzVerifySignature(f *testing.F) {
	f.Add("k", "v", []byte("body"), "sig")
	f.Add(ExtSecurityToken, "t", []byte{}, "AAAA")
	f.Fuzz(func(t *testing.T, k, v string, body []byte, sig string) {
		cmd := remoting.NewRequest(remoting.SendMessage, map[string]string{k: v}, body)
		cmd.ExtFields[ExtSignature] = sig
		_ = VerifySignature(cmd, "sk") // never panics
		SignCommand(cmd, "ak", "sk")
		if !VerifySignature(cmd, "sk") {
			t.Fatalf("own signature does not verify: %v", cmd.ExtFields)
		}
	})
}

// A verifier reuses the field order of the previous request only when the fields are the same:
// across requests with changing field sets, it accepts exactly what a fresh sort accepts.
func TestVerifierOrderReuse(t *testing.T) {
	v := newVerifier("sk")
	sets := []map[string]string{
		{"topic": "T", "queueId": "1", "a": "x"},
		{"topic": "T", "queueId": "1", "a": "x"},
		{"topic": "T", "queueId": "1", "b": "x"}, // same count, other key
		{"topic": "T", "queueId": "1"},           // fewer
		{"topic": "T", "queueId": "1", "a": "y"}, // same keys, other value
		{"topic": "T", "queueId": "1", ExtSecurityToken: "tok"},
		{"topic": "T", "queueId": "1", ExtSecurityToken: "tok", extUniqueKeyQuery: "true"},
	}
	for i, ext := range sets {
		cmd := remoting.NewRequest(remoting.SendMessage, clone(ext), []byte("body"))
		SignCommand(cmd, "ak", "sk")
		require.True(t, v.verify(cmd), "request %d signed", i)
		// Extra or changed fields: the reused order decides as a fresh sort does. (RocketMQ's
		// content has no field names, so an extra empty field keeps the signature valid.)
		for _, mut := range []func(m map[string]string){
			func(m map[string]string) { m["zz"] = "" },
			func(m map[string]string) { m["zz"] = "1" },
			func(m map[string]string) { m["queueId"] = "2" },
			func(m map[string]string) { delete(m, "queueId") },
		} {
			forged := remoting.NewRequest(remoting.SendMessage, clone(cmd.ExtFields), cmd.Body)
			mut(forged.ExtFields)
			require.Equal(t, VerifySignature(forged, "sk"), v.verify(forged), "request %d forged %v", i, forged.ExtFields)
		}
		token := remoting.NewRequest(remoting.SendMessage, clone(ext), []byte("body"))
		if _, ok := ext[ExtSecurityToken]; ok {
			// Signed without the token (rocketmq-client-go's form).
			token.ExtFields[ExtAccessKey] = "ak"
			token.ExtFields[ExtSignature] = Sign("sk", AppendContent(nil, token.ExtFields, token.Body, false))
			require.True(t, v.verify(token), "request %d signed without its token", i)
		}
		require.Equal(t, string(AppendContent(nil, cmd.ExtFields, cmd.Body, true)), string(append(v.appendContent(nil, cmd.ExtFields, true), cmd.Body...)), "request %d content", i)
	}
	s := Signer("ak", "sk")
	for i, ext := range sets {
		cmd := remoting.NewRequest(remoting.SendMessage, clone(ext), []byte("b"))
		s(cmd)
		require.True(t, VerifySignature(cmd, "sk"), "request %d from the pooled signer", i)
	}
}
