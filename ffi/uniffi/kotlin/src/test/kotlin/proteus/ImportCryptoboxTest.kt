package proteus

import kotlinx.coroutines.test.runTest
import java.io.File
import java.util.Base64
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * importCryptobox on the stores Wire's real cryptobox 12.8.0 wrote (tests/cryptobox/fixtures):
 * the Rust cryptobox directory Wire's Android app kept, and the same records given one by one.
 * The queue its peers encrypted before the migration decrypts after it.
 */
class ImportCryptoboxTest {
    private val fixtures = File(System.getProperty("user.dir"), "../../../tests/cryptobox/fixtures")
    private val expected = File(fixtures, "expected.json").readText()
    private val fingerprint = Regex("\"fingerprint\": \"([0-9a-f]{64})\",\\s*\"lastResort").find(expected)!!.groupValues[1]
    private val queue = Regex("\"sessionId\": \"([^\"]+)\",\\s*\"envelope\": \"([^\"]+)\",\\s*\"plaintext\": \"([^\"]*)\"")
        .findAll(expected)
        .map { Triple(it.groupValues[1], Base64.getDecoder().decode(it.groupValues[2]), it.groupValues[3]) }
        .toList()

    private suspend fun decryptsTheQueue(client: Client) {
        assertEquals(15, queue.size)
        for ((sessionId, envelope, plaintext) in queue) {
            assertEquals(plaintext, text(client.decrypt(sessionId, envelope)), sessionId)
        }
    }

    @Test
    fun `a Rust cryptobox directory imports into a durable store in one call`() = runTest {
        val path = tempStore().toString()
        val seen = java.util.Collections.synchronizedList(mutableListOf<Pair<Int, Int>>())
        val listener = object : ImportProgress {
            override fun progress(done: Int, total: Int) {
                seen.add(done to total)
            }
        }
        Client.open(path).use { client ->
            val report = client.importCryptobox(
                CryptoboxSource.Directory(File(fixtures, "rust-cryptobox").path),
                onProgress = listener,
            )
            assertEquals(ImportReport(fingerprint, 6, 3, emptyList(), false), report)
            assertEquals(10 to 10, seen.last())
        }
        Client.open(path).use { client ->
            assertEquals(fingerprint, client.fingerprint())
            decryptsTheQueue(client)
            assertTrue(client.importCryptobox(CryptoboxSource.Directory(File(fixtures, "fs-store").path)).alreadyImported)
        }
    }

    @Test
    fun `records the app read itself import too, and bad ones are named`() = runTest {
        val dir = File(fixtures, "rust-cryptobox-legacy")
        val identity = File(dir, "identities/local_identity").readBytes()
        val prekeys = File(dir, "prekeys").listFiles()!!.sorted().map { it.readBytes() }
        val sessions = File(dir, "sessions").listFiles()!!.sorted().map { CryptoboxSession(it.name, it.readBytes()) }

        val client = Client.inMemory()
        val bad = CryptoboxSource.Records(identity, prekeys + byteArrayOf(1, 2, 3), sessions)
        val e = expectError(112, ErrorKind.IMPORT_BAD_RECORDS) { client.importCryptobox(bad) }
        assertTrue(e.message!!.contains("prekeys/#6"), e.message)
        assertEquals(emptyList(), client.sessionIds())

        val report = client.importCryptobox(bad, skipBadRecords = true)
        assertEquals(listOf("prekeys" to "#6"), report.skipped.map { it.table to it.id })
        assertEquals(3, report.sessions)
        decryptsTheQueue(client)
    }

    @Test
    fun `a store in use with another identity is refused`() = runTest {
        val client = Client.inMemory()
        client.generatePrekeys(1)
        expectError(111, ErrorKind.IMPORT_IDENTITY_MISMATCH) {
            client.importCryptobox(CryptoboxSource.Directory(File(fixtures, "fs-store").path))
        }
        expectError(515, ErrorKind.IMPORT_SOURCE_UNREADABLE) {
            client.importCryptobox(CryptoboxSource.Directory(File(fixtures, "missing").path))
        }
        assertEquals(1, client.prekeysRemaining())
    }
}
