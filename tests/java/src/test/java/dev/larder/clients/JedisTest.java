package dev.larder.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.resps.Tuple;

/**
 * Jedis against the server under test: larder (the {@code larder.bin} system property), or
 * redis-server when {@code larder.target} is {@code redis}, on a free port.
 */
class JedisTest {
    private static Process server;
    private static Path dir;
    private static int port;
    private static JedisPool pool;

    @BeforeAll
    static void start() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        dir = Files.createTempDirectory("larder-java-");
        List<String> argv;
        if ("redis".equals(System.getProperty("larder.target"))) {
            argv = List.of("redis-server", "--port", "" + port, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", dir.toString());
        } else {
            argv = List.of(System.getProperty("larder.bin"), "--port", "" + port, "--bind", "127.0.0.1",
                    "--memcached-port", "0", "--http-port", "0", "--appendonly", "no", "--save", "",
                    "--dir", dir.toString());
        }
        File log = dir.resolve("server.log").toFile();
        server = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(log).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                if ("PONG".equals(j.ping())) {
                    pool = new JedisPool("127.0.0.1", port);
                    return;
                }
            } catch (Exception e) {
                Thread.sleep(20);
            }
        }
        server.destroyForcibly();
        throw new IllegalStateException(argv.get(0) + " did not start: " + Files.readString(log.toPath()));
    }

    @AfterAll
    static void stop() throws Exception {
        if (pool != null) {
            pool.close();
        }
        server.destroy();
        server.waitFor(10, TimeUnit.SECONDS);
        if (server.isAlive()) {
            server.destroyForcibly();
        }
    }

    @BeforeEach
    void flush() {
        try (Jedis j = pool.getResource()) {
            assertEquals("OK", j.flushAll());
        }
    }

    @Test
    void commandsRepliesAndErrorsInBothProtocols() throws IOException {
        for (RedisProtocol protocol : RedisProtocol.values()) {
            try (Jedis j = new Jedis(new HostAndPort("127.0.0.1", port),
                    DefaultJedisClientConfig.builder().protocol(protocol).build())) {
                j.flushAll();
                assertEquals("OK", j.set("s", "v", SetParams.setParams().px(60_000)));
                assertEquals("v", j.get("s"));
                assertTrue(j.pttl("s") > 0);
                assertNull(j.get("missing"));
                j.hset("h", Map.of("a", "1", "b", "x"));
                assertEquals(Map.of("a", "1", "b", "x"), j.hgetAll("h"));
                j.zadd("z", 2.0, "b");
                j.zadd("z", 1.5, "a");
                List<Tuple> z = j.zrangeWithScores("z", 0, -1);
                assertEquals("a", z.get(0).getElement());
                assertEquals(1.5, z.get(0).getScore());
                assertEquals(List.of("c", "b", "a"), lpushAll(j));
                assertEquals(2.5, j.incrByFloat("f", 2.5));
                JedisDataException e = assertThrows(JedisDataException.class, () -> j.incr("s"));
                assertEquals("ERR value is not an integer or out of range", e.getMessage());
                e = assertThrows(JedisDataException.class, () -> j.lpush("s", "x"));
                assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value", e.getMessage());
            }
        }
    }

    private static List<String> lpushAll(Jedis j) {
        j.lpush("l", "a", "b", "c");
        return j.lrange("l", 0, -1);
    }

    @Test
    void pipelineAndTransaction() {
        try (Jedis j = pool.getResource()) {
            Pipeline p = j.pipelined();
            List<Response<Long>> incrs = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                incrs.add(p.incr("n"));
            }
            Response<Long> size = p.dbSize();
            p.sync();
            assertEquals(1000L, incrs.get(999).get());
            assertEquals(1L, size.get());

            j.watch("n");
            Transaction t = j.multi();
            t.incrBy("n", 5);
            t.set("other", "x");
            assertEquals(List.of(1005L, "OK"), t.exec());
            // A watched key changed by another client: the transaction is discarded.
            j.watch("n");
            try (Jedis other = pool.getResource()) {
                other.incr("n");
            }
            Transaction t2 = j.multi();
            t2.incr("n");
            assertNull(t2.exec());
            assertEquals("1006", j.get("n"));
        }
    }

    @Test
    void scriptsLoadedAndRun() {
        try (Jedis j = pool.getResource()) {
            String sha = j.scriptLoad("return {redis.call('INCRBY', KEYS[1], ARGV[1]), ARGV[2]}");
            assertTrue(j.scriptExists(sha));
            assertEquals(Arrays.asList(3L, "tag"), j.evalsha(sha, List.of("k"), List.of("3", "tag")));
            assertEquals(Arrays.asList(7L, "x"), j.evalsha(sha, List.of("k"), List.of("4", "x")));
            JedisDataException e = assertThrows(JedisDataException.class,
                    () -> j.evalsha("0000000000000000000000000000000000000000", 0));
            assertEquals("NOSCRIPT No matching script. Please use EVAL.", e.getMessage());
        }
    }

    @Test
    void pubSubDeliversToChannelAndPatternSubscribers() throws Exception {
        List<String> got = new ArrayList<>();
        CountDownLatch subscribed = new CountDownLatch(2);
        CountDownLatch received = new CountDownLatch(2);
        JedisPubSub listener = new JedisPubSub() {
            @Override
            public void onMessage(String channel, String message) {
                synchronized (got) {
                    got.add(channel + ":" + message);
                }
                received.countDown();
            }

            @Override
            public void onPMessage(String pattern, String channel, String message) {
                synchronized (got) {
                    got.add(pattern + ">" + channel + ":" + message);
                }
                received.countDown();
            }

            @Override
            public void onSubscribe(String channel, int n) {
                subscribed.countDown();
                if (n == 1) {
                    psubscribe("ne*");
                }
            }

            @Override
            public void onPSubscribe(String pattern, int n) {
                subscribed.countDown();
            }
        };
        ExecutorService ex = Executors.newSingleThreadExecutor();
        ex.submit(() -> {
            try (Jedis sub = new Jedis("127.0.0.1", port)) {
                sub.subscribe(listener, "news");
            }
        });
        assertTrue(subscribed.await(10, TimeUnit.SECONDS));
        try (Jedis j = pool.getResource()) {
            assertEquals(2L, j.publish("news", "hi"));
        }
        assertTrue(received.await(10, TimeUnit.SECONDS));
        listener.unsubscribe();
        listener.punsubscribe();
        ex.shutdown();
        assertTrue(ex.awaitTermination(10, TimeUnit.SECONDS));
        synchronized (got) {
            got.sort(null);
            assertEquals(List.of("ne*>news:hi", "news:hi"), got);
        }
    }

    @Test
    void blockingPopWokenByAPushFromAnotherClient() throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        var popped = ex.submit(() -> {
            try (Jedis j = pool.getResource()) {
                return j.brpop(10, "jobs");
            }
        });
        Thread.sleep(100);
        try (Jedis j = pool.getResource()) {
            j.lpush("jobs", "job-1");
        }
        assertEquals(List.of("jobs", "job-1"), popped.get(10, TimeUnit.SECONDS));
        ex.shutdown();
    }
}
