package red.otelcol.es;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.transport.Netty4Plugin;

/**
 * A single-node Elasticsearch for tests, started from jars on the classpath instead of a distribution.
 *
 * <p>Usage: {@code TestNode <home> <http port> <transport port>}. Data lives in {@code <home>/data} and
 * survives a restart, so a test can stop the node and find its documents again after the next start.
 *
 * <p>The public {@code Node(Environment)} constructor loads plugins only from {@code <home>/plugins}; the
 * protected one also accepts classpath plugins, which is how Netty4 (the HTTP and transport layer) gets in.
 * Bootstrap checks, the security manager and x-pack are absent: this node is for 127.0.0.1 only.
 */
public final class TestNode extends Node {

    private TestNode(Environment env, List<Class<? extends Plugin>> plugins) {
        super(env, plugins, true);
    }

    private static Environment prepare(Settings settings) {
        return InternalSettingsPreparer.prepareEnvironment(settings, Collections.emptyMap(), null, () -> "otelcol-red-test");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: TestNode <home> <http port> <transport port>");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        Settings settings = Settings.builder()
                .put("path.home", home.toString())
                .put("path.data", home.resolve("data").toString())
                .put("path.logs", home.resolve("logs").toString())
                .put("cluster.name", "otelcol-red-test")
                .put("node.name", "otelcol-red-test")
                .put("network.host", "127.0.0.1")
                .put("http.port", args[1])
                .put("transport.port", args[2])
                .put("discovery.type", "single-node")
                .put("http.type", "netty4")
                .put("transport.type", "netty4")
                // A full shared disk must not turn the test indices read-only halfway through a run.
                .put("cluster.routing.allocation.disk.threshold_enabled", false)
                .build();

        Environment env = prepare(settings);
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName("otelcol-red-test");
        // Reads <home>/config/log4j2.properties, which the script copies there.
        LogConfigurator.configure(env);

        TestNode node = new TestNode(env, List.of(Netty4Plugin.class));
        CountDownLatch closed = new CountDownLatch(1);
        // SIGTERM from the script closes the node cleanly, so shards are flushed and the next start is quick.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                closed.countDown();
            }
        }, "test-node-shutdown"));
        node.start();
        closed.await();
    }
}
