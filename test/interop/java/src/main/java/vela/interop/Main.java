package vela.interop;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Vela interop program for the official RocketMQ 5.x Java client.
 *
 * <pre>
 * java -cp … vela.interop.Main --endpoint HOST:PORT [--tls] [--access-key AK --secret-key SK]
 *     [--namespace NS] [--timeout-ms MS] SCENARIO TOPIC GROUP [SCENARIO TOPIC GROUP …]
 * </pre>
 *
 * Runs the scenarios concurrently and prints one JSON line per scenario on stdout:
 * {"scenario":…,"ok":true,…result} or {"scenario":…,"ok":false,"error":…}. Client logs go to the
 * directory of -Drocketmq.log.root, never to stdout. Exit 0 once every scenario reported; 2 on a
 * usage error.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        // Only the result lines may reach stdout: anything else the client prints goes to stderr.
        PrintStream results = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);

        Options opts;
        try {
            opts = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("usage error: " + e.getMessage());
            System.exit(2);
            return;
        }
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        List<Future<Map<String, Object>>> futures = new ArrayList<>();
        for (Options.Run run : opts.runs) {
            futures.add(pool.submit(() -> Scenarios.run(opts, run)));
        }
        long deadline = System.currentTimeMillis() + opts.timeoutMs;
        for (int i = 0; i < futures.size(); i++) {
            Options.Run run = opts.runs.get(i);
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("scenario", run.scenario());
            try {
                long left = Math.max(1, deadline - System.currentTimeMillis());
                Map<String, Object> result = futures.get(i).get(left, TimeUnit.MILLISECONDS);
                line.put("ok", true);
                line.putAll(result);
            } catch (TimeoutException e) {
                line.put("ok", false);
                line.put("error", "scenario did not finish within " + opts.timeoutMs + " ms");
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                line.put("ok", false);
                line.put("error", Scenarios.describe(cause));
                cause.printStackTrace(System.err);
            }
            synchronized (results) {
                results.println(Json.write(line));
            }
        }
        // The clients' own threads (timers, gRPC) must not keep the JVM alive.
        System.exit(0);
    }
}
