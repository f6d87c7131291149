package main

// The scenarios: the same names, message bodies and result fields as the Java and Python programs;
// the node:test driver (test/interop/official/scenarios.ts) asserts on them.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// codeName finds the status in the text of an error that wraps an ErrRpcStatus with %v.
var codeName = regexp.MustCompile(`CODE: ([A-Z_]+),`)

const (
	// await is the simple consumers' long-polling time.
	await = 2 * time.Second
	// shortInvisible is the shortest invisible time the test broker accepts.
	shortInvisible = 1 * time.Second
	longInvisible  = 30 * time.Second
	// shortAwait is a shorter long poll, for scenarios that show that nothing arrives within a time.
	shortAwait = 500 * time.Millisecond
	// delay is how far ahead delay messages are due; delayWait how long after their time they are
	// waited for.
	delay     = 2 * time.Second
	delayWait = 8 * time.Second
	// drain is how long receiving goes on to show that nothing else comes.
	drain = 1500 * time.Millisecond
	// halfWait is how long half messages are shown to be invisible; txWait how long committed and
	// checked transactions are waited for.
	halfWait = 500 * time.Millisecond
	txWait   = 10 * time.Second
)

type obj = map[string]any

func runScenario(o *options, r run) (obj, error) {
	switch r.scenario {
	case "producer-normal":
		return producerNormal(o, r)
	case "producer-fifo":
		return producerFifo(o, r)
	case "producer-keys":
		return producerKeys(o, r)
	case "producer-tags":
		return producerTags(o, r)
	case "producer-properties":
		return producerProperties(o, r)
	case "producer-delay":
		return producerDelay(o, r)
	case "producer-transaction":
		return producerTransaction(o, r)
	case "simple-receive":
		return simpleReceive(o, r)
	case "simple-ack":
		return simpleAck(o, r)
	case "simple-change-invisible":
		return simpleChangeInvisible(o, r)
	case "simple-redelivery":
		return simpleRedelivery(o, r)
	case "simple-dlq":
		return simpleDlq(o, r)
	case "push-success":
		return pushSuccess(o, r)
	case "push-retry":
		return pushRetry(o, r)
	case "push-fifo":
		return pushFifo(o, r)
	case "push-shutdown":
		return pushShutdown(o, r)
	case "acl-refused":
		return aclRefused(o, r)
	}
	return nil, fmt.Errorf("unknown scenario %s", r.scenario)
}

// ---- clients ------------------------------------------------------------------------------------

func config(o *options, group string) *rmq.Config {
	// The Go client requires a Credentials value; empty keys mean "do not sign".
	creds := &credentials.SessionCredentials{}
	if o.credentials {
		creds = &credentials.SessionCredentials{AccessKey: o.accessKey, AccessSecret: o.secretKey}
	}
	return &rmq.Config{Endpoint: o.endpoint, NameSpace: o.namespace, ConsumerGroup: group, Credentials: creds}
}

func producer(o *options, topic string) (rmq.Producer, error) {
	p, err := rmq.NewProducer(config(o, ""), rmq.WithTopics(topic))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

func simpleConsumer(o *options, group, topic, filter string) (rmq.SimpleConsumer, error) {
	return simpleConsumerAwaiting(o, group, topic, filter, await)
}

func simpleConsumerAwaiting(o *options, group, topic, filter string, awaitDuration time.Duration) (rmq.SimpleConsumer, error) {
	c, err := rmq.NewSimpleConsumer(config(o, group),
		rmq.WithSimpleAwaitDuration(awaitDuration),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{
			topic: rmq.NewFilterExpression(filter),
		}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

func pushConsumer(o *options, group, topic string, threads int32,
	listener func(*rmq.MessageView) rmq.ConsumerResult) (rmq.PushConsumer, error) {
	c, err := rmq.NewPushConsumer(config(o, group),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
		// GracefulStop waits up to the request timeout + this long poll (see docs/compatibility.md).
		rmq.WithPushAwaitDuration(await),
		rmq.WithPushConsumptionThreadCount(threads),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: listener}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

func message(topic, body string) *rmq.Message {
	return &rmq.Message{Topic: topic, Body: []byte(body)}
}

func send(p rmq.Producer, m *rmq.Message) (obj, error) {
	receipts, err := p.Send(context.Background(), m)
	if err != nil {
		return nil, err
	}
	if len(receipts) != 1 {
		return nil, fmt.Errorf("%d receipts for one message", len(receipts))
	}
	return obj{"messageId": receipts[0].MessageID, "body": string(m.Body)}, nil
}

func str(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// view is a delivered message as the result lines show it.
func view(v *rmq.MessageView) obj {
	keys := append([]string{}, v.GetKeys()...)
	sort.Strings(keys)
	props := map[string]string{}
	for k, val := range v.GetProperties() {
		props[k] = val
	}
	var born int64
	if t := v.GetBornTimestamp(); t != nil {
		born = t.UnixMilli()
	}
	return obj{
		"messageId":       v.GetMessageId(),
		"topic":           v.GetTopic(),
		"body":            string(v.GetBody()),
		"tag":             str(v.GetTag()),
		"keys":            keys,
		"messageGroup":    str(v.GetMessageGroup()),
		"properties":      props,
		"deliveryAttempt": v.GetDeliveryAttempt(),
		"bornTimestamp":   born,
	}
}

func outcomeOf(err error) obj {
	if err == nil {
		return obj{"ok": true}
	}
	out := obj{"ok": false, "error": err.Error(), "code": nil}
	var status *rmq.ErrRpcStatus
	if errors.As(err, &status) {
		out["code"] = status.GetCode()
	} else if m := codeName.FindStringSubmatch(err.Error()); m != nil {
		// Start wraps the status with %v: only its text ("CODE: FORBIDDEN, ...") is left.
		if code, ok := v2.Code_value[m[1]]; ok {
			out["code"] = code
		}
	}
	return out
}

// receiveN receives until count messages arrived or timeout passed; acks them unless told not to.
func receiveN(c rmq.SimpleConsumer, count int, invisible time.Duration, ack bool, timeout time.Duration) ([]*rmq.MessageView, error) {
	var out []*rmq.MessageView
	until := time.Now().Add(timeout)
	for len(out) < count && time.Now().Before(until) {
		got, err := receive(c, count-len(out), invisible)
		if err != nil {
			return out, err
		}
		for _, v := range got {
			if ack {
				if err := c.Ack(context.Background(), v); err != nil {
					return out, err
				}
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// receiveWithin is one receive call whose deadline is `within` from now.
func receiveWithin(c rmq.SimpleConsumer, max int, invisible, within time.Duration) ([]*rmq.MessageView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	got, err := c.Receive(ctx, int32(max), invisible)
	var status *rmq.ErrRpcStatus
	if err != nil && errors.As(err, &status) && status.GetCode() == 40401 {
		return nil, nil
	}
	return got, err
}

// receive is one receive call; "no new message" is an empty result, not an error.
func receive(c rmq.SimpleConsumer, max int, invisible time.Duration) ([]*rmq.MessageView, error) {
	got, err := c.Receive(context.Background(), int32(max), invisible)
	var status *rmq.ErrRpcStatus
	if err != nil && errors.As(err, &status) && status.GetCode() == 40401 {
		return nil, nil
	}
	return got, err
}

// ---- producer -----------------------------------------------------------------------------------

func producerNormal(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	var sent []obj
	for i := 0; i < 5; i++ {
		s, err := send(p, message(r.topic, fmt.Sprintf("normal-%d", i)))
		if err != nil {
			return nil, err
		}
		sent = append(sent, s)
	}
	return obj{"sent": sent}, nil
}

func producerFifo(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	var sent []obj
	for seq := 0; seq < 4; seq++ {
		for _, g := range []string{"Order-001", "Order-002", "Account-Alice"} {
			m := message(r.topic, fmt.Sprintf("%s#%d", g, seq))
			m.SetMessageGroup(g)
			s, err := send(p, m)
			if err != nil {
				return nil, err
			}
			s["messageGroup"] = g
			sent = append(sent, s)
		}
	}
	return obj{"sent": sent}, nil
}

func producerKeys(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	var sent []obj
	for i := 0; i < 3; i++ {
		keys := []string{fmt.Sprintf("%s-k%da", r.topic, i), fmt.Sprintf("%s-k%db", r.topic, i)}
		m := message(r.topic, fmt.Sprintf("keys-%d", i))
		m.SetKeys(keys...)
		s, err := send(p, m)
		if err != nil {
			return nil, err
		}
		s["keys"] = keys
		sent = append(sent, s)
	}
	return obj{"sent": sent}, nil
}

func producerTags(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	var sent []obj
	for i := 0; i < 4; i++ {
		tag := "TagA"
		if i%2 == 1 {
			tag = "TagB"
		}
		m := message(r.topic, fmt.Sprintf("tags-%d", i))
		m.SetTag(tag)
		s, err := send(p, m)
		if err != nil {
			return nil, err
		}
		s["tag"] = tag
		sent = append(sent, s)
	}
	return obj{"sent": sent}, nil
}

func producerProperties(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	props := map[string]string{"orderId": "42", "unicode": "héllo ✓", "with space": "a b"}
	m := message(r.topic, "properties-0")
	for k, v := range props {
		m.AddProperty(k, v)
	}
	s, err := send(p, m)
	if err != nil {
		return nil, err
	}
	s["properties"] = props
	return obj{"sent": []obj{s}}, nil
}

// producerDelay sends a DELAY message due `delay` from now, and a second one it recalls before its
// time. The consumer polls from before the send until the first arrives, then a little longer (the
// recalled one, due at the same time, would come then); recalling the delivered one is refused.
func producerDelay(o *options, r run) (obj, error) {
	c, err := simpleConsumerAwaiting(o, r.group, r.topic, "*", shortAwait)
	if err != nil {
		return nil, err
	}
	defer c.GracefulStop()
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	due := time.Now().Add(delay)
	receipts := map[string]obj{}
	handles := map[string]string{}
	for _, b := range []string{"delay-kept", "delay-gone"} {
		m := message(r.topic, b)
		m.SetDelayTimestamp(due)
		rs, err := p.Send(context.Background(), m)
		if err != nil {
			return nil, err
		}
		receipts[b] = obj{"messageId": rs[0].MessageID, "body": b, "recallHandle": rs[0].RecallHandle}
		handles[b] = rs[0].RecallHandle
	}
	recall := obj{}
	if id, err := p.Recall(context.Background(), r.topic, handles["delay-gone"]); err != nil {
		recall = outcomeOf(err)
	} else {
		recall = obj{"messageId": id, "atMs": time.Now().UnixMilli()}
	}
	firstPoll := time.Now()
	var received []obj
	emptyPolls := 0
	until := due.Add(delayWait)
	for len(received) == 0 && time.Now().Before(until) {
		got, err := receive(c, 2, longInvisible)
		at := time.Now()
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			emptyPolls++
		}
		for _, v := range got {
			if err := c.Ack(context.Background(), v); err != nil {
				return nil, err
			}
			received = append(received, delayed(v, at))
		}
	}
	// Anything else (the recalled message) would be due now too.
	drainUntil := time.Now().Add(drain)
	for time.Now().Before(drainUntil) {
		got, err := receive(c, 2, longInvisible)
		if err != nil {
			return nil, err
		}
		for _, v := range got {
			if err := c.Ack(context.Background(), v); err != nil {
				return nil, err
			}
			received = append(received, delayed(v, time.Now()))
		}
	}
	_, err = p.Recall(context.Background(), r.topic, handles["delay-kept"])
	return obj{
		"deliveryTimestamp":   due.UnixMilli(),
		"kept":                receipts["delay-kept"],
		"gone":                receipts["delay-gone"],
		"recall":              recall,
		"firstPollMs":         firstPoll.UnixMilli(),
		"emptyPolls":          emptyPolls,
		"received":            received,
		"recallAfterDelivery": outcomeOf(err),
	}, nil
}

// delayed is a delivered delay message: its view, its delivery time and when the consumer got it.
func delayed(v *rmq.MessageView, at time.Time) obj {
	out := view(v)
	out["deliveryTimestamp"] = nil
	if t := v.GetDeliveryTimestamp(); t != nil {
		out["deliveryTimestamp"] = t.UnixMilli()
	}
	out["receivedAtMs"] = at.UnixMilli()
	return out
}

// producerTransaction: two transactions left open (the broker's orphan check asks this producer's
// checker, which answers from the "local transaction state": commit one, roll back the other), one
// committed and one rolled back by the application. Nothing is visible before its end; the
// committed ones are delivered once.
func producerTransaction(o *options, r run) (obj, error) {
	local := map[string]rmq.TransactionResolution{
		"tx-commit":          rmq.COMMIT,
		"tx-rollback":        rmq.ROLLBACK,
		"tx-orphan-commit":   rmq.COMMIT,
		"tx-orphan-rollback": rmq.ROLLBACK,
	}
	var mu sync.Mutex
	var checks []obj
	orphansChecked := make(chan struct{}, 16)
	checker := &rmq.TransactionChecker{Check: func(v *rmq.MessageView) rmq.TransactionResolution {
		b := string(v.GetBody())
		mu.Lock()
		checks = append(checks, obj{"messageId": v.GetMessageId(), "topic": v.GetTopic(), "body": b,
			"atMs": time.Now().UnixMilli()})
		mu.Unlock()
		if strings.HasPrefix(b, "tx-orphan-") {
			orphansChecked <- struct{}{}
		}
		if res, ok := local[b]; ok {
			return res
		}
		return rmq.UNKNOWN
	}}
	c, err := simpleConsumerAwaiting(o, r.group, r.topic, "*", shortAwait)
	if err != nil {
		return nil, err
	}
	defer c.GracefulStop()
	p, err := rmq.NewProducer(config(o, ""), rmq.WithTopics(r.topic), rmq.WithTransactionChecker(checker))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	var sent []obj
	open := map[string]rmq.Transaction{}
	for _, b := range []string{"tx-orphan-commit", "tx-orphan-rollback", "tx-commit", "tx-rollback"} {
		tx := p.BeginTransaction()
		start := time.Now()
		rs, err := p.SendWithTransaction(context.Background(), message(r.topic, b), tx)
		if err != nil {
			return nil, err
		}
		sent = append(sent, obj{"messageId": rs[0].MessageID, "body": b, "transactionId": rs[0].TransactionId,
			"sendStartMs": start.UnixMilli()})
		open[b] = tx
	}
	// Half messages: nothing to receive yet. The client does not send its await duration with a
	// receive (the broker polls as long as the call's deadline allows, G10): a deadline bounds it, so
	// that the application's commit comes well before the orphan checks.
	before, err := receiveWithin(c, 1, longInvisible, halfWait+time.Second)
	if err != nil {
		return nil, err
	}
	for _, v := range before {
		if err := c.Ack(context.Background(), v); err != nil {
			return nil, err
		}
	}
	if err := open["tx-commit"].Commit(); err != nil {
		return nil, err
	}
	if err := open["tx-rollback"].RollBack(); err != nil {
		return nil, err
	}
	got, err := receiveN(c, 2, longInvisible, true, txWait)
	if err != nil {
		return nil, err
	}
	timeout := time.After(txWait)
	for i := 0; i < 2; i++ {
		select {
		case <-orphansChecked:
		case <-timeout:
		}
	}
	// Whatever else would come (a rolled-back message, a duplicate) comes now.
	more, err := receiveN(c, 1, longInvisible, true, drain)
	if err != nil {
		return nil, err
	}
	var received []obj
	for _, v := range append(got, more...) {
		received = append(received, view(v))
	}
	mu.Lock()
	defer mu.Unlock()
	beforeEnd := []obj{}
	for _, v := range before {
		beforeEnd = append(beforeEnd, view(v))
	}
	return obj{"sent": sent, "beforeEnd": beforeEnd, "received": received, "checks": append([]obj{}, checks...)}, nil
}

// ---- simple consumer ----------------------------------------------------------------------------

func withProducerAndConsumer(o *options, r run, filter string, body func(rmq.Producer, rmq.SimpleConsumer) (obj, error)) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	c, err := simpleConsumer(o, r.group, r.topic, filter)
	if err != nil {
		return nil, err
	}
	defer c.GracefulStop()
	return body(p, c)
}

func simpleReceive(o *options, r run) (obj, error) {
	return withProducerAndConsumer(o, r, "TagA", func(p rmq.Producer, c rmq.SimpleConsumer) (obj, error) {
		var sent []obj
		for i := 0; i < 4; i++ {
			tag := "TagA"
			if i == 3 {
				tag = "TagB"
			}
			m := message(r.topic, fmt.Sprintf("receive-%d", i))
			m.SetTag(tag)
			m.SetKeys(fmt.Sprintf("rk-%d", i))
			m.AddProperty("seq", strconv.Itoa(i))
			s, err := send(p, m)
			if err != nil {
				return nil, err
			}
			s["tag"] = tag
			sent = append(sent, s)
		}
		got, err := receiveN(c, 3, longInvisible, true, 15*time.Second)
		if err != nil {
			return nil, err
		}
		var received []obj
		for _, v := range got {
			received = append(received, view(v))
		}
		more, err := receive(c, 32, longInvisible)
		if err != nil {
			return nil, err
		}
		return obj{"sent": sent, "received": received, "afterwards": len(more)}, nil
	})
}

func simpleAck(o *options, r run) (obj, error) {
	return withProducerAndConsumer(o, r, "*", func(p rmq.Producer, c rmq.SimpleConsumer) (obj, error) {
		s, err := send(p, message(r.topic, "ack-0"))
		if err != nil {
			return nil, err
		}
		got, err := receiveN(c, 1, longInvisible, false, 15*time.Second)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, fmt.Errorf("nothing received")
		}
		v := got[0]
		first := outcomeOf(c.Ack(context.Background(), v))
		second := outcomeOf(c.Ack(context.Background(), v))
		more, err := receive(c, 32, shortInvisible)
		if err != nil {
			return nil, err
		}
		return obj{"sent": []obj{s}, "received": []obj{view(v)}, "ack": first, "secondAck": second,
			"afterwards": len(more)}, nil
	})
}

func simpleChangeInvisible(o *options, r run) (obj, error) {
	return withProducerAndConsumer(o, r, "*", func(p rmq.Producer, c rmq.SimpleConsumer) (obj, error) {
		for _, b := range []string{"change-ack", "change-back"} {
			if _, err := send(p, message(r.topic, b)); err != nil {
				return nil, err
			}
		}
		got, err := receiveN(c, 2, longInvisible, false, 15*time.Second)
		if err != nil {
			return nil, err
		}
		var ackMe, back *rmq.MessageView
		for _, v := range got {
			if string(v.GetBody()) == "change-ack" {
				ackMe = v
			} else {
				back = v
			}
		}
		if ackMe == nil || back == nil {
			return nil, fmt.Errorf("received %d of 2", len(got))
		}
		// A longer invisible time, then an ack: the ack uses the handle the change returned.
		if err := c.ChangeInvisibleDuration(ackMe, 20*time.Second); err != nil {
			return nil, err
		}
		out := obj{"ackAfterChange": outcomeOf(c.Ack(context.Background(), ackMe))}
		// A shorter one: the message comes back after it.
		t0 := time.Now()
		if err := c.ChangeInvisibleDuration(back, shortInvisible); err != nil {
			return nil, err
		}
		t1 := time.Now()
		again, err := receiveN(c, 1, longInvisible, true, 10*time.Second)
		if err != nil {
			return nil, err
		}
		t2 := time.Now()
		if len(again) == 0 {
			return nil, fmt.Errorf("not redelivered after the change")
		}
		redelivered := view(again[0])
		redelivered["sinceChangeStartMs"] = t2.Sub(t0).Milliseconds()
		redelivered["sinceChangeEndMs"] = t2.Sub(t1).Milliseconds()
		out["redelivered"] = redelivered
		more, err := receive(c, 32, longInvisible)
		if err != nil {
			return nil, err
		}
		out["afterwards"] = len(more)
		return out, nil
	})
}

func simpleRedelivery(o *options, r run) (obj, error) {
	return withProducerAndConsumer(o, r, "*", func(p rmq.Producer, c rmq.SimpleConsumer) (obj, error) {
		s, err := send(p, message(r.topic, "redeliver-0"))
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		first, err := receive(c, 1, shortInvisible)
		if err != nil {
			return nil, err
		}
		t1 := time.Now()
		if len(first) == 0 {
			return nil, fmt.Errorf("nothing received")
		}
		// No ack: it comes back once its invisible time is over.
		again, err := receiveN(c, 1, longInvisible, true, 10*time.Second)
		if err != nil {
			return nil, err
		}
		t2 := time.Now()
		if len(again) == 0 {
			return nil, fmt.Errorf("not redelivered")
		}
		second := view(again[0])
		second["sinceReceiveStartMs"] = t2.Sub(t0).Milliseconds()
		second["sinceReceiveEndMs"] = t2.Sub(t1).Milliseconds()
		return obj{"sent": []obj{s}, "first": view(first[0]), "second": second,
			"staleAck": outcomeOf(c.Ack(context.Background(), first[0]))}, nil
	})
}

// simpleDlq: the group allows 3 deliveries (retryMaxTimes 2); then the message is in %DLQ%group.
func simpleDlq(o *options, r run) (obj, error) {
	var s obj
	var deliveries []obj
	_, err := withProducerAndConsumer(o, r, "*", func(p rmq.Producer, c rmq.SimpleConsumer) (obj, error) {
		var err error
		if s, err = send(p, message(r.topic, "dlq-0")); err != nil {
			return nil, err
		}
		// Never ack; stop once nothing came back for 3 s after the last delivery.
		quietUntil := time.Now().Add(10 * time.Second)
		for time.Now().Before(quietUntil) {
			got, err := receive(c, 1, shortInvisible)
			if err != nil {
				return nil, err
			}
			for _, v := range got {
				deliveries = append(deliveries, view(v))
				quietUntil = time.Now().Add(shortInvisible + 3*time.Second)
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	// The dead-letter queue is a topic like any other: consume it with the same client.
	d, err := simpleConsumer(o, r.group, "%DLQ%"+r.group, "*")
	if err != nil {
		return nil, err
	}
	defer d.GracefulStop()
	got, err := receiveN(d, 1, longInvisible, true, 10*time.Second)
	if err != nil {
		return nil, err
	}
	dlq := []obj{}
	for _, v := range got {
		dlq = append(dlq, view(v))
	}
	return obj{"sent": []obj{s}, "deliveries": deliveries, "dlq": dlq}, nil
}

// ---- push consumer ------------------------------------------------------------------------------

type calls struct {
	mu    sync.Mutex
	start time.Time
	list  []obj
}

func (c *calls) add(v *rmq.MessageView, result string) {
	m := view(v)
	m["atMs"] = time.Since(c.start).Milliseconds()
	m["result"] = result
	c.mu.Lock()
	c.list = append(c.list, m)
	c.mu.Unlock()
}

func (c *calls) snapshot() []obj {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]obj{}, c.list...)
}

// counter is closed once n events happened.
type counter struct {
	mu   sync.Mutex
	left int
	done chan struct{}
}

func newCounter(n int) *counter { return &counter{left: n, done: make(chan struct{})} }

func (c *counter) hit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left--
	if c.left == 0 {
		close(c.done)
	}
}

func (c *counter) wait(d time.Duration) {
	select {
	case <-c.done:
	case <-time.After(d):
	}
}

func pushSuccess(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	log := &calls{start: time.Now()}
	done := newCounter(10)
	c, err := pushConsumer(o, r.group, r.topic, 4, func(v *rmq.MessageView) rmq.ConsumerResult {
		log.add(v, "SUCCESS")
		done.hit()
		return rmq.SUCCESS
	})
	if err != nil {
		return nil, err
	}
	var sent []obj
	for i := 0; i < 10; i++ {
		m := message(r.topic, fmt.Sprintf("push-%d", i))
		m.SetTag("T")
		s, err := send(p, m)
		if err != nil {
			c.GracefulStop()
			return nil, err
		}
		sent = append(sent, s)
	}
	done.wait(20 * time.Second)
	t := time.Now()
	if err := c.GracefulStop(); err != nil {
		return nil, err
	}
	return obj{"sent": sent, "calls": log.snapshot(), "closeMs": time.Since(t).Milliseconds()}, nil
}

// pushRetry: each message fails twice, then succeeds: three deliveries spaced by the retry policy.
func pushRetry(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	log := &calls{start: time.Now()}
	done := newCounter(2)
	c, err := pushConsumer(o, r.group, r.topic, 4, func(v *rmq.MessageView) rmq.ConsumerResult {
		if v.GetDeliveryAttempt() >= 3 {
			log.add(v, "SUCCESS")
			done.hit()
			return rmq.SUCCESS
		}
		log.add(v, "FAILURE")
		return rmq.FAILURE
	})
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"retry-0", "retry-1"} {
		if _, err := send(p, message(r.topic, b)); err != nil {
			c.GracefulStop()
			return nil, err
		}
	}
	done.wait(30 * time.Second)
	if err := c.GracefulStop(); err != nil {
		return nil, err
	}
	return obj{"calls": log.snapshot()}, nil
}

// pushFifo: FIFO group; the first delivery of each group's message #1 fails; order must hold.
func pushFifo(o *options, r run) (obj, error) {
	groups := []string{"Order-001", "Order-002", "Account-Alice"}
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	for seq := 0; seq < 4; seq++ {
		for _, g := range groups {
			m := message(r.topic, fmt.Sprintf("%s#%d", g, seq))
			m.SetMessageGroup(g)
			if _, err := send(p, m); err != nil {
				return nil, err
			}
		}
	}
	log := &calls{start: time.Now()}
	done := newCounter(len(groups) * 4)
	var mu sync.Mutex
	failed := map[string]bool{}
	c, err := pushConsumer(o, r.group, r.topic, 4, func(v *rmq.MessageView) rmq.ConsumerResult {
		b := string(v.GetBody())
		mu.Lock()
		fail := strings.HasSuffix(b, "#1") && !failed[b]
		failed[b] = true
		mu.Unlock()
		if fail {
			log.add(v, "FAILURE")
			return rmq.FAILURE
		}
		log.add(v, "SUCCESS")
		done.hit()
		return rmq.SUCCESS
	})
	if err != nil {
		return nil, err
	}
	done.wait(30 * time.Second)
	if err := c.GracefulStop(); err != nil {
		return nil, err
	}
	return obj{"calls": log.snapshot()}, nil
}

// pushShutdown: a slow listener on one thread; stop while messages are cached and one is being consumed.
func pushShutdown(o *options, r run) (obj, error) {
	p, err := producer(o, r.topic)
	if err != nil {
		return nil, err
	}
	defer p.GracefulStop()
	var sent []obj
	for i := 0; i < 10; i++ {
		s, err := send(p, message(r.topic, fmt.Sprintf("shutdown-%d", i)))
		if err != nil {
			return nil, err
		}
		sent = append(sent, s)
	}
	log := &calls{start: time.Now()}
	two := newCounter(2)
	c, err := pushConsumer(o, r.group, r.topic, 1, func(v *rmq.MessageView) rmq.ConsumerResult {
		time.Sleep(300 * time.Millisecond)
		log.add(v, "SUCCESS")
		two.hit()
		return rmq.SUCCESS
	})
	if err != nil {
		return nil, err
	}
	two.wait(20 * time.Second)
	t := time.Now()
	if err := c.GracefulStop(); err != nil {
		return nil, err
	}
	closeMs := time.Since(t).Milliseconds()
	return obj{"sent": sent, "calls": log.snapshot(), "closeMs": closeMs}, nil
}

// ---- access control ------------------------------------------------------------------------------

// aclRefused runs with access control on: a producer signing with a wrong secret key, and one
// signing right but sending to a topic outside the user's rights (the run's topic).
func aclRefused(o *options, r run) (obj, error) {
	wrong := *o
	wrong.secretKey = o.secretKey + "-wrong"
	return obj{"wrongSignature": attemptSend(&wrong, r.topic), "forbiddenTopic": attemptSend(o, r.topic)}, nil
}

// attemptSend starts a producer for `topic` and sends one message to it. The refusal comes at
// Start (its route query), whose error wraps the status as text (G7).
func attemptSend(o *options, topic string) obj {
	p, err := rmq.NewProducer(config(o, ""), rmq.WithTopics(topic))
	if err != nil {
		return outcomeOf(err)
	}
	if err := p.Start(); err != nil {
		return outcomeOf(err)
	}
	defer p.GracefulStop()
	_, err = p.Send(context.Background(), message(topic, "refused"))
	return outcomeOf(err)
}
