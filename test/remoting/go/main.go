// The Go Remoting client (github.com/apache/rocketmq-client-go/v2) driven by Vela's tests: each
// scenario prints what happened as JSON lines starting with "@@ " on stdout.
//
//	produce NS TOPIC N        N sync sends with tag, keys and a property
//	consume NS TOPIC GROUP N  a clustering push consumer printing N messages (60 s at most)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var mu sync.Mutex

func out(event string, kv map[string]interface{}) {
	mu.Lock()
	defer mu.Unlock()
	kv["event"] = event
	b, _ := json.Marshal(kv)
	fmt.Println("@@ " + string(b))
}

func fail(err error) {
	out("error", map[string]interface{}{"message": err.Error()})
	os.Exit(1)
}

func main() {
	rlog.SetLogLevel("error")
	ns := os.Args[2]
	switch os.Args[1] {
	case "produce":
		n, _ := strconv.Atoi(os.Args[4])
		produce(ns, os.Args[3], n)
	case "consume":
		n, _ := strconv.Atoi(os.Args[5])
		consume(ns, os.Args[3], os.Args[4], n)
	default:
		fail(fmt.Errorf("unknown scenario %s", os.Args[1]))
	}
	out("done", map[string]interface{}{})
}

func produce(ns, topic string, n int) {
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{ns}), producer.WithRetry(1),
		producer.WithGroupName(fmt.Sprintf("GO_PG_%d", time.Now().UnixNano())))
	if err != nil {
		fail(err)
	}
	if err := p.Start(); err != nil {
		fail(err)
	}
	defer p.Shutdown()
	for i := 0; i < n; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("from go %d", i)))
		m.WithTag("TagGo")
		m.WithKeys([]string{fmt.Sprintf("go-%d", i)})
		m.WithProperty("lang", "go")
		r, err := p.SendSync(context.Background(), m)
		if err != nil {
			fail(err)
		}
		out("sent", map[string]interface{}{"status": int(r.Status), "msgId": r.MsgID, "offsetMsgId": r.OffsetMsgID,
			"queueId": r.MessageQueue.QueueId, "queueOffset": r.QueueOffset})
	}
}

func consume(ns, topic, group string, n int) {
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{ns}), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		fail(err)
	}
	done := make(chan struct{})
	var once sync.Once
	count := 0
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				out("received", map[string]interface{}{"msgId": m.MsgId, "offsetMsgId": m.OffsetMsgId, "topic": m.Topic,
					"tags": m.GetTags(), "keys": m.GetKeys(), "body": string(m.Body), "queueId": m.Queue.QueueId,
					"queueOffset": m.QueueOffset, "reconsumeTimes": m.ReconsumeTimes, "properties": m.GetProperties()})
				mu.Lock()
				count++
				reached := count >= n
				mu.Unlock()
				if reached {
					once.Do(func() { close(done) })
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		fail(err)
	}
	if err := c.Start(); err != nil {
		fail(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		fail(fmt.Errorf("timed out with %d of %d messages", count, n))
	}
	time.Sleep(500 * time.Millisecond)
	_ = c.Shutdown()
}
