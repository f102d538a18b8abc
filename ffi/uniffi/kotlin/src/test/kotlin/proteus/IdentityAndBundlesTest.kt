package proteus

import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertNotEquals
import kotlin.test.assertTrue

class IdentityAndBundlesTest {
    @Test
    fun `every client has its own identity and a hex fingerprint`() {
        Client.inMemory().use { a ->
            Client.inMemory().use { b ->
                val fp = a.fingerprint()
                assertTrue(Regex("[0-9a-f]{64}").matches(fp), fp)
                assertEquals(fp, a.fingerprint())
                assertNotEquals(fp, b.fingerprint())
            }
        }
    }

    @Test
    fun `generated prekeys have distinct ids and bundles name our identity`() {
        Client.inMemory().use { client ->
            assertEquals(0u, client.prekeysRemaining())
            val bundles = client.generatePrekeys(5u)
            assertEquals(5, bundles.map { it.id }.toSet().size)
            assertTrue(bundles.none { it.id == UShort.MAX_VALUE })
            assertEquals(5u, client.prekeysRemaining())
            for (bundle in bundles) {
                assertEquals(client.fingerprint(), bundleFingerprint(bundle.bytes))
                assertContentEquals(bundle.bytes, client.prekeyBundle(bundle.id).bytes)
            }
        }
    }

    @Test
    fun `the last resort bundle has id 65535 and is never used up`() {
        val alice = Client.inMemory()
        val bob = Client.inMemory()
        val lastResort = bob.lastResortBundle()
        assertEquals(UShort.MAX_VALUE, lastResort.id)
        alice.createSession("bob", lastResort.bytes)
        assertEquals("hi", text(bob.decrypt("alice", alice.encrypt("bob", bytes("hi")))))
        assertContentEquals(lastResort.bytes, bob.lastResortBundle().bytes)
        alice.close()
        bob.close()
    }

    @Test
    fun `an exported identity imports into another client, its prekeys stay behind`() {
        val original = Client.inMemory()
        val bundle = original.generatePrekeys(1u).single()
        val copy = Client.inMemory()
        copy.importIdentity(original.exportIdentity())
        assertEquals(original.fingerprint(), copy.fingerprint())
        // Prekeys are not part of the identity: only the original can accept this handshake.
        val alice = Client.inMemory()
        alice.createSession("original", bundle.bytes)
        val hello = alice.encrypt("original", bytes("hello"))
        expectError(101, "PreKeyNotFound") { copy.decrypt("alice", hello) }
        assertEquals("hello", text(original.decrypt("alice", hello)))
        listOf(original, copy, alice).forEach { it.close() }
    }

    @Test
    fun `message ids are the hex SHA-256 of the envelope`() {
        val (alice, _) = pair()
        val envelope = alice.encrypt("bob", bytes("x"))
        val expected = java.security.MessageDigest.getInstance("SHA-256").digest(envelope)
            .joinToString("") { "%02x".format(it) }
        assertEquals(expected, messageId(envelope))
    }
}
