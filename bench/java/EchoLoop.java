// The echo tool as a hand-written loop over Apache Pulsar's own Java client
// (pulsar-client-original, from the broker's distribution), for
// bench/paired.py: the same topics, subscription and payloads as
// bench/src/bin/raw.rs. A message listener decodes each request with
// Jackson, sends the response asynchronously with the request's `id`
// property (no batching, as raw.rs), and acknowledges the request once the
// broker has the response. TCP_NODELAY is on, as for every variant.
//
//     java -cp "bench/java/classes:$PULSAR_LIB/*" EchoLoop --url pulsar://127.0.0.1:6650 --topic bench-echo

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

public final class EchoLoop {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String arg(String[] args, String name, String fallback) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return fallback;
    }

    /** The response payload for one request payload, as raw.rs writes it. */
    private static byte[] answer(byte[] payload) {
        ObjectNode response = JSON.createObjectNode();
        try {
            JsonNode envelope = JSON.readTree(payload);
            String arguments = envelope.path("arguments").asText("");
            JsonNode parsed = JSON.readTree(arguments.isEmpty() ? "{}" : arguments);
            JsonNode text = parsed.get("text");
            if (text == null || !text.isTextual()) {
                throw new IllegalArgumentException("missing field `text`");
            }
            response.putNull("error");
            response.put("response", text.asText());
        } catch (Exception error) {
            ObjectNode failure = response.putObject("error");
            failure.put("kind", "tool-service-error");
            failure.put("message", String.valueOf(error.getMessage()));
            response.put("response", "");
        }
        response.put("end_of_stream", true);
        try {
            return JSON.writeValueAsBytes(response);
        } catch (Exception error) {
            throw new IllegalStateException(error);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = arg(args, "--url", "pulsar://127.0.0.1:6650");
        String topic = arg(args, "--topic", "bench-echo");
        PulsarClient client = PulsarClient.builder().serviceUrl(url).enableTcpNoDelay(true).build();
        Producer<byte[]> producer = client.newProducer()
                .topic("non-persistent://tg/response/" + topic)
                .enableBatching(false)
                .blockIfQueueFull(true)
                .maxPendingMessages(1000)
                .create();
        Consumer<byte[]> consumer = client.newConsumer()
                .topic("non-persistent://tg/request/" + topic)
                .subscriptionName(topic + "-service-request")
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Latest)
                .messageListener((Consumer<byte[]> from, Message<byte[]> message) -> {
                    String id = message.getProperty("id");
                    producer.newMessage()
                            .value(answer(message.getData()))
                            .property("id", id == null ? "unknown" : id)
                            .sendAsync()
                            .thenRun(() -> from.acknowledgeAsync(message));
                })
                .subscribe();
        System.err.println("java echo loop ready");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                consumer.close();
                producer.close();
                client.close();
            } catch (Exception ignored) {
                // Exiting anyway.
            }
        }));
        Thread.currentThread().join();
    }
}
