package proteus

import java.io.File
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable
import kotlin.test.Test
import kotlin.test.assertEquals

/**
 * The `fanout4000` scenario of proteus-bench through the Kotlin binding: one 150-byte plaintext
 * encrypted for 4000 established sessions with one `encryptFor` call, on a memory client and on
 * a durable SQLite store (the call returns once the 4000 advanced chains are committed).
 * Sessions are warm (loaded by the setup), as in the native scenario.
 *
 *     PROTEUS_FANOUT=1 mvn -f ffi/uniffi/kotlin/pom.xml surefire:test -Dtest=FanoutBench
 *
 * Prints one JSON line per store (and appends it to PROTEUS_FANOUT_OUT if set).
 */
@EnabledIfEnvironmentVariable(named = "PROTEUS_FANOUT", matches = "1")
class FanoutBench {
    private val sessions = System.getenv("PROTEUS_FANOUT_SESSIONS")?.toInt() ?: 4000
    private val runs = System.getenv("PROTEUS_FANOUT_RUNS")?.toInt() ?: 31
    private val warmup = System.getenv("PROTEUS_FANOUT_WARMUP")?.toInt() ?: 10

    /** Gives [alice] [sessions] sessions "peer:i", established both ways, with one peer client. */
    private suspend fun establish(alice: Client): Client {
        val peer = Client.inMemory()
        peer.generatePrekeys(sessions).forEachIndexed { i, b -> alice.createSession("peer:$i", b.bytes) }
        val ids = (0 until sessions).map { "peer:$it" }
        val hello = alice.encryptFor(ids, bytes("hello"))
        val toPeer = hello.mapIndexed { i, r -> QueuedMessage("alice:$i", r.envelope!!) }
        assertEquals(sessions, peer.decryptBatch(toPeer) { _, _ -> true }.decrypted)
        val acks = peer.encryptFor((0 until sessions).map { "alice:$it" }, bytes("ack"))
        val toAlice = acks.mapIndexed { i, r -> QueuedMessage("peer:$i", r.envelope!!) }
        assertEquals(sessions, alice.decryptBatch(toAlice) { _, _ -> true }.decrypted)
        return peer
    }

    @Test
    fun `fanout4000 - one plaintext to 4000 sessions`() = runBlocking<Unit> {
        val plaintext = ByteArray(150) { (it % 26 + 'a'.code).toByte() }
        val ids = (0 until sessions).map { "peer:$it" }
        val stores = listOf<Pair<String, suspend () -> Client>>(
            "memory" to { Client.inMemory() },
            "sqlite" to { Client.open(tempStore().toString()) },
        )
        for ((store, open) in stores) {
            open().use { alice ->
                val peer = establish(alice)
                val times = ArrayList<Double>()
                var last: List<FanoutResult> = emptyList()
                repeat(warmup + runs) { run ->
                    val start = System.nanoTime()
                    last = alice.encryptFor(ids, plaintext)
                    val ms = (System.nanoTime() - start) / 1e6
                    if (run >= warmup) times.add(ms)
                }
                // Every recipient got an envelope; a sample of them decrypts.
                assertEquals(sessions, last.count { it.envelope != null })
                for (i in listOf(0, sessions / 2, sessions - 1)) {
                    kotlin.test.assertContentEquals(plaintext, peer.decrypt("alice:$i", last[i].envelope!!))
                }
                times.sort()
                val load = File("/proc/loadavg").readText().split(" ").take(3).joinToString(" ")
                val line = "{\"scenario\":\"fanout4000\",\"sessions\":$sessions,\"store\":\"$store\",\"binding\":\"kotlin\"," +
                    "\"median_ms\":%.2f,\"min_ms\":%.2f,\"max_ms\":%.2f,\"runs\":%d,\"loadavg\":\"%s\"}".format(
                        java.util.Locale.ROOT, times[times.size / 2], times.first(), times.last(), times.size, load,
                    )
                println(line)
                System.getenv("PROTEUS_FANOUT_OUT")?.let { File(it).appendText(line + "\n") }
            }
        }
    }
}
