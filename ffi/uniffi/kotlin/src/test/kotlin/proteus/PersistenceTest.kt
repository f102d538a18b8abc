package proteus

import java.nio.file.Files
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

class PersistenceTest {
    @Test
    fun `identity, prekeys and sessions survive close and reopen`() {
        val path = tempStore().toString()
        val peer = Client.inMemory()
        val fingerprint = Client.open(path).use { bob ->
            val bundles = bob.generatePrekeys(3u)
            peer.createSession("bob", bundles[0].bytes)
            assertEquals("one", text(bob.decrypt("peer", peer.encrypt("bob", bytes("one")))))
            assertEquals("two", text(peer.decrypt("bob", bob.encrypt("peer", bytes("two")))))
            bob.fingerprint()
        }
        assertTrue(Files.exists(java.nio.file.Path.of(path)))
        Client.openWith(path, OpenMode.EXISTING, ClientOptions()).use { bob ->
            assertEquals(fingerprint, bob.fingerprint())
            assertEquals(2u, bob.prekeysRemaining())
            assertEquals(listOf("peer"), bob.sessionIds())
            assertEquals(peer.fingerprint(), bob.remoteFingerprint("peer"))
            assertEquals("three", text(bob.decrypt("peer", peer.encrypt("bob", bytes("three")))))
            assertEquals("four", text(peer.decrypt("bob", bob.encrypt("peer", bytes("four")))))
        }
    }

    @Test
    fun `a committed batch stays committed and an aborted one leaves nothing`() {
        val path = tempStore().toString()
        val alice = Client.inMemory()
        Client.open(path).use { bob ->
            alice.createSession("bob", bob.generatePrekeys(1u).single().bytes)
        }
        val first = queueFrom(alice, 50, "first")
        val second = queueFrom(alice, 50, "second")
        Client.open(path).use { bob ->
            assertEquals(50u, bob.decryptBatch(first, Collector()).decrypted)
            expectError(108, "BatchAborted") { bob.decryptBatch(second, Collector { _, _ -> false }) }
        }
        Client.open(path).use { bob ->
            // The first batch was committed before close: already seen. The second was not.
            assertEquals(50u, bob.decryptBatch(first, Collector()).alreadySeen)
            val collector = Collector()
            assertEquals(50u, bob.decryptBatch(second, collector).decrypted)
            assertEquals("second 49", text(collector.results.last().plaintext))
        }
    }

    @Test
    fun `a closed client throws and its store can be opened again`() {
        val path = tempStore().toString()
        val client = Client.open(path)
        client.close()
        kotlin.test.assertFailsWith<IllegalStateException> { client.fingerprint() }
        Client.open(path).use { assertEquals(64, it.fingerprint().length) }
    }
}
