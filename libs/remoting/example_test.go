package remoting_test

import (
	"context"
	"fmt"

	"github.com/rmqha/rmqha/libs/remoting"
)

func Example() {
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg)
	if err != nil {
		panic(err)
	}
	srv.HandleFunc(remoting.GetRouteInfoByTopic, func(w remoting.ResponseWriter, req *remoting.Command) {
		if req.Ext("topic") != "TopicTest" {
			_ = w.Write(remoting.NewResponse(req, remoting.TopicNotExist, "no route for "+req.Ext("topic")))
			return
		}
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(`{"queueDatas":[],"brokerDatas":[]}`)
		_ = w.Write(resp)
	})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()

	cl := remoting.NewClient(remoting.DefaultClientConfig())
	defer cl.Close()
	for _, topic := range []string{"TopicTest", "Other"} {
		req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
		resp, err := cl.Invoke(context.Background(), srv.Addr().String(), req)
		if err != nil {
			panic(err)
		}
		fmt.Println(remoting.ResponseName(resp.Code), resp.Remark, string(resp.Body))
	}
	// Output:
	// SUCCESS  {"queueDatas":[],"brokerDatas":[]}
	// TOPIC_NOT_EXIST no route for Other
}
