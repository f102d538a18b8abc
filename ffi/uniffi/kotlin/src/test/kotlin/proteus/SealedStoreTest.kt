package proteus

import java.nio.file.Files
import java.nio.file.Path
import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue

/** Stores sealed with a 32-byte key the app keeps (Android Keystore): open, seal, rekey, delete. */
class SealedStoreTest {
    private val key = ByteArray(32) { (it + 1).toByte() }
    private val otherKey = ByteArray(32) { (0xa0 + it).toByte() }

    /** The store file and its side files, as they are on disk. */
    private fun rawBytes(path: Path): ByteArray =
        listOf("", "-wal").map { Path.of("$path$it") }.filter { Files.exists(it) }
            .fold(ByteArray(0)) { acc, p -> acc + Files.readAllBytes(p) }

    private fun ByteArray.contains(needle: ByteArray): Boolean =
        (0..size - needle.size).any { i -> needle.indices.all { this[i + it] == needle[it] } }

    /**
     * Every 32-byte window of the exported identity that is not part of its public key: the
     * secret key, whatever the exact layout of the export.
     */
    private suspend fun secretWindows(client: Client): List<ByteArray> {
        val export = client.exportIdentity()
        val public = client.identityKey()
        return (0..export.size - 32).map { export.copyOfRange(it, it + 32) }
            .filter { w -> !public.contains(w.copyOfRange(0, 8)) }
    }

    @Test
    fun `a sealed store holds no identity secret in its file, an unsealed one does`() = runTest {
        val sealed = tempStore()
        val plain = tempStore()
        val (sealedSecrets, plainSecrets) = listOf(sealed to key, plain to null).map { (path, k) ->
            Client.open(path.toString(), storeKey = k).use { c ->
                c.generatePrekeys(5)
                secretWindows(c)
            }
        }
        assertTrue(sealedSecrets.isNotEmpty())
        // The search finds the secret where it is stored in the clear...
        assertTrue(plainSecrets.any { rawBytes(plain).contains(it) }, "the check finds a plain secret")
        // ...and not in the sealed file.
        val raw = rawBytes(sealed)
        assertFalse(sealedSecrets.any { raw.contains(it) }, "an identity secret is in the sealed file")
    }

    @Test
    fun `a sealed store opens with its key only, and a failed open changes nothing`() = runTest {
        val path = tempStore()
        val fingerprint = Client.open(path.toString(), storeKey = key).use { it.generatePrekeys(2); it.fingerprint() }
        val before = rawBytes(path)
        expectError(510, ErrorKind.STORE_KEY_REQUIRED) { Client.open(path.toString()) }
        expectError(508, ErrorKind.WRONG_STORE_KEY) { Client.open(path.toString(), storeKey = otherKey) }
        expectError(303, ErrorKind.INVALID_LENGTH) { Client.open(path.toString(), storeKey = ByteArray(16)) }
        assertContentEquals(before, rawBytes(path))
        Client.open(path.toString(), storeKey = key, mode = OpenMode.EXISTING).use {
            assertEquals(fingerprint, it.fingerprint())
            assertEquals(2, it.prekeysRemaining())
        }
    }

    @Test
    fun `sealStore seals an existing store, rekeyStore rotates its key`() = runTest {
        val path = tempStore()
        val peer = Client.inMemory()
        val fingerprint = Client.open(path.toString()).use { bob ->
            peer.createSession("bob", bob.generatePrekeys(1).single().bytes)
            bob.decrypt("peer", peer.encrypt("bob", bytes("before sealing")))
            bob.fingerprint()
        }
        Client.sealStore(path.toString(), key)
        expectError(510, ErrorKind.STORE_KEY_REQUIRED) { Client.open(path.toString()) }
        // Sealing twice is refused: the store is sealed already.
        kotlin.test.assertFailsWith<ProteusException> { Client.sealStore(path.toString(), key) }
        Client.open(path.toString(), storeKey = key).use { bob ->
            assertEquals(fingerprint, bob.fingerprint())
            assertEquals("sealed", text(bob.decrypt("peer", peer.encrypt("bob", bytes("sealed")))))
        }
        // Rotation: a wrong old key changes nothing; the right one moves the store to the new key.
        val before = rawBytes(path)
        expectError(508, ErrorKind.WRONG_STORE_KEY) { Client.rekeyStore(path.toString(), otherKey, key) }
        assertContentEquals(before, rawBytes(path))
        Client.rekeyStore(path.toString(), key, otherKey)
        expectError(508, ErrorKind.WRONG_STORE_KEY) { Client.open(path.toString(), storeKey = key) }
        Client.open(path.toString(), storeKey = otherKey).use { bob ->
            assertEquals(fingerprint, bob.fingerprint())
            assertEquals("rotated", text(bob.decrypt("peer", peer.encrypt("bob", bytes("rotated")))))
        }
        // An unsealed store given a key is refused too.
        val plain = tempStore()
        Client.open(plain.toString()).close()
        expectError(509, ErrorKind.STORE_NOT_SEALED) { Client.open(plain.toString(), storeKey = key) }
    }

    @Test
    fun `deleteStore removes a store and refuses anything else`() = runTest {
        val path = tempStore()
        Client.open(path.toString(), storeKey = key).close()
        assertTrue(Files.exists(path))
        Client.deleteStore(path.toString())
        assertFalse(Files.exists(path))
        assertFalse(Files.exists(Path.of("$path-wal")))
        Client.deleteStore(path.toString())
        expectError(504, ErrorKind.STORE_NOT_FOUND) { Client.open(path.toString(), mode = OpenMode.EXISTING) }
        val notAStore = tempStore()
        val junk = ByteArray(8192) { (it * 13).toByte() }
        Files.write(notAStore, junk)
        kotlin.test.assertFailsWith<ProteusException.System> { Client.deleteStore(notAStore.toString()) }
        assertContentEquals(junk, Files.readAllBytes(notAStore))
    }
}
