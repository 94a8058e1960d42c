package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	rmqconsumer "github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func init() { rlog.SetLogLevel("error") }

// goProducer is one rocketmq-client-go producer (its own client id and connections).
type goProducer struct {
	cfg Config
	st  *stats
	p   rocketmq.Producer
}

func newGoProducer(cfg Config, i int, st *stats) (*goProducer, error) {
	p, err := rocketmq.NewProducer(
		rmqproducer.WithNsResolver(primitive.NewPassthroughResolver(cfg.namesrvs())),
		rmqproducer.WithGroupName("bench-pg"),
		rmqproducer.WithInstanceName(fmt.Sprintf("bench-p-%d-%x-%d", os.Getpid(), st.runID&0xffffff, i)),
		rmqproducer.WithSendMsgTimeout(cfg.SendTimeout),
		rmqproducer.WithRetry(2),
		rmqproducer.WithTls(cfg.TLS.TLSEnable),
		rmqproducer.WithCredentials(primitive.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}),
	)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return &goProducer{cfg: cfg, st: st, p: p}, nil
}

func (g *goProducer) close() { _ = g.p.Shutdown() }

func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return StatusOK
	case primitive.SendFlushDiskTimeout:
		return StatusFlushDiskTimeout
	case primitive.SendFlushSlaveTimeout:
		return StatusFlushSlaveTimeout
	case primitive.SendSlaveNotAvailable:
		return StatusSlaveNotAvailable
	}
	return fmt.Sprintf("STATUS_%d", s)
}

func (g *goProducer) run(ctx context.Context, stop <-chan struct{}) error {
	sem := make(chan struct{}, g.cfg.Inflight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if !g.st.ticket(g.cfg.N) {
			return nil
		}
		msg := primitive.NewMessage(g.cfg.Topic, g.st.body(g.cfg.Size))
		if g.cfg.Keys {
			msg.WithKeys([]string{g.st.keyPrefix() + strconv.FormatUint(g.st.keySeq.Add(1), 10)})
		}
		start := time.Now()
		switch g.cfg.Mode {
		case ModeSync:
			sctx, cancel := context.WithTimeout(ctx, g.cfg.SendTimeout*4)
			res, err := g.p.SendSync(sctx, msg)
			cancel()
			if err == nil && res == nil {
				err = errors.New("send returned no result")
			}
			if err != nil {
				g.st.sendDone("", 0, err)
				continue
			}
			g.st.sendDone(statusName(res.Status), time.Since(start), nil)
		case ModeAsync:
			select {
			case sem <- struct{}{}:
			case <-stop:
				return nil
			}
			wg.Add(1)
			err := g.p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
				defer wg.Done()
				defer func() { <-sem }()
				if err == nil && res == nil {
					err = errors.New("send returned no result")
				}
				if err != nil {
					g.st.sendDone("", 0, err)
					return
				}
				g.st.sendDone(statusName(res.Status), time.Since(start), nil)
			}, msg)
			if err != nil {
				wg.Done()
				<-sem
				g.st.sendDone("", 0, err)
			}
		case ModeOneway:
			err := g.p.SendOneWay(ctx, msg)
			g.st.sendDone(StatusOneway, time.Since(start), err)
		}
	}
}

// goConsumer is one rocketmq-client-go push consumer of the run's group.
type goConsumer struct {
	c rocketmq.PushConsumer
}

func newGoConsumer(cfg Config, group string, i int, st *stats, all bool) (*goConsumer, error) {
	from := rmqconsumer.ConsumeFromLastOffset
	if all {
		from = rmqconsumer.ConsumeFromFirstOffset
	}
	c, err := rocketmq.NewPushConsumer(
		rmqconsumer.WithNsResolver(primitive.NewPassthroughResolver(cfg.namesrvs())),
		rmqconsumer.WithGroupName(group),
		rmqconsumer.WithInstance(fmt.Sprintf("bench-c-%d-%x-%d", os.Getpid(), st.runID&0xffffff, i)),
		rmqconsumer.WithConsumerModel(rmqconsumer.Clustering),
		rmqconsumer.WithConsumeFromWhere(from),
		rmqconsumer.WithConsumeMessageBatchMaxSize(32),
		rmqconsumer.WithTls(cfg.TLS.TLSEnable),
		rmqconsumer.WithCredentials(primitive.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}),
	)
	if err != nil {
		return nil, err
	}
	err = c.Subscribe(cfg.Topic, rmqconsumer.MessageSelector{Type: rmqconsumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (rmqconsumer.ConsumeResult, error) {
			for _, m := range msgs {
				st.received(m.Body, all)
			}
			return rmqconsumer.ConsumeSuccess, nil
		})
	if err != nil {
		return nil, err
	}
	return &goConsumer{c: c}, nil
}

func (g *goConsumer) start(context.Context) error { return g.c.Start() }

func (g *goConsumer) close() { _ = g.c.Shutdown() }
