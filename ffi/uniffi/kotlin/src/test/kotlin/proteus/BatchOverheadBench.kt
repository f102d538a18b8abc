package proteus

import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.StandardCopyOption
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable
import kotlin.test.Test
import kotlin.test.assertEquals

/**
 * The cost of crossing the boundary: the `1x1000est` scenario of proteus-bench (an established
 * session, 1000 queued CipherMessages of 100-200 bytes) decrypted with one `decryptBatch` call
 * through the Kotlin binding, on the `memory` and `sqlite-batch` stores, each run from a fresh
 * client in the same state (set up outside the timed part, as the native runner does).
 *
 * Runs only when PROTEUS_BENCH_OUT names a file; it writes one JSON line per store there, in the
 * native runner's format. scripts/suites/kotlin.sh (PROTEUS_BENCH=1) compares the two.
 */
@EnabledIfEnvironmentVariable(named = "PROTEUS_BENCH_OUT", matches = ".+")
class BatchOverheadBench {
    /**
     * Warm-up runs on the memory store before anything is measured: the binding's code runs once
     * per batch, so the JIT needs a few thousand batches to compile it fully.
     */
    private val warmup = System.getenv("PROTEUS_BENCH_WARMUP")?.toInt() ?: 2000
    private val runs = System.getenv("PROTEUS_BENCH_RUNS")?.toInt() ?: 61
    private val chunk = System.getenv("PROTEUS_BENCH_CHUNK")?.toUInt() ?: 1000u

    /** Chat-like plaintexts of 100 to 200 bytes, as proteus-bench's `chat_plaintext`. */
    private fun chatPlaintext(i: Int): ByteArray {
        val words = listOf("hey", "are", "we", "still", "on", "for", "lunch", "tomorrow", "I", "think", "the", "train")
        val target = 100 + (i * 37) % 101
        val text = StringBuilder("#$i: ")
        var w = i
        while (text.length < target) {
            text.append(words[w % words.size]).append(' ')
            w = (w * 7 + 3) % 1_000_003
        }
        return text.substring(0, target).toByteArray()
    }

    /** The app's side of a batch: it keeps every result (here in memory). */
    private class Keep : BatchDelivery {
        val kept = ArrayList<BatchResult>(1000)
        override fun deliver(results: List<BatchResult>, progress: BatchProgress): Boolean {
            kept.addAll(results)
            return true
        }
    }

    private fun measure(
        store: String,
        fresh: () -> Client,
        queue: List<QueuedMessage>,
        expected: List<ByteArray>,
        warmup: Int,
    ): List<Double> {
        val times = ArrayList<Double>()
        val cpu = ArrayList<Double>()
        val bean = java.lang.management.ManagementFactory.getThreadMXBean()
        repeat(warmup + runs) { run ->
            val client = fresh()
            val keep = Keep()
            val cpuStart = bean.currentThreadCpuTime
            val start = System.nanoTime()
            val summary = client.decryptBatch(queue, keep, maxChunk = chunk)
            val ms = (System.nanoTime() - start) / 1e6
            val cpuMs = (bean.currentThreadCpuTime - cpuStart) / 1e6
            client.close()
            assertEquals(1000u, summary.decrypted, store)
            if (run >= warmup || run % 100 == 0) {
                keep.kept.forEachIndexed { i, r -> kotlin.test.assertContentEquals(expected[i], r.plaintext) }
            }
            if (run >= warmup) { times.add(ms); cpu.add(cpuMs) }
            if (System.getenv("PROTEUS_BENCH_TRACE") != null) println("$store run $run: %.3f ms".format(ms))
        }
        cpu.sort()
        lastCpuMedian = cpu[cpu.size / 2]
        return times.sorted()
    }

    /** The median thread CPU time of the last [measure]: less disturbed by a loaded machine. */
    private var lastCpuMedian = 0.0

    @Test
    fun `decrypt 1000 queued messages with one batch call`() {
        val (alice, bob) = establishedPair()
        val plaintexts = (0 until 1000).map { chatPlaintext(it) }
        val queue = plaintexts.map { QueuedMessage("alice", alice.encrypt("bob", it)) }
        val identity = bob.exportIdentity()
        val session = bob.exportSession("alice")
        fun install(c: Client) = c.apply { importIdentity(identity); importSession("alice", session) }

        val templateDir = Files.createTempDirectory("proteus-bench-template-")
        Client.openWith(templateDir.resolve("store.db").toString(), OpenMode.NEW, ClientOptions()).use { install(it) }
        val runDirs = ArrayList<Path>()
        fun freshSqlite(): Client {
            val dir = Files.createTempDirectory("proteus-bench-run-").also { runDirs.add(it) }
            Files.list(templateDir).use { files ->
                files.forEach { Files.copy(it, dir.resolve(it.fileName), StandardCopyOption.REPLACE_EXISTING) }
            }
            return Client.openWith(dir.resolve("store.db").toString(), OpenMode.EXISTING, ClientOptions())
        }

        val out = File(System.getenv("PROTEUS_BENCH_OUT"))
        out.writeText("")
        for ((store, fresh) in listOf("memory" to { install(Client.inMemory()) }, "sqlite-batch" to ::freshSqlite)) {
            val t = measure(store, fresh, queue, plaintexts, if (store == "memory") warmup else 10)
            val line = "{\"scenario\":\"1x1000est\",\"store\":\"$store\",\"binding\":\"kotlin\"," +
                "\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"runs\":%d,\"cpu_median_ms\":%.3f}".format(
                    java.util.Locale.ROOT, t[t.size / 2], t.first(), t.last(), t.size, lastCpuMedian,
                )
            println(line)
            out.appendText(line + "\n")
        }
        runDirs.forEach { it.toFile().deleteRecursively() }
        templateDir.toFile().deleteRecursively()
    }
}
