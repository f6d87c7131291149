// Vela interop program for the official RocketMQ 5.x Go client
// (github.com/apache/rocketmq-clients/golang/v5).
//
//	interop-go --endpoint HOST:PORT [--tls] [--access-key AK --secret-key SK] [--namespace NS]
//	    [--timeout-ms MS] SCENARIO TOPIC GROUP [SCENARIO TOPIC GROUP ...]
//
// Runs the scenarios concurrently and prints one JSON line per scenario on stdout:
// {"scenario":...,"ok":true,...result} or {"scenario":...,"ok":false,"error":...}. Client logs go to
// the directory in the rocketmq.client.logRoot environment variable. Exit 0 once every scenario
// reported; 2 on a usage error.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

type run struct{ scenario, topic, group string }

type options struct {
	endpoint, accessKey, secretKey, namespace string
	tls, credentials                          bool
	timeout                                   time.Duration
	runs                                      []run
}

func parse(args []string) (*options, error) {
	o := &options{timeout: 60 * time.Second}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			i++
			if i >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			return args[i], nil
		}
		var err error
		switch a {
		case "--endpoint":
			o.endpoint, err = value()
		case "--tls":
			o.tls = true
		case "--access-key":
			o.accessKey, err = value()
			o.credentials = true
		case "--secret-key":
			o.secretKey, err = value()
		case "--namespace":
			o.namespace, err = value()
		case "--timeout-ms":
			var v string
			if v, err = value(); err == nil {
				var ms int
				ms, err = strconv.Atoi(v)
				o.timeout = time.Duration(ms) * time.Millisecond
			}
		default:
			if strings.HasPrefix(a, "--") {
				return nil, fmt.Errorf("unknown option %s", a)
			}
			positional = append(positional, a)
		}
		if err != nil {
			return nil, err
		}
	}
	if o.endpoint == "" {
		return nil, fmt.Errorf("--endpoint is required")
	}
	if len(positional) == 0 || len(positional)%3 != 0 {
		return nil, fmt.Errorf("expected SCENARIO TOPIC GROUP triples")
	}
	for i := 0; i < len(positional); i += 3 {
		o.runs = append(o.runs, run{positional[i], positional[i+1], positional[i+2]})
	}
	return o, nil
}

type outcome struct {
	result map[string]any
	err    error
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage error:", err)
		os.Exit(2)
	}
	// The Go client's default is TLS (rocketmq.client.enableSsl): plaintext must be asked for.
	rmq.EnableSsl = o.tls
	rmq.ResetLogger()

	done := make([]chan outcome, len(o.runs))
	for i, r := range o.runs {
		done[i] = make(chan outcome, 1)
		go func(r run, ch chan outcome) {
			defer func() {
				if p := recover(); p != nil {
					ch <- outcome{err: fmt.Errorf("panic: %v", p)}
				}
			}()
			res, err := runScenario(o, r)
			ch <- outcome{res, err}
		}(r, done[i])
	}
	expired := make(chan struct{})
	time.AfterFunc(o.timeout, func() { close(expired) })
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for i, r := range o.runs {
		line := map[string]any{"scenario": r.scenario}
		select {
		case res := <-done[i]:
			if res.err != nil {
				line["ok"] = false
				line["error"] = res.err.Error()
			} else {
				for k, v := range res.result {
					line[k] = v
				}
				line["ok"] = true
			}
		case <-expired:
			line["ok"] = false
			line["error"] = fmt.Sprintf("scenario did not finish within %s", o.timeout)
		}
		if err := out.Encode(line); err != nil {
			fmt.Fprintln(os.Stderr, "cannot write result:", err)
		}
	}
	os.Exit(0)
}
