package proteus

import kotlinx.coroutines.test.runTest
import java.util.Collections
import kotlin.test.AfterTest
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue

/** The library's log, through the app's logger: its lines, its levels, nothing secret in it. */
class LoggerTest {
    private class Lines : ProteusLogger {
        val lines: MutableList<Pair<LogLevel, String>> = Collections.synchronizedList(mutableListOf())
        override fun log(level: LogLevel, message: String) {
            lines.add(level to message)
        }
    }

    @AfterTest
    fun off() = setLogger(Lines(), LogLevel.OFF)

    @Test
    fun `the log names events and levels, never ids, fingerprints or plaintext`() = runTest {
        val logger = Lines()
        setLogger(logger, LogLevel.INFO)
        val alice = Client.inMemory()
        val bob = Client.inMemory()
        alice.createSession("bob-kotlin-id", bob.generatePrekeys(1).single().bytes)
        val queue = (0 until 3).map { QueuedMessage("alice-kotlin-id", alice.encrypt("bob-kotlin-id", bytes("secret plaintext $it"))) }
        val summary = bob.decryptBatch(queue + queue.first(), Collector())
        assertEquals(listOf(4, 3, 1, 0, 0), summary.counts())
        val lines = synchronized(logger.lines) { logger.lines.toList() }
        assertTrue(lines.any { it.first == LogLevel.INFO && it.second.startsWith("client opened: new identity") }, "$lines")
        assertTrue(lines.any { it.first == LogLevel.INFO && it.second.startsWith("batch: 4 messages: 3 decrypted, 1 already seen") }, "$lines")
        // The one-time prekey went: 0 left, below the low water.
        assertTrue(lines.any { it.first == LogLevel.WARN && "one-time prekeys left" in it.second }, "$lines")
        val secrets = listOf("alice-kotlin-id", "bob-kotlin-id", "secret plaintext", alice.fingerprint(), bob.fingerprint())
        for ((_, line) in lines) {
            assertFalse(secrets.any { it in line }, "a log line names a secret or an id: $line")
        }
    }

    @Test
    fun `a level filters, and off is silent`() = runTest {
        val logger = Lines()
        setLogger(logger, LogLevel.WARN)
        Client.inMemory()
        assertTrue(logger.lines.none { it.first == LogLevel.INFO }, "${logger.lines}")
        setLogger(logger, LogLevel.OFF)
        val before = logger.lines.size
        Client.inMemory()
        assertEquals(before, logger.lines.size)
    }
}
