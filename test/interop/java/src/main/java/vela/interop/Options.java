package vela.interop;

import java.util.ArrayList;
import java.util.List;

/** Command-line options: the connection (endpoint, TLS, credentials) and the scenario runs. */
final class Options {
    record Run(String scenario, String topic, String group) {
    }

    String endpoint;
    boolean tls;
    String accessKey;
    String secretKey;
    String namespace = "";
    long timeoutMs = 60_000;
    final List<Run> runs = new ArrayList<>();

    static Options parse(String[] args) {
        Options o = new Options();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--endpoint" -> o.endpoint = value(args, ++i, a);
                case "--tls" -> o.tls = true;
                case "--access-key" -> o.accessKey = value(args, ++i, a);
                case "--secret-key" -> o.secretKey = value(args, ++i, a);
                case "--namespace" -> o.namespace = value(args, ++i, a);
                case "--timeout-ms" -> o.timeoutMs = Long.parseLong(value(args, ++i, a));
                default -> {
                    if (a.startsWith("--")) {
                        throw new IllegalArgumentException("unknown option " + a);
                    }
                    positional.add(a);
                }
            }
        }
        if (o.endpoint == null) {
            throw new IllegalArgumentException("--endpoint is required");
        }
        if ((o.accessKey == null) != (o.secretKey == null)) {
            throw new IllegalArgumentException("--access-key and --secret-key go together");
        }
        if (positional.isEmpty() || positional.size() % 3 != 0) {
            throw new IllegalArgumentException("expected SCENARIO TOPIC GROUP triples");
        }
        for (int i = 0; i < positional.size(); i += 3) {
            o.runs.add(new Run(positional.get(i), positional.get(i + 1), positional.get(i + 2)));
        }
        return o;
    }

    /** The same connection signing with another secret key (for the refusal scenarios). */
    Options withSecretKey(String secret) {
        Options o = new Options();
        o.endpoint = endpoint;
        o.tls = tls;
        o.accessKey = accessKey;
        o.secretKey = secret;
        o.namespace = namespace;
        o.timeoutMs = timeoutMs;
        return o;
    }

    private static String value(String[] args, int i, String name) {
        if (i >= args.length) {
            throw new IllegalArgumentException(name + " needs a value");
        }
        return args[i];
    }
}
