package proteus

import kotlinx.coroutines.test.runTest
import java.nio.file.Files
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

class PersistenceTest {
    @Test
    fun `identity, prekeys and sessions survive close and reopen`() = runTest {
        val path = tempStore().toString()
        val peer = Client.inMemory()
        val fingerprint = Client.open(path).use { bob ->
            val bundles = bob.generatePrekeys(3)
            peer.createSession("bob", bundles[0].bytes)
            assertEquals("one", text(bob.decrypt("peer", peer.encrypt("bob", bytes("one")))))
            assertEquals("two", text(peer.decrypt("bob", bob.encrypt("peer", bytes("two")))))
            bob.fingerprint()
        }
        assertTrue(Files.exists(java.nio.file.Path.of(path)))
        Client.open(path, mode = OpenMode.EXISTING, options = ClientOptions()).use { bob ->
            assertEquals(fingerprint, bob.fingerprint())
            assertEquals(2, bob.prekeysRemaining())
            assertEquals(listOf("peer"), bob.sessionIds())
            assertEquals(peer.fingerprint(), bob.remoteFingerprint("peer"))
            assertEquals("three", text(bob.decrypt("peer", peer.encrypt("bob", bytes("three")))))
            assertEquals("four", text(peer.decrypt("bob", bob.encrypt("peer", bytes("four")))))
        }
    }

    @Test
    fun `a committed batch stays committed and an aborted one leaves nothing`() = runTest {
        val path = tempStore().toString()
        val alice = Client.inMemory()
        Client.open(path).use { bob ->
            alice.createSession("bob", bob.generatePrekeys(1).single().bytes)
        }
        val first = queueFrom(alice, 50, "first")
        val second = queueFrom(alice, 50, "second")
        Client.open(path).use { bob ->
            assertEquals(50, bob.decryptBatch(first, Collector()).decrypted)
            expectError(108, ErrorKind.BATCH_ABORTED) { bob.decryptBatch(second, Collector { _, _ -> false }) }
        }
        Client.open(path).use { bob ->
            // The first batch was committed before close: already seen. The second was not.
            assertEquals(50, bob.decryptBatch(first, Collector()).alreadySeen)
            val collector = Collector()
            assertEquals(50, bob.decryptBatch(second, collector).decrypted)
            assertEquals("second 49", text(collector.results.last().plaintext))
        }
    }

    @Test
    fun `eraseDeleted says the prekey a message used up is gone from the disk`() = runTest {
        val path = tempStore().toString()
        val alice = Client.inMemory()
        assertTrue(alice.eraseDeleted())
        Client.open(path).use { bob ->
            alice.createSession("bob", bob.generatePrekeys(1).single().bytes)
            assertEquals("hi", text(bob.decrypt("alice", alice.encrypt("bob", bytes("hi")))))
            assertEquals(0, bob.prekeysRemaining())
            assertTrue(bob.eraseDeleted())
        }
    }

    @Test
    fun `a closed client throws and its store can be opened again`() = runTest {
        val path = tempStore().toString()
        val client = Client.open(path)
        client.close()
        kotlin.test.assertFailsWith<IllegalStateException> { client.fingerprint() }
        Client.open(path).use { assertEquals(64, it.fingerprint().length) }
    }

    /** The app's commit counter, in memory (Android Keystore-backed storage, in an app). */
    class MemoryCounter : CommitCounter {
        @Volatile var value = 0L
        override fun load(): Long = value
        override fun store(count: Long) {
            value = count
        }
    }

    @Test
    fun `a store restored from an older copy is refused with the app's counter`() = runTest {
        val path = tempStore()
        val backup = path.resolveSibling("backup.db")
        val counter = MemoryCounter()
        Client.open(path.toString(), commitCounter = counter).use { it.generatePrekeys(2) }
        Files.copy(path, backup)
        Client.open(path.toString(), commitCounter = counter).use { it.generatePrekeys(1) }
        Files.copy(backup, path, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
        expectError(511, ErrorKind.STORE_ROLLED_BACK) { Client.open(path.toString(), commitCounter = counter) }
        // A counter that cannot be read fails the open (StorageFailure, naming the counter).
        val broken = object : CommitCounter {
            override fun load(): Long = throw IllegalStateException("no keychain")
            override fun store(count: Long) {}
        }
        val e = expectError(507, ErrorKind.STORAGE_FAILURE) { Client.open(path.toString(), commitCounter = broken) }
        assertTrue(e.message!!.contains("commit counter"), e.message)
    }
}
