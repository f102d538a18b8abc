package proteus

import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.StandardCopyOption
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable
import kotlinx.coroutines.runBlocking
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
    private val chunk = System.getenv("PROTEUS_BENCH_CHUNK")?.toInt() ?: 1000
    /** The stores to measure, comma-separated (`memory` alone for an A/B of the binding). */
    private val stores = (System.getenv("PROTEUS_BENCH_STORES") ?: "memory,sqlite-batch").split(',')

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

    private suspend fun measure(
        store: String,
        fresh: suspend () -> Client,
        queue: List<QueuedMessage>,
        expected: List<ByteArray>,
        warmup: Int,
        cleanUp: () -> Unit,
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
            cleanUp()
            assertEquals(1000, summary.decrypted, store)
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
    fun `decrypt 1000 queued messages with one batch call`() = runBlocking<Unit> {
        val (alice, bob) = establishedPair()
        val plaintexts = (0 until 1000).map { chatPlaintext(it) }
        val queue = plaintexts.map { QueuedMessage("alice", alice.encrypt("bob", it)) }
        val identity = bob.exportIdentity()
        val session = bob.exportSession("alice")
        suspend fun install(c: Client) = c.apply { importIdentity(identity); importSession("alice", session) }

        val templateDir = Files.createTempDirectory("proteus-bench-template-")
        Client.open(templateDir.resolve("store.db").toString(), mode = OpenMode.NEW).use { install(it) }
        val runDirs = ArrayList<Path>()
        // Each run's copy is deleted as soon as its client is closed, as the native runner does:
        // left behind, its dirty pages would be written back during the next runs' fsyncs.
        fun deleteRunDirs() {
            runDirs.forEach { it.toFile().deleteRecursively() }
            runDirs.clear()
        }
        suspend fun freshSqlite(): Client {
            val dir = Files.createTempDirectory("proteus-bench-run-").also { runDirs.add(it) }
            Files.list(templateDir).use { files ->
                files.forEach { Files.copy(it, dir.resolve(it.fileName), StandardCopyOption.REPLACE_EXISTING) }
            }
            return Client.open(dir.resolve("store.db").toString(), mode = OpenMode.EXISTING)
        }

        val out = File(System.getenv("PROTEUS_BENCH_OUT"))
        out.writeText("")
        for ((store, fresh) in listOf<Pair<String, suspend () -> Client>>("memory" to { install(Client.inMemory()) }, "sqlite-batch" to { freshSqlite() })) {
            if (store !in stores) continue
            val t = measure(store, fresh, queue, plaintexts, if (store == "memory") warmup else 10, ::deleteRunDirs)
            val line = "{\"scenario\":\"1x1000est\",\"store\":\"$store\",\"binding\":\"kotlin\"," +
                "\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"runs\":%d,\"cpu_median_ms\":%.3f}".format(
                    java.util.Locale.ROOT, t[t.size / 2], t.first(), t.last(), t.size, lastCpuMedian,
                )
            println(line)
            out.appendText(line + "\n")
        }
        deleteRunDirs()
        templateDir.toFile().deleteRecursively()
    }

    /**
     * Where the time of a batch goes on the Kotlin side (memory store, the same queue): the
     * conversions UniFFI's generated code does (the queue into one buffer, the results out of
     * one), one trivial call, and what one more callback costs (chunks of 10 against one chunk).
     * Printed only; the comparison with native is the test above.
     */
    @Test
    fun `where the time of a batch goes`() = runBlocking<Unit> {
        val (alice, bob) = establishedPair()
        val queue = (0 until 1000).map { QueuedMessage("alice", alice.encrypt("bob", chatPlaintext(it))) }
        val identity = bob.exportIdentity()
        val session = bob.exportSession("alice")
        suspend fun fresh() = Client.inMemory().apply { importIdentity(identity); importSession("alice", session) }
        var firstDelivery = 0L
        var lastReturn = 0L
        var callbacks = 0
        val kept = ArrayList<BatchResult>(1000)
        val delivery = object : BatchDelivery {
            override fun deliver(results: List<BatchResult>, progress: BatchProgress): Boolean {
                if (callbacks++ == 0) firstDelivery = System.nanoTime()
                kept.addAll(results)
                lastReturn = System.nanoTime()
                return true
            }
        }
        val splits = linkedMapOf<String, ArrayList<Double>>()
        fun note(name: String, ns: Long, run: Int) { if (run >= warmup / 2) splits.getOrPut(name) { ArrayList() }.add(ns / 1e3) }
        var callbacksPerBatch = 0
        repeat(warmup / 2 + runs * 3) { run ->
            for (chunk in listOf(1000, 10)) {
                val client = fresh()
                kept.clear(); callbacks = 0
                val start = System.nanoTime()
                client.decryptBatch(queue, delivery, maxChunk = chunk)
                val end = System.nanoTime()
                client.close()
                if (chunk == 1000) {
                    callbacksPerBatch = callbacks
                    note("batch call", end - start, run)
                    note("call to first delivery", firstDelivery - start, run)
                    note("last delivery's return to the call's return", end - lastReturn, run)
                } else {
                    note("batch call, chunks of 10", end - start, run)
                }
            }
            val a = System.nanoTime()
            val lowered = FfiConverterSequenceTypeQueuedMessage.lower(queue)
            note("queue into a RustBuffer (Kotlin)", System.nanoTime() - a, run)
            RustBuffer.free(lowered)
            val results = FfiConverterSequenceTypeBatchResult.lower(kept)
            val b = System.nanoTime()
            FfiConverterSequenceTypeBatchResult.lift(results)
            note("1000 results out of a RustBuffer (Kotlin)", System.nanoTime() - b, run)
            val c = System.nanoTime()
            messageId(ByteArray(0))
            note("a trivial call (messageId)", System.nanoTime() - c, run)
        }
        val median = splits.mapValues { (_, v) -> v.sorted()[v.size / 2] }
        println("where the time goes (memory, median of ${runs * 3} runs, microseconds; $callbacksPerBatch callback per batch):")
        median.forEach { (name, us) -> println("  %-48s %8.1f".format(java.util.Locale.ROOT, name, us)) }
        val perCallback = (median.getValue("batch call, chunks of 10") - median.getValue("batch call")) / 99
        println("  %-48s %8.1f".format(java.util.Locale.ROOT, "one more callback (chunks of 10 vs 1000)/99", perCallback))
    }
}
