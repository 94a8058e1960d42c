package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	broute "github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// queueRef is one queue of the topic and the broker group holding it.
type queueRef struct {
	brokerName string
	queueID    int
	addrs      map[int64]string // brokerId -> address
}

// route is the topic's queues as the name server describes them.
type route struct {
	write []queueRef // writable queues on groups with a master
	read  []queueRef
}

type routeJSON struct {
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
	BrokerDatas []struct {
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// admin talks raw remoting to the name servers and brokers for setup.
type admin struct {
	cfg Config
	cli *remoting.Client
}

func newRemotingClient(timeout time.Duration, tc *tls.Config, creds acl.Credentials) *remoting.Client {
	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = timeout
	cc.TLS = tc
	cc.Signer = acl.CredentialsSigner(creds)
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	cc.Logger = l
	return remoting.NewClient(cc)
}

func newAdmin(cfg Config) (*admin, error) {
	creds, err := cfg.adminCredentials()
	if err != nil {
		return nil, err
	}
	return &admin{cfg: cfg, cli: newRemotingClient(5*time.Second, cfg.tlsClient, creds)}, nil
}

func (a *admin) close() { _ = a.cli.Close() }

// route asks the name servers in turn; found is false when they answer TOPIC_NOT_EXIST.
func (a *admin) route(ctx context.Context, topic string) (r *route, found bool, err error) {
	for _, ns := range a.cfg.namesrvs() {
		resp, e := a.cli.Invoke(ctx, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if e != nil {
			err = e
			continue
		}
		if resp.Code == remoting.TopicNotExist {
			return nil, false, nil
		}
		if resp.Code != remoting.Success {
			return nil, false, fmt.Errorf("route of %s from %s: code %d %s", topic, ns, resp.Code, resp.Remark)
		}
		var rj routeJSON
		body, e := broute.Lenient(resp.Body)
		if e == nil {
			e = json.Unmarshal(body, &rj)
		}
		if e != nil {
			return nil, false, fmt.Errorf("route of %s: %w", topic, e)
		}
		return rj.build(), true, nil
	}
	return nil, false, err
}

func (rj *routeJSON) build() *route {
	addrs := map[string]map[int64]string{}
	for _, bd := range rj.BrokerDatas {
		m := map[int64]string{}
		for k, v := range bd.BrokerAddrs {
			if id, err := strconv.ParseInt(k, 10, 64); err == nil {
				m[id] = v
			}
		}
		addrs[bd.BrokerName] = m
	}
	r := &route{}
	sort.Slice(rj.QueueDatas, func(i, j int) bool { return rj.QueueDatas[i].BrokerName < rj.QueueDatas[j].BrokerName })
	for _, qd := range rj.QueueDatas {
		a := addrs[qd.BrokerName]
		if qd.Perm&2 != 0 && a[0] != "" {
			for q := 0; q < qd.WriteQueueNums; q++ {
				r.write = append(r.write, queueRef{qd.BrokerName, q, a})
			}
		}
		if qd.Perm&4 != 0 {
			for q := 0; q < qd.ReadQueueNums; q++ {
				r.read = append(r.read, queueRef{qd.BrokerName, q, a})
			}
		}
	}
	return r
}

// ensureTopic returns the topic's route, creating the topic with n queues on every master of
// TBW102's route when the name servers do not know it.
func (a *admin) ensureTopic(ctx context.Context, topic string, n int) (*route, error) {
	r, found, err := a.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	if found && len(r.write) > 0 {
		return r, nil
	}
	tpl, found, err := a.route(ctx, "TBW102")
	if err != nil {
		return nil, err
	}
	if !found || len(tpl.write) == 0 {
		return nil, fmt.Errorf("topic %s does not exist and no master serves TBW102 to create it", topic)
	}
	masters := map[string]bool{}
	for _, q := range tpl.write {
		masters[q.addrs[0]] = true
	}
	for m := range masters {
		ext := map[string]string{
			"topic": topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(n), "writeQueueNums": strconv.Itoa(n),
			"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
		}
		resp, err := a.cli.Invoke(ctx, m, remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil))
		if err != nil {
			return nil, fmt.Errorf("create topic %s on %s: %w", topic, m, err)
		}
		if resp.Code == remoting.NoPermission && a.cfg.RegistrationSecretFile == "" && a.cfg.AccessKey == "" {
			return nil, fmt.Errorf("create topic %s on %s: %s (give -registrationSecretFile, e.g. run/registration.secret of make run, or create the topic with mqadmin updateTopic)", topic, m, resp.Remark)
		}
		if resp.Code != remoting.Success {
			return nil, fmt.Errorf("create topic %s on %s: code %d %s", topic, m, resp.Code, resp.Remark)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, found, err = a.route(ctx, topic)
		if err == nil && found && len(r.write) > 0 {
			return r, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %s created but not routed after 30s (last error %v)", topic, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
